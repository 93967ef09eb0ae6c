import json
import signal
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from xlt.engine.train_config import TrainConfig
from xlt.engine.recipes.finetune import train
from xlt.engine.runtime import Preempted
from xlt.errors import XltError
from xlt.stages.finetune import evaluate_model, finetune
from xlt.stages.finetune_job import FinetuneJob
from tests.conftest import REPO

HP = {"lr": 1e-3, "epochs": 2, "batch_size": 8, "warmup_ratio": 0.1, "max_length": 32, "stride": 8, "checkpoint_every": 3, "progress": False}


def _weights(model_dir):
    return {**load_file(model_dir / "encoder" / "model.safetensors"), **load_file(model_dir / "modules.safetensors")}


def _metrics(path):
    report = json.loads(path.read_text())
    return report["metrics"], report["average"]


@pytest.mark.parametrize("task", ["pos", "marc", "qa"])
def test_training_learns_and_is_bit_identical_across_runs(task, tiny_encoder, toy_data, tmp_path):
    runs = []
    for name in ("a", "b"):
        [s] = finetune(FinetuneJob.of_seed(task, str(tiny_encoder), toy_data / task, ["en"], HP, 7, tmp_path / name, tmp_path / f"ck{name}"))
        runs.append(s)
    assert runs[0]["history"] == runs[1]["history"]
    wa, wb = _weights(tmp_path / "a"), _weights(tmp_path / "b")
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    meta = json.loads((tmp_path / "a" / "xlt_model.json").read_text())
    assert meta["provenance"]["seed"] == 7
    assert set(meta["provenance"]["data_sha256"]) == {str(toy_data / task / "en" / "train.jsonl"), str(toy_data / task / "en" / "dev.jsonl")}
    assert "source_sha256" in meta["provenance"]["code"]
    assert not (tmp_path / "cka").exists()  # checkpoints are removed once the model is saved


def test_a_different_seed_gives_a_different_model(tiny_encoder, toy_data, tmp_path):
    finetune(FinetuneJob.of_seed("marc", str(tiny_encoder), toy_data / "marc", ["en"], HP, 1, tmp_path / "s1", tmp_path / "c1"))
    finetune(FinetuneJob.of_seed("marc", str(tiny_encoder), toy_data / "marc", ["en"], HP, 2, tmp_path / "s2", tmp_path / "c2"))
    w1, w2 = _weights(tmp_path / "s1"), _weights(tmp_path / "s2")
    assert not all(torch.equal(w1[k], w2[k]) for k in w1)


def test_kill_9_midrun_then_rerun_matches_uninterrupted_run(tiny_encoder, toy_data, tmp_path):
    """A real SIGKILL (no chance to save) after 5 steps; the rerun resumes from the step-3
    checkpoint and ends with the same weights and the same metrics JSON."""

    def cli(out, ckpt, *extra):
        return subprocess.run(
            [sys.executable, str(REPO / "workflow_scripts" / "finetune.py"), "--job",
             FinetuneJob.of_seed("pos", str(tiny_encoder), toy_data / "pos", ["en", "de"], HP, 3, out, ckpt, threads=1).to_json(),
             *extra],
            capture_output=True, text=True, timeout=300,
        )

    clean = cli(tmp_path / "clean", tmp_path / "ck_clean")
    assert clean.returncode == 0, clean.stderr
    killed = cli(tmp_path / "resumed", tmp_path / "ck_resumed", "--kill-after-steps", "5")
    assert killed.returncode == -signal.SIGKILL
    assert not (tmp_path / "resumed").exists()  # nothing half-written
    assert (tmp_path / "ck_resumed" / "last" / "state.json").exists()
    again = cli(tmp_path / "resumed", tmp_path / "ck_resumed")
    assert again.returncode == 0, again.stderr
    assert "resuming from step 3" in again.stderr

    meta_clean = json.loads((tmp_path / "clean" / "xlt_model.json").read_text())["train"]
    meta_res = json.loads((tmp_path / "resumed" / "xlt_model.json").read_text())["train"]
    assert meta_res["resumed_from"] == [3]
    assert meta_res["steps_this_process"] < meta_clean["steps_this_process"]
    assert meta_res["history"] == meta_clean["history"]
    wc, wr = _weights(tmp_path / "clean"), _weights(tmp_path / "resumed")
    assert all(torch.equal(wc[k], wr[k]) for k in wc)
    for name in ("clean", "resumed"):
        evaluate_model(str(tmp_path / name), str(toy_data / "pos"), "test", ["en", "de"], tmp_path / f"{name}.json", tmp_path / f"{name}.jsonl")
    assert _metrics(tmp_path / "clean.json") == _metrics(tmp_path / "resumed.json")
    assert (tmp_path / "clean.jsonl").read_text() == (tmp_path / "resumed.jsonl").read_text()


