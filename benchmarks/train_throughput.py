"""Fine-tuning throughput: xlt's engine vs the Hugging Face Trainer, side by side in one run.

All sides train the same model (the tiny BERT built here from the tiny world, with xlt's
tagging head, identically initialised) on the same POS data with the same batch size,
epochs, learning rate and schedule, in the same process and thread setting. The Trainer runs
twice: with its defaults (random batches, dynamic padding, fused AdamW), as the papers' own
scripts did, and with its best CPU flag, `train_sampling_strategy="group_by_length"`.
xlt's time includes its per-epoch dev evaluation and checkpoints (the Trainer's runs have
neither). Printed per side: best-of samples/s, the dev accuracy of that run (first
subwords; sides should agree within seed noise) and xlt's ratio to it.

    python benchmarks/train_throughput.py [--train 4000] [--epochs 3] [--batch-size 32] [--repeats 3] [--precision fp32]
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import torch

from sidebyside import (alternate, aten_linears, build_world_and_encoder, hf_sides, hf_trainer_args, make_parser,
                        per_tensor_adamw, report, softmax_as_it_comes, without_lean_forward)

from xlt.process.cli import quiet_libraries

def token_accuracy(model_fn, features, batch_size: int, pad_id: int) -> float:
    from xlt.engine.batching import collate
    from xlt.engine.kinds import kind_of

    correct = total = 0
    with torch.no_grad():
        for i in range(0, len(features), batch_size):
            batch = collate(features[i : i + batch_size], pad_id, kind_of("tagging").pad_values)
            logits = model_fn(batch)
            mask = batch["labels"] != -100
            correct += (logits.argmax(-1)[mask] == batch["labels"][mask]).sum().item()
            total += mask.sum().item()
    return 100.0 * correct / total


def run_ours(enc: Path, data: Path, args, out: Path, precision: str = "auto", extras: tuple = ()) -> dict:
    from xlt.engine.train_config import TrainConfig
    from xlt.engine.recipes.finetune import train

    cfg = TrainConfig(task="pos", encoder=str(enc), seed=args.seed, lr=args.lr, epochs=args.epochs,
                      batch_size=args.batch_size, warmup_ratio=0.0, weight_decay=0.0, max_length=128,
                      select="last", progress=False, precision=precision, extras=[dict(e) for e in extras])
    summary = train(cfg, [data / "en" / "train.jsonl"], [data / "en" / "dev.jsonl"], out / "model", out / "ck")
    # The training loop itself (dev evaluation and checkpoints included), like trainer.train()
    # on the other side; loading and tokenising happen before either clock starts.
    return {"seconds": summary["seconds_this_process"], "samples": summary["train_features"] * args.epochs,
            "seconds_evaluating": summary["seconds_evaluating"], "seconds_checkpointing": summary["seconds_checkpointing"],
            "dev_accuracy": summary["history"][-1]["dev"][str(data / "en" / "dev.jsonl")]["accuracy"],
            "precision": summary["precision"]}


class _ForTrainer(torch.nn.Module):
    """Our TaskModel with the keyword interface the Trainer calls (same weights, same head)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, labels=None):
        batch = {"input_ids": input_ids, "attention_mask": attention_mask}
        if labels is not None:
            batch["labels"] = labels
        out = self.model(batch)
        if labels is not None:
            out["loss"] = self.model.head_kind.loss(out, batch)
        return out


