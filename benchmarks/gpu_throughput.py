"""GPU fine-tuning throughput: xlt's loop vs the Hugging Face Trainer, side by side, one run.

Encoders of the papers' shapes, randomly initialised (no Hub offline): mBERT (12 layers,
768 hidden, 119,547 subwords) and XLM-R large (24 layers, 1024 hidden, 250,002 subwords).
Workloads: token tagging (WikiANN NER-like lengths) and sentence-pair classification
(XNLI-like), with the length profiles of xlt.throughput.LENGTHS. The synthetic labels are
learnable (a function of the tokens), so the dev metric after a fixed number of steps
checks that the three sides trained alike.

Sides, all on the same model (xlt's encoder + head, one initialisation), the same data,
batch size, learning rate and linear schedule with 10% warmup:
  ours        xlt.engine Loop: length-grouped batches, dynamic padding, bf16 autocast and
              fused AdamW on CUDA; evaluation in fp32 (xlt.engine.predict)
  hf_default  Trainer as the examples run it: fp32, every batch padded to max_length,
              random sampler
  hf_best     Trainer with its best flags: bf16, tf32, train_sampling_strategy=
              "group_by_length", dynamic padding, adamw_torch_fused, torch_compile (CUDA)
Every side uses SDPA attention (transformers 5's default for BERT / XLM-R).

Columns: samples/s and real (non-pad) tokens/s of training, measured after `--warmup-steps`
steps (so compilation is not counted); MFU (model FLOPs of the real tokens, see
xlt.throughput, against the bf16 dense peak looked up from the GPU's name; n/a on CPU);
peak GPU memory (n/a on CPU); evaluation tokens/s; the dev accuracy after `--steps` steps.

    python benchmarks/gpu_throughput.py --json benchmarks/gpu_throughput.json   # on a GPU
    python benchmarks/gpu_throughput.py --small                                  # CPU, seconds
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import datetime
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

from xlt.cli import quiet_libraries
from xlt.engine.batching import collate
from xlt.engine.features import Encoded
from xlt.engine.kinds import IGNORE, kind_of
from xlt.engine.loop import Loop
from xlt.engine.model import ModelSpec, build_model
from xlt.engine.objectives import Objective, task_term
from xlt.engine.predict import eval_batches, run_batches
from xlt.engine.runtime import Checkpointer, Dist, build_optimizer, build_scheduler, resolve_precision, seed_everything
from xlt.engine.streams import Stream
from xlt.registry import get_task
from xlt.throughput import SHAPES, EncoderShape, eval_flops, length_profile, mfu, peak_tflops, train_flops

WORKLOADS = {"tagging": "ner", "pair": "xnli"}  # workload -> the registry task whose head it trains
SIDES = ("ours", "hf_default", "hf_best")
COLUMNS = ("samples_per_s", "tokens_per_s", "mfu", "peak_mem_gib", "eval_tokens_per_s", "dev_accuracy")
PAD, CLS, SEP, FIRST_ID = 0, 1, 2, 5  # synthetic vocabulary: ids below FIRST_ID are special


# ---------------------------------------------------------------- model and data
def build_encoder(shape: EncoderShape, seed: int):
    from transformers import BertConfig, BertModel, XLMRobertaConfig, XLMRobertaModel

    common = dict(num_hidden_layers=shape.layers, hidden_size=shape.hidden, num_attention_heads=shape.heads,
                  intermediate_size=shape.intermediate, vocab_size=shape.vocab, pad_token_id=PAD,
                  attn_implementation="sdpa")
    seed_everything(seed)
    if shape.layers >= 24:  # XLM-R: RoBERTa positions start after the padding index
        cfg = XLMRobertaConfig(max_position_embeddings=shape.max_positions, type_vocab_size=1, **common)
        return XLMRobertaModel(cfg, add_pooling_layer=False)
    return BertModel(BertConfig(max_position_embeddings=shape.max_positions, **common), add_pooling_layer=False)


def make_features(task_name: str, n: int, vocab: int, seed: int, pair_segments: bool) -> list[dict]:
    """Synthetic features with the task's length profile; tokens Zipf-distributed (as text is);
    labels a function of the tokens, so that they can be learnt."""
    task = get_task(task_name)
    g = torch.Generator().manual_seed(seed)
    lengths = length_profile(task_name).sample(n, seed)
    ranks = torch.arange(vocab - FIRST_ID, dtype=torch.float64)
    zipf = 1.0 / (ranks + 10.0)
    body_ids = (torch.multinomial(zipf, sum(max(1, n_ - 3) for n_ in lengths), replacement=True, generator=g)
                + FIRST_ID).tolist()
    word_start = (torch.rand(len(body_ids), generator=g) < 0.7).tolist()
    feats, at = [], 0
    for length in lengths:
        k = max(1, length - 3)
        body, starts = body_ids[at : at + k], word_start[at : at + k]
        at += k
        if task.head == "tagging":
            ids = [CLS, *body, SEP]
            labels = [IGNORE] + [t % task.num_labels if s else IGNORE for t, s in zip(body, starts)] + [IGNORE]
            feats.append({"input_ids": ids, "labels": labels})
        else:
            a, b = body[: max(1, k * 3 // 5)], body[max(1, k * 3 // 5) :] or [FIRST_ID]
            ids = [CLS, *a, SEP, *b, SEP]
            f = {"input_ids": ids, "label": a[0] % task.num_labels}
            if pair_segments:
                f["token_type_ids"] = [0] * (len(a) + 2) + [1] * (len(b) + 1)
            feats.append(f)
    return feats


def real_lengths(feats, idx) -> list[int]:
    return [len(feats[i]["input_ids"]) for i in idx]


def accuracy(task, dev: list[dict], logits: list[torch.Tensor]) -> float:
    correct = total = 0
    for f, lg in zip(dev, logits):
        if task.head == "tagging":
            gold = torch.tensor(f["labels"])
            pred = lg[: len(gold)].argmax(-1)
            mask = gold != IGNORE
            correct += int((pred[mask] == gold[mask]).sum())
            total += int(mask.sum())
        else:
            correct += int(int(lg.argmax(-1)) == f["label"])
            total += 1
    return 100.0 * correct / total


@contextlib.contextmanager
def tf32(enabled: bool):
    """Each side sets its own matmul precision; none leaks into the next."""
    old = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def reset_memory(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def peak_memory(device: torch.device) -> float | None:
    return torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else None


# ---------------------------------------------------------------- the sides
def run_ours(model, task, train, dev, args, device, tmp: Path) -> dict:
    kind = kind_of(task)
    stream = Stream(task.name, train, args.batch_size, args.seed, PAD, kind.pad_values, kind.scalars)
    marks = {}
    term = task_term(task, kind)
    inner = term.fn

    def timed(model_, batch, step):  # the clock starts when step `warmup` begins
        if step == args.warmup_steps:
            sync(device)
            marks["start"] = time.perf_counter()
        return inner(model_, batch, step)

    term.fn = timed
    optimizer = build_optimizer(model, args.lr, args.weight_decay, device=device)
    scheduler = build_scheduler(optimizer, args.steps, args.warmup_ratio)
    loop = Loop(model=model, raw_model=model, optimizer=optimizer, scheduler=scheduler, streams={task.name: stream},
                primary=task.name, objective=Objective([term]), device=device, dist=Dist(),
                checkpointer=Checkpointer(tmp / "ours_ck"), max_steps=args.steps, checkpoint_every=10**9,
                progress=False, precision=resolve_precision("auto", device))
    with tf32(device.type == "cuda"):
        loop.run()
        sync(device)
        seconds = time.perf_counter() - marks["start"]
    drawn, epoch = [], 0  # the batches the loop drew: the stream's epochs in order, cycling
    while len(drawn) < args.steps:
        drawn.extend(stream.batches(epoch))
        epoch += 1
    timed_lengths = [n for idx in drawn[args.warmup_steps : args.steps] for n in real_lengths(train, idx)]

    sync(device)
    t0 = time.perf_counter()  # collation included, as in Trainer.predict
    enc = Encoded(dev, [len(f["input_ids"]) for f in dev])
    batches = eval_batches(enc, kind, PAD, args.eval_batch_size)
    outs = run_batches(model, batches, len(dev), device, keys=kind.decode_keys)
    sync(device)
    eval_seconds = time.perf_counter() - t0
    return {"seconds": seconds, "lengths": timed_lengths, "eval_seconds": eval_seconds,
            "dev_accuracy": accuracy(task, dev, [o["logits"] for o in outs]),
            "flags": {"precision": "bf16 autocast" if resolve_precision("auto", device) == "bf16" else "fp32", "padding": "dynamic",
                      "sampler": "length-grouped", "optimizer": "AdamW fused" if device.type == "cuda" else "AdamW",
                      "eval": "fp32", "compile": False}}


class TrainerModel(torch.nn.Module):
    """xlt's TaskModel with the keyword interface the Trainer calls (same weights, same head)."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.kind = kind_of(model.task)
        self.label_key = "labels" if model.task.head == "tagging" else "label"

    def forward(self, input_ids, attention_mask, token_type_ids=None, labels=None):
        batch = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            batch["token_type_ids"] = token_type_ids
        logits = self.model(batch)["logits"]
        if labels is None:
            return {"logits": logits}
        return {"loss": self.kind.loss({"logits": logits}, {**batch, self.label_key: labels}), "logits": logits}


