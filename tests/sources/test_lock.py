"""Lock on first fetch: the first fetch of an unpinned file records it in the lock file,
every later fetch is checked against that record; require_pins; pins vs lock; a killed
download leaves no lock entry; `make pins`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from tests.sources.realfiles import make_wikiann_parquet, make_wikimatrix_gz, sha256_bytes
from xlt.errors import XltError
from xlt.sources.fetch import ChecksumError, UnpinnedError, fetch_source
from xlt.sources.lock import LockConflictError, LockEntry, LockFile
from xlt.sources.pins import main as pins_main

FBAI = "https://dl.fbaipublicfiles.com/"
ES = "wikimatrix/WikiMatrix.en-es.tsv.gz"
SCRIPT = Path(__file__).resolve().parents[2] / "workflow_scripts" / "download.py"


def _wikimatrix(server, tmp_path, **extra):
    lock = tmp_path / "lock.yaml"
    cfg = {"mirrors": {FBAI: f"{server.url}/fb/"}, "manual_dir": str(tmp_path / "m"),
           "lock": str(lock), **extra}  # fmt: skip
    return cfg, lock


def _put(server, lang: str, data: bytes) -> None:
    server.put(f"fb/laser/WikiMatrix/v1/WikiMatrix.en-{lang}.tsv.gz", data)


def test_first_fetch_locks_then_later_fetches_verify(server, tmp_path):
    gz = make_wikimatrix_gz("es")
    _put(server, "es", gz)
    cfg, lock = _wikimatrix(server, tmp_path)
    man = fetch_source("wikimatrix", tmp_path / "raw", ["es"], cfg)
    assert man["files"][0]["check"] == "locked now" and man["lock"] == str(lock)
    doc = yaml.safe_load(lock.read_text())
    entry = doc["sources"]["wikimatrix"][ES]
    assert entry["sha256"] == sha256_bytes(gz) and entry["size"] == len(gz)
    assert entry["url"] == f"{FBAI}laser/WikiMatrix/v1/WikiMatrix.en-es.tsv.gz"  # the catalog's, not the mirror
    assert entry["origin"] == "network" and entry["date"].endswith("Z")
    assert lock.read_text().startswith("# Written by xlt") and doc["version"] == 1
    text = lock.read_text()
    # Again, same raw root: the file in place is checked against the lock, nothing fetched.
    n = len(server.gets())
    man = fetch_source("wikimatrix", tmp_path / "raw", ["es"], cfg)
    assert len(server.gets()) == n and man["files"][0]["check"] == "lock"
    # Again into an empty raw root: fetched, verified against the lock; the lock is unchanged.
    man = fetch_source("wikimatrix", tmp_path / "raw2", ["es"], cfg)
    assert len(server.gets()) == n + 1 and man["files"][0]["check"] == "lock"
    assert lock.read_text() == text
    assert not list(tmp_path.glob(".lock.yaml.*.tmp"))


def test_changed_file_on_server_is_refused(server, tmp_path):
    old, new = make_wikimatrix_gz("es"), make_wikimatrix_gz("es") + b"\0"
    _put(server, "es", old)
    cfg, lock = _wikimatrix(server, tmp_path)
    fetch_source("wikimatrix", tmp_path / "raw", ["es"], cfg)
    text = lock.read_text()
    _put(server, "es", new)  # the host changed the file under the same URL
    with pytest.raises(ChecksumError) as e:
        fetch_source("wikimatrix", tmp_path / "raw2", ["es"], cfg)
    msg = str(e.value)
    assert ES in msg and sha256_bytes(old) in msg and sha256_bytes(new) in msg
    assert f"locked in {lock}" in msg and "\n" not in msg
    assert lock.read_text() == text  # lock untouched
    assert (tmp_path / "raw" / ES).read_bytes() == old  # the old file untouched
    assert list((tmp_path / "raw2" / "wikimatrix").iterdir()) == []  # no file, no .part
    assert not (tmp_path / "raw2" / "manifests").exists()


def test_require_pins_refuses_unlocked_and_accepts_locked(server, tmp_path):
    es, ru = make_wikimatrix_gz("es"), make_wikimatrix_gz("ru")
    _put(server, "es", es)
    _put(server, "ru", ru)
    cfg, lock = _wikimatrix(server, tmp_path)
    fetch_source("wikimatrix", tmp_path / "raw", ["es"], cfg)
    n = len(server.state.requests)
    strict = {**cfg, "require_pins": True}
    with pytest.raises(UnpinnedError) as e:
        fetch_source("wikimatrix", tmp_path / "raw2", ["es", "ru"], strict)
    assert "WikiMatrix.en-ru.tsv.gz" in str(e.value) and "WikiMatrix.en-es" not in str(e.value)
    assert "require_pins" in str(e.value)
    assert len(server.state.requests) == n  # refused before any request
    man = fetch_source("wikimatrix", tmp_path / "raw2", ["es"], strict)  # locked: allowed
    assert man["files"][0]["check"] == "lock"
    assert set(yaml.safe_load(lock.read_text())["sources"]["wikimatrix"]) == {ES}


def test_pin_wins_over_lock_only_when_they_agree(server, tmp_path):
    gz = make_wikimatrix_gz("es")
    _put(server, "es", gz)
    cfg, lock = _wikimatrix(server, tmp_path)
    fetch_source("wikimatrix", tmp_path / "raw", ["es"], cfg)
    text = lock.read_text()
    agree = {**cfg, "pins": {"wikimatrix": {"sha256": {"es": sha256_bytes(gz)}}}}
    man = fetch_source("wikimatrix", tmp_path / "raw2", ["es"], agree)
    assert man["files"][0]["check"] == "pin" and man["pinned"] is True
    with pytest.raises(LockConflictError) as e:
        fetch_source("wikimatrix", tmp_path / "raw3", ["es"],
                     {**cfg, "pins": {"wikimatrix": {"sha256": {"es": "1" * 64}}}})  # fmt: skip
    msg = str(e.value)
    assert "1" * 64 in msg and sha256_bytes(gz) in msg and ES in msg
    assert "download.pins.wikimatrix.sha256.es" in msg and str(lock) in msg
    assert lock.read_text() == text
    assert not (tmp_path / "raw3").exists()


def test_pinned_files_are_not_locked(server, tmp_path):
    gz = make_wikimatrix_gz("es")
    _put(server, "es", gz)
    cfg, lock = _wikimatrix(server, tmp_path, pins={"wikimatrix": {"sha256": {"es": sha256_bytes(gz)}}})
    fetch_source("wikimatrix", tmp_path / "raw", ["es"], cfg)
    assert not lock.exists()


def test_hub_first_fetch_locks_the_commit_and_later_fetches_read_it(server, hf_online, tmp_path):
    files = {f"{lang}/{split}-00000-of-00001.parquet": make_wikiann_parquet(lang)
             for lang in ("en", "de") for split in ("train", "validation", "test")}  # fmt: skip
    repo = server.hub_repo("unimelb-nlp/wikiann", files)
    lock = tmp_path / "lock.yaml"
    cfg = {"hf_endpoint": server.url, "hf_cache_dir": str(hf_online), "lock": str(lock)}
    fetch_source("wikiann", tmp_path / "raw", ["en"], cfg)
    entries = yaml.safe_load(lock.read_text())["sources"]["wikiann"]
    assert sorted(entries) == [f"wikiann/en/{s}-00000-of-00001.parquet" for s in ("test", "train", "validation")]
    e = entries["wikiann/en/train-00000-of-00001.parquet"]
    assert e["revision"] == repo.commit and e["origin"] == "hub"
    assert e["sha256"] == sha256_bytes(files["en/train-00000-of-00001.parquet"])
    assert e["url"] == f"https://huggingface.co/datasets/unimelb-nlp/wikiann/resolve/{repo.commit}/en/train-00000-of-00001.parquet"
    # A later fetch (another language) reads the locked commit, not `main`, and locks it too.
    server.state.requests.clear()
    man = fetch_source("wikiann", tmp_path / "raw", ["en", "de"], {**cfg, "hf_cache_dir": str(tmp_path / "c2")})
    assert server.state.requests and all(f"/resolve/{repo.commit}/" in r[1] for r in server.state.requests)
    assert man["revision_requested"] == repo.commit
    checks = {f["path"]: f["check"] for f in man["files"]}
    assert checks["wikiann/en/test-00000-of-00001.parquet"] == "lock"
    assert checks["wikiann/de/test-00000-of-00001.parquet"] == "locked now"
    entries = yaml.safe_load(lock.read_text())["sources"]["wikiann"]
    assert len(entries) == 6 and {x["revision"] for x in entries.values()} == {repo.commit}
    # A pinned revision that disagrees with the lock is an error naming both.
    other = "f" * 40
    with pytest.raises(LockConflictError) as err:
        fetch_source("wikiann", tmp_path / "raw", ["en"], {**cfg, "pins": {"wikiann": {"revision": other}}})
    assert other in str(err.value) and repo.commit in str(err.value)
    assert "download.pins.wikiann.revision" in str(err.value)


def test_manual_copy_of_unpinned_hub_file_is_locked(server, hf_online, tmp_path):
    data = make_wikiann_parquet("en")
    server.hub_repo("unimelb-nlp/wikiann", {})  # the Hub has no such file
    manual = tmp_path / "manual"
    for s in ("train", "validation", "test"):
        (manual / "wikiann/en").mkdir(parents=True, exist_ok=True)
        (manual / f"wikiann/en/{s}-00000-of-00001.parquet").write_bytes(data)
    lock = tmp_path / "lock.yaml"
    cfg = {"hf_endpoint": server.url, "hf_cache_dir": str(hf_online), "lock": str(lock),
           "manual_dir": str(manual)}  # fmt: skip
    with pytest.raises(XltError, match="without a sha256 pin or lock entry"):
        fetch_source("wikiann", tmp_path / "raw", ["en"], {**cfg, "require_pins": True,
                                                              "pins": {"wikiann": {"revision": "a" * 40}}})  # fmt: skip
    assert not lock.exists()
    fetch_source("wikiann", tmp_path / "raw", ["en"], cfg)
    e = yaml.safe_load(lock.read_text())["sources"]["wikiann"]["wikiann/en/test-00000-of-00001.parquet"]
    assert e["origin"] == "manual" and e["sha256"] == sha256_bytes(data) and "revision" not in e


def test_concurrent_writers_both_land(tmp_path):
    lock = LockFile(tmp_path / "lock.yaml")
    barrier = threading.Barrier(8)
    errors = []

    def add(i: int) -> None:
        try:
            barrier.wait(timeout=10)
            lock.add(f"src{i % 2}", {f"f/{i}": LockEntry(f"{i:064x}", i, f"https://x/{i}", "d")})
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=add, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert not errors
    read = lock.read()
    assert sorted(read["src0"]) == ["f/0", "f/2", "f/4", "f/6"]
    assert sorted(read["src1"]) == ["f/1", "f/3", "f/5", "f/7"]
    # The same bytes again: nothing changes; other bytes for a locked file: refused.
    text = lock.path.read_text()
    lock.add("src0", {"f/0": LockEntry(f"{0:064x}", 0, "u", "later")})
    assert lock.path.read_text() == text
    with pytest.raises(LockConflictError, match=f"f/0 is locked with sha256 {0:064x}.*got sha256 {1:064x}"):
        lock.add("src0", {"f/0": LockEntry(f"{1:064x}", 0, "u", "later")})
    assert lock.path.read_text() == text


def test_bad_lock_file_is_named(tmp_path):
    p = tmp_path / "lock.yaml"
    p.write_text("version: 1\nsources:\n  wikimatrix:\n    a/b: {sha256: abc, size: 1}\n")
    with pytest.raises(XltError, match=r"lock\.yaml: sources\.wikimatrix\.a/b\.sha256: 'abc' is not 64"):
        LockFile(p).read()


def test_killed_download_leaves_no_lock_entry(server, tmp_path):
    # > 2 MiB: the client writes its first 1 MiB chunk to the .part while the server stalls
    # (whether it got there before the kill or not, the checks below hold)
    data = make_wikimatrix_gz("es") * 450
    _put(server, "es", data)
    server.state.stall = threading.Event()
    cfg, lock = _wikimatrix(server, tmp_path)
    raw = tmp_path / "raw"
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--source", "wikimatrix", "--raw-root", str(raw), "--langs", "es",
         "--download", json.dumps(cfg)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert server.state.stalled.wait(timeout=60), "the download never started"
        os.kill(proc.pid, signal.SIGKILL)  # mid-transfer: half the body sent, the rest pending
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        server.state.stall.set()
    server.state.stall = None
    dest = raw / ES
    assert not dest.exists()
    assert not lock.exists() or "wikimatrix" not in (LockFile(lock).read())
    assert not (raw / "manifests").exists()
    left = {p.name for p in dest.parent.iterdir()}
    assert left <= {dest.name + ".part"}  # only the resumable .part
    # The rerun completes (resuming the .part if the server allows) and locks the whole file.
    man = fetch_source("wikimatrix", raw, ["es"], cfg)
    assert dest.read_bytes() == data and not dest.with_name(dest.name + ".part").exists()
    assert man["files"][0]["check"] == "locked now"
    assert LockFile(lock).read()["wikimatrix"][ES].sha256 == sha256_bytes(data)


def test_pins_report(server, tmp_path, capsys):
    gz = make_wikimatrix_gz("es")
    _put(server, "es", gz)
    cfg, lock = _wikimatrix(server, tmp_path)
    fetch_source("wikimatrix", tmp_path / "raw", ["es"], cfg)
    LockFile(lock).add("wikiann", {"wikiann/de/test-00000-of-00001.parquet":
                                   LockEntry("a" * 64, 12, "u", "2025-01-01T00:00:00Z", "b" * 40, "hub")})  # fmt: skip
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"download": {"lock": str(lock),
                                                   "pins": {"wikimatrix": {"sha256": {"ru": "c" * 64}}}}}))  # fmt: skip
    assert pins_main(["--config", str(config)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == f"lock file: {lock}"
    assert f"  locked      {ES}  sha256 {sha256_bytes(gz)}  {len(gz)} bytes  " in out
    assert f"  pinned      wikimatrix/WikiMatrix.en-ru.tsv.gz  sha256 {'c' * 64}" in out
    assert "  not locked  wikimatrix/WikiMatrix.en-hi.tsv.gz" in lines
    assert f"  locked      wikiann/de/test-00000-of-00001.parquet  sha256 {'a' * 64}  12 bytes  at {'b' * 40}" in out
    assert "  not locked  wikiann/de/train-00000-of-00001.parquet" in lines
    assert "  not locked  wikiann/{lang}/{split}-00000-of-00001.parquet  (any other language)" in lines
    assert lines[-1].startswith("2 locked, 1 pinned, ")
