"""Whole-workflow faults: two runs in one directory, and determinism from scratch."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from tests.test_workflow import SHRINK, SNAKEMAKE, snakemake


def _wait_for(predicate, what: str, timeout: float = 120.0) -> None:
    """Poll until `predicate()` holds (the other process's progress, not a timing guess)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def test_a_second_snakemake_in_the_same_directory_is_refused_by_the_lock(tmp_path):
    """Snakemake locks the working directory for a run's outputs: a second run is refused
    with its LockException while the first runs (here: the world, made large to take a while)."""
    (tmp_path / "big.yaml").write_text("world: {sizes: {train: 30000}}\n")
    cmd = [*SNAKEMAKE, "--directory", str(tmp_path), "--configfile", str(REPO / "presets" / "tiny.yaml"),
           str(tmp_path / "big.yaml"), "--cores", "1", "results/world/manifest.json"]
    first = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        locks = tmp_path / ".snakemake" / "locks"
        job_log = tmp_path / "logs" / "world" / "world.log"
        _wait_for(lambda: job_log.exists() and any(locks.glob("*.lock")), "the first run to lock and start its job")
        second = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert first.poll() is None, "the first run finished before the second tried: the test proved nothing"
    finally:
        os.killpg(first.pid, signal.SIGTERM)
        first.wait(timeout=60)
    assert second.returncode != 0
    assert "LockException" in second.stderr
    assert f"Error: Directory cannot be locked." in second.stderr and str(tmp_path) in second.stderr


def test_a_failed_job_ends_the_run_with_its_own_error_line(tmp_path):
    """In strict mode (download.require_pins) an unpinned, unlocked download fails in its job
    before any request (no test reaches a real host, none writes the repository's lock); the
    run ends (onerror) with that job's one line, naming the config key to set, and leaves no
    manifest and no lock file behind."""
    strict = tmp_path / "strict.yaml"
    strict.write_text(yaml.safe_dump({"download": {"require_pins": True, "lock": str(tmp_path / "lock.yaml")}}))
    run = subprocess.run([*SNAKEMAKE, "--directory", str(tmp_path), f"--configfile={strict}", "--cores", "1",
                          "resources/raw/manifests/wikimatrix.json"], capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    ours = [line for line in run.stderr.splitlines() if line.startswith("error: ")]
    assert len(ours) == 1, run.stderr[-3000:]
    assert ours[0].startswith("error: rule download: source 'wikimatrix': no sha256 pin and no lock entry for "
                              "wikimatrix/WikiMatrix.en-")
    assert "download.pins.wikimatrix.sha256" in ours[0] and ours[0].endswith("(log: logs/download/wikimatrix.log)")
    assert not (tmp_path / "resources" / "raw" / "manifests" / "wikimatrix.json").exists()
    assert not (tmp_path / "lock.yaml").exists()


def test_failed_job_errors_reads_each_failed_jobs_log(tmp_path):
    from xlt.process.cli import failed_job_errors

    (tmp_path / "a.log").write_text("loading\nerror: x.conllu:3: expected 10 tab-separated columns, got 7\n")
    (tmp_path / "b.log").write_text("a warning only\n")
    log = tmp_path / "run.log"
    log.write_text(f"""Error in rule prepare_task:
    jobid: 3
    log: {tmp_path / 'a.log'} (check log file(s) for error details)
Error in rule finetune:
    log: {tmp_path / 'b.log'} (check log file(s) for error details)
Error in rule evaluate:
    log: {tmp_path / 'missing.log'} (check log file(s) for error details)
""")
    assert failed_job_errors([str(log)]) == [
        f"error: rule prepare_task: x.conllu:3: expected 10 tab-separated columns, got 7; mend line 3 of x.conllu (or, "
        f"if downloaded, remove it to fetch it again), then rerun (log: {tmp_path / 'a.log'})"]
    assert failed_job_errors(None) == [] and failed_job_errors(str(tmp_path / "nothing.log")) == []


# The tables DAG, trimmed further than tests/test_workflow.py's: crossmulti Table 2 on one task
# and one seed, the data-size tables, and underspec's figures on one seed, task and pair (the
# settings of tests/test_workflow_underspec.py, where θ_bi learns enough to normalise by).
TRIM = {
    **SHRINK,
    "language_sets": {"underspec_sources": ["en"], "underspec_targets": ["de"]},
    "papers": {
        "crossmulti": {"seeds": [1], "tasks": ["pos"], "analysis": {"seeds": [1]}, "table6": {"tasks": ["pos"], "seeds": [1]}},
        # the 2-layer shrunk encoder: dlfa sweeps layer 1, its control is layer 2 (tests/test_workflow_dlfa.py)
        "dlfa": {"seeds": [1, 2], "layers": [1], "control": 2, "ablation": {"pawsx": [1]},
                 "table7": {"encoder": "tiny", "tasks": ["pawsx"], "layers": [1]}},
        "underspec": {"seeds": [1], "tasks": ["parsing"],
                      "grid": {"alpha_1d": {"lo": -0.5, "hi": 1.5, "step": 0.5, "extra": []},
                               "alpha_2d": {"lo": 0, "hi": 1, "step": 0.5}},
                      "figures": {"fig3": [{"task": "parsing", "source": "en", "target": "de"}],
                                  "fig10": [{"task": "parsing", "source": "en", "target": "de"}]}},
    },
    "hparams": {**SHRINK["hparams"], "underspec": {"epochs": 2, "batch_size": 16, "max_train_examples": 80}},
}
# adjust on one seed, task and pair (NER, hi): an adjustment per variant, continual learning,
# the figures' L2 rows; the shrunk world's pool has ~50 aligned pairs per language
TRIM["papers"]["adjust"] = {
    "seeds": [1], "tasks": ["ner"], "size": 20, "targets": ["hi"], "figures": {"seed": 1, "fig1_task": "ner"},
    "table5": {"pair": "hi", "sizes": [10, 20], "tasks": ["ner"]}, "table6": {"pair": "hi", "modes": ["start", "avg"], "tasks": ["ner"]},
    "table7": {"pair": "hi", "tokens": ["cls", "all"], "tasks": ["ner"]}}
TRIM["align"] = {"samples": {"seeds": [1], "sizes": [20], "sweep": {"pairs": ["hi"], "sizes": [10]}}}
TRIM["aux_sets"] = {"adjust_continual": {"size": 20}}  # continual learning's own sample, as the adjustment's
TRIM["papers"]["versus"] = {"adjust_size": 20, "seeds": [1]}  # not in all_tables, but its config reads the same samples


def _csvs(root: Path) -> dict[str, bytes]:
    pages = [p for p in (root / "results/claims.csv", root / "results/claims.md") if p.exists()]
    return {str(p.relative_to(root)): p.read_bytes()
            for p in [*(p for folder in ("results/tables", "results/figures", "results/claims")
                        for p in sorted((root / folder).rglob("*.csv"))), *pages]}


def _without_timings(value):
    """A JSON value less its wall-clock measurements (keys such as seconds, seconds_evaluating,
    pairs_per_second): the only part of a result that may change from run to run."""
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if "second" not in k}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def differing_results(first: Path, second: Path) -> list[str]:
    """The files under results/ that differ between two run directories (a JSON only where it
    differs beyond its timings), and those that only one of them has; results/logs/ (TensorBoard
    event files, named and stamped by the clock) left out."""
    files = {str(p.relative_to(root)) for root in (first, second) for p in (root / "results").rglob("*")
             if p.is_file() and not p.relative_to(root).is_relative_to("results/logs")}
    differ = []
    for name in sorted(files):
        a, b = first / name, second / name
        if not (a.exists() and b.exists()):
            differ.append(f"{name} (only in one run)")
        elif a.read_bytes() != b.read_bytes() and not (
                name.endswith(".json") and _without_timings(json.loads(a.read_text())) == _without_timings(json.loads(b.read_text()))):
            differ.append(name)
    return differ


@pytest.mark.slow
def test_two_runs_from_scratch_give_byte_identical_table_csvs(tmp_path, zygote):
    """`all_tables` twice, each in an empty directory (CPU, seeded; jobs served by the session's
    fork server, as under `make tables`): every table and figure CSV is the same byte for byte,
    and so is every other result (world, data, tokenizer, weights, alignments, evaluations,
    figures) but for the timings in its JSON."""
    runs = []
    for name in ("first", "second"):
        work = tmp_path / name
        work.mkdir()
        (work / "shrink.yaml").write_text(yaml.safe_dump(TRIM))
        run = snakemake(work, "all_tables", "--cores", "2", timeout=1800, zygote=zygote)
        assert run.returncode == 0, run.stderr[-4000:]
        runs.append(_csvs(work))
    first, second = runs
    assert any(k.startswith("results/tables/crossmulti/table2") for k in first)
    assert any(k.startswith("results/figures/underspec/") for k in first)
    assert "results/tables/adjust/table3.csv" in first and "results/figures/adjust/fig1.csv" in first
    assert "results/claims.csv" in first  # the claims page, from the same CSVs: the same bytes too
    assert first.keys() == second.keys()
    differ = [k for k in first if first[k] != second[k]]
    assert not differ, f"table CSVs differ between two runs from scratch: {differ}"
    assert (tmp_path / "first/results/encoders/tiny/pretrained/tokenizer.json").exists()
    assert not (differ := differing_results(tmp_path / "first", tmp_path / "second")), f"results differ: {differ}"


def test_differing_results_ignores_timings_only(tmp_path):
    for name, seconds, weight in (("a", 1.5, b"w1"), ("b", 2.5, b"w1")):
        (tmp_path / name / "results/m").mkdir(parents=True)
        (tmp_path / name / "results/m/meta.json").write_text(json.dumps({"loss": 0.5, "seconds_this_process": seconds,
                                                                          "speed": {"pairs_per_second": seconds}}))
        (tmp_path / name / "results/m/model.safetensors").write_bytes(weight)
    assert differing_results(tmp_path / "a", tmp_path / "b") == []
    (tmp_path / "b/results/m/meta.json").write_text(json.dumps({"loss": 0.6, "seconds_this_process": 1.5, "speed": {}}))
    (tmp_path / "b/results/m/model.safetensors").write_bytes(b"w2")
    (tmp_path / "b/results/m/extra.txt").write_text("x")
    assert differing_results(tmp_path / "a", tmp_path / "b") == [
        "results/m/extra.txt (only in one run)", "results/m/meta.json", "results/m/model.safetensors"]
