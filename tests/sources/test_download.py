"""download(): checksum before rename, resume / restart, manual fallback, require_pin."""

from __future__ import annotations

import pytest

from tests.sources.realfiles import make_ud_tgz, make_wikimatrix_gz, sha256_bytes
from xlt.errors import XltError
from xlt.sources.fetch import ChecksumError, DownloadError, UnpinnedError, download


@pytest.fixture
def payload():
    # Big enough that "half" is a real partial transfer, small enough to stay fast.
    data = make_ud_tgz() + bytes(range(256)) * 400
    return data, sha256_bytes(data)


def test_download_verifies_and_renames(server, tmp_path, payload):
    data, digest = payload
    url = server.put("lindat/ud-treebanks-v2.5.tgz", data)
    dest = tmp_path / "raw" / "_archives" / "ud-treebanks-v2.5.tgz"
    got = download(url, dest, digest, manual_dir=tmp_path / "manual")
    assert got.origin == "network" and got.sha256 == digest and got.size == len(data)
    assert dest.read_bytes() == data
    assert not dest.with_name(dest.name + ".part").exists()
    # A verified file is not fetched again.
    n = len(server.gets())
    again = download(url, dest, digest, manual_dir=tmp_path / "manual")
    assert again.origin == "existing" and len(server.gets()) == n


def test_checksum_mismatch_is_refused_and_removed(server, tmp_path, payload):
    data, digest = payload
    url = server.put("WikiMatrix.en-es.tsv.gz", make_wikimatrix_gz())
    actual = sha256_bytes(make_wikimatrix_gz())
    dest = tmp_path / "raw" / "wikimatrix" / "WikiMatrix.en-es.tsv.gz"
    with pytest.raises(ChecksumError) as e:
        download(url, dest, digest, manual_dir=tmp_path / "manual")
    msg = str(e.value)
    assert digest in msg and actual in msg and "WikiMatrix.en-es.tsv.gz" in msg
    assert "\n" not in msg
    assert not dest.exists()
    assert not dest.with_name(dest.name + ".part").exists()
    assert list(dest.parent.iterdir()) == []


def test_resume_with_range(server, tmp_path, payload):
    data, digest = payload
    url = server.put("f.tgz", data)
    dest = tmp_path / "f.tgz"
    part = tmp_path / "f.tgz.part"
    half = len(data) // 3
    part.write_bytes(data[:half])  # left by an interrupted run
    got = download(url, dest, digest, manual_dir=tmp_path / "manual")
    assert got.origin == "network" and dest.read_bytes() == data
    assert server.gets()[-1][2] == f"bytes={half}-"  # asked for the rest only
    assert not part.exists()


def test_restart_when_server_ignores_range(server, tmp_path, payload):
    data, digest = payload
    server.state.support_range = False
    url = server.put("f.tgz", data)
    dest = tmp_path / "f.tgz"
    part = tmp_path / "f.tgz.part"
    part.write_bytes(b"\xff" * 1000)  # junk: appending to it would corrupt the file
    got = download(url, dest, digest, manual_dir=tmp_path / "manual")
    assert dest.read_bytes() == data and got.sha256 == digest
    assert server.gets()[-1][2] == "bytes=1000-"  # it asked, the server answered 200


def test_part_already_complete_416(server, tmp_path, payload):
    data, digest = payload
    url = server.put("f.tgz", data)
    dest = tmp_path / "f.tgz"
    (tmp_path / "f.tgz.part").write_bytes(data)
    got = download(url, dest, digest, manual_dir=tmp_path / "manual")
    assert got.origin == "network" and dest.read_bytes() == data


def test_broken_transfer_resumes_on_retry(server, tmp_path, payload):
    data, digest = payload
    server.state.break_next = 1
    url = server.put("f.tgz", data)
    dest = tmp_path / "f.tgz"
    got = download(url, dest, digest, manual_dir=tmp_path / "manual", retries=3)
    assert dest.read_bytes() == data and got.origin == "network"
    ranges = [r[2] for r in server.gets()]
    assert ranges[0] is None and ranges[1] == f"bytes={len(data) // 2}-"


