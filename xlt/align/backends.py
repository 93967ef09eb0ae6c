"""Word aligners behind one interface: each writes Pharaoh files that `stage` parses alike.

- ``fast_align``: the binary on PATH (github.com/clab/fast_align, built by `make fast_align`), run
  forward and reverse with the adjust authors' ``-d -o -v``. Their exact tool.
- ``eflomal``: the PyPI package (builds from source; a Bayesian HMM + fertility aligner,
  stronger than fast_align). Forward and reverse links are written separately, so the
  intersection is exact. Its sampler seeds itself from /dev/urandom: runs are not
  bit-identical (the package has no seed option).
- ``systran_align``: the PyPI wheel of fast_align's own code, trained with the same
  ``-d -o -v`` settings, but it returns only its own symmetrised links (which keep
  one-to-many links): usable, yet *not* the intersection. Deterministic.

Threads: fast_align, eflomal and systran-align parallelise with OpenMP; each runs in a child
process started with ``OMP_NUM_THREADS=<threads>`` (libgomp reads it once, when it loads).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from xlt.align.pool import iter_pool
from xlt.errors import XltError
from xlt.formats.tsv import write_pharaoh

# The adjust paper's fast_align flags: -d favour the diagonal, -o optimise the diagonal
# tension, -v variational Bayes (alpha 0.01); iterations and the null probability are the
# tool's defaults (5, 0.08). systran-align takes the same settings by name.
FAST_ALIGN_FLAGS = ("-d", "-o", "-v")
FAST_ALIGN_SETTINGS = {"favor_diagonal": True, "optimize_tension": True, "variational_bayes": True,
                       "iterations": 5, "alpha": 0.01, "prob_align_null": 0.08, "diagonal_tension": 4.0}  # fmt: skip


def write_joint(pool: Path, out: Path) -> int:
    """fast_align's input: ``en tokens ||| xx tokens`` per line. Tokens are single punctuation
    marks or word characters, so no token can spell the separator."""
    n = 0
    with open(out, "w", encoding="utf-8", newline="\n") as f:
        for _lineno, _id, src, tgt in iter_pool(pool):
            f.write(f"{' '.join(src)} ||| {' '.join(tgt)}\n")
            n += 1
    return n


def _omp_env(threads: int) -> dict:
    return {**os.environ, "OMP_NUM_THREADS": str(max(1, int(threads)))}


class Backend:
    """One aligner. `align` writes Pharaoh files into `work` and returns them by kind:
    ``{"forward", "reverse"}`` (directional) or ``{"symmetrised"}``."""

    name: str = ""
    package: str | None = None  # the PyPI distribution, when there is one
    directional: bool = True  # forward and reverse written separately (exact intersection)
    deterministic: bool = True

    def available(self) -> bool:
        raise NotImplementedError

    def version(self) -> str:
        return importlib.metadata.version(self.package)

    def settings(self) -> dict:
        raise NotImplementedError

    def align(self, pool: Path, work: Path, threads: int) -> dict[str, Path]:
        raise NotImplementedError

    def describe(self) -> dict:
        """What every output records about the aligner that made it."""
        return {"name": self.name, "version": self.version(), "settings": self.settings(),
                "directional": self.directional, "deterministic": self.deterministic,
                "symmetrisation": "intersection" if self.directional else "the backend's own (not the intersection)"}  # fmt: skip


class FastAlign(Backend):
    name = "fast_align"

    def binary(self) -> str:
        found = shutil.which("fast_align")
        if not found:
            raise XltError("backend fast_align: no `fast_align` executable on PATH (`make fast_align` builds "
                           "github.com/clab/fast_align and says what to add to PATH, "
                           "or set align.backend to eflomal or systran_align)")  # fmt: skip
        return found

    def available(self) -> bool:
        return shutil.which("fast_align") is not None

    def version(self) -> str:
        # fast_align prints no version: the binary's checksum identifies the build
        return "sha256:" + hashlib.sha256(Path(self.binary()).read_bytes()).hexdigest()[:16]

    def settings(self) -> dict:
        return {"flags": list(FAST_ALIGN_FLAGS), "binary": self.binary()}

    def align(self, pool: Path, work: Path, threads: int) -> dict[str, Path]:
        joint = work / "joint.txt"
        write_joint(pool, joint)
        out = {"forward": work / "forward.pharaoh", "reverse": work / "reverse.pharaoh"}
        for direction, extra in (("forward", ()), ("reverse", ("-r",))):
            with open(out[direction], "wb") as f:
                run = subprocess.run([self.binary(), "-i", str(joint), *FAST_ALIGN_FLAGS, *extra], stdout=f,
                                     stderr=subprocess.PIPE, env=_omp_env(threads))  # fmt: skip
            if run.returncode != 0:
                tail = run.stderr.decode(errors="replace").strip().splitlines()[-3:]
                raise XltError(f"fast_align {direction} failed (exit {run.returncode}): {' | '.join(tail)}")
        joint.unlink()
        return out


class Eflomal(Backend):
    name = "eflomal"
    package = "eflomal"
    deterministic = False
    # the package's defaults: model 3 (IBM1 + HMM + fertility), 3 samplers, iterations by corpus size
    SETTINGS = {"model": 3, "n_samplers": 3, "null_prior": 0.2, "n_iterations": None}

    def available(self) -> bool:
        return importlib.util.find_spec("eflomal") is not None

    def settings(self) -> dict:
        return dict(self.SETTINGS)

    def align(self, pool: Path, work: Path, threads: int) -> dict[str, Path]:
        # deferred: loads eflomal only when this runs
        from eflomal import Aligner

        src, tgt = work / "src.txt", work / "tgt.txt"
        with open(src, "w", encoding="utf-8") as fs, open(tgt, "w", encoding="utf-8") as ft:
            for _lineno, _id, s, t in iter_pool(pool):
                fs.write(" ".join(s) + "\n")
                ft.write(" ".join(t) + "\n")
        out = {"forward": work / "forward.pharaoh", "reverse": work / "reverse.pharaoh"}
        saved = os.environ.get("OMP_NUM_THREADS")
        os.environ["OMP_NUM_THREADS"] = str(max(1, int(threads)))  # the eflomal binary is a child process
        try:
            with open(src, encoding="utf-8") as fs, open(tgt, encoding="utf-8") as ft:
                Aligner(**self.SETTINGS).align(fs, ft, links_filename_fwd=str(out["forward"]),
                                                links_filename_rev=str(out["reverse"]), quiet=True)  # fmt: skip
        except (ValueError, OSError, subprocess.CalledProcessError) as e:
            raise XltError(f"eflomal failed on {pool}: {e}") from None
        finally:
            if saved is None:
                os.environ.pop("OMP_NUM_THREADS", None)
            else:
                os.environ["OMP_NUM_THREADS"] = saved
        src.unlink()
        tgt.unlink()
        return out


class SystranAlign(Backend):
    name = "systran_align"
    package = "systran-align"
    directional = False
    BATCH = 10_000  # pairs per align_batch call: bounded memory on a 250K pool

    def available(self) -> bool:
        return importlib.util.find_spec("systran_align") is not None

    def settings(self) -> dict:
        return dict(FAST_ALIGN_SETTINGS)

    def align(self, pool: Path, work: Path, threads: int) -> dict[str, Path]:
        # fast_align's EM sums its counts in OpenMP loops, and the wheel's libgomp fixes its
        # thread count when it loads: in a long-lived process that already imported it (a test
        # session, the zygote) a run could depend on what that process had done before (the
        # determinism test failed about one full suite in four, never alone). A fresh
        # interpreter per run starts from nothing but `threads`.
        out = {"symmetrised": work / "symmetrised.pharaoh"}
        cmd = [sys.executable, "-c", "import sys; from xlt.align.backends import systran_align_child as m; m(*sys.argv[1:])",
               str(pool), str(work), str(out["symmetrised"])]  # fmt: skip
        run = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_omp_env(threads))
        if run.returncode != 0:
            tail = run.stderr.decode(errors="replace").strip().splitlines()[-3:]
            raise XltError(f"systran-align failed on {pool} (exit {run.returncode}): {' | '.join(tail)}")
        return out


def systran_align_child(pool: str, work: str, out: str) -> None:
    """systran-align's training and alignment, in the child process `SystranAlign.align` starts."""
    # deferred: loads systran_align only when this runs
    import systran_align

    pool, work = Path(pool), Path(work)
    joint, fwd, bwd = work / "joint.txt", work / "forward.params", work / "backward.params"
    write_joint(pool, joint)
    systran_align.generate_alignment_probabilities(str(joint), str(fwd), str(bwd), **FAST_ALIGN_SETTINGS)
    aligner = systran_align.Aligner(str(fwd), str(bwd))
    write_pharaoh(Path(out), _batched_links(aligner, pool, SystranAlign.BATCH))
    for p in (joint, fwd, bwd):
        p.unlink()


def _batched_links(aligner, pool: Path, batch: int) -> Iterator[list[tuple[int, int]]]:
    src, tgt = [], []
    for _lineno, _id, s, t in iter_pool(pool):
        src.append(s)
        tgt.append(t)
        if len(src) == batch:
            yield from (sorted(r["alignments"]) for r in aligner.align_batch(src, tgt))
            src, tgt = [], []
    if src:
        yield from (sorted(r["alignments"]) for r in aligner.align_batch(src, tgt))


BACKENDS: dict[str, Backend] = {b.name: b for b in (FastAlign(), Eflomal(), SystranAlign())}


def get_backend(name: str) -> Backend:
    try:
        return BACKENDS[name]
    except KeyError:
        raise XltError(f"unknown alignment backend {name!r}; allowed: {', '.join(BACKENDS)}") from None


def available_backends() -> list[str]:
    return [name for name, b in BACKENDS.items() if b.available()]
