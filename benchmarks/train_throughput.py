"""Training throughput: xlt's engine vs the Hugging Face Trainer, side by side in one run.

Both train the same model (the tiny BERT built here from the tiny world, with xlt's tagging
head, identically initialised) on the same POS data with the same batch size, epochs,
learning rate and schedule, on the same device, in the same process. The Trainer runs with
its defaults (random batches, dynamic padding), as the papers' own scripts did. Printed: samples/s of each, their ratio, and each model's dev
accuracy (first-subword tokens), which should agree within seed noise.

    python benchmarks/train_throughput.py [--train 4000] [--epochs 3] [--batch-size 32] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import torch

from xlt.cli import quiet_libraries


def build_world_and_encoder(root: Path, n_train: int) -> tuple[Path, Path]:
    from xlt.engine.recipes.mlm import EncoderShape, MLMConfig, train_mlm, train_wordpiece
    from xlt.io import write_jsonl
    from xlt.prepare import prepare_split
    from xlt.world import generate, pretraining_text

    world = {"seed": 13, "languages": {"en": {"order": "SVO"}, "de": {"order": "SVO", "case_suffix": True}},
             "sizes": {"train": n_train, "dev": 300, "test": 10}, "tasks": ["pos"]}
    manifest = generate(world, root / "raw")
    for split in ("train", "dev"):
        write_jsonl(root / "data" / "en" / f"{split}.jsonl", prepare_split("pos", "en", split, root / "raw", manifest["source_cfg"]))
    texts = [s for lang_texts in pretraining_text(world, 1500).values() for s in lang_texts]
    train_wordpiece(texts, 1000, root / "tok")
    shape = EncoderShape(layers=4, hidden=128, heads=4, intermediate=512, max_positions=128)
    train_mlm(texts, root / "enc", root / "ck", MLMConfig(steps=150, batch_size=64), tokenizer_dir=root / "tok",
              shape=shape, progress=False)
    return root / "enc", root / "data"


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


def run_ours(enc: Path, data: Path, args, out: Path) -> dict:
    from xlt.engine.config import TrainConfig
    from xlt.engine.recipes.finetune import train

    cfg = TrainConfig(task="pos", encoder=str(enc), seed=args.seed, lr=args.lr, epochs=args.epochs,
                      batch_size=args.batch_size, warmup_ratio=0.0, weight_decay=0.0, max_length=128,
                      select="last", progress=False)
    summary = train(cfg, [data / "en" / "train.jsonl"], [data / "en" / "dev.jsonl"], out / "ours", out / "ck_ours")
    # The training loop itself (dev evaluation and checkpoints included), like trainer.train()
    # on the other side; loading and tokenising happen before either clock starts.
    seconds = summary["seconds_this_process"]
    return {"seconds": seconds, "seconds_evaluating": summary["seconds_evaluating"],
            "seconds_checkpointing": summary["seconds_checkpointing"], "samples": summary["train_features"] * args.epochs, "dev_accuracy": summary["history"][-1]["dev"][str(data / "en" / "dev.jsonl")]["accuracy"]}


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


def run_hf(enc: Path, data: Path, args, out: Path) -> dict:
    from transformers import AutoTokenizer, DataCollatorForTokenClassification, Trainer, TrainingArguments

    from xlt.engine.config import TrainConfig
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
    targs = TrainingArguments(
        output_dir=str(out / "hf"), per_device_train_batch_size=args.batch_size, num_train_epochs=args.epochs,
        learning_rate=args.lr, warmup_steps=0, weight_decay=0.0, lr_scheduler_type="linear", max_grad_norm=1.0,
        eval_strategy="no", save_strategy="no", logging_strategy="no", report_to=[], seed=args.seed,
        dataloader_num_workers=0, use_cpu=not torch.cuda.is_available(), disable_tqdm=True,
        bf16=torch.cuda.is_available(),
    )
    trainer = Trainer(model=model, args=targs, train_dataset=ds, data_collator=DataCollatorForTokenClassification(tok))
    t0 = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - t0
    model.eval()
    device = next(model.parameters()).device
    acc = token_accuracy(lambda b: model(b["input_ids"].to(device), b["attention_mask"].to(device))["logits"].float().cpu(),
                         dev_feats, 64, tok.pad_token_id)
    return {"seconds": seconds, "samples": len(ds) * args.epochs, "dev_accuracy": acc}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", type=int, default=4000, help="training sentences")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2, help="runs per side, alternated; the fastest counts")
    ap.add_argument("--json", help="also write the numbers here")
    args = ap.parse_args()
    quiet_libraries()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        enc, data = build_world_and_encoder(root, args.train)
        runs = {"hf": [], "ours": []}
        for r in range(args.repeats):  # alternate, so neither side always runs on a warmer machine
            runs["hf"].append(run_hf(enc, data, args, root / f"hf{r}"))
            runs["ours"].append(run_ours(enc, data, args, root / f"ours{r}"))
        hf = min(runs["hf"], key=lambda x: x["seconds"])
        ours = min(runs["ours"], key=lambda x: x["seconds"])
    device = "cuda" if torch.cuda.is_available() else f"cpu ({args.threads} threads)"
    rate = {k: v["samples"] / v["seconds"] for k, v in (("ours", ours), ("hf", hf))}
    result = {"device": device, "batch_size": args.batch_size, "epochs": args.epochs,
              "ours": {**ours, "samples_per_s": rate["ours"]}, "hf_trainer": {**hf, "samples_per_s": rate["hf"]},
              "ratio": rate["ours"] / rate["hf"]}
    print(f"device: {device}, batch size {args.batch_size}, {args.epochs} epochs, {ours['samples'] // args.epochs} sentences")
    print(f"xlt engine : {rate['ours']:8.1f} samples/s  ({ours['seconds']:.1f} s, incl. per-epoch dev eval + checkpoints)  dev acc {ours['dev_accuracy']:.2f}")
    print(f"HF Trainer : {rate['hf']:8.1f} samples/s  ({hf['seconds']:.1f} s)  dev acc {hf['dev_accuracy']:.2f}")
    print(f"ratio (xlt / HF): {result['ratio']:.2f}x")
    steps_only = ours["seconds"] - ours["seconds_evaluating"] - ours["seconds_checkpointing"]
    print(f"  of xlt's {ours['seconds']:.1f} s: dev evaluation {ours['seconds_evaluating']:.1f} s, checkpoints "
          f"{ours['seconds_checkpointing']:.1f} s; optimizer steps alone: {ours['samples'] / steps_only:.1f} samples/s, "
          f"{ours['samples'] / steps_only / rate['hf']:.2f}x the Trainer")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
