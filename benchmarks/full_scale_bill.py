"""The full-scale bill: device-hours per paper and in total, ours vs the Trainer baselines.

Reads the full-scale DAG (`snakemake --summary all_tables --configfile=config.yaml`: every
job and its outputs, nothing is run), the example counts of each dataset (prepared data
where it is on disk, else the papers' data-size tables) and a throughput JSON written by
benchmarks/gpu_throughput.py. A JSON measured on CPU gives CPU-hours and says so.

    python benchmarks/gpu_throughput.py --json benchmarks/gpu_throughput.json   # on the GPU
    python benchmarks/full_scale_bill.py --throughput benchmarks/gpu_throughput.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import yaml

from xlt.bill import Examples, bill, job_costs, summary_jobs, throughputs
from xlt.cli import run
from xlt.errors import XltError
from xlt.throughput import LENGTHS

REPO = Path(__file__).resolve().parents[1]


def dag_summary(configfile: str, target: str) -> str:
    cmd = [sys.executable, "-m", "snakemake", "--summary", target, "--configfile", configfile,
           "--snakefile", str(REPO / "Snakefile"), "--directory", str(REPO)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise XltError(f"snakemake --summary {target} failed: {r.stderr.strip().splitlines()[-1:] or r.returncode}")
    return r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--throughput", required=True, help="JSON from benchmarks/gpu_throughput.py --json")
    ap.add_argument("--configfile", default=str(REPO / "config.yaml"))
    ap.add_argument("--target", default="all_tables")
    ap.add_argument("--summary", help="a saved `snakemake --summary` output instead of running it")
    ap.add_argument("--partial", action="store_true",
                    help="bill only the encoder shapes the JSON measured; list the rest as not priced")
    a = ap.parse_args()
    path = Path(a.throughput)
    if not path.exists():
        raise XltError(f"{path}: missing; write it with benchmarks/gpu_throughput.py --json {path}")
    bench = json.loads(path.read_text())
    cfg = yaml.safe_load(Path(a.configfile).read_text())
    summary = Path(a.summary).read_text() if a.summary else dag_summary(a.configfile, a.target)
    examples = Examples(cfg, REPO)
    costs, unpriced = job_costs(cfg, summary_jobs(summary), examples)
    hours, unmeasured = bill(costs, throughputs(bench), partial=a.partial)

    unit = "GPU-hours" if bench.get("gpu") else "CPU-hours"
    print(f"Full-scale bill of `{a.target}` ({a.configfile}), throughput measured on {bench['device']} "
          f"({bench.get('date', '?')}), in {unit}")
    if not bench.get("gpu"):
        print("NOTE: the throughput was measured on CPU: these are CPU-hours, not GPU-hours; no GPU figure exists yet")
    print("| paper | jobs | training tokens | evaluation tokens | ours | HF Trainer (defaults) | HF Trainer (best flags) |")
    print("|---|---|---|---|---|---|---|")
    for paper in sorted(p for p in hours if p != "total") + ["total"]:
        parts = [c for k, c in costs.items() if k not in unmeasured and paper in (k[0], "total")]
        jobs = sum(n for c in parts for n in c.jobs.values())
        train, evals = sum(c.train_tokens for c in parts), sum(c.eval_tokens for c in parts)
        h = hours[paper]
        print(f"| {paper} | {jobs} | {train:.3g} | {evals:.3g} | {h['ours']:,.1f} | {h['hf_default']:,.1f} | {h['hf_best']:,.1f} |")
    print("Example counts from (lookups): " + ", ".join(f"{k} ({n})" for k, n in sorted(examples.sources.items())))
    print("Tokens per example: estimated means (xlt.throughput.LENGTHS, not measured on the real data): "
          + ", ".join(f"{t} {p.mean():.0f}" for t, p in LENGTHS.items()))
    for (paper, shape, workload), c in sorted(unmeasured.items()):
        print(f"NOT BILLED (no throughput measured for {shape} / {workload}): {paper}, "
              f"{sum(c.jobs.values())} jobs, {c.train_tokens:.3g} training + {c.eval_tokens:.3g} evaluation tokens")
    if unpriced:
        print("Not priced (no cost model; outputs): " + ", ".join(f"{r} ×{n}" for r, n in sorted(unpriced.items())))


if __name__ == "__main__":
    run(main)
