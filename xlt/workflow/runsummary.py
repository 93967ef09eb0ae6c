"""The end of `make tables`: what the run took, what it made, what failed and why.

    python -m xlt.workflow.runsummary --since <epoch seconds> --rc <snakemake's exit status> \\
        --command "make tables" presets/tiny.yaml [my.yaml ...]

prints, last, one line of timing (elapsed, jobs run, the machine's threads and CPU, the
training precision the models record) and, after a failure, each failed job's `error:` line
(read from its log of this run), what is missing and the next step: rerunning the same command
resumes where each failure is one a rerun gets past, else mend what the lines name first. It writes
`results/summary.json` either way (`computed`: the tables and figures made with our numbers;
`published_only`: the tables made that show the paper's numbers alone, nothing computing ours
under this config; `missing`: each not made, and why) and, when some tables or figures are missing,
`results/tables/index.md` of those made with a section naming the missing ones and why (the
workflow's own `tables_index` rule writes the complete index; it reruns once they exist).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import asdict
from pathlib import Path

from xlt.process.cli import FailedJob, failed_jobs, next_step
from xlt.errors import XltError
from xlt.io import write_text
from xlt.process.cli import ArgumentParser
from xlt.io import write_json

_STEPS = re.compile(r"^(\d+) of (\d+) steps \(")


def jobs_run(snakemake_log_text: str) -> tuple[int, int]:
    """(jobs done, jobs planned) of the run: Snakemake's last `N of M steps` line; (0, 0) if none."""
    steps = [m.groups() for line in snakemake_log_text.splitlines() if (m := _STEPS.match(line))]
    return tuple(map(int, steps[-1])) if steps else (0, 0)


def run_log(since: float, workdir: str | Path = ".") -> Path | None:
    """Snakemake's log of the run started at `since` (its newest under .snakemake/log/)."""
    logs = [p for p in Path(workdir, ".snakemake", "log").glob("*.snakemake.log") if p.stat().st_mtime >= since - 1]
    return max(logs, key=lambda p: p.stat().st_mtime) if logs else None


def machine() -> dict:
    """The threads this machine offers and its CPU's name (Linux), for timings quoted with it."""
    cpu = None
    try:
        cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name")), None)
    except OSError:
        pass
    return {"threads": os.cpu_count(), "cpu": cpu}


def precisions(results: str | Path) -> dict[str, int]:
    """Training precision -> how many trained models (and built encoders) record it."""
    out: dict[str, int] = {}
    for meta in [*Path(results).glob("models/**/xlt_model.json"), *Path(results).glob("encoders/**/xlt_encoder.json")]:
        try:
            doc = json.loads(meta.read_text())
        except (OSError, ValueError):
            continue
        p = (doc.get("train") or {}).get("precision") or doc.get("precision")
        if p:
            out[p] = out.get(p, 0) + 1
    return dict(sorted(out.items()))


def item_of(path: str) -> str:
    """`results/tables/<paper>/<item>.<ext>` -> `tables/<paper>/<item>` (a table or figure, any format)."""
    p = Path(path)
    return f"{p.parent.parent.name}/{p.parent.name}/{p.name.split('.', 1)[0]}"


def missing_items(files: list[str], jobs: list[FailedJob]) -> dict[str, str]:
    """Each table or figure with a file not made -> why."""
    failed_by_output = {o: j for j in jobs for o in j.outputs}
    rules = sorted({j.rule for j in jobs})
    missing = [f for f in files if not Path(f).exists()]
    why = {item_of(f): failed_by_output[f].line() for f in missing if f in failed_by_output}  # its own job failed
    for f in missing:
        if item_of(f) in why:
            continue
        if jobs:
            why[item_of(f)] = f"not made: a job it needs failed or did not run (failed: rule {', rule '.join(rules)})"
        else:
            why[item_of(f)] = "not made: the run stopped before it"
    return {k: why[k] for k in dict.fromkeys(item_of(f) for f in missing)}  # in the index's order


