"""The plan before a run (`make plan`, and the start of a `--profile slurm` run): one screen with
the jobs per stage, their GPU-hours from the bill (xlt.workflow.bill), what is missing first and the
next command to type.

    jobs      (rule, outputs) of every job the run would start, as `xlt.workflow.bill.dag_jobs` gives
              them; the caller reads them from Snakemake's DAG (workflow_scripts/plan.py,
              rules/common.smk's onstart)
    stages    a rule's stage is the rules file that declares it (rules/<stage>.smk), in the
              order the Snakefile includes them
    missing   in the order to fix them: downloads and encoder snapshots not prefetched (the
              compute nodes have no network), catalog files and snapshots not locked yet,
              XLT_SLURM_ACCOUNT unset

Nothing here imports Snakemake.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from xlt.workflow import paper_targets as P
from xlt.dag import targets as T
from xlt.workflow import footprint as F
from xlt.workflow.help import declared_rules
from xlt.workflow.preflight import Missing, slurm_checks
from xlt.workflow.packs import base_rule, pack_models
import json
import math
from types import SimpleNamespace

from xlt.dag import resources as R
from xlt.workflow.bill import Examples, gpu_runs, levers_of, report, rule_kinds

REPO = Path(__file__).resolve().parent.parent.parent
LOCK_FILE = "xlt/sources/catalog.lock.yaml"
_INCLUDE = re.compile(r'^include: "rules/(\w+)\.smk"', re.M)


def stages(repo: Path = REPO) -> dict[str, str]:
    """rule -> its stage (the stem of the rules file declaring it), in the Snakefile's include order."""
    out = {}
    # the Snakefile's include lines, then each registered paper's rules file (its include loop)
    stems = [s for s in _INCLUDE.findall((repo / "Snakefile").read_text(encoding="utf-8")) if "{" not in s]
    stems += [slug for slug in P.PAPERS if slug not in stems and (repo / "rules" / f"{slug}.smk").exists()]
    for stem in stems:
        for rule in declared_rules(repo / "rules" / f"{stem}.smk"):
            out[rule] = stem
    return out


def stage_rows(jobs: list[tuple[str, list[str]]], rule_hours: Mapping[str, float],
               rule_stage: Mapping[str, str], rule_measured: Mapping[str, float] | None = None,
               ) -> list[tuple[str, int, float, float]]:  # fmt: skip
    """(stage, jobs, GPU-hours, of them priced from measured rates) in include order; a job of a
    rule no rules file declares (an alias target: no work of its own) is left out."""
    order = list(dict.fromkeys(rule_stage.values()))
    count: Counter = Counter()
    hours: Counter = Counter()
    measured: Counter = Counter()
    for rule, _ in jobs:
        rule = base_rule(rule)  # a pack of fine-tunes (xlt.workflow.packs) is a fine-tune job
        if rule in rule_stage:
            count[rule_stage[rule]] += 1
    for rule, h in rule_hours.items():
        if rule in rule_stage:
            hours[rule_stage[rule]] += h
            measured[rule_stage[rule]] += (rule_measured or {}).get(rule, 0.0)
    return [(s, count[s], hours[s], measured[s]) for s in order if count[s]]


def largest_request(cfg: dict, jobs: list[tuple[str, list[str]]], env: Mapping[str, str]) -> tuple[int, str]:
    """(minutes, rule) of the longest time limit a job of `jobs` asks for on its first attempt,
    as xlt.dag.resources computes it (the priced time of slurm/runtimes.json where it prices this
    config, else the kind's runtime)."""
    kinds, priced = rule_kinds(), R.priced_minutes(cfg) or {}
    by_size = {}
    for enc in cfg.get("encoders") or {}:
        by_size.setdefault(R.size_class(cfg, enc), enc)
    best = (0, "")
    for rule in sorted({r for r, _ in jobs}):
        kind = kinds.get(base_rule(rule))
        if not kind:
            continue
        runtime = R.job_resources(cfg, kind, dict(env))["runtime"]
        datasets = {d for v in priced.get(R.runtime_rule(rule), {}).values() for d in v} or {None}
        models = pack_models(rule)
        for enc in by_size.values():
            for d in datasets:
                m = runtime(SimpleNamespace(encoder=enc, task=d), 1, rulename=rule, models=models)
                best = max(best, (m, rule))
    return best


