"""The full-scale bill: device-hours per paper, per rule and in total, ours vs the Trainer's best flags.

Reads the full-scale DAG (`snakemake -n all_tables --configfile=config.yaml`: every job and
its outputs, nothing is run), the example counts of each dataset (the papers'
data-size tables; `--prepared` also reads prepared data on disk) and, when one was measured
on a GPU, the throughput JSON of benchmarks/gpu_throughput.py; work it did not measure is
priced from FLOPs at a stated utilisation (xlt.workflow.bill). Issue 40's levers (packed fine-tunes, bf16
evaluation, several jobs on one GPU) are priced from the GPU runs in benchmarks/gpu/ that measured
them, else from FLOPs at the MFU xlt.workflow.bill states (an ESTIMATE, said so in the bill). `make bill` writes results/bill.md and
results/bill.json, puts the markdown into README.md between its bill markers and the priced
time of each GPU rule's jobs into slurm/runtimes.json (the time limits jobs ask for:
xlt.dag.resources). GPU sharing is priced as configured: XLT_SLURM_GPU_SHARDS from the environment.

    python benchmarks/gpu_throughput.py --json benchmarks/gpu_throughput.json   # on the GPU
    python benchmarks/full_scale_bill.py --out results/bill --readme README.md --runtimes slurm/runtimes.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from xlt.workflow import paper_targets as P
from xlt.dag import resources as R
from xlt.workflow.bill import Examples, dag_jobs, gpu_runs, levers_of, markdown, report
from xlt.process.cli import run
from xlt.workflow.config import load_configs
from xlt.errors import XltError

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "benchmarks" / "gpu_throughput.json"
GPU_RUNS = REPO / "benchmarks" / "gpu"  # the GPU runs of issue 40's levers (benchmarks/gpu/run_all.sh)
BEGIN, END = "<!-- bill:begin (make bill writes this block) -->", "<!-- bill:end -->"


def dry_run(configfile: str, target: str) -> str:
    """`snakemake -n <target>` from an empty directory: every job, as on a fresh checkout."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "snakemake", "-n", target, "--configfile", configfile,
               "--snakefile", str(REPO / "Snakefile"), "--directory", tmp]
        r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise XltError(f"snakemake -n {target} failed: {r.stderr.strip().splitlines()[-1:] or r.returncode}")
    return r.stdout + r.stderr


def readme_block(text: str) -> str:
    """The markdown between the README's bill markers."""
    m = re.search(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END), text, re.S)
    if not m:
        raise XltError(f"README.md: no bill block ({BEGIN} … {END})")
    return m.group(1)


def put_readme_block(text: str, md: str) -> str:
    readme_block(text)
    return re.sub(re.escape(BEGIN) + r"\n.*?" + re.escape(END), lambda _: f"{BEGIN}\n{md}{END}", text, flags=re.S)


def build(configfile: str, target: str, throughput: str | None, jobs: str | None, prepared: bool) -> dict:
    path = Path(throughput) if throughput else BENCH
    if throughput and not path.exists():
        raise XltError(f"{path}: missing; write it with benchmarks/gpu_throughput.py --json {path}")
    bench = json.loads(path.read_text()) if path.exists() else None
    cfg = load_configs([configfile])  # config.yaml under it and the papers' own files, as the run reads them
    plan = Path(jobs).read_text() if jobs else dry_run(str(Path(configfile).resolve()), target)
    examples = Examples(cfg, REPO if prepared else None)
    name = Path(configfile).name if Path(configfile).resolve().parent == REPO else configfile
    rep = report(cfg, dag_jobs(plan), examples, bench, target, name, aliases=set(P.target_rules(cfg)),
                 levers=levers_of(cfg, gpu_runs(GPU_RUNS), env=os.environ), env=os.environ)
    rep["fingerprint"] = R.config_fingerprint(cfg)
    return rep


def runtimes(rep: dict) -> str:
    """slurm/runtimes.json: the priced minutes of each GPU rule's jobs, for the config priced."""
    table = {"config": rep["config"], "fingerprint": rep["fingerprint"], "gpu": rep["gpu"],
             "what": "minutes of the costliest job of each rule, encoder size and dataset alone on this GPU "
                     "(`make bill` writes this file; xlt.dag.resources reads it)",
             "minutes": rep["runtimes"]}  # fmt: skip
    return json.dumps(table, indent=1, sort_keys=True) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--throughput", help=f"JSON of benchmarks/gpu_throughput.py --json (default {BENCH.name} if there)")
    ap.add_argument("--configfile", default=str(REPO / "config.yaml"))
    ap.add_argument("--target", default="all_tables")
    ap.add_argument("--jobs", help="a saved `snakemake -n <target>` output instead of running it")
    ap.add_argument("--prepared", action="store_true", help="count examples of prepared data on disk first")
    ap.add_argument("--out", help="write <out>.md and <out>.json")
    ap.add_argument("--readme", help="replace the bill block of this README with the markdown")
    ap.add_argument("--runtimes", help="write the priced minutes of each GPU rule's jobs here (slurm/runtimes.json)")
    a = ap.parse_args()
    rep = build(a.configfile, a.target, a.throughput, a.jobs, a.prepared)
    md = markdown(rep)
    sys.stdout.write(md)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(f"{a.out}.md").write_text(md)
        Path(f"{a.out}.json").write_text(json.dumps(rep, indent=2, sort_keys=True) + "\n")
        Path(f"{a.out}.runtimes.json").write_text(runtimes(rep))
    if a.runtimes:
        Path(a.runtimes).write_text(runtimes(rep))
    if a.readme:
        readme = Path(a.readme)
        readme.write_text(put_readme_block(readme.read_text(), md))


if __name__ == "__main__":
    run(main)
