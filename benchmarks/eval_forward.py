"""The evaluation forward on a CPU: the Hugging Face forward vs the lean one (`xlt.engine.fastpath`,
its fp32 products through oneDNN), on the tiny encoder's shape, batches of 64 at a few widths,
a third of the rows half padding. Sides alternate within each repeat; each side's best repeat
counts. Prints samples/s per side, the ratio and the largest difference of real positions."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.sidebyside import SHAPE  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--widths", type=int, nargs="+", default=[48, 128])
    ap.add_argument("--batches", type=int, default=10, help="batches per timed repeat")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    from transformers import BertConfig, BertModel

    from xlt.engine import fastpath

    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=4000, hidden_size=SHAPE["hidden"], num_hidden_layers=SHAPE["layers"],
                     num_attention_heads=SHAPE["heads"], intermediate_size=SHAPE["intermediate"],
                     max_position_embeddings=max(SHAPE["max_positions"], *a.widths))
    enc = BertModel(cfg, add_pooling_layer=False).eval()
    sides = {"HF forward": lambda ids, mask: enc(input_ids=ids, attention_mask=mask).last_hidden_state,
             "lean forward (oneDNN)": lambda ids, mask: fastpath.lean_forward(enc, ids, mask)}
    print(f"| width | side | samples/s | xlt / HF | max diff |\n|---:|---|---:|---:|---:|")
    for width in a.widths:
        ids = torch.randint(5, 4000, (64, width))
        mask = torch.ones(64, width, dtype=torch.long)
        mask[::3, width // 2:] = 0
        best = {name: float("inf") for name in sides}
        with torch.inference_mode():
            outs = {name: f(ids, mask) for name, f in sides.items()}
            diff = (outs["HF forward"] - outs["lean forward (oneDNN)"])[mask.bool()].abs().max().item()
            for r in range(a.repeats):
                names = list(sides)[r % 2:] + list(sides)[:r % 2]
                for name in names:
                    t = time.perf_counter()
                    for _ in range(a.batches):
                        sides[name](ids, mask)
                    best[name] = min(best[name], time.perf_counter() - t)
        rate = {name: 64 * a.batches / s for name, s in best.items()}
        for name in sides:
            ratio = rate[name] / rate["HF forward"]
            print(f"| {width} | {name} | {rate[name]:.0f} | {ratio:.2f} | {diff if name != 'HF forward' else 0:.2e} |")


if __name__ == "__main__":
    main()