def missing_first(cfg: dict, workdir: Path, env: Mapping[str, str],
                  lock_counts: Mapping[str, int] | None = None,
                  jobs: list[tuple[str, list[str]]] | None = None) -> list[Missing]:  # fmt: skip
    """What to do before submitting, in order. `lock_counts`: xlt.sources.pins.tally's counts
    over the sources this run downloads (None: not asked); `jobs`: the run's (rule, outputs),
    whose encoders' snapshots alone are asked for (None: every Hub encoder's)."""
    out = []
    snapshots = {T.snapshot_dir(cfg, e) for e in used_hub_encoders(cfg, jobs)}
    fetch = [f for f in P.prefetch(cfg) if f in snapshots or not f.startswith(T.snapshot_dir(cfg, ""))]
    absent = [f for f in fetch if not (workdir / f).exists()]
    if absent:
        n_snap = sum(f in snapshots for f in absent)
        out.append(Missing(
            f"{len(absent) - n_snap} of {len(fetch) - len(snapshots)} downloads and {n_snap} of {len(snapshots)} "
            "encoder snapshots are not prefetched: compute nodes have no network; fetch them on the login node",
            "make prefetch"))  # fmt: skip
    if lock_counts and (lock_counts.get("not locked") or lock_counts.get("encoders not locked")):
        out.append(Missing(
            f"{lock_counts.get('not locked', 0)} catalog files and {lock_counts.get('encoders not locked', 0)} "
            f"encoder snapshots are not locked yet: the first fetch locks them in {LOCK_FILE}; "
            "check the locks and commit that file",
            f"make pins  # then: git add {LOCK_FILE} && git commit"))  # fmt: skip
    return out


def used_hub_encoders(cfg: dict, jobs: list[tuple[str, list[str]]] | None) -> list[str]:
    """The Hub encoders whose snapshot the run reads: those named in its jobs' outputs (a
    snapshot, a model, an adapted encoder, an evaluation); every one where `jobs` is None."""
    hub = T.hub_encoders(cfg)
    if jobs is None:
        return hub
    results = cfg["results"].rstrip("/") + "/"
    named = set()
    for _, outputs in jobs:
        for o in outputs:
            if o.startswith(results) and len(parts := o[len(results):].split("/")) > 1:
                named.add(parts[1])
            named.update(e for e in hub if o == T.snapshot_dir(cfg, e))
    return [e for e in hub if e in named]


