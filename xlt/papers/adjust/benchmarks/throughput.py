"""Cross-lingual adjustment throughput: xlt's `adjust_encoder` (the one loop: paired stream,
both sides of a batch in one forward each, subword averaging by index_add, the frozen
reference under no_grad) vs a plain PyTorch loop of the authors' shape, side by side.

The authors' loop (pefimov/cross-lingual-adjustment, `alignment/bert_finetuning_alignment.py`
and `word_level_bert.py`, as `scripts/alignment/run_align.sh` runs it: `--align_mode avg
--include_clssep`), rewritten here from this description:
- pairs in file order, no shuffling; a step takes the next 32 pairs and walks them in
  sub-batches of `splitbatch_size` = 4 pairs; per sub-batch three forward passes: the trained
  model on the non-English sentences, on the English ones, and the frozen original
  (`model_base`, in eval mode but *not* under no_grad: its graph is built and walked back too)
  on the English ones;
- each forward tokenises its sentences word by word (`tokenizer.tokenize(word)`), pads them,
  runs BERT and builds each word's vector in a Python loop over the words (mean of its
  subwords, written into a zeros tensor); [CLS] and [SEP] are words too and aligned
  ([CLS]–[CLS], [SEP]–[SEP]);
- the sub-batches' losses are summed and one `backward` + `Adam.step` follows the 32 pairs;
  Adam(0.9, 0.98, eps 1e-9), no weight decay or clipping; lr 5e-5 reached by a linear warmup
  over the first 10% of the sentences, set by hand before each step, then constant; one epoch.
- The loss term is Eq. 1 as xlt computes it (squared distances averaged over the step's links
  and English words), so both sides' losses read alike; the authors' `F.mse_loss` per
  sub-batch also divides by the width and sums 8 sub-batches, constant factors Adam ignores.
Side "one pair per forward" is the same loop with sub-batches of 1.

Same tiny encoder (sidebyside.py's world and MLM-trained BERT), same aligned pairs (the
world's gold links between EN and DE renderings of one latent sentence, kept 1-to-1 as the
alignment stage keeps them, xlt.align.links.one_to_one), same steps, dropout 0.1, fp32, CPU.
Each side's time runs from the encoder directory to the saved adjusted encoder. The quality
column is Eq. 1 on held-out pairs, computed by one function for both sides' saved encoders
(eval mode): it should agree in magnitude.

    python xlt/papers/adjust/benchmarks/throughput.py [--pairs 1024] [--repeats 3] [--threads 1]
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
from sidebyside import aligned_pairs, alternate, build_world_and_encoder, report  # noqa: E402

from xlt.process.cli import quiet_libraries

XLT = "xlt adjust_encoder"
AUTHORS = "authors' loop (4 pairs / forward)"
PER_PAIR = "one pair per forward"


def annotate(bert, tokenizer, sentences: list[list[str]]) -> torch.Tensor:
    """The authors' WordLevelBert.annotate (mode avg, [CLS]/[SEP] included): packed word
    vectors of the last layer, (words + 2 per sentence, hidden)."""
    ids, spans, count = [], [], 0
    for sentence in sentences:
        tokens = [tokenizer.cls_token]
        spans.append((count, count + 1))
        count += 1
        for word in sentence:
            pieces = tokenizer.tokenize(word)
            assert pieces, f"unknown word: {word}"
            tokens += pieces
            spans.append((count, count + len(pieces)))
            count += len(pieces)
        tokens.append(tokenizer.sep_token)
        spans.append((count, count + 1))
        count += 1
        ids.append(tokenizer.convert_tokens_to_ids(tokens))
    width = max(map(len, ids))
    input_ids = torch.tensor([x + [tokenizer.pad_token_id] * (width - len(x)) for x in ids])
    mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in ids])
    features = bert(input_ids, attention_mask=mask, output_hidden_states=True).hidden_states[-1]
    flat = features.masked_select(mask.bool().unsqueeze(-1)).reshape(-1, features.shape[-1])
    packed = torch.zeros(len(spans), features.shape[-1])
    for w, (a, b) in enumerate(spans):
        packed[w] = torch.mean(flat[a:b], axis=0)
    return packed


def link_rows(src: list[list[str]], tgt: list[list[str]], links: list[list]) -> tuple[list[int], list[int]]:
    """The authors' pick_aligned: packed rows of the linked words, [CLS] and [SEP] linked too."""
    rows_s, rows_t, off_s, off_t = [], [], 0, 0
    for s, t, a in zip(src, tgt, links):
        pairs = [(0, 0)] + [(i + 1, j + 1) for i, j in a] + [(len(s) + 1, len(t) + 1)]
        rows_s += [off_s + i for i, _ in pairs]
        rows_t += [off_t + j for _, j in pairs]
        off_s, off_t = off_s + len(s) + 2, off_t + len(t) + 2
    return rows_s, rows_t


