"""What each job asks a scheduler for, computed from the config (one place, unit-tested).

Rules declare `resources: **T.job_resources(config, "<kind>")`; every value is a function of
(wildcards, attempt), so the runtime grows when SLURM kills a job at its time limit and
Snakemake retries it.

Time limits: a GPU job asks for its priced time (the bill's wall-clock of the costliest job of
its rule, encoder size and dataset on the bill's GPU, written by `make bill` into
slurm/runtimes.json for the config it priced) times `compute.time_margin`, at least
MIN_RUNTIME minutes; a job the bill does not price (CPU work, or a config other than the
one priced) asks for its kind's `compute.jobs.<kind>.runtime`. Every request is capped by
`compute.max_runtime_hours` (the partitions' MaxTime, per partition kind gpu / cpu), and a
retry asks for `compute.runtime_growth` times more, within that cap: a job that hits its limit
resumes from its checkpoint (fine-tuning and MLM checkpoint on SIGTERM and every few minutes). Preemption is not a retry: the profile asks SLURM to requeue a
preempted job (the plugin's `requeue` setting), which restarts it under the same job id,
and fine-tuning resumes from its checkpoint. Cluster specifics (account, partitions, GPU model, extra sbatch flags)
come from environment variables, never from the repository:

    XLT_SLURM_ACCOUNT         sbatch -A
    XLT_SLURM_PARTITION       sbatch -p for CPU jobs
    XLT_SLURM_GPU_PARTITION   sbatch -p for GPU jobs (never XLT_SLURM_PARTITION: a cluster run
                              that leaves it unset stops before its first sbatch)
    XLT_SLURM_GPU_MODEL       --gpus=<model>:N
    XLT_SLURM_GPU_SHARDS      shards per GPU of the cluster's gres/shard (its gres.conf): a job
                              kind with `jobs_per_gpu: N` asks for --gres=shard:<shards / N>
                              instead of a whole GPU, so N such jobs share one GPU; unset:
                              every GPU job asks for whole GPUs
    XLT_SLURM_EXTRA           appended verbatim to sbatch (e.g. "--qos=high")
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import re
from pathlib import Path

from xlt.errors import XltError

# Job kinds and whether they run an encoder (and so may want a GPU).
KINDS = {"world": False, "corpus": False, "prepare": False, "download": False, "table": False,
         "build_encoder": True, "adapt_encoder": True, "finetune": True, "evaluate": True, "grid": True, "align": False,
         "l2": True, "analysis": True}
# Job kinds started under `launcher()` (torchrun, one process per GPU) when compute.ddp is on;
# every other encoder job is one process and gets one GPU (more would sit idle).
DDP_KINDS = ("finetune",)
# the bill's priced time of each GPU rule's jobs (`make bill` writes it; xlt.workflow.bill.job_minutes)
RUNTIMES = Path(__file__).resolve().parents[2] / "slurm" / "runtimes.json"
# minutes every priced job asks for at least: loading the encoder and the data, which the bill does not price
MIN_RUNTIME = 15
# the defaults of compute.time_margin and compute.max_runtime_hours where a config leaves them out
TIME_MARGIN = 1.5
MAX_RUNTIME_HOURS = 48
# the suffix of a fine-tune rule whose models are removed once evaluated (rules/finetune.smk,
# xlt.workflow.footprint): its jobs are its twin's, priced and limited as they are
TEMP_SUFFIX = "_temp"
_PACK = re.compile(r"finetune_pack(?:_\d+)+")


def gpus(cfg: dict, kind: str) -> int:
    """GPUs one job of `kind` asks for: compute.gpus_per_job under DDP, else at most 1."""
    compute = cfg.get("compute", {})
    n = int(compute.get("gpus_per_job", 0))
    if n > 1 and not compute.get("ddp"):
        raise XltError(f"compute.gpus_per_job={n} needs compute.ddp: true (only DDP fine-tuning uses "
                       "more than one GPU); allowed without ddp: 0 or 1")
    if not KINDS[kind] or n == 0:
        return 0
    return n if kind in DDP_KINDS else 1


def _by_size(cfg: dict, value, wildcards):
    """A per-kind setting: itself, or of a dict the job's encoder size's value (else "base")."""
    if not isinstance(value, dict):
        return value
    size = _size_class(cfg, getattr(wildcards, "encoder", None) if wildcards is not None else None)
    return value.get(size, value.get("base"))


def size_class(cfg: dict, encoder: str | None) -> str:
    """An encoder's size class for per-size settings: tiny (built), large, else base."""
    return _size_class(cfg, encoder)