def render(target: str, config: str, jobs: list[tuple[str, list[str]]], bill: dict, missing: list[Missing],
           run_command: str | None, rule_stage: Mapping[str, str] | None = None,
           times: Mapping | None = None, gpus: int = 8, disk: Mapping | None = None) -> list[str]:  # fmt: skip
    """The plan, one screen: jobs and GPU-hours per stage (measured / estimated) on the bill's
    GPU, the total, the assumptions each with the price without it, the wall-clock on `gpus`
    GPUs, the time limits (`times`: plan_lines' time_limits), the disk (`disk`:
    xlt.workflow.footprint.disk), what is missing, the next command (none when `run_command` is
    None: the run has started)."""
    rule_stage = stages() if rule_stage is None else rule_stage
    rule_hours = {r: v["ours"] for r, v in bill["rules"].items()}
    rule_measured = {r: v.get("measured_ours", 0.0) for r, v in bill["rules"].items()}
    rows = stage_rows(jobs, rule_hours, rule_stage, rule_measured)
    total_row = bill["papers"].get("total", {})
    total, measured = total_row.get("ours", 0.0), total_row.get("measured_ours", 0.0)
    n = sum(c for _, c, *_ in rows)
    gpu = bill.get("gpu", "GPU")
    out = [f"Plan of `{target}` on {config}: {n:,} jobs to run, {_hours(total)} GPU-hours on the {gpu} "
           f"({_hours(measured)} measured, {_hours(total - measured)} estimated)",
           "(GPU-hours: from the GPU benchmark's tokens/s where it measured the work, else a FLOPs ESTIMATE; "
           "`make bill` gives them per paper and rule)", "",
           f"  {'stage':<12}{'jobs':>7}  {'GPU-hours':>10}{'measured':>10}{'estimated':>10}" + _disk_head(disk)]  # fmt: skip
    out += [f"  {s:<12}{c:>7,}  {_hours(h) if h else '–':>10}{_hours(m) if h else '–':>10}{_hours(h - m) if h else '–':>10}"
            + _disk_cells(disk, s) for s, c, h, m in rows]
    out += [f"  {'total':<12}{n:>7,}  {_hours(total):>10}{_hours(measured):>10}{_hours(total - measured):>10}"
            + _disk_cells(disk, None), ""]
    if disk and disk["written"]:
        out += disk_lines(disk)
    levers = bill.get("levers") or {}
    if levers:
        out.append("Assumptions (each with the total without it):")
        alt = bill.get("sharing_alternative") or {}
        out.append(f"  - GPU sharing {levers['share']['setting']}")
        out.append(f"    {alt.get('label', 'the other way')}: {_hours(alt.get('ours', 0.0))} GPU-hours")
        for lever, name in (("pack", "packed fine-tunes"), ("eval", "bf16 evaluation")):
            v = levers[lever]
            est = "ESTIMATE" if v["from"].startswith("ESTIMATE") else "measured"
            out.append(f"  - {name} ({v['setting']}; {est}): without it {_hours(total + v['saves'])} GPU-hours")
        longest = max((m for r in (bill.get("runtimes") or {}).values() for s in r.values() for m in s.values()),
                      default=0.0) / 60  # fmt: skip
        wall = max(total / max(gpus, 1), longest)
        out.append(f"Wall-clock on {gpus} GPUs (make plan GPUS=N): about {_hours(wall)} h (GPU-hours / GPUs, at least the "
                   f"longest job's {_hours(longest)} h; waits in the queue not counted)")
    if times:
        out.append(f"Time limits: a GPU job asks for {times['how']};")
        out.append(f"  every job at most {times['cap_h']:g} h (compute.max_runtime_hours), a retry "
                   f"{times['growth']:g}x more within that cap.")
        out.append(f"  Largest request: {_hours(times['largest_h'])} h ({times['largest_rule']}); a job that hits its limit "
                   "resumes from its checkpoint (fine-tuning and MLM checkpoint) when retried.")
    out.append("")
    if missing:
        out.append("Missing first:")
        for i, m in enumerate(missing, 1):
            out.append(f"  {i}. {m.what}")
            out.append(f"     $ {m.command}")
        out.append("")
    if run_command is not None:
        nxt = missing[0].command if missing else run_command
        out.append(f"Next: {nxt}" + ("" if missing else "   (rerun it after an interruption: it resumes)"))
    return out


def _disk_head(disk: Mapping | None) -> str:
    return f"{'disk GB':>10}{'left GB':>9}" if disk and disk["written"] else ""


def _disk_cells(disk: Mapping | None, stage: str | None) -> str:
    """A stage's (None: the total's) disk written and left at the end, in GB."""
    if not disk or not disk["written"]:
        return ""
    w, left = disk["stages"].get(stage, (0, 0)) if stage else (disk["written"], disk["left"])
    return f"{_gb(w) if w else '–':>10}{_gb(left) if w else '–':>9}"


def _gb(n: int) -> str:
    v = n / 1e9
    return f"{v:,.0f}" if v >= 10 else f"{v:.1f}" if v >= 0.1 else f"{v:.2g}"


def disk_lines(disk: Mapping) -> list[str]:
    """Under the stages: what the disk columns are, the totals before and after the removal of the
    models no rule but evaluate reads (config keep_models)."""
    out = ["Disk GB (10^9 bytes, ESTIMATE): written by each stage, left at the end; fp32 encoder copies (snapshots, "
           "adapted encoders, models) from their shapes, at most ~10 MB an evaluation, datasets aside"]
    n, m = disk["removable"], disk["models"]
    if disk["keep"] and n:
        out.append(f"  keep_models: true keeps all {m:,} fine-tuned models; keep_models: false would remove the {n:,} that "
                   f"no rule but evaluate reads, once evaluated: {F.gb(disk['left_without'])} left at the end")
    elif n:
        out.append(f"  keep_models: false removes {n:,} of the {m:,} fine-tuned models once evaluated (no rule but evaluate "
                   f"reads them): {F.gb(disk['written'])} before, {F.gb(disk['left'])} after; keep_models: true keeps them all")
    return out


