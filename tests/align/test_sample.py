"""Seeded samples of aligned pairs: reproducible, distinct across seeds, only aligned pairs."""

import json

import pytest

from xlt.align.pool import PoolConfig, build_pool
from xlt.align.sample import choose, write_sample
from xlt.errors import DataFormatError, XltError
from xlt.formats.tsv import write_pharaoh
from xlt.io import write_json

N_PAIRS = 40


@pytest.fixture
def aligned(tmp_path):
    """A pool of 40 pairs and hand-made links; every 5th pair has none."""
    from xlt.formats.tsv import write_wikimatrix

    bitext = tmp_path / "WikiMatrix.en-es.tsv.gz"
    write_wikimatrix(bitext, [(2.0 - k / 100, f"w{k} a b", f"x{k} c d") for k in range(N_PAIRS)])
    build_pool(bitext, tmp_path / "pool.tsv", PoolConfig())
    write_pharaoh(tmp_path / "links.pharaoh", [[] if k % 5 == 0 else [(0, 0), (2, 1)] for k in range(N_PAIRS)])
    write_json(tmp_path / "align.json", {"backend": {"name": "eflomal", "version": "2.0.0", "settings": {"model": 3}}})
    return tmp_path


def _sample(d, n, seed, name):
    meta = write_sample(d / "pool.tsv", d / "links.pharaoh", d / "align.json", n, seed, d / f"{name}.jsonl", d / f"{name}.json")
    return [json.loads(line) for line in (d / f"{name}.jsonl").read_text().splitlines()], meta


def test_a_seed_fixes_the_sample_byte_for_byte(aligned):
    a, _ = _sample(aligned, 10, 3, "a")
    b, _ = _sample(aligned, 10, 3, "b")
    assert (aligned / "a.jsonl").read_bytes() == (aligned / "b.jsonl").read_bytes()
    c, _ = _sample(aligned, 10, 4, "c")
    assert [r["id"] for r in a] != [r["id"] for r in c]


def test_only_aligned_pairs_are_drawn_without_repeats(aligned):
    recs, meta = _sample(aligned, 32, 1, "all")  # every aligned pair (8 of 40 have no links)
    ids = [r["id"] for r in recs]
    assert len(set(ids)) == 32 and all(r["links"] == [[0, 0], [2, 1]] for r in recs)
    assert ids == sorted(ids, key=lambda i: int(i.rsplit("-", 1)[1]))  # pool order
    assert recs[0]["src"] == ["w1", "a", "b"]


def test_sample_provenance_names_backend_pool_and_seed(aligned):
    _, meta = _sample(aligned, 5, 7, "s")
    assert meta["seed"] == 7 and meta["size"] == 5 and meta["links"] == 10
    assert meta["backend"] == {"name": "eflomal", "version": "2.0.0", "settings": {"model": 3}}
    assert len(meta["pool_sha256"]) == len(meta["links_sha256"]) == len(meta["sample_sha256"]) == 64


def test_a_sample_larger_than_the_aligned_pool_fails_loudly(aligned):
    with pytest.raises(XltError, match="sample of 33 pairs asked, but the pool .* has only 32 aligned pairs"):
        _sample(aligned, 33, 1, "big")
    assert not (aligned / "big.jsonl").exists()
    assert len(choose(aligned / "pool.tsv", aligned / "links.pharaoh", 33, 1, at_most=True)) == 32


def test_links_of_another_pool_are_refused(aligned):
    write_pharaoh(aligned / "links.pharaoh", [[(0, 0)]] * (N_PAIRS + 1))
    with pytest.raises(DataFormatError, match=r"links.pharaoh:41: more lines than the pool"):
        _sample(aligned, 5, 1, "x")


def test_links_joining_identical_words_are_dropped_and_their_pairs_with_nothing_left_not_drawn(tmp_path):
    """The authors' pair filter: a link stays only where its two words differ ('.', names and
    numbers are dropped); a pair whose links were all identical is not drawn."""
    from xlt.formats.tsv import write_wikimatrix

    rows = [(1.9, "Anna sees 3 dogs .", "Anna ve 3 perros ."), (1.8, "Berlin 2020", "Berlin 2020 ."), (1.7, "a cat", "un gato")]
    write_wikimatrix(tmp_path / "WikiMatrix.en-es.tsv.gz", rows)
    build_pool(tmp_path / "WikiMatrix.en-es.tsv.gz", tmp_path / "pool.tsv", PoolConfig())
    identity = [[(i, i) for i in range(5)], [(0, 0), (1, 1)], [(0, 0), (1, 1)]]
    write_pharaoh(tmp_path / "links.pharaoh", identity)
    write_json(tmp_path / "align.json", {"backend": {"name": "eflomal", "version": "2.0.0", "settings": {}}})
    recs, meta = _sample(tmp_path, 2, 1, "s")
    assert [r["links"] for r in recs] == [[[1, 1], [3, 3]], [[0, 0], [1, 1]]]  # sees-ve, dogs-perros; a-un, cat-gato
    assert meta["links"] == 4 and meta["identical_links"] == "dropped"
    with pytest.raises(XltError, match="only 2 aligned pairs"):  # "Berlin 2020" has no link left
        _sample(tmp_path, 3, 1, "t")
    # the L2 analysis's draws keep every link (its related pairs are the aligner's)
    assert len(choose(tmp_path / "pool.tsv", tmp_path / "links.pharaoh", 3, 1)) == 3


def test_a_named_draw_is_another_sample_of_the_same_seed_and_as_reproducible(aligned):
    adjust, _ = _sample(aligned, 10, 3, "adjust")
    meta = write_sample(aligned / "pool.tsv", aligned / "links.pharaoh", aligned / "align.json", 10, 3,
                        aligned / "c1.jsonl", aligned / "c1.json", draw="continual")
    write_sample(aligned / "pool.tsv", aligned / "links.pharaoh", aligned / "align.json", 10, 3,
                 aligned / "c2.jsonl", aligned / "c2.json", draw="continual")
    assert (aligned / "c1.jsonl").read_bytes() == (aligned / "c2.jsonl").read_bytes()
    continual = [json.loads(line)["id"] for line in (aligned / "c1.jsonl").read_text().splitlines()]
    assert len(continual) == 10 and continual != [r["id"] for r in adjust]
    assert meta["draw"] == "continual" and meta["seed"] == 3
