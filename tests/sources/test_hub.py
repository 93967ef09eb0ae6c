"""fetch_hub_files(): the real huggingface_hub.hf_hub_download against an emulated Hub."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from tests.sources.realfiles import make_marc_jsonl, make_wikiann_parquet, sha256_bytes
from xlt.sources.fetch import ChecksumError, DownloadError, fetch_hub_files


def test_fetch_parquet_at_commit(server, hf_online, tmp_path):
    data = make_wikiann_parquet("en")
    repo = server.hub_repo("unimelb-nlp/wikiann", {"en/train-00000-of-00001.parquet": data})
    got = fetch_hub_files(
        "unimelb-nlp/wikiann",
        repo.commit,
        {"en/train-00000-of-00001.parquet": "wikiann/en/train-00000-of-00001.parquet"},
        tmp_path / "raw",
        endpoint=server.url,
        cache_dir=hf_online,
    )
    dest = tmp_path / "raw" / "wikiann/en/train-00000-of-00001.parquet"
    assert got[0].path == dest and got[0].origin == "hub"
    assert got[0].revision == repo.commit and got[0].sha256 == sha256_bytes(data)
    table = pq.read_table(dest)
    assert table.column_names == ["tokens", "ner_tags", "langs", "spans"]
    assert table.column("ner_tags").to_pylist()[0] == [1, 2, 0, 0, 5]
    # hf_hub_download made the Hub's calls: HEAD for metadata, then GET.
    methods = [r[0] for r in server.state.requests]
    assert methods == ["HEAD", "GET"]
    assert server.state.requests[0][1] == (
        f"/datasets/unimelb-nlp/wikiann/resolve/{repo.commit}/en/train-00000-of-00001.parquet"
    )


def test_script_only_repo_reads_convert_branch(server, hf_online, tmp_path):
    data = make_wikiann_parquet("de")
    repo = server.hub_repo(
        "facebook/mlqa", {"mlqa.de.de/test/0000.parquet": data}, refs=("refs/convert/parquet",)
    )
    got = fetch_hub_files(
        "facebook/mlqa",
        "refs/convert/parquet",
        ["mlqa.de.de/test/0000.parquet"],
        tmp_path / "raw",
        endpoint=server.url,
        cache_dir=hf_online,
    )
    assert (tmp_path / "raw/mlqa.de.de/test/0000.parquet").read_bytes() == data
    assert got[0].revision == repo.commit  # the branch resolved to its commit
    assert "/resolve/refs%2Fconvert%2Fparquet/" in server.state.requests[0][1]


def test_jsonl_files(server, hf_online, tmp_path):
    data = make_marc_jsonl("de")
    repo = server.hub_repo("mteb/amazon_reviews_multi", {"de/train.jsonl": data})
    fetch_hub_files("mteb/amazon_reviews_multi", repo.commit, {"de/train.jsonl": "marc/de/train.jsonl"},
                    tmp_path, endpoint=server.url, cache_dir=hf_online)  # fmt: skip
    assert (tmp_path / "marc/de/train.jsonl").read_bytes() == data


def test_missing_file_is_one_clear_line(server, hf_online, tmp_path):
    repo = server.hub_repo("org/ds", {"en/train-00000-of-00001.parquet": b"x"})
    with pytest.raises(DownloadError) as e:
        fetch_hub_files("org/ds", repo.commit, ["en/test-00000-of-00001.parquet"], tmp_path,
                        endpoint=server.url, cache_dir=hf_online)  # fmt: skip
    msg = str(e.value)
    assert f"org/ds@{repo.commit}:en/test-00000-of-00001.parquet" in msg
    assert "no such file" in msg and "\n" not in msg
    assert not (tmp_path / "en").exists()


def test_unknown_revision(server, hf_online, tmp_path):
    server.hub_repo("org/ds", {"a.parquet": b"x"})
    with pytest.raises(DownloadError, match="Check the pinned revision"):
        fetch_hub_files("org/ds", "f" * 40, ["a.parquet"], tmp_path, endpoint=server.url,
                        cache_dir=hf_online)  # fmt: skip


def test_sha256_pin_checked(server, hf_online, tmp_path):
    repo = server.hub_repo("org/ds", {"a.parquet": b"real"})
    with pytest.raises(ChecksumError) as e:
        fetch_hub_files("org/ds", repo.commit, ["a.parquet"], tmp_path, endpoint=server.url,
                        cache_dir=hf_online, sha256={"a.parquet": "0" * 64})  # fmt: skip
    assert "0" * 64 in str(e.value) and sha256_bytes(b"real") in str(e.value)
    assert not (tmp_path / "a.parquet").exists()


def test_offline_mode_is_named(server, hf_online, tmp_path, monkeypatch):
    from huggingface_hub import constants

    repo = server.hub_repo("org/ds", {"a.parquet": b"x"})
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(DownloadError, match="HF_HUB_OFFLINE"):
        fetch_hub_files("org/ds", repo.commit, ["a.parquet"], tmp_path, endpoint=server.url,
                        cache_dir=hf_online)  # fmt: skip
    assert server.state.requests == []