def time_limits(cfg: dict, jobs: list[tuple[str, list[str]]], env: Mapping[str, str], gpu: str) -> dict:
    """What plan's render says of the time limits."""
    minutes, rule = largest_request(cfg, jobs, env)
    if R.priced_minutes(cfg) is not None:
        how = (f"its priced time on the {gpu} x {R.time_margin(cfg):g} (compute.time_margin; at least "
               f"{R.MIN_RUNTIME} min, N times on a GPU N jobs share)")
    else:
        how = ("its kind's compute.jobs.<kind>.runtime (slurm/runtimes.json prices another config: "
               "`make bill` re-prices it)")
    return {"how": how, "cap_h": R.max_runtime_minutes(cfg, True) / 60, "largest_h": minutes / 60,
            "largest_rule": rule, "growth": cfg.get("compute", {}).get("runtime_growth", 2.0)}


def _hours(h: float) -> str:
    return f"{h:,.0f}" if h >= 100 else f"{h:.1f}" if h >= 1 else f"{h:.2g}"


def run_command(target: str, configfiles: list[str]) -> str:
    """The submission command of this plan: the SLURM profile, the config files after the target."""
    files = [c for c in configfiles if Path(c).resolve() != (REPO / "config.yaml").resolve()]
    return f".venv/bin/snakemake --profile slurm {target}" + (f" --configfile {' '.join(files)}" if files else "")


def plan_lines(cfg: dict, jobs: list[tuple[str, list[str]]], target: str, configfiles: list[str], workdir: Path,
               env: Mapping[str, str], started: bool = False, gpus: int = 8) -> list[str]:  # fmt: skip
    """The whole plan of `jobs` (what the run would start) for config files `configfiles`;
    `started`: the run has begun (no next command); `gpus`: the wall-clock on that many."""
    label = " ".join(_shown(c) for c in configfiles) or "config.yaml"
    bill = bill_of(cfg, jobs, target, label, env)
    times = time_limits(cfg, jobs, env, bill["gpu"])
    # deferred: loads requests only when this runs
    from xlt.sources.fetch import FetchConfig
    from xlt.sources.pins import tally

    planned = P.download_plan(cfg)
    locks = None
    if planned:
        locks = tally(FetchConfig.coerce(cfg.get("download") or {}), cfg.get("encoders") or {}, sources=set(planned))[1]
    command = None if started else run_command(target, configfiles)
    rule_stage = stages()
    disk = F.disk(cfg, jobs, rule_stage, base_rule)
    missing = missing_first(cfg, workdir, env, locks, jobs=jobs) + slurm_checks(cfg, jobs, env, disk["left"], workdir=workdir)
    return render(target, label, jobs, bill, missing, command, rule_stage, times=times, gpus=gpus, disk=disk)


def start_errors(cfg: dict, jobs: list[tuple[str, list[str]]], env: Mapping[str, str], workdir: Path) -> list[str]:
    """The checks that stop a cluster run before its first sbatch (xlt.workflow.preflight), one
    line each: what is wrong, then the command or variable that fixes it."""
    left = F.disk(cfg, jobs, stages(), base_rule)["left"]
    return [f"{m.what}. Fix: {m.command}" for m in slurm_checks(cfg, jobs, env, left, workdir=workdir)]


def bill_of(cfg: dict, jobs: list[tuple[str, list[str]]], target: str, label: str,
            env: Mapping[str, str] | None = None) -> dict:  # fmt: skip
    """`make bill`'s bill of these jobs: the GPU benchmark's rates where it measured the work, the
    GPU runs of the levers (benchmarks/gpu), GPU sharing as `env` configures it."""
    bench_file = REPO / "benchmarks" / "gpu_throughput.json"
    bench = json.loads(bench_file.read_text()) if bench_file.exists() else None
    env = dict(env or {})
    return report(cfg, jobs, Examples(cfg, None), bench, target, label, aliases=set(P.target_rules(cfg)),
                  levers=levers_of(cfg, gpu_runs(REPO / "benchmarks" / "gpu"), env=env), env=env)


def _shown(path: str) -> str:
    p = Path(path).resolve()
    return str(p.relative_to(REPO)) if p.is_relative_to(REPO) else str(path)
