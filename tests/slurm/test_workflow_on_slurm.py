"""The real workflow on the real test SLURM, through a profile that differs from
slurm/profile.yaml only in cluster settings."""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from tests.test_workflow import SHRINK

pytestmark = pytest.mark.slurm


def _pos_dataset() -> str:
    """crossmulti's POS data folder: the task plus its UD treebank set (e.g. pos.es_ancora)."""
    from tests.test_config import base
    from xlt.dag import targets as T

    return T.dataset_name(base(), "crossmulti", "pos")


POS = _pos_dataset()
TIMEOUT = 900  # seconds for one snakemake run (outer `timeout -k`)


def ci_profile(tmp: Path) -> Path:
    profile = yaml.safe_load((REPO / "slurm" / "profile.yaml").read_text())
    profile.update({  # cluster settings only: a 2-core node, a fast first status check, logs here
        "jobs": 2,
        "slurm-init-seconds-before-status-checks": 2,
        "slurm-logdir": str(tmp / "slurm-logs"),
        "slurm-keep-successful-logs": True,
    })  # fmt: skip
    (tmp / "profile").mkdir(parents=True, exist_ok=True)
    (tmp / "profile" / "profile.yaml").write_text(yaml.safe_dump(profile))
    return tmp / "profile"


def overrides(workdir: Path, **extra) -> Path:
    cfg = copy.deepcopy(SHRINK)
    cfg["papers"]["crossmulti"].update(seeds=[1], tasks=["pos"])
    cfg["compute"] = {"gpus_per_job": 1}  # the node's fake GPUs: encoder jobs ask for --gpus=1
    for key, value in extra.items():
        cfg[key] = {**cfg.get(key, {}), **value}
    (workdir / "ci.yaml").write_text(yaml.safe_dump(cfg))
    return workdir / "ci.yaml"


def start(cluster, workdir: Path, profile: Path, target: str, env: dict | None = None) -> tuple[subprocess.Popen, Path]:
    log = workdir / "snakemake.log"
    cmd = ["timeout", "-k", "10", str(TIMEOUT), sys.executable, "-m", "snakemake", target,
           "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir), "--profile", str(profile),
           "--verbose", "--configfile", str(REPO / "presets" / "tiny.yaml"), str(workdir / "ci.yaml")]
    # the test cluster's one partition has the (fake) GPUs: both kinds of job go there
    env = {"XLT_SLURM_ACCOUNT": cluster.account, "XLT_SLURM_PARTITION": cluster.partition,
           "XLT_SLURM_GPU_PARTITION": cluster.partition} if env is None else env
    with open(log, "w") as out:
        proc = cluster.popen(cmd, cwd=workdir, stdout=out, stderr=subprocess.STDOUT, env=cluster.environ(**env))
    return proc, log


def finish(proc: subprocess.Popen, log: Path, cluster) -> str:
    try:
        proc.wait(timeout=TIMEOUT + 30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = log.read_text()
    assert proc.returncode == 0, f"rc={proc.returncode}\n{text[-6000:]}\n{cluster.logs(10)}"
    return text


def test_tiny_target_runs_through_the_slurm_profile(slurm_cluster, tmp_path):
    workdir = tmp_path / "run"
    workdir.mkdir()
    overrides(workdir)
    proc, log = start(slurm_cluster, workdir, ci_profile(tmp_path), "crossmulti_table2")
    out = finish(proc, log, slurm_cluster)
    assert (workdir / "results/tables/crossmulti/table2.md").exists()
    # The run starts with its plan (xlt.workflow.plan, from the profile's onstart), before any submission.
    plan = out.index("Plan of `crossmulti_table2` on ")
    assert plan < out.index("sbatch call:") and "jobs to run" in out[plan:plan + 200]
    assert "  finetune " in out[plan:] and "Next:" not in out[plan:out.index("sbatch call:")]
    sbatch = [line for line in out.splitlines() if "sbatch call:" in line]
    by_rule = {rule: [c for c in sbatch if f"rule_{rule}" in c] for rule in ("build_encoder", "prepare_task", "finetune", "evaluate", "world", "encoder_corpus", "paper_table")}
    assert by_rule["finetune"] and all("--gpus=1" in c for c in by_rule["finetune"])
    assert by_rule["evaluate"] and all("--gpus=1" in c for c in by_rule["evaluate"])
    assert by_rule["build_encoder"] and all("--gpus=1" in c for c in by_rule["build_encoder"])
    assert by_rule["prepare_task"] and not any("--gpus" in c for c in by_rule["prepare_task"])  # CPU job
    assert not by_rule["world"] and not by_rule["encoder_corpus"] and not by_rule["paper_table"]  # local
    assert all(f"-A {slurm_cluster.account}" in c and f"-p {slurm_cluster.partition}" in c for c in sbatch)


@pytest.mark.parametrize("gpu_partition,error", [
    (None, "error: XLT_SLURM_GPU_PARTITION unset: sbatch -p of the run's "),
    ("gpu", "error: XLT_SLURM_GPU_PARTITION=gpu: no such partition (sinfo lists: debug). Fix: export XLT_SLURM_GPU_PARTITION=<one of them>"),
], ids=["unset", "absent"])  # fmt: skip
def test_gpu_jobs_never_go_to_the_cpu_partition_the_run_stops_before_its_first_sbatch(slurm_cluster, tmp_path, gpu_partition, error):
    workdir = tmp_path / "run"
    workdir.mkdir()
    overrides(workdir)  # compute.gpus_per_job: 1, encoder jobs are GPU jobs
    env = {"XLT_SLURM_ACCOUNT": slurm_cluster.account, "XLT_SLURM_PARTITION": slurm_cluster.partition}
    if gpu_partition:
        env["XLT_SLURM_GPU_PARTITION"] = gpu_partition
    proc, log = start(slurm_cluster, workdir, ci_profile(tmp_path), "crossmulti_table2", env=env)
    proc.wait(timeout=TIMEOUT)
    out = log.read_text()
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert proc.returncode == 1 and len(errors) == 1 and errors[0].startswith(error), out[-4000:]
    assert "sbatch call:" not in out and slurm_cluster.jobs() == []  # nothing submitted
