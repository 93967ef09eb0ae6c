"""X-Mixup training throughput vs translate-train, side by side in one run.

Both sides fine-tune the same tiny BERT (sidebyside.py's, MLM-trained on the benchmark world)
with xlt's engine on the same sentence pairs, batch size, epochs and schedule, fp32:
- "translate-train": the pairs' target (DE) sides as plain pawsx-shaped classification
  records (the same file: a record's "source" is ignored without the xmixup extra);
- "X-Mixup": the xmixup extra at layer 1 (the paper's classification setting: learned ratio,
  MSE and KL on), each record's EN source run beside it (two encoder passes per step, the
  cross-attention at the mixup layer, four loss terms).
Records are two consecutive EN–DE renderings of the world's sentences (text, text_pair), with
a label drawn at random: a throughput measurement, not a quality one. Runs alternate; each
side's fastest repeat counts. Training time is the loop's own, less its dev evaluations and
checkpoints (X-Mixup evaluates both sides of a dev record, a cost of its own reported apart).
Printed: training samples/s per side and the ratio of a mixup step's time to a
translate-train step's (the issue's bound: 2.2x).

    python xlt/papers/xmixup/benchmarks/throughput.py [--pairs 2048] [--epochs 1] [--repeats 3] [--json out.json]
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
from pathlib import Path

import torch

# the shared side-by-side helpers live in the repository's benchmarks/ (sidebyside.py, train_throughput.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "benchmarks"))
from sidebyside import aligned_pairs, alternate, build_world_and_encoder, make_parser  # noqa: E402

from xlt.process.cli import quiet_libraries

PLAIN = "translate-train"
MIXUP = "X-Mixup"
XMIXUP = ({"name": "xmixup", "layer": 1},)


def paired_records(n: int, seed: int) -> list[dict]:
    """`n` pawsx-shaped records: DE text and text_pair, their EN renderings as "source"."""
    pairs = aligned_pairs(2 * n, seed)
    rng = random.Random(seed)
    out = []
    for i in range(n):
        a, b = pairs[2 * i], pairs[2 * i + 1]
        out.append({"id": f"p{i}", "text": " ".join(a["tgt"]), "text_pair": " ".join(b["tgt"]), "label": rng.choice("01"),
                    "source": {"text": " ".join(a["src"]), "text_pair": " ".join(b["src"])}})
    return out


def run(enc: Path, data: Path, args, out: Path, extras: tuple = ()) -> dict:
    from xlt.engine.train_config import TrainConfig
    from xlt.engine.recipes.finetune import train
    from xlt.papers.xmixup import recipe  # noqa: F401  (registers the xmixup extra's fine-tune extension)

    cfg = TrainConfig(task="pawsx", encoder=str(enc), seed=args.seed, lr=args.lr, epochs=args.epochs,
                      batch_size=args.batch_size, warmup_ratio=0.0, weight_decay=0.0, max_length=128, select="last",
                      progress=False, precision="fp32", device="cpu", checkpoint_minutes=1e9, extras=[dict(e) for e in extras])
    s = train(cfg, [data / "train.jsonl"], [data / "dev.jsonl"], out / "model", out / "ck")
    training = s["seconds_this_process"] - s["seconds_evaluating"] - s["seconds_checkpointing"]
    return {"seconds": training, "samples": s["train_features"] * args.epochs, "seconds_evaluating": s["seconds_evaluating"],
            "steps": s["global_steps"], "dev_accuracy": s["history"][-1]["dev"][str(data / "dev.jsonl")]["accuracy"]}


def main():
    ap = make_parser(__doc__, batch_size=32, lr=5e-5)
    ap.add_argument("--pairs", type=int, default=2048, help="training records (sentence pairs with their source)")
    ap.add_argument("--dev", type=int, default=64, help="dev records")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--encoder-steps", type=int, default=150, help="MLM steps that build the tiny encoder")
    args = ap.parse_args()
    quiet_libraries()
    torch.set_num_threads(args.threads)
    from xlt.io import write_jsonl

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.workdir or tmp)
        enc, _ = build_world_and_encoder(root, n_train=50, n_dev=10, mlm_steps=args.encoder_steps)
        data = root / "xmixup_data"
        records = paired_records(args.pairs + args.dev, args.seed)
        write_jsonl(data / "train.jsonl", records[: args.pairs])
        write_jsonl(data / "dev.jsonl", records[args.pairs:])
        sides = {PLAIN: lambda out: run(enc, data, args, out), MIXUP: lambda out: run(enc, data, args, out, XMIXUP)}
        runs = alternate(sides, args.repeats, Path(tmp))
    best = {name: min(rs, key=lambda x: x["seconds"]) for name, rs in runs.items()}
    rate = {name: b["samples"] / b["seconds"] for name, b in best.items()}
    print(f"fine-tuning on {args.pairs} sentence pairs, {best[PLAIN]['steps']} steps of {args.batch_size}, fp32, "
          f"cpu ({torch.get_num_threads()} thread(s)), best of {args.repeats}; training time without dev evaluation")
    print(f"{'side':16} {'samples/s':>10} {'seconds':>8} {'eval s':>7} {'dev_accuracy':>12}  all runs (s)")
    for name, b in best.items():
        print(f"{name:16} {rate[name]:10.1f} {b['seconds']:8.2f} {b['seconds_evaluating']:7.2f} {b['dev_accuracy']:12.3f}  "
              + " ".join(f"{r['seconds']:.2f}" for r in runs[name]))
    ratio = rate[PLAIN] / rate[MIXUP]
    print(f"X-Mixup step / translate-train step: {ratio:.2f}x (bound: 2.2x)")
    if args.json:
        Path(args.json).write_text(json.dumps({"sides": {n: {**best[n], "samples_per_s": rate[n]} for n in best},
                                               "step_ratio": ratio, "torch_threads": torch.get_num_threads()},
                                              indent=2, default=str))


if __name__ == "__main__":
    main()
