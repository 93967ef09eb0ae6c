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


@pytest.fixture
def no_backoff(monkeypatch):
    """huggingface_hub retries a failed connection 5 times with growing sleeps (~23 s): the
    error is the same after the first try."""
    from huggingface_hub.utils import _http

    monkeypatch.setattr(_http.time, "sleep", lambda s: None)


@pytest.mark.parametrize("endpoint, cause", [
    ("http://xlt-no-such-host.invalid", "DNS failure: the host xlt-no-such-host.invalid could not be resolved"),
    ("dead_url", "connection refused by 127.0.0.1"),
])  # fmt: skip
def test_an_unreachable_hub_names_the_network_not_a_missing_file(hf_online, no_backoff, tmp_path, endpoint, cause,
                                                                 request):  # fmt: skip
    """huggingface_hub reports a failed connection as LocalEntryNotFoundError (an EntryNotFoundError):
    the message names the network's reason, not "no such file"."""
    from xlt.sources.fetch import HubFileMissing

    endpoint = request.getfixturevalue(endpoint) if endpoint == "dead_url" else endpoint
    with pytest.raises(DownloadError) as e:
        fetch_hub_files("org/ds", "main", ["a.parquet"], tmp_path, endpoint=endpoint, cache_dir=hf_online)
    assert not isinstance(e.value, HubFileMissing)
    assert f"The network: {cause}" in str(e.value) and "no such file" not in str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("variable", ["HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"])
def test_the_offline_variable_that_is_set_is_named(server, hf_online, tmp_path, monkeypatch, variable):
    """huggingface_hub reads HF_HUB_OFFLINE or else TRANSFORMERS_OFFLINE: the one set is named."""
    from huggingface_hub import constants

    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # what it read at import with that variable
    repo = server.hub_repo("org/ds", {"a.parquet": b"x"})
    with pytest.raises(DownloadError) as e:
        fetch_hub_files("org/ds", repo.commit, ["a.parquet"], tmp_path, endpoint=server.url, cache_dir=hf_online)
    assert f"switched off here by {variable}=1" in str(e.value)
    other = {"HF_HUB_OFFLINE": "TRANSFORMERS_OFFLINE", "TRANSFORMERS_OFFLINE": "HF_HUB_OFFLINE"}[variable]
    assert other not in str(e.value) and "no such file" not in str(e.value)


def test_a_missing_file_on_a_reachable_hub_is_still_a_missing_file(server, hf_online, tmp_path):
    from xlt.sources.fetch import HubFileMissing

    repo = server.hub_repo("org/ds", {"a.parquet": b"x"})
    with pytest.raises(HubFileMissing, match="The repo has no such file at this revision"):
        fetch_hub_files("org/ds", repo.commit, ["b.parquet"], tmp_path, endpoint=server.url, cache_dir=hf_online)
