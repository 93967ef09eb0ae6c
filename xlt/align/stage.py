"""Align a pool with one backend and write the links the adjustment uses.

    raw/forward.pharaoh + raw/reverse.pharaoh   (directional backends)  --intersect--+
    raw/symmetrised.pharaoh                     (systran-align)          ----------+--> 1-to-1
                                                                                          |
    links.pharaoh (one line per pool pair) + align.json (provenance, counts, speed) <-----+

Every raw file is parsed by the same reader (`iter_pharaoh`) and checked against the pool's
sentence lengths, so a file from another pool fails naming its line.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

from xlt.align.backends import get_backend
from xlt.align.links import Link, check_bounds, intersect, one_to_one
from xlt.align.pool import iter_pool
from xlt.errors import DataFormatError
from xlt.formats.tsv import iter_pharaoh, write_pharaoh
from xlt.io import atomic_dir, sha256_file, write_json
from xlt.provenance import code_version

RAW_KINDS = ("forward", "reverse", "symmetrised")


def raw_files(raw_dir: str | Path) -> dict[str, Path]:
    """The Pharaoh files a backend left in `raw_dir`, by kind."""
    return {k: Path(raw_dir) / f"{k}.pharaoh" for k in RAW_KINDS if (Path(raw_dir) / f"{k}.pharaoh").exists()}


def iter_raw(pool: str | Path, raw: dict[str, Path]) -> Iterator[dict[str, list[Link]]]:
    """Per pool pair, the links of each raw file (bounds-checked); every file must have one
    line per pair."""
    streams = {k: iter_pharaoh(p) for k, p in raw.items()}
    n = 0
    for lineno, _id, src, tgt in iter_pool(pool):
        n += 1
        row = {}
        for kind, stream in streams.items():
            links = next(stream, None)
            if links is None:
                raise DataFormatError(raw[kind], None, f"ends after {n - 1} lines; the pool {pool} has more pairs")
            check_bounds(links, len(src), len(tgt), raw[kind], lineno)
            row[kind] = links
        yield row
    for kind, stream in streams.items():
        if next(stream, None) is not None:
            raise DataFormatError(raw[kind], n + 1, f"more lines than the pool {pool} has pairs ({n})")


def symmetrise(row: dict[str, list[Link]]) -> list[Link]:
    """The links before the 1-to-1 filter: the intersection, or the backend's own symmetrisation."""
    if "symmetrised" in row:
        return sorted(row["symmetrised"])
    return intersect(row["forward"], row["reverse"])


def final_links(row: dict[str, list[Link]]) -> list[Link]:
    return one_to_one(symmetrise(row))


def align_pool(pool: str | Path, backend: str, raw_dir: str | Path, links_out: str | Path, meta_out: str | Path,
               threads: int = 1) -> dict:  # fmt: skip
    """Run `backend` on `pool`; write its raw files, the final 1-to-1 links and provenance."""
    b = get_backend(backend)
    described = b.describe()  # fails here, before any work, when the backend is missing
    t0 = time.perf_counter()
    with atomic_dir(raw_dir) as work:
        raw = b.align(Path(pool), work, threads)
    seconds = time.perf_counter() - t0
    raw = {k: Path(raw_dir) / p.name for k, p in raw.items()}
    counts = {"pairs": 0, "pairs_with_links": 0, "symmetrised_links": 0, "one_to_one_links": 0}

    def rows():
        for row in iter_raw(pool, raw):
            sym = symmetrise(row)
            kept = one_to_one(sym)
            counts["pairs"] += 1
            counts["pairs_with_links"] += bool(kept)
            counts["symmetrised_links"] += len(sym)
            counts["one_to_one_links"] += len(kept)
            yield kept

    write_pharaoh(links_out, rows())
    meta = {
        "backend": described,
        "threads": threads,
        "pool": {"path": str(pool), "sha256": sha256_file(pool)},
        "raw": {k: {"path": str(p), "sha256": sha256_file(p)} for k, p in raw.items()},
        "links_sha256": sha256_file(links_out),
        "counts": counts,
        "seconds": round(seconds, 3),
        "pairs_per_second": round(counts["pairs"] / seconds, 1) if seconds > 0 else None,
        "code": code_version(),
    }
    write_json(meta_out, meta)
    return meta
