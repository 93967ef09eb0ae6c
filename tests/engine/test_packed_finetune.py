"""A pack of fine-tunes through the job's own entry points (xlt.stages.finetune.finetune with several seeds,
workflow_scripts/finetune.py with a job of several seeds): K = 3 seeds in one job, each model equal to
its own single job within fp32 rounding and with identical dev predictions; a pack killed with
SIGKILL resumes all three and ends bit-identical to one that ran through."""

import json
import signal
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from tests.conftest import REPO
from xlt.stages.finetune import evaluate_model, finetune
from xlt.stages.finetune_job import FinetuneJob

SEEDS = [1, 2, 3]
# fp32 forced: "auto" is bf16 on a CPU with AMX. A batched product sums in another order than
# one model's oneDNN call: after 2 epochs (24 steps at lr 1e-3) the largest weight difference
# was 4.0e-7 (pos) and 3.0e-7 (marc) on this machine; the bound is 25x that. AdamW divides by
# the gradient's root mean square, so where a gradient is ~0 a rounding difference can move a
# weight by up to a step (tests/test_packed.py): a longer run may need a wider bound.
HP = {"lr": 1e-3, "epochs": 2, "batch_size": 8, "warmup_ratio": 0.1, "max_length": 32, "stride": 8,
      "checkpoint_every": 5, "progress": False, "precision": "fp32"}
TOL = 1e-5


def _weights(model_dir):
    return {**load_file(model_dir / "encoder" / "model.safetensors"), **load_file(model_dir / "modules.safetensors")}


def _predictions(tmp_path, model_dir, data, name):
    evaluate_model(str(model_dir), str(data), "dev", ["en", "de"], tmp_path / f"{name}.json", tmp_path / f"{name}.jsonl")
    return (tmp_path / f"{name}.jsonl").read_text(), json.loads((tmp_path / f"{name}.json").read_text())["metrics"]


@pytest.mark.parametrize("task", ["pos", "marc"])
def test_three_seeds_in_one_job_equal_their_own_jobs(task, tiny_encoder, toy_data, tmp_path):
    outs = [tmp_path / f"pack{s}" for s in SEEDS]
    packed = finetune(FinetuneJob(task=task, encoder=str(tiny_encoder), data=toy_data / task, train_langs=["en"], hparams=HP,
                                  seeds=SEEDS, outs=outs, checkpoint_dirs=[tmp_path / f"ck{s}" for s in SEEDS],
                                  pack_checkpoint_dir=tmp_path / "ck_pack"))
    for seed, out, summary in zip(SEEDS, outs, packed):
        [alone] = finetune(FinetuneJob.of_seed(task, str(tiny_encoder), toy_data / task, ["en"], HP, seed, tmp_path / f"alone{seed}",
                                               tmp_path / f"cka{seed}"))
        assert summary["pack"] == SEEDS and "pack" not in alone
        wp, wa = _weights(out), _weights(tmp_path / f"alone{seed}")
        assert wp.keys() == wa.keys()
        assert max((wp[k] - wa[k]).abs().max().item() for k in wa) < TOL, seed
        assert summary["selected_epoch"] == alone["selected_epoch"] and summary["global_steps"] == alone["global_steps"]
        assert [h["epoch"] for h in summary["history"]] == [h["epoch"] for h in alone["history"]]
        assert _predictions(tmp_path, out, toy_data / task, f"p{seed}") == \
            _predictions(tmp_path, tmp_path / f"alone{seed}", toy_data / task, f"a{seed}")
        meta = json.loads((out / "xlt_model.json").read_text())
        assert meta["provenance"]["seed"] == seed and meta["train_config"]["seed"] == seed
        assert meta["collapse"]["seed"] == seed
    # three models, not one three times: each seed its own initialisation, data order and masks
    w = [_weights(o) for o in outs]
    assert not torch.equal(w[0]["heads." + {"pos": "pos", "marc": "marc"}[task] + ".out.weight"],
                           w[1]["heads." + {"pos": "pos", "marc": "marc"}[task] + ".out.weight"])
    assert not any(p.exists() for p in [tmp_path / "ck_pack", *(tmp_path / f"ck{s}" for s in SEEDS)])  # cleared


def test_kill_9_of_a_pack_resumes_every_model(tiny_encoder, toy_data, tmp_path):
    """A real SIGKILL after 7 steps (nothing saved since step 5); the rerun resumes the three
    models from the step-5 checkpoint and each ends bit-identical to a pack that ran through."""

    def cli(name, *extra):
        return subprocess.run(
            [sys.executable, str(REPO / "workflow_scripts" / "finetune.py"), "--job",
             FinetuneJob(task="pos", encoder=str(tiny_encoder), data=toy_data / "pos", train_langs=["en"], hparams=HP, seeds=SEEDS,
                         outs=[tmp_path / name / f"seed{s}" for s in SEEDS],
                         checkpoint_dirs=[tmp_path / f"ck_{name}" / f"seed{s}" for s in SEEDS],
                         pack_checkpoint_dir=tmp_path / f"ck_{name}" / "pack", threads=1).to_json(), *extra],
            capture_output=True, text=True, timeout=300,
        )

    clean = cli("clean")
    assert clean.returncode == 0, clean.stderr
    killed = cli("resumed", "--kill-after-steps", "7")
    assert killed.returncode == -signal.SIGKILL
    assert not (tmp_path / "resumed").exists()  # nothing half-written
    assert (tmp_path / "ck_resumed" / "pack" / "last" / "state.json").exists()
    again = cli("resumed")
    assert again.returncode == 0, again.stderr
    assert "resuming the pack of 3 from step 5" in again.stderr
    for s in SEEDS:
        meta_clean = json.loads((tmp_path / "clean" / f"seed{s}" / "xlt_model.json").read_text())["train"]
        meta_res = json.loads((tmp_path / "resumed" / f"seed{s}" / "xlt_model.json").read_text())["train"]
        assert meta_res["resumed_from"] == [5] and meta_clean["resumed_from"] == []
        assert meta_res["history"] == meta_clean["history"]
        wc, wr = _weights(tmp_path / "clean" / f"seed{s}"), _weights(tmp_path / "resumed" / f"seed{s}")
        assert all(torch.equal(wc[k], wr[k]) for k in wc), s