def trainer_collator(kind, pad_to: int | None, seen: list):
    """Dynamic padding (xlt's collate, as DataCollatorWithPadding does), or every batch padded
    to `pad_to` (the examples' pad_to_max_length); records each batch's real lengths."""

    def fn(features):
        batch = collate(features, PAD, kind.pad_values, kind.scalars)
        seen.append(batch["attention_mask"].sum(1).tolist())
        if pad_to:
            width = batch["input_ids"].shape[1]
            for key, value in batch.items():
                if value.dim() == 2 and width < pad_to:
                    fill = {"attention_mask": 0, "input_ids": PAD}.get(key, kind.pad_values.get(key, 0))
                    batch[key] = torch.nn.functional.pad(value, (0, pad_to - width), value=fill)
        if "label" in batch:
            batch["labels"] = batch.pop("label")
        return batch

    return fn


def run_hf(model, task, train, dev, args, device, tmp: Path, best: bool, compile_: bool | None = None) -> dict:
    from transformers import Trainer, TrainerCallback, TrainingArguments

    cuda = device.type == "cuda"
    if compile_ is None:
        compile_ = best and (cuda and args.compile == "auto" or args.compile == "on")
    marks = {}

    class Clock(TrainerCallback):
        def on_step_begin(self, targs, state, control, **kw):
            if state.global_step == args.warmup_steps:
                sync(device)
                marks["start"] = time.perf_counter()

    flags = dict(bf16=best and cuda, tf32=best and cuda, train_sampling_strategy="group_by_length" if best else "random",
                 torch_compile=compile_, **({"optim": "adamw_torch_fused"} if best else {}))
    targs = TrainingArguments(
        output_dir=str(tmp / ("hf_best" if best else "hf_default")), per_device_train_batch_size=args.batch_size,
        per_device_eval_batch_size=args.eval_batch_size, max_steps=args.steps, learning_rate=args.lr,
        warmup_steps=args.warmup_ratio, weight_decay=args.weight_decay, lr_scheduler_type="linear",
        max_grad_norm=1.0, eval_strategy="no", save_strategy="no", logging_strategy="no", report_to=[],
        seed=args.seed, dataloader_num_workers=0, use_cpu=not cuda, disable_tqdm=True, remove_unused_columns=False,
        **flags,
    )
    seen: list = []
    kind = kind_of(task)
    trainer = Trainer(model=TrainerModel(model), args=targs, train_dataset=train, callbacks=[Clock()],
                      data_collator=trainer_collator(kind, None if best else args.max_length, seen))
    with tf32(bool(flags["tf32"])), contextlib.redirect_stdout(sys.stderr):
        trainer.train()
        sync(device)
        seconds = time.perf_counter() - marks["start"]
        timed_lengths = [n for lens in seen[args.warmup_steps : args.steps] for n in lens]
        seen.clear()
        sync(device)
        t0 = time.perf_counter()
        pred = trainer.predict(dev)
        sync(device)
        eval_seconds = time.perf_counter() - t0
    logits = [torch.as_tensor(row) for row in pred.predictions]
    return {"seconds": seconds, "lengths": timed_lengths, "eval_seconds": eval_seconds,
            "dev_accuracy": accuracy(task, dev, logits),
            "flags": {"precision": "bf16" if flags["bf16"] else "fp32", "padding": "dynamic" if best else
                      f"max_length={args.max_length}", "sampler": flags["train_sampling_strategy"],
                      "optimizer": str(targs.optim.value if hasattr(targs.optim, "value") else targs.optim),
                      "eval": "bf16 autocast" if flags["bf16"] else "fp32", "compile": compile_}}