def _clock(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m // 60}:{m % 60:02d}:{s:02d}" if m >= 60 else f"{m}:{s:02d}"


def summarise(cfg: dict, since: float, rc: int, command: str, workdir: str | Path = ".") -> tuple[dict, list[str]]:
    """(results/summary.json's content, the lines to print)."""
    # deferred: loads numpy, pandas, yaml only when this runs
    from xlt.workflow import paper_targets as P

    log = run_log(since, workdir)
    text = log.read_text(encoding="utf-8", errors="replace") if log else ""
    jobs = failed_jobs(log, since) if log else []
    done, planned = jobs_run(text)
    files = P.index_items(cfg)
    items = list(dict.fromkeys(item_of(f) for f in files))
    missing = missing_items(files, jobs)
    published = set(map(item_of, P.published_only(cfg)))
    made = [i for i in items if i not in missing]
    elapsed = time.time() - since
    mach, prec = machine(), precisions(Path(workdir, cfg["results"]))
    summary = {
        "command": command, "exit_status": rc, "complete": rc == 0 and not missing,
        "finished_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()), "elapsed_s": round(elapsed, 1),
        "jobs_run": done, "jobs_planned": planned, "machine": mach, "precision": prec,
        "snakemake_log": str(log) if log else None,
        "computed": [i for i in made if i not in published], "published_only": [i for i in made if i in published],
        "missing": [{"item": k, "why": v} for k, v in missing.items()],
        "failed_jobs": [asdict(j) for j in jobs],
    }
    prec_text = ", ".join(f"{k} ({n} models)" for k, n in prec.items()) or "no trained model"
    jobs_text = f"{done} of {planned} jobs done" if planned else "no job to run"
    lines = [f"{command}: {_clock(elapsed)} elapsed, {jobs_text}, on {mach['threads']} threads"
             f"{' of ' + mach['cpu'] if mach['cpu'] else ''}; training precision {prec_text}; {summary['finished_utc']} UTC"]
    ours = len(items) - len(published)
    made_text = (f"{len(summary['computed'])} of {ours} tables and figures computed"
                 + (f", {len(summary['published_only'])} more with the paper's numbers only" if summary["published_only"] else ""))
    if rc == 0 and not missing:
        lines.append(f"{made_text} (results/summary.json).")
        return summary, lines
    lines += [j.line() for j in jobs]
    lines.append(f"{made_text}; the {len(missing)} missing, and why, are in "
                 "results/summary.json and results/tables/index.md.")
    lines.append(next_step(jobs, command))
    return summary, lines


def write_partial_index(cfg: dict, summary: dict) -> None:
    """results/tables/index.md of what was made, and a section of what is missing and why."""
    # deferred: loads numpy, pandas, yaml only when this runs
    from xlt.workflow import paper_targets as P
    from xlt.workflow.report import index_markdown

    out = P.index_file(cfg)
    made = [f for f in P.index_items(cfg) if item_of(f) in {*summary["computed"], *summary["published_only"]}]
    text = index_markdown(made, out, None, P.published_only(cfg)) if made else "# Tables and figures\n"
    text += "\n## Not made in the last run\n\n" + "\n".join(f"- `{m['item']}`: {m['why']}" for m in summary["missing"])
    write_text(out, text + "\n")


def end_of_run_parser(prog: str, doc: str) -> ArgumentParser:
    """The arguments of a command that reports a run after it: --since, --rc, the config files."""
    ap = ArgumentParser(prog=prog, description=doc.split("\n\n")[0])
    ap.add_argument("--since", type=float, required=True, help="when the run started (seconds since the epoch)")
    ap.add_argument("--rc", type=int, required=True, help="Snakemake's exit status")
    ap.add_argument("configfiles", nargs="*", help="the config files of the run, in order")
    return ap


def main(argv: list[str] | None = None) -> None:
    # deferred: loads jsonschema, numpy, pandas, yaml only when this runs
    from xlt.workflow.config import load_configs

    ap = end_of_run_parser("python -m xlt.workflow.runsummary", __doc__)
    ap.add_argument("--command", default="make tables")
    a = ap.parse_args(argv)
    try:
        cfg = load_configs(a.configfiles)
        summary, lines = summarise(cfg, a.since, a.rc, a.command)
        write_json(Path(cfg["results"]) / "summary.json", summary)
        if summary["missing"]:
            write_partial_index(cfg, summary)
    except XltError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
    print("\n".join(lines), file=sys.stderr if a.rc else sys.stdout)


if __name__ == "__main__":
    main()
