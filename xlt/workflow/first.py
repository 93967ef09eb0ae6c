"""The end of `make first`: the one table it made, printed, with its path and the run's timing.

    python -m xlt.workflow.first --target <paper>_<table> --since <epoch seconds> \\
        --rc <snakemake's exit status> presets/tiny.yaml presets/first.yaml

`make first` runs one paper table, xmixup's Table 14 (NER F1 per language: the tiny encoder
fine-tuned on English, two seeds, beside the paper's mBERT row), with only what that table needs
(the Makefile, `presets/first.yaml`). This prints the table's cells that have ours (one line a
language: paper, ours, Δ; the whole table, 40 languages and 7 rows, is in its file), where its
files are, one timing line (elapsed, jobs, the machine) and what to run next; after a failure, each failed
job's `error:` line and that rerunning resumes. It writes no summary.json (that is `make
tables`' account of every table).
"""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path

from xlt.errors import XltError
from xlt.process.cli import RERUN, failed_jobs
from xlt.workflow.config import load_configs
from xlt.workflow.runsummary import _clock, end_of_run_parser, jobs_run, machine, run_log

def table_files(cfg: dict, target: str) -> dict[str, Path]:
    """The files of the table `target` names (`<paper>_<table>`, the Makefile's FIRST_TARGET) by suffix."""
    paper, table = target.split("_", 1)
    return {ext: Path(cfg["results"], "tables", paper, f"{table}.{ext}") for ext in ("md", "csv", "tex", "html")}


def title(target: str) -> str:
    """`<paper>_table14` -> `<paper> Table 14`."""
    paper, table = target.split("_", 1)
    return f"{paper} {table.replace('table', 'Table ', 1)}"


def lines(cfg: dict, target: str, since: float, rc: int, workdir: str | Path = ".") -> list[str]:
    log = run_log(since, workdir)
    text = log.read_text(encoding="utf-8", errors="replace") if log else ""
    done, planned = jobs_run(text)
    mach = machine()
    jobs_text = f"{done} of {planned} jobs done" if planned else ("no job to run (all made before)" if rc == 0 else "no job run")
    timing = (f"make first: {_clock(time.time() - since)} elapsed, {jobs_text}, on {mach['threads']} threads"
              f"{' of ' + mach['cpu'] if mach['cpu'] else ''}; {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC")
    files = table_files(cfg, target)
    csv_file = Path(workdir, files["csv"])
    if rc != 0 or not csv_file.is_file():
        out = [timing, *(j.line() for j in (failed_jobs(log) if log else []))]
        return out + [RERUN.replace("the same command", "the same command (make first)")]
    return ["", *compact(csv_file, title(target)), "",
            f"The whole table (every row and language of the paper, and its notes): {files['md']} (.csv, .tex, .html beside it).",
            "Ours: the tiny encoder this repository builds (the one `make tables` uses), fine-tuned on the "
            "synthetic world's English NER and scored on its nine languages; the paper's: mBERT on XTREME's real NER.",
            "Next: `make tables` (every table and figure of the five papers; it reuses this run's encoder "
            "and models, and rewrites this table from its own preset, which shows the paper's values alone there).",
            timing]


def compact(csv_file: Path, name: str) -> list[str]:
    """The cells with ours, one line per language: the paper's value, ours mean ± std over the
    seeds (†k: k seeds collapsed or did not learn), Δ."""
    with open(csv_file, newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["ours_mean"]]
    out = [f"{name}: the paper's mBERT beside ours (F1)", "",
           "| language | paper | ours (mean ± std over seeds) | Δ |", "|---|---|---|---|"]
    for r in rows:
        n, bad = int(float(r["n_seeds"] or 0)), int(float(r["n_collapsed"] or 0))
        ours = f"{float(r['ours_mean']):.2f}" + (f" ± {float(r['ours_std']):.2f}" if r["ours_std"] else "") + f" ({n} seeds)"
        ours += f" †{bad}" if bad else ""
        paper = f"{float(r['paper']):.2f}" if r["paper"] else "–"
        delta = f"{float(r['delta']):+.2f}" if r["delta"] else "–"
        lang = "average (ours: these languages)" if r["lang"] == "avg" else r["lang"]
        out.append(f"| {lang} | {paper} | {ours} | {delta} |")
    return out


def main(argv: list[str] | None = None) -> None:
    ap = end_of_run_parser("python -m xlt.workflow.first", __doc__)
    ap.add_argument("--target", required=True, help="the table's Snakemake target (the Makefile's FIRST_TARGET)")
    a = ap.parse_args(argv)
    try:
        out = lines(load_configs(a.configfiles), a.target, a.since, a.rc)
    except XltError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
    print("\n".join(out), file=sys.stderr if a.rc else sys.stdout)


if __name__ == "__main__":
    main()
