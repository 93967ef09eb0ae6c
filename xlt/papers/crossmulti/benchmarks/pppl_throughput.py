"""Pseudo-perplexity throughput: crossmulti's scorer (every masked copy of every sentence pooled,
sorted by length, batched, the MLM head on the masked positions only) vs one masked copy per
forward pass (the model as Hugging Face runs it, full-vocabulary logits), side by side.

Both sides score the same sentences (the tiny world's EN and DE text) with the same tiny BERT
(WordPiece + a short MLM training, built here); both must give the same PPPL. Sides alternate,
the fastest repeat counts (sidebyside.py).

    python xlt/papers/crossmulti/benchmarks/pppl_throughput.py [--sentences 200] [--repeats 3] [--batch-size 256]
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import torch

# the shared side-by-side helpers live in the repository's benchmarks/ (sidebyside.py, train_throughput.py)
sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "benchmarks"))
from sidebyside import alternate, build_world_and_encoder, world_texts  # noqa: E402

from xlt.process.cli import quiet_libraries


def main():
    import argparse
    import math

    from xlt.papers.crossmulti.pppl import load_scorer, pll_one_copy_per_forward, pseudo_log_likelihoods, tokenize_texts

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sentences", type=int, default=200, help="per language (en, de)")
    ap.add_argument("--batch-size", type=int, default=256, help="masked copies per forward pass (ours)")
    ap.add_argument("--encoder-steps", type=int, default=150)
    ap.add_argument("--max-length", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workdir", help="build the world and encoder here and reuse them")
    ap.add_argument("--json")
    args = ap.parse_args()
    quiet_libraries()
    torch.set_num_threads(args.threads)
    root = Path(args.workdir or tempfile.mkdtemp(prefix="pppl_bench"))
    enc, _ = build_world_and_encoder(root, n_train=50, n_dev=10, mlm_steps=args.encoder_steps)
    _, by_lang = world_texts(50, 10, args.sentences)
    texts = [s for lang in ("en", "de") for s in by_lang[lang][: args.sentences]]
    mlm, tok = load_scorer(str(enc))
    mlm.eval()
    seqs, added = tokenize_texts(tok, texts, args.max_length)

    def ours(_out: Path) -> dict:
        t = time.perf_counter()
        pll, counts = pseudo_log_likelihoods(mlm, seqs, added, tok.mask_token_id, tok.pad_token_id, args.batch_size)
        return {"seconds": time.perf_counter() - t, "tokens": int(counts.sum()), "pppl": math.exp(-pll.sum() / counts.sum())}

    def baseline(_out: Path) -> dict:
        t = time.perf_counter()
        plls = pll_one_copy_per_forward(mlm.mlm, seqs, added, tok.mask_token_id)
        n = sum(len(m) - sum(m) for m in added)
        return {"seconds": time.perf_counter() - t, "tokens": n, "pppl": math.exp(-sum(plls) / n)}

    sides = {"one masked copy per forward": baseline, "xlt pooled + length-batched": ours}
    runs = alternate(sides, args.repeats, root)
    best = {name: min(rs, key=lambda r: r["seconds"]) for name, rs in runs.items()}
    rate = {name: b["tokens"] / b["seconds"] for name, b in best.items()}
    ref = "one masked copy per forward"
    print(f"PPPL of {len(seqs)} sentences ({best[ref]['tokens']} tokens), {torch.get_num_threads()} thread(s)")
    print(f"{'side':32} {'tokens/s':>10} {'seconds':>8} {'PPPL':>10} {'side/one-copy':>14}  all runs (s)")
    for name, b in best.items():
        all_s = " ".join(f"{r['seconds']:.2f}" for r in runs[name])
        print(f"{name:32} {rate[name]:10.1f} {b['seconds']:8.2f} {b['pppl']:10.4f} {rate[name] / rate[ref]:14.2f}  {all_s}")
    ratio = rate["xlt pooled + length-batched"] / rate[ref]
    print(f"ratio (xlt / one copy per forward): {ratio:.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps({"sides": {n: {**best[n], "tokens_per_s": rate[n]} for n in best},
                                               "ratio": ratio}, indent=2))


if __name__ == "__main__":
    main()
