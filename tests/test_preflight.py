"""The checks before the first sbatch (xlt.workflow.preflight): each failure is one line naming
the variable or command that fixes it, with Slurm's commands faked (a PATH, sinfo's and
sacctmgr's answers, the disk's free space); and a cluster run without Slurm stops on one line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import namedtuple
from pathlib import Path

from tests.conftest import REPO
from tests.test_config import base
from xlt.dag import resources as R
from xlt.workflow import plan as L
from xlt.workflow.preflight import slurm_checks

Usage = namedtuple("Usage", "total used free")
JOBS = [("finetune", ["results/models/mbert/pretrained/xnli/en.p/seed1"]), ("prepare_task", ["results/data/xnli"]),
        ("all_tables", [])]  # fmt: skip
GOOD = {"XLT_SLURM_ACCOUNT": "proj", "XLT_SLURM_PARTITION": "cpu", "XLT_SLURM_GPU_PARTITION": "gpu", "PATH": "/slurm/bin"}
SINFO = {("sinfo", "-h", "-o", "%R"): "cpu\ngpu\n", ("sinfo", "-h", "-p", "gpu", "-o", "%G"): "gpu:h100:4\n",
         ("sinfo", "-h", "-p", "cpu", "-o", "%G"): "(null)\n",
         ("sacctmgr", "-n", "-P", "list", "associations", "format=account"): "proj\nother\n"}  # fmt: skip


def check(env=GOOD, answers=SINFO, free=10**13, left=10**9, on_path=("sbatch", "sacct")):
    asked = []

    def which(cmd, path=None):
        return f"{path}/{cmd}" if cmd in on_path and path == "/slurm/bin" else None

    def run(args):
        asked.append(args[0])
        return answers.get(tuple(args))

    found = slurm_checks(base(), JOBS, env, left, which=which, run=run, disk_usage=lambda p: Usage(0, 0, free))
    return [f"{m.what} | {m.command}" for m in found], asked


def test_a_ready_cluster_passes_every_check():
    assert check() == ([], ["sinfo", "sacctmgr", "sinfo"])


def test_no_slurm_is_one_line_and_no_slurm_command_is_tried():
    lines, asked = check(on_path=("sacct",))
    assert lines == ["Slurm is not installed here: sbatch not on PATH; submit from the cluster's login node "
                     "(`module load slurm` where it is a module), or run locally: `make tables` | command -v sbatch sacct"]
    assert asked == []  # neither sacctmgr nor sinfo: the plugin's `[Errno 2] ... 'sacctmgr'` never shows


def test_a_slurm_whose_controller_does_not_answer_is_one_line():
    lines, asked = check(answers={})
    assert lines == ["Slurm does not answer here: `sinfo` fails (no controller reachable from this machine, or SLURM_CONF "
                     "points nowhere); submit from the cluster's login node | sinfo"]
    assert asked == ["sinfo"]


def test_an_unset_account_names_its_variable():
    lines, _ = check(env={k: v for k, v in GOOD.items() if k != "XLT_SLURM_ACCOUNT"})
    assert len(lines) == 1 and lines[0].startswith("XLT_SLURM_ACCOUNT is unset")
    assert lines[0].endswith("| export XLT_SLURM_ACCOUNT=<your project>")


def test_an_account_sacctmgr_does_not_list_is_named_with_the_ones_it_does():
    lines, _ = check(env={**GOOD, "XLT_SLURM_ACCOUNT": "nope"})
    assert lines == ["XLT_SLURM_ACCOUNT=nope: no such account of yours (sacctmgr lists: other, proj) | "
                     "export XLT_SLURM_ACCOUNT=<one of them>"]


def test_unset_partitions_are_one_line_naming_both_variables():
    lines, _ = check(env={k: v for k, v in GOOD.items() if "PARTITION" not in k})
    assert len(lines) == 1
    assert lines[0].startswith("XLT_SLURM_PARTITION and XLT_SLURM_GPU_PARTITION unset: sbatch -p of the run's 1 CPU jobs "
                               "and 1 GPU jobs; GPU jobs never go to the CPU partition")
    assert lines[0].endswith("| export XLT_SLURM_PARTITION=<partition> XLT_SLURM_GPU_PARTITION=<partition>  # sinfo -s lists them")


def test_an_unset_gpu_partition_is_an_error_and_gpu_jobs_never_take_the_cpu_partition():
    env = {k: v for k, v in GOOD.items() if k != "XLT_SLURM_GPU_PARTITION"}
    lines, _ = check(env=env)
    assert len(lines) == 1 and lines[0].startswith("XLT_SLURM_GPU_PARTITION unset: sbatch -p of the run's 1 GPU jobs")
    # what the job would ask for: no partition (the cluster's default), never XLT_SLURM_PARTITION's
    cfg = base()
    assert "slurm_partition" not in R.job_resources(cfg, "finetune", env)
    assert R.job_resources(cfg, "prepare", env)["slurm_partition"] == "cpu"
    assert R.job_resources(cfg, "finetune", GOOD)["slurm_partition"] == "gpu"


def test_a_run_without_gpu_jobs_needs_no_gpu_partition():
    env = {k: v for k, v in GOOD.items() if k != "XLT_SLURM_GPU_PARTITION"}
    cfg = {**base(), "compute": {**base()["compute"], "gpus_per_job": 0}}
    found = slurm_checks(cfg, JOBS, env, 0, which=lambda c, path=None: c, run=lambda a: SINFO.get(tuple(a)),
                         disk_usage=lambda p: Usage(0, 0, 1))  # fmt: skip
    assert found == []


def test_a_partition_sinfo_does_not_list_is_named_with_the_ones_it_does():
    lines, _ = check(env={**GOOD, "XLT_SLURM_GPU_PARTITION": "gpus"})
    assert lines == ["XLT_SLURM_GPU_PARTITION=gpus: no such partition (sinfo lists: cpu, gpu) | "
                     "export XLT_SLURM_GPU_PARTITION=<one of them>"]


def test_a_gpu_partition_without_gpus_is_refused():
    lines, _ = check(env={**GOOD, "XLT_SLURM_GPU_PARTITION": "cpu"})
    assert len(lines) == 1 and lines[0].startswith("XLT_SLURM_GPU_PARTITION=cpu has no GPUs (sinfo's GRES: (null))")


def test_too_little_disk_names_the_free_space_the_need_and_the_key():
    lines, _ = check(free=5 * 10**9, left=1_092 * 10**9)
    assert len(lines) == 1
    assert lines[0].startswith("5.0 GB free where results go, the run leaves about 1,092 GB (Disk above): free space, "
                               "or point config `results:` at a larger disk | df -h ")


def test_the_tiny_plan_asks_for_no_encoder_snapshot_it_never_reads(tmp_path):
    from tests.test_plan import _plan_script

    cfg, jobs = _plan_script().dag_jobs([str(REPO / "presets" / "tiny.yaml")], "all_tables", tmp_path)
    assert L.used_hub_encoders(cfg, jobs) == []
    missing = L.missing_first(cfg, tmp_path, env={}, jobs=jobs)
    assert not any("make prefetch" in m.command for m in missing), missing
    assert L.missing_first(cfg, tmp_path, env={})  # without the jobs: every Hub encoder, as before


def test_a_cluster_run_without_slurm_stops_on_one_line_before_any_submission(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()  # a PATH with no Slurm command on it (this machine's tests may have installed one)
    for tool in ("bash", "sh", "env", "git", "which", "uname"):  # what Snakemake itself calls
        if found := shutil.which(tool):
            (bin_dir / tool).symlink_to(found)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("XLT_SLURM")}, "PATH": str(bin_dir),
           "XLT_SLURM_ACCOUNT": "proj", "XLT_SLURM_PARTITION": "cpu"}  # fmt: skip
    run = subprocess.run([sys.executable, "-m", "snakemake", "crossmulti_table2", "--snakefile", str(REPO / "Snakefile"),
                          "--directory", str(tmp_path), "--profile", str(REPO / "slurm"),
                          "--configfile", str(REPO / "presets" / "tiny.yaml")],
                         capture_output=True, text=True, timeout=300, env=env)  # fmt: skip
    errors = [line for line in run.stderr.splitlines() if line.startswith("error: ")]
    assert run.returncode == 1 and "sacctmgr" not in run.stdout + run.stderr, run.stderr[-3000:]
    assert errors == ["error: Slurm is not installed here: sbatch and sacct not on PATH; submit from the cluster's login "
                      "node (`module load slurm` where it is a module), or run locally: `make tables`. Fix: command -v "
                      "sbatch sacct"]
    assert "sbatch call" not in run.stderr and not (tmp_path / "results").exists()


def test_an_unset_cpu_partition_alone_names_only_its_variable():
    lines, _ = check(env={k: v for k, v in GOOD.items() if k != "XLT_SLURM_PARTITION"})
    assert lines == ["XLT_SLURM_PARTITION unset: sbatch -p of the run's 1 CPU jobs (README.md, \"Run it on a SLURM cluster\") | "
                     "export XLT_SLURM_PARTITION=<partition>  # sinfo -s lists them"]
