"""The end of `make first`: the one table it made, printed, with its path and the run's timing.

    python -m xlt.workflow.first --since <epoch seconds> --rc <snakemake's exit status> \\
        presets/tiny.yaml presets/first.yaml

`make first` runs one paper table, xmixup's Table 14 (NER F1 per language: the tiny encoder
fine-tuned on English, two seeds, beside the paper's mBERT row), with only what that table needs
(the Makefile, `presets/first.yaml`). This prints the table's Markdown, where its files are, one
timing line (elapsed, jobs, the machine) and what to run next; after a failure, each failed
job's `error:` line and that rerunning resumes. It writes no summary.json (that is `make
tables`' account of every table).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from xlt.errors import XltError
from xlt.process.cli import RERUN, failed_jobs

TARGET = "xmixup_table14"  # the Makefile's FIRST_TARGET (a test checks they agree)
PAPER, TABLE = TARGET.split("_", 1)


def table_files(cfg: dict) -> dict[str, Path]:
    """The table's files by suffix: md, csv, tex, html."""
    return {ext: Path(cfg["results"], "tables", PAPER, f"{TABLE}.{ext}") for ext in ("md", "csv", "tex", "html")}


def lines(cfg: dict, since: float, rc: int, workdir: str | Path = ".") -> list[str]:
    from xlt.workflow.runsummary import _clock, jobs_run, machine, run_log

    log = run_log(since, workdir)
    text = log.read_text(encoding="utf-8", errors="replace") if log else ""
    done, planned = jobs_run(text)
    mach = machine()
    jobs_text = f"{done} of {planned} jobs done" if planned else ("no job to run (all made before)" if rc == 0 else "no job run")
    timing = (f"make first: {_clock(time.time() - since)} elapsed, {jobs_text}, on {mach['threads']} threads"
              f"{' of ' + mach['cpu'] if mach['cpu'] else ''}; {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC")
    files = table_files(cfg)
    md = Path(workdir, files["md"])
    if rc != 0 or not md.is_file():
        out = [timing, *(j.line() for j in (failed_jobs(log) if log else []))]
        return out + [RERUN.replace("the same command", "the same command (make first)")]
    return ["", md.read_text(encoding="utf-8").rstrip(), "",
            f"The table: {files['md']} (also .csv, .tex, .html beside it).",
            "Ours: the tiny encoder this repository builds (the one `make tables` uses), fine-tuned on the "
            "synthetic world's English NER and scored on its nine languages; the paper's: mBERT on XTREME's real NER.",
            "Next: `make tables` (every table and figure of the five papers; it reuses this run's encoder "
            "and models, and rewrites this table from its own preset, which shows the paper's values alone there).",
            timing]


def main(argv: list[str] | None = None) -> None:
    from xlt.workflow.config import load_configs
    from xlt.workflow.runsummary import end_of_run_parser

    a = end_of_run_parser("python -m xlt.workflow.first", __doc__).parse_args(argv)
    try:
        out = lines(load_configs(a.configfiles), a.since, a.rc)
    except XltError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
    print("\n".join(out), file=sys.stderr if a.rc else sys.stdout)


if __name__ == "__main__":
    main()
