"""MLM throughput: xlt's MLM recipe (`train_mlm`, on the engine's loop) vs the Hugging Face
Trainer with `DataCollatorForLanguageModeling`, side by side in one run.

All sides train the same BERT (the tiny shape, the WordPiece vocabulary built here, one
seeded initialisation) on the same sentences (the tiny world's pretraining text, tokenised
once, truncated to --max-length) for the same optimizer steps, batch size, learning rate,
warmup, weight decay and clipping, in the same process and thread setting. The Trainer runs
with its defaults and with `train_sampling_strategy="group_by_length"`. Each side's model is
then scored on held-out sentences with one fixed masking (mean MLM loss, lower is better;
sides should agree within noise). xlt's time includes its checkpoints.

    python benchmarks/mlm_throughput.py [--steps 300] [--batch-size 64] [--repeats 3]
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from pathlib import Path

import torch

from sidebyside import (SHAPE, alternate, build_tokenizer, hf_sides, hf_trainer_args, make_parser, per_tensor_adamw, report,
                        without_lean_forward, world_texts)

from xlt.process.cli import quiet_libraries
from xlt.engine.recipes import mlm as mlm_recipe



def heldout_loss(model, tok, texts: list[str], max_length: int, seed: int) -> float:
    """Mean MLM loss over held-out sentences, masked once with a fixed seed (same for every side)."""
    from xlt.engine.batching import collate
    from xlt.engine.kinds import IGNORE
    from xlt.engine.recipes.mlm import masking

    ids = tok(texts, truncation=True, max_length=max_length)["input_ids"]
    mask = masking(tok, 0.15)
    model.eval()
    total = count = 0.0
    with torch.no_grad():
        for i in range(0, len(ids), 64):
            batch = mask(collate([{"input_ids": x} for x in ids[i : i + 64]], tok.pad_token_id, {"input_ids": None}), seed + i)
            logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
            n = int((batch["mlm_labels"] != IGNORE).sum())
            total += torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch["mlm_labels"].flatten(),
                                                       ignore_index=IGNORE, reduction="sum").item()
            count += n
    return total / count


def new_model(tok, seed: int):
    """The initial BERT, as train_mlm builds it (seeded, then constructed)."""
    from transformers import BertConfig, BertForMaskedLM

    from xlt.engine.runtime import seed_everything

    seed_everything(seed)
    return BertForMaskedLM(BertConfig(
        vocab_size=len(tok), hidden_size=SHAPE["hidden"], num_hidden_layers=SHAPE["layers"],
        num_attention_heads=SHAPE["heads"], intermediate_size=SHAPE["intermediate"],
        max_position_embeddings=SHAPE["max_positions"], pad_token_id=tok.pad_token_id))


def run_ours(tok_dir: Path, texts: list[str], heldout: list[str], args, out: Path, precision: str = "auto") -> dict:
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from xlt.engine.recipes.mlm import EncoderShape, MLMConfig, train_mlm

    cfg = MLMConfig(steps=args.steps, batch_size=args.batch_size, lr=args.lr, warmup_ratio=args.warmup_ratio,
                    weight_decay=0.01, max_length=args.max_length, seed=args.seed, device="cpu" if args.cpu else "auto",
                    precision=precision)
    summary = train_mlm(texts, out / "enc", out / "ck", cfg, tokenizer_dir=tok_dir, shape=EncoderShape(**SHAPE),
                        progress=False)
    model = AutoModelForMaskedLM.from_pretrained(out / "enc")
    return {"seconds": summary["seconds_this_process"], "samples": args.steps * args.batch_size,
            "heldout_mlm_loss": heldout_loss(model, AutoTokenizer.from_pretrained(tok_dir), heldout, args.max_length, args.seed)}


def run_hf(tok_dir: Path, texts: list[str], heldout: list[str], args, out: Path, sampling: str, bf16: bool) -> dict:
    from transformers import AutoTokenizer, DataCollatorForLanguageModeling, Trainer

    tok = AutoTokenizer.from_pretrained(tok_dir)
    ids = tok(texts, truncation=True, max_length=args.max_length)["input_ids"]
    ds = [{"input_ids": x} for x in ids if len(x) > 2]  # the same sequences train_mlm keeps
    model = new_model(tok, args.seed)
    targs = hf_trainer_args(args, out, sampling, bf16, max_steps=args.steps, warmup_steps=int(args.warmup_ratio * args.steps),
                            weight_decay=0.01)
    trainer = Trainer(model=model, args=targs, train_dataset=ds, processing_class=tok,
                      data_collator=DataCollatorForLanguageModeling(tok, mlm_probability=0.15))
    t0 = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "samples": args.steps * args.batch_size,
            "heldout_mlm_loss": heldout_loss(model.cpu().float(), tok, heldout, args.max_length, args.seed)}


@contextlib.contextmanager
def whole_head():
    """Ablation: the prediction head over every position, as the Hugging Face model runs it."""
    original = mlm_recipe.MLMModel.__init__

    def init(self, hf_model):
        original(self, hf_model)
        self._head_name = None

    mlm_recipe.MLMModel.__init__ = init
    try:
        yield
    finally:
        mlm_recipe.MLMModel.__init__ = original


def ablated(switch, tok_dir, texts, heldout, args, out) -> dict:
    with switch:
        return run_ours(tok_dir, texts, heldout, args, out, args.precision)


def main():
    ap = make_parser(__doc__, batch_size=64, lr=5e-4)
    ap.add_argument("--sentences", type=int, default=3000, help="pretraining sentences per language (en, de)")
    ap.add_argument("--heldout", type=int, default=500, help="held-out sentences scored after training")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--max-length", type=int, default=64)
    ap.add_argument("--warmup-ratio", type=float, default=0.06)
    ap.add_argument("--cpu", action="store_true", help="CPU even where CUDA is visible")
    args = ap.parse_args()
    quiet_libraries()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.workdir or tmp)
        _, by_lang = world_texts(10, 10, args.sentences + args.heldout)
        by_lang = list(by_lang.values())
        train_texts = [s for t in by_lang for s in t[: args.sentences]]
        heldout = [s for t in by_lang for s in t[args.sentences :]]
        tok_dir = build_tokenizer(root, train_texts)
        device = torch.device("cuda" if torch.cuda.is_available() and not args.cpu else "cpu")
        hf = hf_sides(device, args.precision)
        sides = {name: (lambda out, s=s, b=b: run_hf(tok_dir, train_texts, heldout, args, out, s, b))
                 for name, (s, b) in hf.items()}
        sides["xlt train_mlm"] = lambda out: run_ours(tok_dir, train_texts, heldout, args, out, args.precision)
        if args.ablations:
            from xlt.engine.runtime import resolve_precision

            if resolve_precision(args.precision, device) == "bf16":
                sides["xlt train_mlm, fp32"] = lambda out: run_ours(tok_dir, train_texts, heldout, args, out, precision="fp32")
            sides["xlt train_mlm, whole MLM head"] = lambda out: ablated(whole_head(), tok_dir, train_texts, heldout, args, out)
            sides["xlt train_mlm, per-tensor AdamW"] = lambda out: ablated(
                per_tensor_adamw(mlm_recipe), tok_dir, train_texts, heldout, args, out)
            sides["xlt train_mlm, HF forward, native dropout"] = lambda out: ablated(
                without_lean_forward(), tok_dir, train_texts, heldout, args, out)
        runs = alternate(sides, args.repeats, Path(tmp))
    device = "cuda" if torch.cuda.is_available() and not args.cpu else f"cpu ({args.threads} threads)"
    header = (f"MLM, device: {device}, batch size {args.batch_size}, {args.steps} steps, {len(train_texts)} sentences "
              f"(max {args.max_length} subwords), held-out {len(heldout)}, best of {args.repeats}")
    report(runs, "xlt train_mlm", "heldout_mlm_loss", header, args.json)


if __name__ == "__main__":
    main()
