"""The checks before the first sbatch of a cluster run (`make plan` lists them; a `--profile
slurm` run stops on them in rules/common.smk's onstart, before any job is submitted): Slurm
present, the account and both partitions set and existing, GPU jobs never on a CPU partition,
the disk free against the plan's. Each failure is one line naming the variable or command that
fixes it. Without them a missing Slurm showed as the SLURM plugin's `[Errno 2] No such file or
directory: 'sacctmgr'` once per job submitted, and GPU jobs went to the CPU partition silently.

The environment variables are xlt.dag.resources' (slurm/profile.yaml reads none itself).
Nothing here imports Snakemake.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from xlt.dag import resources as R
from xlt.workflow.bill import rule_kinds
from xlt.workflow.footprint import gb
from xlt.workflow.packs import base_rule

SLURM_COMMANDS = ("sbatch", "sacct")  # what the SLURM plugin submits and polls with
README = 'README.md, "Run it on a SLURM cluster"'


@dataclass(frozen=True)
class Missing:
    what: str  # one line: what is missing and why it matters
    command: str  # what to type


def _run(args: list[str]) -> str | None:
    """A Slurm query's stdout, or None where it fails (no controller, no accounting)."""
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout if r.returncode == 0 else None


def job_devices(cfg: dict, jobs: list[tuple[str, list[str]]]) -> tuple[int, int]:
    """(CPU jobs, GPU jobs) of `jobs` (xlt.dag.resources.gpus of their rule's kind; a rule of no
    kind, an alias target, submits nothing)."""
    kinds = rule_kinds()
    found = [R.gpus(cfg, k) > 0 for rule, _ in jobs if (k := kinds.get(base_rule(rule)))]
    return found.count(False), found.count(True)


def slurm_checks(cfg: dict, jobs: list[tuple[str, list[str]]], env: Mapping[str, str], disk_left: int,
                 which: Callable[[str, str | None], str | None] = shutil.which,
                 run: Callable[[list[str]], str | None] = _run,
                 disk_usage: Callable = shutil.disk_usage, workdir: Path = Path(".")) -> list[Missing]:  # fmt: skip
    """What stops a cluster run before its first sbatch, in the order to fix it. `disk_left`: the
    bytes the plan says the run leaves (xlt.workflow.footprint.disk) under `workdir`; `which`,
    `run`, `disk_usage`: the lookups (tests give fakes)."""
    out = []
    path = env.get("PATH", os.defpath)
    absent = [c for c in SLURM_COMMANDS if not which(c, path=path)]
    if absent:
        out.append(Missing(f"Slurm is not installed here: {' and '.join(absent)} not on PATH; submit from the cluster's "
                           "login node (`module load slurm` where it is a module), or run locally: `make tables`",
                           f"command -v {' '.join(SLURM_COMMANDS)}"))  # fmt: skip
    partitions = None
    if not absent:
        if (listed := run(["sinfo", "-h", "-o", "%R"])) is None:
            # installed, but no controller answers: the plugin would fail on each submission
            out.append(Missing("Slurm does not answer here: `sinfo` fails (no controller reachable from this machine, "
                               "or SLURM_CONF points nowhere); submit from the cluster's login node", "sinfo"))  # fmt: skip
            absent = ["a controller"]
        else:
            partitions = sorted({p.strip() for p in listed.split()})
    account = env.get("XLT_SLURM_ACCOUNT")
    if not account:
        out.append(Missing(f"XLT_SLURM_ACCOUNT is unset: `--profile slurm` submits with sbatch -A from it ({README})",
                           "export XLT_SLURM_ACCOUNT=<your project>"))  # fmt: skip
    elif not absent and (listed := run(["sacctmgr", "-n", "-P", "list", "associations", "format=account"])):
        accounts = {a.strip().lower() for a in listed.split()}
        if accounts and account.lower() not in accounts:
            out.append(Missing(f"XLT_SLURM_ACCOUNT={account}: no such account of yours (sacctmgr lists: "
                               f"{', '.join(sorted(accounts))})", "export XLT_SLURM_ACCOUNT=<one of them>"))  # fmt: skip
    n_cpu, n_gpu = job_devices(cfg, jobs)
    asked = [(var, who, n) for var, who, n in (("XLT_SLURM_PARTITION", "CPU jobs", n_cpu),
                                               ("XLT_SLURM_GPU_PARTITION", "GPU jobs", n_gpu)) if n]  # fmt: skip
    if unset := [(var, who, n) for var, who, n in asked if not env.get(var)]:
        # one line for both: a GPU job never falls back to the CPU partition (xlt.dag.resources)
        gpu_unset = any(v == "XLT_SLURM_GPU_PARTITION" for v, _, _ in unset)
        out.append(Missing(" and ".join(v for v, _, _ in unset) + " unset: sbatch -p of the run's "
                           + " and ".join(f"{n:,} {who}" for _, who, n in unset)
                           + ("; GPU jobs never go to the CPU partition" if gpu_unset else "") + f" ({README})",
                           "export " + " ".join(f"{v}=<partition>" for v, _, _ in unset) + "  # sinfo -s lists them"))  # fmt: skip
    for var, who, n in asked:
        value = env.get(var)
        if not value:
            continue
        if partitions is not None and value not in partitions:
            out.append(Missing(f"{var}={value}: no such partition (sinfo lists: {', '.join(partitions)})",
                               f"export {var}=<one of them>"))  # fmt: skip
        elif var == "XLT_SLURM_GPU_PARTITION" and partitions is not None:
            gres = run(["sinfo", "-h", "-p", value, "-o", "%G"])
            if gres is not None and "gpu" not in gres:
                out.append(Missing(f"XLT_SLURM_GPU_PARTITION={value} has no GPUs (sinfo's GRES: {' '.join(gres.split())}): "
                                   f"the run's {n:,} GPU jobs would wait forever or run without one",
                                   "export XLT_SLURM_GPU_PARTITION=<a GPU partition>  # sinfo -o '%R %G'"))  # fmt: skip
    where = (workdir / (cfg.get("results") or ".")).resolve()
    while not where.exists() and where != where.parent:
        where = where.parent
    free = disk_usage(where).free
    if disk_left > free:
        out.append(Missing(f"{gb(free)} free where results go, the run leaves about {gb(disk_left)} (Disk above): free "
                           "space, or point config `results:` at a larger disk", f"df -h {where}"))  # fmt: skip
    return out
