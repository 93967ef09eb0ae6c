"""The side-by-side training benchmarks, in a small mode: every side runs and reports its
columns (the numbers themselves are measurements, see benchmarks/README.md)."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

SMALL = {
    "train_throughput.py": ["--train", "40", "--dev", "20", "--epochs", "1", "--encoder-steps", "2", "--batch-size", "8"],
    "mlm_throughput.py": ["--sentences", "60", "--heldout", "20", "--steps", "3", "--batch-size", "8"],
}
METRIC = {"train_throughput.py": "dev_accuracy", "mlm_throughput.py": "heldout_mlm_loss"}


@pytest.mark.parametrize("script", sorted(SMALL))
def test_benchmark_small_mode_reports_every_side(script, tmp_path):
    out = tmp_path / "result.json"
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / script), *SMALL[script], "--repeats", "1",
                          "--json", str(out)], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(out.read_text())
    assert {"HF Trainer (defaults)", "HF Trainer (group_by_length)"} < set(result["sides"])
    assert result["fastest_other"].startswith("HF Trainer")
    for side in result["sides"].values():
        assert side["samples_per_s"] > 0 and METRIC[script] in side
    assert "samples/s" in run.stdout and f"ratio (xlt / fastest HF side, {result['fastest_other']})" in run.stdout


def test_dlfa_overhead_small_mode_reports_both_sides(tmp_path):
    out = tmp_path / "result.json"
    run = subprocess.run([sys.executable, str(REPO / "xlt/papers/dlfa/benchmarks/overhead.py"), *SMALL["train_throughput.py"],
                          "--repeats", "1", "--json", str(out)], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(out.read_text())
    assert set(result["sides"]) == {"xlt engine", "xlt engine + DLFA"}
    assert all(side["samples_per_s"] > 0 and "dev_accuracy" in side for side in result["sides"].values())
    assert "DLFA overhead:" in run.stdout


def test_adjust_throughput_small_mode_reports_every_side(tmp_path):
    out = tmp_path / "result.json"
    run = subprocess.run([sys.executable, str(REPO / "xlt/papers/adjust/benchmarks/throughput.py"), "--pairs", "64", "--heldout", "16",
                          "--encoder-steps", "2", "--repeats", "1", "--json", str(out)], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(out.read_text())
    assert set(result["sides"]) == {"xlt adjust_encoder", "authors' loop (4 pairs / forward)", "one pair per forward"}
    for side in result["sides"].values():
        assert side["pairs_per_s"] > 0 and side["pairs"] == 64 and side["heldout_loss"] > 0
    assert result["ratio"] > 0 and "ratio (xlt / baseline, authors' loop (4 pairs / forward))" in run.stdout


def test_xmixup_throughput_small_mode_reports_both_sides(tmp_path):
    out = tmp_path / "result.json"
    run = subprocess.run([sys.executable, str(REPO / "xlt/papers/xmixup/benchmarks/throughput.py"), "--pairs", "32", "--dev", "8",
                          "--batch-size", "8", "--encoder-steps", "2", "--repeats", "1", "--json", str(out)],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(out.read_text())
    assert set(result["sides"]) == {"translate-train", "X-Mixup"}
    assert all(side["samples_per_s"] > 0 and side["steps"] == 4 for side in result["sides"].values())
    assert result["step_ratio"] > 0 and "X-Mixup step / translate-train step:" in run.stdout


def test_eval_forward_small_mode_reports_both_sides_and_their_difference(tmp_path):
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "eval_forward.py"), "--widths", "16", "--batches", "1",
                          "--repeats", "1"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = [line.split("|")[1:-1] for line in run.stdout.splitlines() if line.startswith("| 16 |")]
    assert [r[1].strip() for r in rows] == ["HF forward", "lean forward (oneDNN)"]
    assert float(rows[1][2]) > 0 and float(rows[1][4]) < 1e-4  # the two forwards agree to rounding
