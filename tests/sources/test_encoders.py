"""Encoder snapshots for offline compute nodes: the first fetch locks the commit and every
file, later fetches verify; an offline job reads the snapshot; an offline job without one
fails in one line naming it and the prefetch command."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
import yaml

from tests.sources.conftest import sha256_bytes
from xlt.errors import XltError
from xlt.sources.encoders import SNAPSHOT_META, fetch_encoder
from xlt.sources.fetch import ChecksumError, UnpinnedError
from xlt.sources.lock import LockConflictError
from xlt.process.network import OFFLINE_VARIABLES
from xlt.sources.pins import main as pins_main

REPO_ID = "org/tiny-bert"
WORDS = ["lo", "ka", "mi", "ten", "sor", "bal", "Anna", "Berlin", "."]


@pytest.fixture(scope="module")
def tiny_model_files(tmp_path_factory) -> dict[str, bytes]:
    """A Hub model repo's files in the real layout: a 1-layer BERT (random weights, safetensors)
    and its fast WordPiece tokenizer, plus a pickled-weights file no snapshot may fetch."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    from xlt.engine.recipes.mlm import train_wordpiece

    d = tmp_path_factory.mktemp("tiny-bert")
    train_wordpiece([" ".join(WORDS)] * 4, 100, d)
    shape = {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32,
             "max_position_embeddings": 32}
    BertModel(BertConfig(vocab_size=len(AutoTokenizer.from_pretrained(d)), **shape)).save_pretrained(d)
    files = {p.name: p.read_bytes() for p in d.iterdir() if p.is_file()}
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= set(files)
    return {**files, "pytorch_model.bin": b"a pickle"}


def _cfg(server, tmp_path, **extra) -> dict:
    return {"hf_endpoint": server.url, "hf_cache_dir": str(tmp_path / "hf-cache"), "lock": str(tmp_path / "lock.yaml"),
            **extra}  # fmt: skip


