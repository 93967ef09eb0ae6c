"""Several jobs on one GPU through Slurm's sharding (gres/shard), against the real test SLURM.

With XLT_SLURM_GPU_SHARDS set (the shards per GPU of the cluster's gres.conf), a job kind
with `jobs_per_gpu: N` in config.yaml's compute.jobs asks for `--gres=shard:<shards / N>`
(xlt.dag.resources) instead of `--gpus=1`. The test cluster has 2 fake GPUs of 4 shards each;
four evaluate jobs at config.yaml's share (4 to a GPU for a base encoder) run at the same
time, which two whole GPUs could not do, and Slurm points each at its GPU.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
import yaml

from tests.conftest import REPO
from tests.slurm.test_slurm_smoke import _require_plugin, fail_msg, run_snakemake, sacct_jobs, write_profile

pytestmark = pytest.mark.slurm

N_JOBS = 4

SNAKEFILE = """
from xlt.dag import resources as R

CFG = @CFG@

rule all:
    input: expand("shared/{i}.txt", i=range(@N@))

rule evaluate_like:
    output: "shared/{i}.txt"
    threads: 1
    resources: **R.job_resources(CFG, "evaluate", env={"XLT_SLURM_GPU_SHARDS": "@SHARDS@"})
    shell:
        # each job waits (bounded) until all have started: it ends only if they ran at once
        \"\"\"
        mkdir -p started && touch started/{wildcards.i}
        for t in $(seq 600); do [ "$(ls started | wc -l)" -ge @N@ ] && break; sleep 0.2; done
        [ "$(ls started | wc -l)" -ge @N@ ] || exit 3
        echo "$SLURM_JOB_ID ${{CUDA_VISIBLE_DEVICES:-none}} ${{SLURM_SHARDS_ON_NODE:-none}}" > {output}
        \"\"\"
"""


def test_small_jobs_share_a_gpu_by_shards_at_the_configured_share(slurm_cluster, tmp_path):
    _require_plugin()
    assert slurm_cluster.shards_per_gpu == 4 and slurm_cluster.gpus == 2
    compute = yaml.safe_load((REPO / "config.yaml").read_text())["compute"]
    share = compute["jobs"]["evaluate"]["jobs_per_gpu"]["base"]  # the shipped share of a base encoder
    assert share == 4
    # the shipped share, this machine's memory and time (config.yaml asks 16 GB, 60 minutes)
    cfg = {"encoders": {}, "compute": {"gpus_per_job": 1, "jobs": {"evaluate": {
        "threads": 1, "mem_mb": 100, "runtime": 5, "jobs_per_gpu": share}}}}  # fmt: skip
    wd = tmp_path / "wd"
    wd.mkdir()
    (wd / "Snakefile").write_text(SNAKEFILE.replace("@CFG@", json.dumps(cfg)).replace("@N@", str(N_JOBS))
                                  .replace("@SHARDS@", str(slurm_cluster.shards_per_gpu)))
    profile = write_profile(tmp_path / "profile", slurm_cluster, jobs=N_JOBS, **{"slurm-status-command": "squeue"})
    res = run_snakemake(slurm_cluster, wd, profile)
    assert res.returncode == 0, fail_msg(res, slurm_cluster)

    sbatch = [line for line in (res.stdout + res.stderr).splitlines() if "sbatch call:" in line]
    assert len(sbatch) == N_JOBS, sbatch
    print("\nsubmitted:", sbatch[0].split("sbatch call:", 1)[1].split("--wrap")[0].strip())
    assert all("--gres=shard:1" in s and "--gpus" not in s for s in sbatch), sbatch  # 4 shards / 4 jobs
    assert all(" -t 20 " in s for s in sbatch), sbatch  # 4 x 5 minutes: a shared GPU is time-sliced

    ran = [(wd / "shared" / f"{i}.txt").read_text().split() for i in range(N_JOBS)]
    print("jobs (id, CUDA_VISIBLE_DEVICES, shards):", ran)
    per_gpu = Counter(cuda for _, cuda, _ in ran)
    # four jobs at once on two GPUs: some GPU held two or more, none more than its share
    assert set(per_gpu) <= {"0", "1"} and max(per_gpu.values()) >= 2 and max(per_gpu.values()) <= share, per_gpu
    assert all(shards == "1" for _, _, shards in ran), ran
    jobs = sacct_jobs(slurm_cluster, *[job for job, _, _ in ran])
    assert all("gres/shard=1" in j["AllocTRES"] and "gres/gpu" not in j["AllocTRES"] for j in jobs.values()), jobs