# ---------------------------------------------------------------- one workload
def run_workload(shape_name: str, workload: str, args, device: torch.device, peak: float | None) -> list[dict]:
    shape = SHAPES[shape_name]
    task = get_task(WORKLOADS[workload])
    pair_segments = shape.layers < 24  # XLM-R has one segment type
    n_train = args.steps * args.batch_size
    train = make_features(task.name, n_train, shape.vocab, args.seed, pair_segments)
    dev = make_features(task.name, args.dev_examples, shape.vocab, args.seed + 1, pair_segments)
    seed_everything(args.seed)
    initial = build_model(ModelSpec(task=task.name, dropout=0.1), build_encoder(shape, args.seed))
    head_params = sum(p.numel() for p in initial.heads.parameters())
    dev_tokens = sum(len(f["input_ids"]) for f in dev)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for side in SIDES:
            model = copy.deepcopy(initial).to(device)
            reset_memory(device)
            seed_everything(args.seed)
            if side == "ours":
                r = run_ours(model, task, train, dev, args, device, Path(tmp))
            else:
                try:
                    r = run_hf(model, task, train, dev, args, device, Path(tmp), best=side == "hf_best")
                except Exception as e:  # torch_compile "where it works": else the best flags without it
                    if not (side == "hf_best" and args.compile != "off" and device.type == "cuda"):
                        raise
                    print(f"hf_best: torch_compile failed ({e.__class__.__name__}: {str(e)[:200]}); "
                          "measuring hf_best without it", file=sys.stderr)
                    model = copy.deepcopy(initial).to(device)
                    reset_memory(device)
                    seed_everything(args.seed)
                    r = run_hf(model, task, train, dev, args, device, Path(tmp), best=True, compile_=False)
            samples = len(r["lengths"])
            flops = train_flops(shape, r["lengths"], head_params)
            rows.append({
                "shape": shape_name, "workload": workload, "task": task.name, "side": side,
                "steps": args.steps, "timed_steps": args.steps - args.warmup_steps, "batch_size": args.batch_size,
                "samples_per_s": samples / r["seconds"], "tokens_per_s": sum(r["lengths"]) / r["seconds"],
                "mfu": mfu(flops, r["seconds"], peak), "peak_mem_gib": peak_memory(device),
                "eval_tokens_per_s": dev_tokens / r["eval_seconds"],
                "eval_mfu": mfu(eval_flops(shape, [len(f["input_ids"]) for f in dev], head_params), r["eval_seconds"], peak),
                "dev_accuracy": r["dev_accuracy"], "flags": r["flags"],
            })  # fmt: skip
            del model
    return rows