def run_hf(enc: Path, data: Path, args, out: Path, sampling: str, bf16: bool) -> dict:
    from transformers import AutoTokenizer, DataCollatorForTokenClassification, Trainer

    from xlt.engine.train_config import TrainConfig
    from xlt.engine.evalset import load_records
    from xlt.engine.kinds import kind_of
    from xlt.engine.model import ModelSpec, build_model, load_encoder
    from xlt.engine.runtime import seed_everything
    from xlt.registry import get_task

    task = get_task("pos")
    tok = AutoTokenizer.from_pretrained(enc)
    enc_cfg = TrainConfig(task="pos", encoder=str(enc), max_length=128, stride=32)
    train_feats = kind_of(task).encode(task, load_records([data / "en" / "train.jsonl"]), tok, enc_cfg, train=True).features
    dev_feats = kind_of(task).encode(task, load_records([data / "en" / "dev.jsonl"]), tok, enc_cfg, train=True).features
    # The same initialisation as our engine's: seed, then encoder, then head.
    seed_everything(args.seed)
    encoder, _ = load_encoder(str(enc), dropout=0.1)
    seed_everything(args.seed)
    inner = build_model(ModelSpec(task="pos"), encoder)
    inner.head_kind = kind_of(task)
    model = _ForTrainer(inner)
    ds = [{"input_ids": f["input_ids"], "labels": f["labels"]} for f in train_feats]
    targs = hf_trainer_args(args, out, sampling, bf16, num_train_epochs=args.epochs, warmup_steps=0, weight_decay=0.0)
    trainer = Trainer(model=model, args=targs, train_dataset=ds, processing_class=tok,
                      data_collator=DataCollatorForTokenClassification(tok))
    t0 = time.perf_counter()
    with without_lean_forward():  # the Trainer runs the Hugging Face forward and its dropout, not xlt's
        trainer.train()
    seconds = time.perf_counter() - t0
    model.eval()
    device = next(model.parameters()).device
    acc = token_accuracy(lambda b: model(b["input_ids"].to(device), b["attention_mask"].to(device))["logits"].float().cpu(),
                         dev_feats, 64, tok.pad_token_id)
    return {"seconds": seconds, "samples": len(ds) * args.epochs, "dev_accuracy": acc}


def finetune_args(doc: str):
    """The options of a POS fine-tuning benchmark (this one, and dlfa's overhead benchmark), parsed; quiet
    libraries and the thread count set."""
    ap = make_parser(doc, batch_size=32, lr=1e-4)
    ap.add_argument("--train", type=int, default=4000, help="training sentences")
    ap.add_argument("--dev", type=int, default=300, help="dev sentences")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--encoder-steps", type=int, default=150, help="MLM steps that build the tiny encoder")
    args = ap.parse_args()
    quiet_libraries()
    torch.set_num_threads(args.threads)
    return args


def main():
    args = finetune_args(__doc__)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.workdir or tmp)
        enc, data = build_world_and_encoder(root, args.train, args.dev, args.encoder_steps)
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        hf = hf_sides(device, args.precision)
        sides = {name: (lambda out, s=s, b=b: run_hf(enc, data, args, out, s, b)) for name, (s, b) in hf.items()}
        sides["xlt engine"] = lambda out: run_ours(enc, data, args, out, args.precision)
        if args.ablations:
            from xlt.engine.recipes import finetune
            from xlt.engine.runtime import resolve_precision

            bf16 = resolve_precision(args.precision, device) == "bf16"
            if bf16:
                sides["xlt engine, fp32"] = lambda out: run_ours(enc, data, args, out, precision="fp32")

            def ablated(context, precision=args.precision):
                def side(out):
                    with context():
                        return run_ours(enc, data, args, out, precision)
                return side

            sides["xlt engine, per-tensor AdamW"] = ablated(lambda: per_tensor_adamw(finetune))
            sides["xlt engine, HF forward, native dropout"] = ablated(without_lean_forward)
            sides["xlt engine, HF forward, keep-mask dropout"] = ablated(lambda: without_lean_forward(keep_mask_dropout=True))
            sides[f"xlt engine, softmax {'in bf16 ' if bf16 else ''}on unpadded rows"] = ablated(softmax_as_it_comes)
            if device.type == "cpu":  # the lean forward's fp32 linears: oneDNN (xlt.engine.fastpath.linear)
                sides["xlt engine, fp32, linears through MKL"] = ablated(aten_linears, "fp32")
        runs = alternate(sides, args.repeats, Path(tmp))
    device = "cuda" if torch.cuda.is_available() else f"cpu ({args.threads} threads)"
    ours = min(runs["xlt engine"], key=lambda x: x["seconds"])
    header = (f"fine-tuning, device: {device}, xlt precision {ours['precision']}, batch size {args.batch_size}, {args.epochs} epochs, "
              f"{ours['samples'] // args.epochs} training windows, best of {args.repeats}")
    report(runs, "xlt engine", "dev_accuracy", header, args.json)
    print(f"  of xlt's best {ours['seconds']:.1f} s: dev evaluation {ours['seconds_evaluating']:.1f} s, "
          f"checkpoints {ours['seconds_checkpointing']:.1f} s")


if __name__ == "__main__":
    main()
