"""The end of `make tables` (xlt.workflow.runsummary): timing with the machine and precision, each failed
job's error line (also one written on a progress bar's line), what is missing and why, and the
rerun hint; results/summary.json and a partial results/tables/index.md even after a failure."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.conftest import REPO
from xlt.workflow import paper_targets as P
from xlt.workflow.config import load_configs
from xlt.workflow.runsummary import item_of, main

TINY = str(REPO / "presets" / "tiny.yaml")


def _run_log(root: Path, failed_output: str, job_log: str) -> None:
    (root / ".snakemake" / "log").mkdir(parents=True)
    (root / ".snakemake" / "log" / "2026-11-26T030000.snakemake.log").write_text(f"""Building DAG of jobs...
12 of 40 steps (30%) done
Error in rule finetune:
    jobid: 7
    input: results/data/xnli
    output: {failed_output}
    log: {job_log} (check log file(s) for error details)
    shell:
        finetune.py ...
        (command exited with non-zero exit code)
13 of 40 steps (32%) done
Exiting because a job execution failed. Look below for error messages
""")


def test_a_failed_run_names_the_job_its_error_what_is_missing_and_that_rerunning_resumes(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    cfg = load_configs([TINY])
    items = P.index_items(cfg)
    made = [f for f in items if item_of(f) == item_of(items[0])]
    for f in made:
        Path(f).parent.mkdir(parents=True, exist_ok=True)
        Path(f).write_text("x")
    failed = items[-1]  # its own job failed: it names that job's error
    Path("logs").mkdir()
    Path("logs/ft.log").write_text("xnli seed1:  40%|████      | 77/192 [00:09<00:13]\r"
                                   "error: stopped by signal 15 at step 77; checkpoint saved in results/checkpoints/x, "
                                   "rerun to resume\n")
    _run_log(tmp_path, failed, "logs/ft.log")
    # the summary's clock stands still: on a busy machine reading the run takes over a second
    now = time.time()
    monkeypatch.setattr("xlt.workflow.runsummary.time.time", lambda: now)
    main(["--since", str(now - 75), "--rc", "1", "--command", "make tables", TINY])
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("make tables: 1:15 elapsed, 13 of 40 jobs done, on ") and "training precision" in err[0]
    assert err[1] == ("error: rule finetune: stopped by signal 15 at step 77; checkpoint saved in results/checkpoints/x, "
                      "rerun to resume (log: logs/ft.log)")
    assert err[-1].startswith("Rerun the same command (make tables) to finish") and "checkpoint" in err[-1]
    summary = json.loads(Path("results/summary.json").read_text())
    assert summary["complete"] is False and summary["computed"] == [item_of(items[0])] and summary["published_only"] == []
    why = {m["item"]: m["why"] for m in summary["missing"]}
    assert why[item_of(failed)].startswith("error: rule finetune: stopped by signal 15")
    assert all(w.startswith("not made: a job it needs failed") for k, w in why.items() if k != item_of(failed))
    index = Path(P.index_file(cfg)).read_text()
    assert "## Not made in the last run" in index and f"`{item_of(failed)}`" in index


def test_a_complete_run_prints_its_timing_and_writes_the_summary(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    cfg = load_configs([TINY])
    for f in P.index_items(cfg):
        Path(f).parent.mkdir(parents=True, exist_ok=True)
        Path(f).write_text("x")
    model = Path("results/models/tiny/pretrained/xnli/en.underspec/seed1/xlt_model.json")
    model.parent.mkdir(parents=True)
    model.write_text(json.dumps({"train": {"precision": "fp32"}}))
    main(["--since", str(time.time() - 3), "--rc", "0", TINY])
    out = capsys.readouterr().out.splitlines()
    assert "training precision fp32 (1 models)" in out[0] and "no job to run" in out[0]
    summary = json.loads(Path("results/summary.json").read_text())
    assert summary["complete"] and not summary["missing"] and summary["machine"]["threads"] >= 1
    # the tables that show the paper's numbers alone on this preset are not counted as computed
    published = sorted(summary["published_only"])
    assert {"tables/adjust/table9", "tables/xmixup/table4", "tables/xmixup/table12", "tables/xmixup/table17"} <= set(published)
    assert not set(published) & set(summary["computed"]) and "tables/adjust/table2" in summary["computed"]
    assert published == sorted({item_of(f) for f in P.published_only(cfg)})
    n_items = len({item_of(f) for f in P.index_items(cfg)})
    assert out[1] == (f"{n_items - len(published)} of {n_items - len(published)} tables and figures computed, "
                      f"{len(published)} more with the paper's numbers only (results/summary.json).")
    assert not Path(P.index_file(cfg)).exists()  # the workflow's own rule writes the complete index


FAKE_SNAKEMAKE = """#!/bin/sh
# a run in which one fine-tune was stopped by a signal: Snakemake's log, the job's log, exit 1
mkdir -p .snakemake/log logs
printf 'xnli seed1:  27%%|##   | 35/128\\rerror: stopped by signal 15 at step 35; checkpoint saved in ck, rerun to resume\\n' > logs/ft.log
cat > .snakemake/log/run.snakemake.log <<LOG
Error in rule finetune:
    jobid: 3
    output: results/models/tiny/pretrained/xnli/en.underspec/seed1
    log: logs/ft.log (check log file(s) for error details)
5 of 9 steps (55%) done
LOG
echo "snakemake $*"
exit 1
"""


def test_make_tables_ends_a_failed_run_with_the_jobs_error_and_the_rerun_hint(tmp_path):
    """The Makefile's recipe end to end, with a stand-in Snakemake: make fails, and its last
    lines are the timing, the job's error line, what is missing and the rerun hint."""
    import os
    import subprocess
    import sys

    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    (venv / "bin" / "snakemake").write_text(FAKE_SNAKEMAKE)
    for exe in ("python", "snakemake"):
        (venv / "bin" / exe).chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    for name in ("pyproject.toml", "constraints.txt", "xlt/process/snakemake_cli.py"):  # the install's prerequisites,
        (work / name).parent.mkdir(parents=True, exist_ok=True)                        # older than the stamps
        (work / name).write_text("")
    (venv / ".installed").write_text("")
    (venv / ".snakemake-cli").write_text("")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.run(["make", "-s", "-f", str(REPO / "Makefile"), "tables", f"VENV={venv}", "ZYGOTE=", f"PRESET={TINY}"],
                         cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    err = run.stderr.splitlines()
    timing = next(i for i, line in enumerate(err) if line.startswith("make tables: "))
    assert "5 of 9 jobs done" in err[timing]
    assert err[timing + 1] == ("error: rule finetune: stopped by signal 15 at step 35; checkpoint saved in ck, rerun to "
                               "resume (log: logs/ft.log)")
    assert err[timing + 3].startswith("Rerun the same command (make tables) to finish")
    assert f"--keep-going all_tables --configfile {TINY}" in run.stdout
    assert json.loads((work / "results" / "summary.json").read_text())["failed_jobs"][0]["rule"] == "finetune"
