"""Several GPUs per job and preemption, through the SLURM plugin against the real test SLURM.

A DDP job asks for `gpu=N` (xlt.dag.resources) and runs one `torchrun --nproc-per-node N`. The
plugin (2.8.0) adds `--ntasks-per-gpu` only for a `tasks`/`tasks_per_gpu` resource, and
its job step runs the shell command once (`srun -n1`), so N processes start, not N×N:
shown here with the sbatch call and the processes that actually ran (one gloo group).

Preemption: the profile's `slurm-requeue: true` submits with `--requeue`; a requeued job
(what preemption with PreemptMode=REQUEUE does; `scontrol requeue` here) runs again under
the same job id while Snakemake keeps waiting, with `retries: 0`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from tests.slurm.test_slurm_smoke import (
    _require_plugin,
    fail_msg,
    run_snakemake,
    sacct_jobs,
    snakemake_cmd,
    snakemake_running,
    wait_until,
    write_profile,
)

pytestmark = pytest.mark.slurm

# One process of the DDP job: joins the gloo group torchrun set up, all-reduces a 1, and
# writes what it saw to proc-<pid>.json.
RANK_SCRIPT = """
import json, os, sys
import torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.ones(1)
dist.all_reduce(t)
info = {k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "SLURM_JOB_ID", "CUDA_VISIBLE_DEVICES")}
info["all_reduce"] = int(t.item())
open(os.path.join(sys.argv[1], f"proc-{os.getpid()}.json"), "w").write(json.dumps(info))
dist.destroy_process_group()
"""

DDP_SNAKEFILE = """
from xlt.dag import resources as R

CFG = {"encoders": {}, "compute": {"gpus_per_job": 2, "ddp": True,
       "jobs": {"finetune": {"threads": 1, "mem_mb": 300, "runtime": 5}}}}

rule all:
    input: "ddp/done"

rule ddp_step:
    output: touch("ddp/done")
    threads: R.job_threads(CFG, "finetune")
    resources: **R.job_resources(CFG, "finetune", env={}), @EXTRA@
    params: launcher=R.launcher(CFG, "finetune")
    shell: "{params.launcher} rank.py ddp"
"""


@pytest.mark.parametrize("extra", ["", "tasks_per_gpu=1"], ids=["xlt-resources", "with-tasks_per_gpu"])
def test_ddp_job_with_two_gpus_starts_two_processes(slurm_cluster, tmp_path, extra):
    """`extra=tasks_per_gpu=1` is what would add --ntasks-per-gpu: the sbatch call then
    carries it, and the job step still runs the command once (2 processes, not 4)."""
    _require_plugin()
    wd = tmp_path / "wd"
    (wd / "ddp").mkdir(parents=True)
    (wd / "Snakefile").write_text(DDP_SNAKEFILE.replace("@EXTRA@", extra))
    profile = write_profile(tmp_path / "profile", slurm_cluster, **{"slurm-status-command": "squeue"})
    # torchrun (the venv's) and rank.py (the workdir's) are called by name, as in the rules
    (wd / "rank.py").write_text("#!" + sys.executable + "\n" + RANK_SCRIPT)
    (wd / "rank.py").chmod(0o755)
    path = f"{wd}:{Path(sys.executable).parent}:{slurm_cluster.environ()['PATH']}"
    res = run_snakemake(slurm_cluster, wd, profile, env=slurm_cluster.environ(PATH=path))
    assert res.returncode == 0, fail_msg(res, slurm_cluster)

    sbatch = [line for line in (res.stdout + res.stderr).splitlines() if "sbatch call:" in line]
    assert len(sbatch) == 1, sbatch
    print("\nsubmitted:", sbatch[0].split("sbatch call:", 1)[1].split("--wrap")[0].strip())
    assert "--gpus=2" in sbatch[0]
    assert ("--ntasks-per-gpu" in sbatch[0]) == bool(extra), sbatch[0]

    procs = [json.loads(p.read_text()) for p in sorted((wd / "ddp").glob("proc-*.json"))]
    print("processes:", procs)
    assert len(procs) == 2, procs  # one torchrun, two ranks; N×N would be 4
    assert sorted(p["RANK"] for p in procs) == ["0", "1"]
    assert all(p["WORLD_SIZE"] == "2" and p["all_reduce"] == 2 for p in procs), procs  # one group of 2
    assert len({p["SLURM_JOB_ID"] for p in procs}) == 1
    assert all(len(p["CUDA_VISIBLE_DEVICES"].split(",")) == 2 for p in procs), procs  # both GPUs visible


REQUEUE_SNAKEFILE = """
rule all:
    input: "requeued.txt"

rule preemptible:
    output: "requeued.txt"
    resources: runtime=5, mem_mb=100
    shell:
        \"\"\"
        # (the job step strips SLURM_RESTART_COUNT: runs are counted in the file)
        touch @COUNTER@
        runs=$(wc -l < @COUNTER@)
        echo "$SLURM_JOB_ID $runs $(date +%T)" >> @COUNTER@
        # the first run waits (bounded) to be requeued; the requeued run finishes
        if [ "$runs" = 0 ]; then sleep 240; exit 3; fi
        echo done > {output}
        \"\"\"
"""


def test_preempted_job_is_requeued_by_slurm_not_retried(slurm_cluster, tmp_path):
    _require_plugin()
    wd = tmp_path / "wd"
    wd.mkdir()
    counter = tmp_path / "runs.txt"
    (wd / "Snakefile").write_text(REQUEUE_SNAKEFILE.replace("@COUNTER@", str(counter)))
    repo_profile = yaml.safe_load((REPO / "slurm" / "profile.yaml").read_text())
    assert repo_profile["slurm-requeue"] is True  # the shipped profile asks for it
    profile = write_profile(tmp_path / "profile", slurm_cluster, **{
        "slurm-status-command": "squeue", "slurm-requeue": True, "retries": 0})  # fmt: skip
    log_path = tmp_path / "snakemake.out"

    def runs() -> list[list[str]]:
        return [line.split() for line in counter.read_text().splitlines()] if counter.exists() else []

    def log() -> str:
        return log_path.read_text(errors="replace") if log_path.exists() else ""

    with open(log_path, "w") as out:
        proc = slurm_cluster.popen(snakemake_cmd(wd, profile), cwd=wd, stdout=out, stderr=subprocess.STDOUT)
    with snakemake_running(slurm_cluster, proc, log):
        job = wait_until(lambda: runs()[:1], 120, "the job to start", proc, log)[0][0]
        slurm_cluster.run(["scontrol", "requeue", job], timeout=30, check=True)

        def pending() -> bool:
            r = slurm_cluster.run(["squeue", "-h", "-j", job, "-o", "%T"], timeout=30)
            return r.stdout.strip() == "PENDING"

        wait_until(pending, 60, "the requeued job to be pending", proc, log)
        # SLURM holds a requeued job back for a while (BeginTime); let it start now
        slurm_cluster.run(["scontrol", "update", f"JobId={job}", "StartTime=now"], timeout=30, check=True)
        wait_until(lambda: len(runs()) >= 2, 180, "the requeued run", proc, log)
    assert (wd / "requeued.txt").read_text().strip() == "done"
    assert [r[:2] for r in runs()] == [[job, "0"], [job, "1"]], runs()  # one job id, run twice by SLURM
    sbatch = [line for line in log().splitlines() if "sbatch call:" in line]
    assert len(sbatch) == 1 and "--requeue" in sbatch[0], sbatch  # submitted once: no retry spent
    assert sacct_jobs(slurm_cluster, job)[job]["State"] == "COMPLETED"