def test_broken_transfer_restarts_without_range(server, tmp_path, payload):
    data, digest = payload
    server.state.break_next = 1
    server.state.support_range = False
    url = server.put("f.tgz", data)
    dest = tmp_path / "f.tgz"
    download(url, dest, digest, manual_dir=tmp_path / "manual", retries=2)
    assert dest.read_bytes() == data


def test_network_failure_uses_manual_copy(dead_url, tmp_path, payload):
    data, digest = payload
    manual = tmp_path / "resources" / "manual"
    manual.mkdir(parents=True)
    (manual / "ud-treebanks-v2.5.tgz").write_bytes(data)
    dest = tmp_path / "raw" / "_archives" / "ud-treebanks-v2.5.tgz"
    got = download(
        f"{dead_url}/x/ud-treebanks-v2.5.tgz", dest, digest, manual_dir=manual, retries=1
    )
    assert got.origin == "manual" and dest.read_bytes() == data
    assert (manual / "ud-treebanks-v2.5.tgz").exists()  # the user's copy stays


def test_manual_copy_is_checksummed(dead_url, tmp_path, payload):
    data, digest = payload
    manual = tmp_path / "manual"
    manual.mkdir()
    (manual / "ud-treebanks-v2.5.tgz").write_bytes(b"truncated")
    dest = tmp_path / "raw" / "ud-treebanks-v2.5.tgz"
    with pytest.raises(ChecksumError) as e:
        download(f"{dead_url}/ud-treebanks-v2.5.tgz", dest, digest, manual_dir=manual, retries=1)
    assert digest in str(e.value) and sha256_bytes(b"truncated") in str(e.value)
    assert not dest.exists()


def test_network_failure_without_manual_copy_says_where(dead_url, tmp_path, payload):
    _, digest = payload
    manual = tmp_path / "resources" / "manual"
    url = f"{dead_url}/repository/ud-treebanks-v2.5.tgz"
    with pytest.raises(DownloadError) as e:
        download(url, tmp_path / "raw" / "a.tgz", digest, manual_dir=manual, retries=1)
    msg = str(e.value)
    assert url in msg and str(manual / "ud-treebanks-v2.5.tgz") in msg and digest in msg
    assert "connection refused by 127.0.0.1" in msg  # the network's reason, in words
    assert "\n" not in msg


def test_a_host_that_does_not_resolve_is_a_dns_failure(tmp_path):
    with pytest.raises(DownloadError, match=r"\(DNS failure: the host xlt-no-such-host\.invalid could not be resolved"):
        download("http://xlt-no-such-host.invalid/a.tgz", tmp_path / "a.tgz", None, manual_dir=tmp_path, retries=1)


def test_http_404_falls_back_to_manual(server, tmp_path, payload):
    data, digest = payload
    manual = tmp_path / "manual"
    manual.mkdir()
    (manual / "gone.tgz").write_bytes(data)
    got = download(f"{server.url}/gone.tgz", tmp_path / "gone.tgz", digest, manual_dir=manual)
    assert got.origin == "manual"
    assert len(server.gets()) == 1  # a 404 is not retried


def test_require_pin_refuses_before_any_request(server, tmp_path):
    url = server.put("f.gz", make_wikimatrix_gz())
    with pytest.raises(UnpinnedError) as e:
        download(url, tmp_path / "f.gz", None, manual_dir=tmp_path, require_pin=True)
    assert "require_pins" in str(e.value)
    assert server.state.requests == []


def test_unpinned_is_fetched_and_its_digest_returned(server, tmp_path):
    data = make_wikimatrix_gz()
    url = server.put("f.gz", data)
    got = download(url, tmp_path / "f.gz", None, manual_dir=tmp_path)
    assert got.sha256 == sha256_bytes(data) and got.origin == "network"


def test_bad_pin_format(tmp_path):
    with pytest.raises(XltError, match="64 hex"):
        download("http://127.0.0.1:1/x", tmp_path / "x", "abc", manual_dir=tmp_path)


def test_existing_file_not_matching_its_pin_is_replaced(server, tmp_path, payload):
    data, digest = payload
    url = server.put("f.tgz", data)
    dest = tmp_path / "f.tgz"
    dest.write_bytes(b"an older release")
    got = download(url, dest, digest, manual_dir=tmp_path / "manual")
    assert got.origin == "network" and dest.read_bytes() == data