def test_first_fetch_locks_the_commit_then_later_fetches_verify(server, hf_online, tmp_path, tiny_model_files,
                                                               capsys):  # fmt: skip
    repo = server.hub_repo(REPO_ID, tiny_model_files, model=True)
    cfg = _cfg(server, tmp_path)
    rec = fetch_encoder("tiny", REPO_ID, tmp_path / "enc", cfg=cfg)
    assert rec["revision"] == repo.commit and rec["check"] == "locked now"
    got = {p.name for p in (tmp_path / "enc").iterdir()}
    assert "pytorch_model.bin" not in got and {"config.json", "model.safetensors", SNAPSHOT_META} <= got
    assert json.loads((tmp_path / "enc" / SNAPSHOT_META).read_text())["repo_id"] == REPO_ID
    lock = tmp_path / "lock.yaml"
    doc = yaml.safe_load(lock.read_text())
    entries = doc["encoders"][REPO_ID]
    assert set(entries) == set(got) - {SNAPSHOT_META}
    weights = entries["model.safetensors"]
    assert weights["sha256"] == sha256_bytes(tiny_model_files["model.safetensors"]) and weights["origin"] == "hub"
    assert weights["revision"] == repo.commit
    assert weights["url"] == f"https://huggingface.co/{REPO_ID}/resolve/{repo.commit}/model.safetensors"
    assert doc["sources"] == {}
    # Again, into a new directory: read at the locked commit (not `main`), verified, lock unchanged.
    text, n = lock.read_text(), len(server.gets())
    rec = fetch_encoder("tiny", REPO_ID, tmp_path / "enc2", cfg={**cfg, "hf_cache_dir": str(tmp_path / "cache2")})
    assert rec["check"] == "lock" and lock.read_text() == text
    paths = [r[1] for r in server.gets()[n:]]
    assert paths and all(f"/resolve/{repo.commit}/" in p for p in paths)
    # `make pins` shows the encoder's commit and files; another, unfetched encoder as not locked.
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"download": {"lock": str(lock)}, "encoders": {
        "tiny": {"hub": REPO_ID}, "other": {"hub": "org/other"}, "local": {"path": "/x"}}}))
    assert pins_main(["--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert f"encoder tiny ({REPO_ID}): locked at {repo.commit}\n" in out
    assert f"  locked      model.safetensors  sha256 {weights['sha256']}" in out
    assert "encoder other (org/other): not locked (the first fetch locks it)\n" in out and "local" not in out


def test_a_changed_file_is_refused_and_leaves_no_snapshot(server, hf_online, tmp_path, tiny_model_files):
    server.hub_repo(REPO_ID, tiny_model_files, model=True)
    cfg = _cfg(server, tmp_path)
    fetch_encoder("tiny", REPO_ID, tmp_path / "enc", cfg=cfg)
    text = (tmp_path / "lock.yaml").read_text()
    # The same commit now serves other bytes (a tampered mirror, say).
    server.hub_repo(REPO_ID, {"model.safetensors": b"other bytes"}, model=True)
    with pytest.raises(ChecksumError, match=r"model\.safetensors.*locked in .*lock\.yaml"):
        fetch_encoder("tiny", REPO_ID, tmp_path / "enc2", cfg={**cfg, "hf_cache_dir": str(tmp_path / "c2")})
    assert not (tmp_path / "enc2").exists() and not list(tmp_path.glob(".enc2.*"))
    assert (tmp_path / "lock.yaml").read_text() == text


def test_pins_and_strict_mode(server, hf_online, tmp_path, tiny_model_files):
    repo = server.hub_repo(REPO_ID, tiny_model_files, model=True)
    cfg = _cfg(server, tmp_path)
    with pytest.raises(UnpinnedError, match=r"encoder tiny .*encoders\.tiny\.revision"):
        fetch_encoder("tiny", REPO_ID, tmp_path / "enc", cfg={**cfg, "require_pins": True})
    with pytest.raises(XltError, match=r"encoders\.tiny\.revision: 'main' is not a 40-hex commit"):
        fetch_encoder("tiny", REPO_ID, tmp_path / "enc", "main", cfg)
    rec = fetch_encoder("tiny", REPO_ID, tmp_path / "enc", repo.commit, {**cfg, "require_pins": True})
    assert rec["revision"] == rec["revision_requested"] == repo.commit
    with pytest.raises(LockConflictError, match=f"pins revision {'0' * 40}, but .* locked {repo.commit}"):
        fetch_encoder("tiny", REPO_ID, tmp_path / "enc", "0" * 40, cfg)


def test_download_script_fetches_a_snapshot(server, hf_online, tmp_path, tiny_model_files, capsys):
    from workflow_scripts.download import main

    repo = server.hub_repo(REPO_ID, tiny_model_files, model=True)
    block = json.dumps(_cfg(server, tmp_path))
    assert main(["--encoder", "tiny", "--hub", REPO_ID, "--out", str(tmp_path / "enc"), "--download", block]) == 0
    assert f"under {tmp_path / 'enc'} ({REPO_ID} at {repo.commit})" in capsys.readouterr().err
    assert main(["--encoder", "tiny", "--out", str(tmp_path / "e")]) == 1
    assert capsys.readouterr().err == "error: --encoder needs --hub and --out\n"


def test_an_offline_job_reads_the_snapshot(server, hf_online, tmp_path, tiny_model_files, monkeypatch):
    from xlt.engine.model import load_encoder

    server.hub_repo(REPO_ID, tiny_model_files, model=True)
    fetch_encoder("tiny", REPO_ID, tmp_path / "enc", cfg=_cfg(server, tmp_path))
    server.state.models.clear()  # the Hub is gone
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    n = len(server.state.requests)
    encoder, tokenizer = load_encoder(str(tmp_path / "enc"))
    ids = tokenizer("Anna Berlin")["input_ids"]
    assert tokenizer.is_fast and tokenizer.convert_ids_to_tokens(ids) == ["[CLS]", "Anna", "Berlin", "[SEP]"]
    assert encoder.config.hidden_size == 16 and len(server.state.requests) == n


def test_an_offline_job_without_its_snapshot_fails_in_one_line(tmp_path, monkeypatch):
    from xlt.engine.model import load_encoder, load_encoder_weights
    from xlt.engine.recipes.mlm import MLMConfig, train_mlm
    from xlt.papers.crossmulti.pppl import load_scorer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub_id = "google-bert/bert-base-multilingual-cased"
    for load in (load_encoder, load_encoder_weights, load_scorer):
        with pytest.raises(XltError) as e:
            load(hub_id)
        msg = str(e.value)
        assert msg.startswith(f"encoder {hub_id}: not a local directory, and the Hub is offline here")
        assert "`snakemake --cores 1 prefetch`" in msg and "\n" not in msg
    with pytest.raises(XltError, match="`snakemake --cores 1 prefetch`"):
        train_mlm(["a b"], tmp_path / "o", tmp_path / "c", MLMConfig(steps=1), init_from=hub_id, progress=False)
    # A snapshot directory that is not there: named, online or not.
    monkeypatch.delenv("HF_HUB_OFFLINE")
    with pytest.raises(XltError, match=r"^encoder resources/raw/encoders/mbert: no such directory; fetch its snapshot"):
        load_encoder("resources/raw/encoders/mbert")


def test_the_download_encoder_rule_makes_the_snapshot_a_fine_tune_reads(server, tmp_path, tiny_model_files):
    """Through Snakemake on config.yaml (its mbert read from a local Hub-shaped repo): the rule
    fetches and locks the snapshot where the fine-tune jobs load it."""
    from tests.conftest import REPO
    from tests.test_workflow import SNAKEMAKE

    repo = server.hub_repo(REPO_ID, tiny_model_files, model=True)
    override = tmp_path / "local.yaml"
    override.write_text(yaml.safe_dump({"raw_root": str(tmp_path / "raw"), "encoders": {"mbert": {"hub": REPO_ID}},
                                        "download": _cfg(server, tmp_path)}))  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_VARIABLES}
    run = subprocess.run([*SNAKEMAKE, "--directory", str(tmp_path), "--configfile", str(REPO / "config.yaml"),
                          str(override), "--cores", "1", str(tmp_path / "raw" / "encoders" / "mbert")],
                         capture_output=True, text=True, timeout=300, env=env)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    snap = json.loads((tmp_path / "raw" / "encoders" / "mbert" / SNAPSHOT_META).read_text())
    assert snap["encoder"] == "mbert" and snap["revision"] == repo.commit
    assert yaml.safe_load((tmp_path / "lock.yaml").read_text())["encoders"][REPO_ID]["config.json"]["revision"] == repo.commit
