"""The GPU benchmark's CPU mode runs end to end and produces every column for every side."""

import json
import subprocess
import sys

from tests.conftest import REPO


def test_small_mode_produces_every_column(tmp_path):
    out = tmp_path / "bench.json"
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_throughput.py"), "--small", "--steps", "4",
                          "--dev-examples", "16", "--threads", "1", "--json", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(out.read_text())
    rows = result["rows"]
    assert {(r["workload"], r["side"]) for r in rows} == {(w, s) for w in ("tagging", "pair")
                                                         for s in ("ours", "hf_default", "hf_best")}
    for r in rows:
        assert set(result["columns"]) <= set(r), r
        assert r["samples_per_s"] > 0 and r["tokens_per_s"] > 0 and r["eval_tokens_per_s"] > 0
        assert 0 <= r["dev_accuracy"] <= 100
        assert r["mfu"] is None and r["peak_mem_gib"] is None  # CPU: n/a, never a made-up GPU figure
    assert result["gpu"] is False and "CPU run" in run.stdout
    table = [line for line in run.stdout.splitlines() if line.startswith("| small")]
    assert len(table) == 6 and all(line.count("|") == 11 for line in table), run.stdout
