"""Every backend goes through one parser: raw Pharaoh files -> intersection / own
symmetrisation -> 1-to-1 links, bounds-checked against the pool."""

import json
import os
import sys
from pathlib import Path

import pytest

from xlt.align.backends import BACKENDS, FAST_ALIGN_FLAGS, available_backends, get_backend
from xlt.align.links import intersect, one_to_one
from xlt.align.pool import PoolConfig, build_pool
from xlt.align.stage import align_pool, raw_files
from xlt.errors import DataFormatError, XltError
from xlt.formats.tsv import read_pharaoh, write_pharaoh

# A stand-in for the fast_align binary: records its arguments, then prints Pharaoh links for
# each `src ||| tgt` line: the diagonal forward; with -r the diagonal plus one extra link.
FAKE_FAST_ALIGN = f"""#!{sys.executable}
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_FAST_ALIGN_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
path = args[args.index("-i") + 1]
for line in open(path, encoding="utf-8"):
    src, tgt = (side.split() for side in line.rstrip("\\n").split(" ||| "))
    links = [f"{{k}}-{{k}}" for k in range(min(len(src), len(tgt)))]
    if "-r" in args and len(tgt) > 1:
        links.append(f"0-{{len(tgt) - 1}}")
    print(" ".join(links))
"""


@pytest.fixture
def fake_fast_align(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "fast_align"
    exe.write_text(FAKE_FAST_ALIGN)
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_FAST_ALIGN_LOG", str(tmp_path / "calls.jsonl"))
    return tmp_path / "calls.jsonl"


@pytest.fixture
def pool(bitext, tmp_path):
    build_pool(bitext, tmp_path / "pool.tsv", PoolConfig())
    return tmp_path / "pool.tsv"


def _run(pool, backend, out):
    return align_pool(pool, backend, out / "raw", out / "links.pharaoh", out / "align.json", threads=1)


def _expected_final(raw_dir):
    raw = {k: read_pharaoh(p) for k, p in raw_files(raw_dir).items()}
    if "symmetrised" in raw:
        return [one_to_one(s) for s in raw["symmetrised"]]
    return [one_to_one(intersect(f, r)) for f, r in zip(raw["forward"], raw["reverse"], strict=True)]


def test_fast_align_runs_forward_and_reverse_with_the_papers_flags(pool, fake_fast_align, tmp_path):
    meta = _run(pool, "fast_align", tmp_path / "fa")
    calls = [json.loads(line) for line in fake_fast_align.read_text().splitlines()]
    assert len(calls) == 2 and all(set(FAST_ALIGN_FLAGS) <= set(c) for c in calls)
    assert ["-r" in c for c in calls] == [False, True]
    # the extra reverse link 0-(n-1) is not in forward: the intersection drops it
    assert read_pharaoh(tmp_path / "fa/links.pharaoh")[1] == [(0, 0), (1, 1), (2, 2)]
    assert meta["backend"]["name"] == "fast_align" and meta["backend"]["symmetrisation"] == "intersection"
    assert meta["backend"]["version"].startswith("sha256:")
    assert meta["counts"]["pairs"] == 4 and len(meta["pool"]["sha256"]) == 64


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_every_backend_is_parsed_the_same_way(pool, fake_fast_align, tmp_path, backend):
    if not get_backend(backend).available():
        pytest.skip(f"{backend} is not installed")
    out = tmp_path / backend
    meta = _run(pool, backend, out)
    final = read_pharaoh(out / "links.pharaoh")
    assert len(final) == meta["counts"]["pairs"] == 4
    assert final == _expected_final(out / "raw")
    kinds = set(raw_files(out / "raw"))
    assert kinds == ({"forward", "reverse"} if get_backend(backend).directional else {"symmetrised"})
    assert meta["backend"]["version"] and meta["backend"]["settings"]


def test_systran_align_and_eflomal_are_installed_by_the_project():
    # pinned in pyproject.toml / constraints.txt: `make install` brings both
    assert {"eflomal", "systran_align"} <= set(available_backends())


def test_a_missing_fast_align_binary_is_one_clear_error(pool, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(XltError, match="no `fast_align` executable on PATH"):
        _run(pool, "fast_align", tmp_path / "fa")
    assert not (tmp_path / "fa" / "links.pharaoh").exists()


def test_an_unknown_backend_lists_the_allowed_ones():
    with pytest.raises(XltError, match="allowed: fast_align, eflomal, systran_align"):
        get_backend("giza")


def test_raw_links_outside_a_sentence_or_too_few_lines_name_the_file(pool, tmp_path):
    from xlt.align.stage import iter_raw

    raw = tmp_path / "raw"
    write_pharaoh(raw / "forward.pharaoh", [[(0, 0)], [(0, 0)], [(0, 0)], [(0, 0)]])
    write_pharaoh(raw / "reverse.pharaoh", [[(0, 0)], [(9, 0)], [(0, 0)], [(0, 0)]])
    with pytest.raises(DataFormatError, match=r"reverse.pharaoh:2: link 9-0 outside"):
        list(iter_raw(pool, raw_files(raw)))
    write_pharaoh(raw / "reverse.pharaoh", [[(0, 0)]])
    with pytest.raises(DataFormatError, match=r"reverse.pharaoh: ends after 1 lines"):
        list(iter_raw(pool, raw_files(raw)))
    (raw / "reverse.pharaoh").write_text("0-0\n0-x\n")
    with pytest.raises(DataFormatError, match=r"reverse.pharaoh:2: bad alignment link '0-x'"):
        list(iter_raw(pool, raw_files(raw)))


def test_systran_align_is_deterministic(pool, tmp_path):
    if not get_backend("systran_align").available():
        pytest.skip("systran-align is not installed")
    a, b = _run(pool, "systran_align", tmp_path / "a"), _run(pool, "systran_align", tmp_path / "b")
    assert a["links_sha256"] == b["links_sha256"]
    assert Path(tmp_path / "a/raw/symmetrised.pharaoh").read_bytes() == Path(tmp_path / "b/raw/symmetrised.pharaoh").read_bytes()