def _size_class(cfg: dict, encoder: str | None) -> str:
    if not encoder:
        return "base"
    spec = cfg["encoders"].get(encoder, {})
    if "build" in spec:
        return "tiny"
    name = (spec.get("hub") or spec.get("path") or "").lower()
    return "large" if "large" in name else "base"


def job_resources(cfg: dict, kind: str, env: dict | None = None) -> dict:
    """Snakemake resources for a job kind; callables of (wildcards, attempt)."""
    if kind not in KINDS:
        raise XltError(f"unknown job kind {kind!r}; allowed: {', '.join(KINDS)}")
    env = os.environ if env is None else env
    compute = cfg.get("compute", {})
    per = compute.get("jobs", {}).get(kind, {})
    n_gpus = gpus(cfg, kind)
    uses_gpu = n_gpus > 0

    def pick(key, default):
        return lambda wildcards, attempt=1: _by_size(cfg, per.get(key, default), wildcards)

    mem = pick("mem_mb", 4000)
    base_runtime = pick("runtime", 30)
    growth = compute.get("runtime_growth", 2.0)
    shards = gpu_shards(cfg, kind, env)
    # a shared GPU is time-sliced: at worst each of N jobs runs N times slower (measured, four
    # pair fine-tunes: 1.94x), so a shared job's time limit is N times its own
    slowdown = (lambda wildcards: _by_size(cfg, per["jobs_per_gpu"], wildcards)) if shards else (lambda wildcards: 1)
    cap = max_runtime_minutes(cfg, uses_gpu)
    margin = time_margin(cfg)
    priced = priced_minutes(cfg) if uses_gpu else None

    def runtime(wildcards, attempt=1, rulename=None, models=1):
        """minutes: the priced time x margin (else the kind's runtime, times the `models` a
        pack trains), N times on a shared GPU; each retry (time limit) asks for `growth` times
        more, never above the partition's cap"""
        p = _priced(priced, cfg, rulename, wildcards) if priced else None
        first = max(MIN_RUNTIME, p * margin) if p is not None else base_runtime(wildcards, attempt) * models
        return int(min(cap, math.ceil(first * slowdown(wildcards) * growth ** (attempt - 1))))

    out = {
        "mem_mb": lambda wildcards, attempt: int(mem(wildcards, attempt)),
        "runtime": runtime,
    }
    if shards:
        # Slurm's sharding (gres/shard): several jobs on one GPU, CUDA_VISIBLE_DEVICES set by
        # Slurm; the plugin passes `gres` through as --gres and, seeing no "gpu" in it, one task
        out["gres"] = lambda wildcards, attempt: f"shard:{shards(wildcards)}"
    elif uses_gpu:
        # `gpu` alone: the SLURM plugin then submits one task (no --ntasks-per-gpu, which it
        # adds only for a `tasks`/`tasks_per_gpu` resource) and its job step runs the shell
        # command once with all N GPUs visible, so one torchrun starts N processes, not N×N.
        out["gpu"] = n_gpus
        if env.get("XLT_SLURM_GPU_MODEL"):
            out["gpu_model"] = env["XLT_SLURM_GPU_MODEL"]
    # a GPU job never goes to the CPU partition: unset, the cluster's default (the checks before
    # the first sbatch, xlt.workflow.preflight, stop a cluster run that leaves it unset)
    partition = env.get("XLT_SLURM_GPU_PARTITION" if uses_gpu else "XLT_SLURM_PARTITION")
    if partition:
        out["slurm_partition"] = partition
    if env.get("XLT_SLURM_ACCOUNT"):
        out["slurm_account"] = env["XLT_SLURM_ACCOUNT"]
    if env.get("XLT_SLURM_EXTRA"):
        out["slurm_extra"] = env["XLT_SLURM_EXTRA"]
    return out


def gpu_shards(cfg: dict, kind: str, env: dict):
    """None (whole GPUs), or the shards one job of `kind` asks for, as a function of its
    wildcards: XLT_SLURM_GPU_SHARDS // compute.jobs.<kind>.jobs_per_gpu (a number, or one per
    encoder size), for a kind that runs on one GPU. Four fine-tunes of sentence pairs at
    mBERT shape on one H200 ran 2.06x the samples/s of one alone (issue 40): a GPU running
    one small job idles most of the time."""
    per = cfg.get("compute", {}).get("jobs", {}).get(kind, {})
    if not env.get("XLT_SLURM_GPU_SHARDS") or "jobs_per_gpu" not in per or gpus(cfg, kind) != 1:
        return None
    raw = env["XLT_SLURM_GPU_SHARDS"]
    if not raw.isdigit() or int(raw) < 1:
        raise XltError(f"XLT_SLURM_GPU_SHARDS={raw!r}: the shards per GPU of the cluster's gres/shard "
                       "(a positive integer, as its gres.conf says), or unset for whole GPUs")
    total = int(raw)

    def shards(wildcards) -> int:
        n = _by_size(cfg, per["jobs_per_gpu"], wildcards)
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= total:
            raise XltError(f"config key compute.jobs.{kind}.jobs_per_gpu={n!r}: jobs sharing one GPU, "
                           f"an integer from 1 to XLT_SLURM_GPU_SHARDS={total}")
        return total // n

    return shards