def eq1_sums(model, base, tokenizer, chunk: list[dict]) -> tuple[torch.Tensor, int, torch.Tensor, int]:
    """Σ‖f(s) − f(t)‖² over the chunk's links, their count, Σ‖f(e) − f₀(e)‖² over its English
    words, their count (the authors' three forwards)."""
    src, tgt = [p["src"] for p in chunk], [p["tgt"] for p in chunk]
    rows_s, rows_t = link_rows(src, tgt, [p["links"] for p in chunk])
    ann_en, ann_xx = annotate(model, tokenizer, src), annotate(model, tokenizer, tgt)
    ann_base = annotate(base, tokenizer, src)
    align = (ann_en[rows_s] - ann_xx[rows_t]).pow(2).sum()
    anchor = (ann_en - ann_base).pow(2).sum()
    return align, len(rows_s), anchor, len(ann_en)


def authors_loop(encoder: Path, pairs: list[dict], out: Path, split: int, batch: int, lr: float, seed: int,
                 warmup_frac: float = 0.1) -> None:
    from transformers import AutoTokenizer, BertModel, set_seed

    set_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(encoder)
    kw = dict(add_pooling_layer=False, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    model = BertModel.from_pretrained(encoder, use_safetensors=True, **kw)
    base = BertModel.from_pretrained(encoder, use_safetensors=True, **kw)
    trainer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    warmup = int(len(pairs) * warmup_frac)
    base.eval()
    processed = 0
    for i in range(0, len(pairs), batch):
        model.train()
        if processed + 1 <= warmup:
            for group in trainer.param_groups:
                group["lr"] = (processed + 1) * lr / warmup
        align = anchor = 0.0
        n_links = n_words = 0
        step = pairs[i:i + batch]
        for k in range(0, len(step), split):
            a, nl, e, nw = eq1_sums(model, base, tokenizer, step[k:k + split])
            align, anchor, n_links, n_words = align + a, anchor + e, n_links + nl, n_words + nw
        loss = align / n_links + anchor / n_words
        processed += len(step)
        loss.backward()
        trainer.step()
        trainer.zero_grad()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


@torch.no_grad()
def heldout_loss(adjusted: Path, original: Path, pairs: list[dict]) -> float:
    """Eq. 1 (per-link and per-word means) of an adjusted encoder on held-out pairs, eval mode."""
    from transformers import AutoTokenizer, BertModel

    tokenizer = AutoTokenizer.from_pretrained(original)
    model = BertModel.from_pretrained(adjusted, add_pooling_layer=False, use_safetensors=True).eval()
    base = BertModel.from_pretrained(original, add_pooling_layer=False, use_safetensors=True).eval()
    sums = [eq1_sums(model, base, tokenizer, pairs[k:k + 32]) for k in range(0, len(pairs), 32)]
    return float(sum(s[0] for s in sums) / sum(s[1] for s in sums) + sum(s[2] for s in sums) / sum(s[3] for s in sums))


def main():
    import argparse

    from xlt.papers.adjust.recipe import AdjustConfig, adjust_encoder

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=1024, help="aligned pairs trained on (one epoch, batch 32)")
    ap.add_argument("--heldout", type=int, default=256, help="pairs the final loss is measured on")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--encoder-steps", type=int, default=150)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (benchmarks/README.md: 1)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per side, alternated; the fastest counts")
    ap.add_argument("--no-per-pair", action="store_true", help="skip the one-pair-per-forward side")
    ap.add_argument("--workdir", help="build the world and encoder here and reuse them (default: a temp dir)")
    ap.add_argument("--json", help="also write the numbers here")
    args = ap.parse_args()
    quiet_libraries()
    torch.set_num_threads(args.threads)
    root = Path(args.workdir or tempfile.mkdtemp(prefix="adjust_bench"))
    enc, _ = build_world_and_encoder(root, n_train=50, n_dev=10, mlm_steps=args.encoder_steps)
    pairs = aligned_pairs(args.pairs + args.heldout, args.seed)
    train, heldout = pairs[: args.pairs], pairs[args.pairs:]
    pair_file = root / "pairs.jsonl"
    pair_file.write_text("".join(json.dumps(p) + "\n" for p in train))
    cfg = AdjustConfig(lr=args.lr, batch_size=args.batch_size, seed=args.seed, device="cpu", precision="fp32",
                       progress=False, checkpoint_minutes=1e9)

    def timed(fn):
        def side(out: Path) -> dict:
            t = time.perf_counter()
            fn(out)
            seconds = time.perf_counter() - t
            return {"seconds": seconds, "pairs": len(train), "heldout_loss": heldout_loss(out / "enc", enc, heldout)}
        return side

    sides = {
        AUTHORS: timed(lambda out: authors_loop(enc, train, out / "enc", 4, args.batch_size, args.lr, args.seed)),
        **({} if args.no_per_pair else
           {PER_PAIR: timed(lambda out: authors_loop(enc, train, out / "enc", 1, args.batch_size, args.lr, args.seed))}),
        XLT: timed(lambda out: adjust_encoder(cfg, str(enc), [pair_file], out / "enc", out / "ck")),
    }
    runs = alternate(sides, args.repeats, root)
    loss0 = heldout_loss(enc, enc, heldout)
    header = (f"adjustment of {len(train)} aligned pairs ({len(train) // args.batch_size} steps of {args.batch_size}), "
              f"fp32, {torch.get_num_threads()} thread(s); held-out Eq. 1 loss before: {loss0:.4f}")
    report(runs, XLT, "heldout_loss", header, args.json, unit="pairs", others=[AUTHORS],
           others_label="baseline", extra={"heldout_loss_before": loss0})

if __name__ == "__main__":
    main()