def test_grace_stop_saves_a_checkpoint_and_resumes(tiny_encoder, toy_data, tmp_path):
    cfg = TrainConfig.from_dict({**HP, "task": "marc", "encoder": str(tiny_encoder), "seed": 5})
    files = ([toy_data / "marc" / "en" / "train.jsonl"], [toy_data / "marc" / "en" / "dev.jsonl"])
    with pytest.raises(Preempted, match="step 4"):
        train(cfg, *files, tmp_path / "m", tmp_path / "ck", stop_after_steps=4)
    summary = train(cfg, *files, tmp_path / "m", tmp_path / "ck")
    assert summary["resumed_from"] == [4]
    reference = train(cfg, *files, tmp_path / "ref", tmp_path / "ck_ref")
    assert summary["history"] == reference["history"]


def test_non_finite_loss_stops_with_the_step(tiny_encoder, toy_data, tmp_path, monkeypatch):
    from xlt.engine.kinds import Classification

    calls = {"n": 0}
    original = Classification.loss

    def poisoned(self, out, batch):
        loss = original(self, out, batch)
        calls["n"] += 1
        return loss * float("nan") if calls["n"] == 3 else loss

    monkeypatch.setattr(Classification, "loss", poisoned)
    cfg = TrainConfig.from_dict({**HP, "task": "marc", "encoder": str(tiny_encoder)})
    with pytest.raises(XltError, match=r"non-finite loss \(nan\) at step 3 \(epoch 1"):
        train(cfg, [toy_data / "marc" / "en" / "train.jsonl"], [toy_data / "marc" / "en" / "dev.jsonl"], tmp_path / "m", tmp_path / "ck")
    assert not (tmp_path / "m").exists()


def test_unknown_training_option_names_the_allowed_ones():
    with pytest.raises(XltError, match=r"unknown training option\(s\) \['learning_rate'\].*allowed: .*'lr'"):
        TrainConfig.from_dict({"task": "pos", "encoder": "x", "learning_rate": 1e-5})


def test_one_seed_one_initialisation_whatever_the_training_data(tiny_encoder, toy_data, tmp_path, monkeypatch):
    """θ_src, θ_tgt and θ_bi of the underspec paper start from the same weights: the head's
    initial weights depend on the seed only, not on the training languages."""
    from xlt.engine.recipes import finetune as recipe

    initial = {}
    build = recipe.build_task_model

    def spy(cfg, encoder, aux_tasks, main):
        model = build(cfg, encoder, aux_tasks, main)
        initial[key] = {k: v.detach().clone() for k, v in model.state_dict().items()}
        return model

    monkeypatch.setattr(recipe, "build_task_model", spy)
    hp = {**HP, "epochs": 1}
    for key, langs, seed in (("en", ["en"], 4), ("de", ["de"], 4), ("bi", ["de", "en"], 4), ("other", ["en"], 5)):
        finetune(FinetuneJob.of_seed("pos", str(tiny_encoder), toy_data / "pos", langs, hp, seed, tmp_path / key, tmp_path / f"ck{key}"))
    names = list(initial["en"])
    assert any(n.startswith("heads.") for n in names)
    for other in ("de", "bi"):
        assert all(torch.equal(initial["en"][n], initial[other][n]) for n in names), other
    assert not all(torch.equal(initial["en"][n], initial["other"][n]) for n in names if n.startswith("heads."))
