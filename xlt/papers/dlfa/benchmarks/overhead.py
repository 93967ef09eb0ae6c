"""Fine-tuning throughput with dlfa's fusion extra vs without, side by side in one run.

Both sides train the same tiny BERT (built here from the tiny world) with xlt's engine on the
same POS data, batch size, epochs and schedule; one side adds the DLFA extra (layer 2 fused
with the last; a token task, so the local branch and its masked BatchNorm run on every
token: the heavier case). Runs alternate; each side's fastest repeat counts. Printed: samples/s
per side, the dev accuracy of that run and the overhead (plain samples/s / DLFA samples/s − 1;
the issue's bound is 10%).

    python xlt/papers/dlfa/benchmarks/overhead.py [--train 4000] [--epochs 3] [--repeats 3] [--json out.json]
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import torch

# the shared side-by-side helpers live in the repository's benchmarks/ (sidebyside.py, train_throughput.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "benchmarks"))
from sidebyside import alternate, build_world_and_encoder  # noqa: E402
from train_throughput import finetune_args, run_ours  # noqa: E402

DLFA = ({"name": "dlfa", "layer": 2},)


def main():
    args = finetune_args(__doc__)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.workdir or tmp)
        enc, data = build_world_and_encoder(root, args.train, args.dev, args.encoder_steps)
        sides = {"xlt engine": lambda out: run_ours(enc, data, args, out),
                 "xlt engine + DLFA": lambda out: run_ours(enc, data, args, out, extras=DLFA)}
        runs = alternate(sides, args.repeats, Path(tmp))
    best = {name: min(rs, key=lambda x: x["seconds"]) for name, rs in runs.items()}
    rate = {name: b["samples"] / b["seconds"] for name, b in best.items()}
    device = "cuda" if torch.cuda.is_available() else f"cpu ({args.threads} threads)"
    print(f"fine-tuning, device: {device}, batch size {args.batch_size}, {args.epochs} epochs, "
          f"{best['xlt engine']['samples'] // args.epochs} training windows, best of {args.repeats}")
    print(f"{'side':24} {'samples/s':>10} {'seconds':>8} {'dev_accuracy':>12}  all runs (s)")
    for name, b in best.items():
        print(f"{name:24} {rate[name]:10.1f} {b['seconds']:8.1f} {b['dev_accuracy']:12.3f}  "
              + " ".join(f"{r['seconds']:.1f}" for r in runs[name]))
    overhead = rate["xlt engine"] / rate["xlt engine + DLFA"] - 1
    print(f"DLFA overhead: {100 * overhead:+.1f}% (time per sample, DLFA vs plain)")
    if args.json:
        Path(args.json).write_text(json.dumps({"sides": {n: {**best[n], "samples_per_s": rate[n]} for n in best},
                                               "overhead": overhead}, indent=2, default=str))


if __name__ == "__main__":
    main()
