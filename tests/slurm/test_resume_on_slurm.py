"""A fine-tuning job cancelled mid-run on the real test SLURM resumes from its checkpoint and
ends as the same job run without interruption (its own module, so that a worker of its own,
with its own test SLURM, runs it beside tests/slurm/test_workflow_on_slurm.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO
from xlt.stages.finetune_job import FinetuneJob
from tests.slurm.test_slurm_smoke import wait_until
from tests.slurm.test_workflow_on_slurm import POS, ci_profile, finish, overrides, start

pytestmark = pytest.mark.slurm


def test_scancel_mid_training_resumes_and_matches_an_uninterrupted_run(slurm_cluster, tmp_path, zygote):
    workdir = tmp_path / "run"
    workdir.mkdir()
    # Long enough to be caught mid-run: ~100 steps with a checkpoint every 5.
    overrides(workdir, world={"sizes": {"train": 400}}, hparams={"crossmulti": {"epochs": 8, "checkpoint_every": 5}})
    # The encoder and the data are made first, here, without SLURM (tests/slurm/test_workflow_on_slurm.py
    # sends those jobs through it): SLURM then runs the job under test, the fine-tuning, and its evaluation.
    pre = subprocess.run([sys.executable, "-m", "snakemake", "results/encoders/tiny/pretrained", f"results/data/{POS}",
                          "--cores", "2", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
                          "--configfile", str(REPO / "presets" / "tiny.yaml"), str(workdir / "ci.yaml")],
                         capture_output=True, text=True, timeout=600, env=zygote)
    assert pre.returncode == 0, pre.stderr[-3000:]
    target = f"results/eval/tiny/pretrained/{POS}/en.crossmulti/seed1/test.crossmulti.json"
    proc, log = start(slurm_cluster, workdir, ci_profile(tmp_path), target)
    ckpt = workdir / f"results/checkpoints/models/tiny/pretrained/{POS}/en.crossmulti/seed1/last/state.json"
    wait_until(ckpt.exists, 600, "the first fine-tuning checkpoint", proc, log.read_text)

    def finetune_job():
        r = slurm_cluster.run(["squeue", "-h", "-o", "%i|%k"], timeout=30)
        return next((line.split("|")[0] for line in r.stdout.splitlines() if "rule_finetune" in line), None)

    job = wait_until(finetune_job, 60, "the fine-tuning job in squeue", proc, log.read_text)
    slurm_cluster.run(["scancel", job], timeout=30, check=True)
    out = finish(proc, log, slurm_cluster)
    assert "resuming from step" in (workdir / f"logs/models/tiny/pretrained/{POS}/en.crossmulti/seed1.log").read_text()

    model = workdir / f"results/models/tiny/pretrained/{POS}/en.crossmulti/seed1"
    meta = json.loads((model / "xlt_model.json").read_text())
    resumed = meta["train"]
    assert resumed["resumed_from"] and resumed["steps_this_process"] < resumed["global_steps"], resumed
    assert out.count("rule_finetune") >= 2  # submitted twice: the cancelled attempt and the retry

    # The same fine-tuning, uninterrupted, on the same encoder and data, outside SLURM.
    cfg = meta["train_config"]
    hp = {k: v for k, v in cfg.items() if k not in ("task", "encoder", "encoder_revision", "seed")}
    scripts = REPO / "workflow_scripts"
    job = FinetuneJob.of_seed("pos", str(workdir / "results/encoders/tiny/pretrained"), workdir / "results/data" / POS, ["en"], hp, 1,
                              tmp_path / "clean", tmp_path / "ck", threads=1)
    subprocess.run([sys.executable, scripts / "finetune.py", "--job", job.to_json()], check=True, capture_output=True, timeout=600)
    subprocess.run([sys.executable, scripts / "evaluate.py", "--model", str(tmp_path / "clean"), "--data", str(workdir / "results/data" / POS),
                    "--split", "test", "--langs", "en", "de", "es", "fr", "--out", str(tmp_path / "clean.json"),
                    "--predictions", str(tmp_path / "clean.jsonl"), "--threads", "1"], check=True, capture_output=True, timeout=600)
    clean = json.loads((tmp_path / "clean.json").read_text())
    slurm = json.loads((workdir / target).read_text())
    assert slurm["metrics"] == clean["metrics"]
    clean_train = json.loads((tmp_path / "clean" / "xlt_model.json").read_text())["train"]
    def scores(history):  # the dev files are named by path, relative in one run, absolute in the other
        return [(h["epoch"], h["step"], list(h["dev"].values())) for h in history]

    assert scores(clean_train["history"]) == scores(resumed["history"])
    assert resumed["steps_this_process"] < clean_train["steps_this_process"]