def fmt(value, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def table(rows: list[dict]) -> str:
    head = "| encoder | workload | side | samples/s | tokens/s | MFU | peak mem (GiB) | eval tokens/s | dev acc | ours ÷ side |"
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    for r in rows:
        ours = next(o for o in rows if (o["shape"], o["workload"], o["side"]) == (r["shape"], r["workload"], "ours"))
        lines.append(
            f"| {r['shape']} | {r['workload']} ({r['task']}) | {r['side']} | {r['samples_per_s']:.1f} | "
            f"{r['tokens_per_s']:.0f} | {fmt(r['mfu'] and 100 * r['mfu'], '.1f')}{'%' if r['mfu'] else ''} | "
            f"{fmt(r['peak_mem_gib'], '.2f')} | {r['eval_tokens_per_s']:.0f} | {r['dev_accuracy']:.2f} | "
            f"{ours['tokens_per_s'] / r['tokens_per_s']:.2f}x |"
        )
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="tiny encoder, few steps, CPU: checks that it all runs")
    ap.add_argument("--shapes", nargs="+", choices=sorted(SHAPES), default=None)
    ap.add_argument("--workloads", nargs="+", choices=sorted(WORKLOADS), default=sorted(WORKLOADS))
    ap.add_argument("--steps", type=int, default=None, help="optimizer steps per side (default 300; --small 6)")
    ap.add_argument("--warmup-steps", type=int, default=None, help="steps before the clock starts (default steps/10)")
    ap.add_argument("--batch-size", type=int, default=None, help="default 32; --small 8")
    ap.add_argument("--eval-batch-size", type=int, default=64)
    ap.add_argument("--dev-examples", type=int, default=None, help="default 2000; --small 32")
    ap.add_argument("--max-length", type=int, default=128, help="hf_default pads every batch to this")
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--warmup-ratio", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--compile", choices=("auto", "on", "off"), default="auto",
                    help="torch_compile for hf_best: auto = on CUDA only")
    ap.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    ap.add_argument("--threads", type=int, default=2, help="CPU threads")
    ap.add_argument("--peak-tflops", type=float, default=None, help="bf16 dense peak, for a GPU not in the table")
    ap.add_argument("--json", help="write every number here (what the full-scale bill reads)")
    args = ap.parse_args(argv)
    small = args.small
    args.shapes = args.shapes or (["small"] if small else ["mbert", "xlmr-large"])
    args.steps = args.steps or (6 if small else 300)
    args.batch_size = args.batch_size or (8 if small else 32)
    args.dev_examples = args.dev_examples or (32 if small else 2000)
    args.warmup_steps = args.steps // 10 if args.warmup_steps is None else args.warmup_steps
    args.warmup_steps = max(1, min(args.warmup_steps, args.steps - 1))
    quiet_libraries()
    torch.set_num_threads(args.threads)
    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available() else
                          "cpu" if args.device == "auto" else args.device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({args.threads} threads)"
    peak = args.peak_tflops or (peak_tflops(name) if device.type == "cuda" else None)
    rows = [r for s in args.shapes for w in args.workloads for r in run_workload(s, w, args, device, peak)]
    print(f"device: {name}; bf16 dense peak: {fmt(peak, '.0f')} TFLOP/s; {args.steps} steps of batch "
          f"{args.batch_size} per side, clock from step {args.warmup_steps}; "
          f"{datetime.date.today().isoformat()}")
    if device.type != "cuda":
        print("CPU run: these are not GPU figures (MFU and GPU memory n/a)")
    print(table(rows))
    for side in SIDES:
        flags = next(r["flags"] for r in rows if r["side"] == side)
        print(f"  {side}: " + ", ".join(f"{k} {v}" for k, v in flags.items()))
    if args.json:
        from xlt.provenance import provenance

        out = {"device": name, "gpu": device.type == "cuda", "peak_tflops": peak, "date": datetime.date.today().isoformat(),
               "columns": list(COLUMNS), "rows": rows,
               "provenance": provenance({k: v for k, v in vars(args).items() if k != "json"}, args.seed, [])}
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=2))
    return rows


if __name__ == "__main__":
    main()
