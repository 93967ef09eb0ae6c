"""The pool: threshold, filters, size cap, streaming reader errors."""

import gzip

import pytest

from xlt.align.pool import PoolConfig, build_pool, iter_pool
from xlt.errors import DataFormatError, XltError


def test_filters_drop_low_scores_identical_strings_and_long_sentences(bitext, tmp_path):
    meta = build_pool(bitext, tmp_path / "pool.tsv", PoolConfig())
    assert meta["counts"] == {"read": 7, "below_threshold": 1, "empty": 0, "identical": 1, "too_long": 1, "kept": 4}
    pool = list(iter_pool(tmp_path / "pool.tsv"))
    assert [p[1] for p in pool] == ["en-es-1", "en-es-2", "en-es-5", "en-es-6"]  # ids name WikiMatrix lines
    assert pool[0][2:] == (["the", "house", "is", "small", "."], ["la", "casa", "es", "pequeña", "."])
    assert meta["complete"] is False


def test_max_words_is_inclusive_and_configurable(bitext, tmp_path):
    kept = build_pool(bitext, tmp_path / "p.tsv", PoolConfig(max_words=65))["counts"]
    assert kept["too_long"] == 0 and kept["kept"] == 5
    kept = build_pool(bitext, tmp_path / "p.tsv", PoolConfig(max_words=3))["counts"]
    assert kept["too_long"] == 2  # the 5-token pair and the 65-word pair


def test_the_pool_stops_at_its_size_in_file_order(bitext, tmp_path):
    meta = build_pool(bitext, tmp_path / "pool.tsv", PoolConfig(size=2))
    assert meta["complete"] and meta["counts"]["read"] == 2
    assert [p[1] for p in iter_pool(tmp_path / "pool.tsv")] == ["en-es-1", "en-es-2"]


@pytest.mark.parametrize(
    ("line", "message"),
    [(b"1.2\tonly two columns\n", r":2: expected 3 tab-separated columns"),
     (b"high\ten\tes\n", r":2: margin score 'high' is not a number"),
     (b"1.2\t\xff\xfe\tes\n", r":2: invalid UTF-8")],
)  # fmt: skip
def test_a_bad_bitext_line_names_file_and_line(tmp_path, line, message):
    path = tmp_path / "WikiMatrix.en-es.tsv.gz"
    with gzip.open(path, "wb") as f:
        f.write(b"1.3\tthe cat\tel gato\n" + line)
    with pytest.raises(DataFormatError, match=r"WikiMatrix.en-es.tsv.gz" + message):
        build_pool(path, tmp_path / "pool.tsv", PoolConfig())
    assert not (tmp_path / "pool.tsv").exists()  # no partial output


def test_nothing_kept_is_an_error(tmp_path):
    path = tmp_path / "WikiMatrix.en-es.tsv.gz"
    with gzip.open(path, "wb") as f:
        f.write(b"0.9\tthe cat\tel gato\n")
    with pytest.raises(XltError, match="no sentence pair passes"):
        build_pool(path, tmp_path / "pool.tsv", PoolConfig())


def test_the_pool_script_fails_with_one_line_and_no_output(tmp_path):
    import subprocess
    import sys

    from tests.conftest import REPO

    path = tmp_path / "WikiMatrix.en-es.tsv.gz"
    with gzip.open(path, "wb") as f:
        f.write(b"1.3\tthe cat\tel gato\n1.2\tno score column\n")
    run = subprocess.run([sys.executable, str(REPO / "workflow_scripts/align_stage.py"), "pool", "--bitext", str(path),
                          "--pool-config", '{"size": 10, "max_words": 64}', "--out", str(tmp_path / "pool.tsv"),
                          "--meta", str(tmp_path / "pool.json")], capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 1
    assert run.stderr.strip() == f"error: {path}:2: expected 3 tab-separated columns (score, en, xx), got 2"
    assert not (tmp_path / "pool.tsv").exists() and not (tmp_path / "pool.json").exists()