def job_threads(cfg: dict, kind: str) -> int:
    return int(cfg.get("compute", {}).get("jobs", {}).get(kind, {}).get("threads", 1))


def processes(cfg: dict, kind: str) -> int:
    """Processes one job of `kind` runs: one per GPU under DDP, else one."""
    n = gpus(cfg, kind)
    return n if kind in DDP_KINDS and n > 1 else 1


def process_threads(cfg: dict, kind: str) -> int:
    """CPU threads for each process: the job's threads shared by its processes."""
    return max(1, job_threads(cfg, kind) // processes(cfg, kind))


def launcher(cfg: dict, kind: str = "finetune") -> str:
    """How a training script is started: plainly, or under one torchrun on one node that
    starts one process per GPU of the job (DDP)."""
    n = processes(cfg, kind)
    if n > 1:
        return f"torchrun --standalone --nnodes 1 --nproc-per-node {n}"
    return ""


def time_margin(cfg: dict) -> float:
    """compute.time_margin: a priced job asks for its priced time times this."""
    return float(cfg.get("compute", {}).get("time_margin", TIME_MARGIN))


def max_runtime_minutes(cfg: dict, gpu: bool) -> int:
    """compute.max_runtime_hours (a number, or one per partition kind gpu / cpu) in minutes."""
    value = cfg.get("compute", {}).get("max_runtime_hours", MAX_RUNTIME_HOURS)
    if isinstance(value, dict):
        value = value.get("gpu" if gpu else "cpu", MAX_RUNTIME_HOURS)
    return int(value * 60)


def config_fingerprint(cfg: dict) -> str:
    """What slurm/runtimes.json was priced for: the config's work (its `compute` block aside,
    which changes the requests, not the work; keep_models too, which removes models after it)."""
    text = json.dumps({k: v for k, v in cfg.items() if k not in ("compute", "keep_models")}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=4)
def _runtimes(path: str, mtime: float) -> dict:
    return json.loads(Path(path).read_text())


def runtimes_table(path: Path | None = None) -> dict | None:
    """slurm/runtimes.json (None if absent)."""
    path = RUNTIMES if path is None else path
    return _runtimes(str(path), path.stat().st_mtime) if path.exists() else None


def priced_minutes(cfg: dict, path: Path | None = None) -> dict | None:
    """{rule: {size: {dataset | "*": minutes}}} the bill priced for this config, else None."""
    table = runtimes_table(path)
    if not table or table.get("fingerprint") != config_fingerprint(cfg):
        return None
    return table["minutes"]


def runtime_rule(rule: str) -> str:
    """A pack of fine-tunes (finetune_pack_1_2_3) is priced as a pack, whatever its seeds; a rule
    whose models are removed once evaluated (finetune_temp) as its twin."""
    rule = kept_twin(rule)
    return "finetune_pack" if _PACK.fullmatch(rule) else rule


def kept_twin(rule: str) -> str:
    """finetune_temp -> finetune, finetune_pack_1_2_temp -> finetune_pack_1_2; any other rule itself."""
    return rule.removesuffix(TEMP_SUFFIX) if rule.startswith("finetune") else rule


def _priced(priced: dict, cfg: dict, rulename: str | None, wildcards) -> float | None:
    by_size = priced.get(runtime_rule(rulename)) if rulename else None
    if not by_size:
        return None
    by_data = by_size.get(_size_class(cfg, getattr(wildcards, "encoder", None) if wildcards is not None else None))
    if not by_data:
        by_data = {"*": max(m for d in by_size.values() for m in d.values())}
    dataset = getattr(wildcards, "task", None) or getattr(wildcards, "dataset", None)
    return by_data.get(dataset, by_data["*"]) if isinstance(dataset, str) else by_data["*"]


def jobs_per_gpu(cfg: dict, kind: str, size: str, env: dict) -> int:
    """Jobs of `kind` on `size` encoders that share one GPU under this config and environment
    (XLT_SLURM_GPU_SHARDS set and compute.jobs.<kind>.jobs_per_gpu): 1 where they do not."""
    if not gpu_shards(cfg, kind, env):
        return 1
    n = cfg["compute"]["jobs"][kind]["jobs_per_gpu"]
    return int(n.get(size, n.get("base", 1)) if isinstance(n, dict) else n)
