"""GPU fine-tuning throughput: xlt's loop vs the Hugging Face Trainer, side by side, one run.

Encoders of the papers' shapes, randomly initialised (no Hub offline): mBERT (12 layers,
768 hidden, 119,547 subwords) and XLM-R large (24 layers, 1024 hidden, 250,002 subwords).
Workloads: token tagging (WikiANN NER-like lengths), sentence-pair classification
(XNLI-like) and extractive span QA (SQuAD-like question + context windows, registry task
`qa`), with the length profiles of xlt.dag.throughput.LENGTHS. The synthetic labels are
learnable (a function of the tokens; QA's answer span is delimited by two marker tokens in
the context, and its dev accuracy is the exact match of start and end), so the dev metric
after a fixed number of steps checks that the three sides trained alike.

Sides, all on the same model (xlt's encoder + head, one initialisation), the same data,
batch size, learning rate and linear schedule with 10% warmup:
  ours        xlt.engine Loop: length-grouped batches, dynamic padding, bf16 autocast and
              fused AdamW on CUDA, where the loop also rounds batch widths up to a multiple
              of 16, compiles the lean layer stack (length dynamic: one graph, compiled in
              the warm-up steps; the flags count any compiled later) and reads no value
              per step; evaluation in fp32 (xlt.engine.predict)
  hf_default  Trainer as the examples run it: fp32, every batch padded to max_length,
              random sampler
  hf_best     Trainer with its best flags: bf16, tf32, train_sampling_strategy=
              "group_by_length", dynamic padding, adamw_torch_fused, torch_compile (CUDA)
Every side uses SDPA attention (transformers 5's default for BERT / XLM-R).

Columns: samples/s and real (non-pad) tokens/s of training, measured after `--warmup-steps`
steps (so compilation is not counted); MFU (model FLOPs of the real tokens, see
xlt.dag.throughput, against the bf16 dense peak looked up from the GPU's name; n/a on CPU);
peak GPU memory (n/a on CPU); evaluation tokens/s; the dev accuracy after `--steps` steps.

A one-shot GPU run keeps what finished: the JSON is rewritten after every (shape, workload)
("complete": false until the end), a side that fails is recorded under "errors" and the run
goes on, and progress lines with timestamps go to stderr. `--profile-ours FILE` profiles
`--profile-steps` more steps of ours after each timed run and evaluation (torch.profiler,
CPU + CUDA activities on a GPU) and writes each phase's time per step (collate, forward,
backward, optimizer: the loop's record_function ranges) and the top-15 ops to FILE.

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
import traceback
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runs without PYTHONPATH or an installed xlt

from xlt.process.cli import quiet_libraries  # noqa: E402
from xlt.engine.batching import collate  # noqa: E402
from xlt.engine.fastpath import compile_status  # noqa: E402
from xlt.engine.features import Encoded  # noqa: E402
from xlt.engine.kinds import IGNORE, kind_of  # noqa: E402
from xlt.engine.loop import CUDA_PAD_MULTIPLE, Loop  # noqa: E402
from xlt.engine.model import ModelSpec, build_model  # noqa: E402
from xlt.engine.objectives import Objective, task_term  # noqa: E402
from xlt.engine.packed import PackedLoop, PackedModel  # noqa: E402
from xlt.engine.predict import eval_batches, run_batches  # noqa: E402
from xlt.engine.runtime import Checkpointer, Dist, build_optimizer, build_scheduler, resolve_precision, seed_everything, tf32  # noqa: E402
from xlt.engine.streams import Stream  # noqa: E402
from xlt.registry import get_task  # noqa: E402
from xlt.dag.throughput import SHAPES, EncoderShape, eval_flops, length_profile, mfu, peak_tflops, train_flops  # noqa: E402

WORKLOADS = {"tagging": "ner", "pair": "xnli", "qa": "qa"}  # workload -> the registry task whose head it trains
SIDES = ("ours", "hf_default", "hf_best")
# ours_graphs: ours with compile "graphs" (the whole layer stack compiled once and replayed as a
# CUDA graph per batch width); run only when --sides names it
# ours_packed: K models of ours (seeds seed..seed+K-1) trained in one step with stacked weights
# (xlt.engine.packed), one row per K of --pack; run only when --sides names it
ALL_SIDES = (*SIDES, "ours_graphs", "ours_packed")
COLUMNS = ("samples_per_s", "tokens_per_s", "mfu", "peak_mem_gib", "eval_tokens_per_s", "dev_accuracy")
# ours' evaluation, also measured in bf16 (same batches) and in bf16 with token-budget batches
EVAL_VARIANTS = ("fp32", "bf16", "bf16_budget")
PAD, CLS, SEP, FIRST_ID = 0, 1, 2, 5  # synthetic vocabulary: ids below FIRST_ID are special
ANSWER_START, ANSWER_END = 3, 4  # QA: the markers of the answer span in the context
PHASES = ("xlt/collate", "xlt/forward", "xlt/backward", "xlt/optimizer")  # xlt.engine.loop's ranges
T0 = time.perf_counter()


def log(message: str) -> None:
    """A progress line on stderr: wall-clock time and seconds since the start."""
    now = datetime.datetime.now().strftime("%H:%M:%S")
    print(f"[{now} +{time.perf_counter() - T0:.0f}s] {message}", file=sys.stderr, flush=True)


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


def two_segments(a: list[int], b: list[int], pair_segments: bool) -> dict:
    """[CLS] a [SEP] b [SEP], with segment ids where the encoder has two segment types."""
    f = {"input_ids": [CLS, *a, SEP, *b, SEP]}
    if pair_segments:
        f["token_type_ids"] = [0] * (len(a) + 2) + [1] * (len(b) + 1)
    return f


def qa_feature(body: list[int], pair_segments: bool, rng) -> dict:
    """A question (the first sixth, 4..24 tokens) and a context; the answer is the context's
    span from an ANSWER_START marker to an ANSWER_END marker (1..12 tokens apart), both
    answer positions on the markers, so that the span can be learnt from the tokens."""
    q = max(4, min(24, len(body) // 6))
    question, context = body[:q], list(body[q:]) or [FIRST_ID]
    while len(context) < 2:
        context.append(FIRST_ID)
    start = rng.randrange(len(context) - 1)
    end = min(len(context) - 1, start + 1 + rng.randrange(12))
    context[start], context[end] = ANSWER_START, ANSWER_END
    f = two_segments(question, context, pair_segments)
    offset = len(question) + 2  # [CLS] question [SEP]
    f["start_positions"], f["end_positions"] = offset + start, offset + end
    return f


def make_features(task_name: str, n: int, vocab: int, seed: int, pair_segments: bool) -> list[dict]:
    """Synthetic features with the task's length profile; tokens Zipf-distributed (as text is);
    labels a function of the tokens, so that they can be learnt."""
    import random

    task = get_task(task_name)
    rng = random.Random(seed)
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
        elif task.head == "span_qa":
            feats.append(qa_feature(body, pair_segments, rng))
        else:
            a, b = body[: max(1, k * 3 // 5)], body[max(1, k * 3 // 5) :] or [FIRST_ID]
            feats.append({**two_segments(a, b, pair_segments), "label": a[0] % task.num_labels})
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
        elif task.head == "span_qa":  # exact match of start and end
            start, end = lg[: len(f["input_ids"])].argmax(0).tolist()
            correct += int((start, end) == (f["start_positions"], f["end_positions"]))
            total += 1
        else:
            correct += int(int(lg.argmax(-1)) == f["label"])
            total += 1
    return 100.0 * correct / total


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
def ours_loop(model, task, stream, term, optimizer, scheduler, steps: int, device, ckdir: Path, compile_: str) -> Loop:
    return Loop(model=model, raw_model=model, optimizer=optimizer, scheduler=scheduler, streams={task.name: stream},
                primary=task.name, objective=Objective([term]), device=device, dist=Dist(),
                checkpointer=Checkpointer(ckdir), max_steps=steps, checkpoint_every=10**9, checkpoint_minutes=None,
                progress=False, precision=resolve_precision("auto", device), compile=compile_)


def phase_breakdown(prof, steps: int, cuda: bool, wall_us: float) -> list[str]:
    """Each phase's host time (its record_function range) and device time (the kernels that
    ops launched inside its range, on any thread: backward runs on autograd's), ms a step."""
    from torch.autograd import DeviceType

    ranges = [e for e in prof.events() if e.name in PHASES and e.device_type == DeviceType.CPU]
    host = {p: 0.0 for p in PHASES}
    device_us = {p: 0.0 for p in (*PHASES, "outside the phases")}
    for e in ranges:
        host[e.name] += e.time_range.elapsed_us()
    host["outside the phases"] = max(0.0, wall_us - sum(host.values()))
    if cuda:
        for e in prof.events():
            if e.device_type != DeviceType.CPU or e.is_async or e.name in PHASES:
                continue
            own = e.self_device_time_total
            if own > 0:
                t = e.time_range.start
                where = next((r.name for r in ranges if r.time_range.start <= t <= r.time_range.end),
                             "outside the phases")
                device_us[where] += own
    lines = [f"{'phase':<22}{'host ms/step':>14}{'device ms/step':>16}"]
    for p in (*PHASES, "outside the phases"):
        dev = fmt(device_us[p] / steps / 1e3, ".2f") if cuda else "n/a"
        lines.append(f"{p:<22}{host[p] / steps / 1e3:>14.2f}{dev:>16}")
    total_dev = sum(device_us.values())
    lines.append(f"{'step (wall, profiled)':<22}{wall_us / steps / 1e3:>14.2f}"
                 f"{fmt(total_dev / steps / 1e3 if cuda else None, '.2f'):>16}")
    return lines


def profile_ours(model, task, stream, optimizer, args, device, tmp: Path, timed_ms: float) -> str:
    """`--profile-steps` more steps of ours (the trained model, its optimizer: no first-step
    allocation) under torch.profiler: the phase breakdown and the top-15 ops."""
    from torch.profiler import ProfilerActivity, profile

    cuda = device.type == "cuda"
    n = args.profile_steps
    scheduler = build_scheduler(optimizer, n, 0.0)
    loop = ours_loop(model, task, stream, task_term(task, kind_of(task)), optimizer, scheduler, n, device,
                     tmp / "ours_profile_ck", args.compile)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with tf32(cuda), profile(activities=activities) as prof:
        sync(device)
        t0 = time.perf_counter()
        loop.run()
        sync(device)
        wall = time.perf_counter() - t0
    sort = "self_device_time_total" if cuda else "self_cpu_time_total"
    return "\n".join([
        f"{n} steps of ours after the timed run; wall {1e3 * wall / n:.2f} ms/step under the profiler "
        f"(timed run, no profiler: {timed_ms:.2f} ms/step)",
        "host = the phase's range on the CPU; device = kernels launched inside it (their busy time); "
        "'outside the phases' = the finite-loss check, the loop's bookkeeping, waiting",
        *phase_breakdown(prof, n, cuda, 1e6 * wall), "",
        f"top 15 ops by {sort}:",
        prof.key_averages().table(sort_by=sort, row_limit=15, max_name_column_width=60),
    ])


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
            marks["graphs"] = compiled_graphs()
        return inner(model_, batch, step)

    term.fn = timed
    optimizer = build_optimizer(model, args.lr, args.weight_decay, device=device)
    scheduler = build_scheduler(optimizer, args.steps, args.warmup_ratio)
    loop = ours_loop(model, task, stream, term, optimizer, scheduler, args.steps, device, tmp / "ours_ck", args.compile)
    with tf32(device.type == "cuda"):
        loop.run()
        sync(device)
        seconds = time.perf_counter() - marks["start"]
    late_graphs = compiled_graphs() - marks["graphs"]  # compiled after the clock started (0: warm-up covered all)
    drawn, epoch = [], 0  # the batches the loop drew: the stream's epochs in order, cycling
    while len(drawn) < args.steps:
        drawn.extend(stream.batches(epoch))
        epoch += 1
    timed_lengths = [n for idx in drawn[args.warmup_steps : args.steps] for n in real_lengths(train, idx)]

    eval_seconds, outs = evaluate(model, kind, dev, args, device, "fp32")
    variants = {"fp32": {"seconds": eval_seconds, "dev_accuracy": accuracy(task, dev, [o["logits"] for o in outs])}}
    for name in EVAL_VARIANTS[1:]:
        secs, outs_v = evaluate(model, kind, dev, args, device, name)
        logits = [o["logits"] for o in outs_v]
        variants[name] = {"seconds": secs, "dev_accuracy": accuracy(task, dev, logits),
                          "max_abs_logit_diff": max(float((a.float() - b["logits"]).abs().max())
                                                    for a, b in zip(logits, outs))}
    profile = None
    if args.profile_ours:
        timed_ms = 1e3 * seconds / (args.steps - args.warmup_steps)
        profile = profile_ours(model, task, stream, optimizer, args, device, tmp, timed_ms)
    return {"seconds": seconds, "lengths": timed_lengths, "eval_seconds": eval_seconds, "profile": profile,
            "dev_accuracy": accuracy(task, dev, [o["logits"] for o in outs]), "eval_variants": variants,
            "flags": {"precision": "bf16 autocast" if resolve_precision("auto", device) == "bf16" else "fp32",
                      "padding": "dynamic" + (f" to a multiple of {stream.pad_multiple}" if stream.pad_multiple > 1 else ""),
                      "sampler": "length-grouped", "optimizer": "AdamW fused" if device.type == "cuda" else "AdamW",
                      "eval": "fp32", "compile": compile_status() == "on",
                      "compile_detail": (f"{compile_status()}: "
                                         + ("the layer stack, one graph, CUDA graphs per width (torch.compile "
                                            "reduce-overhead), " if loop.compile_graphs else
                                            "each encoder layer (torch.compile, one graph, length dynamic), ")
                                         + f"{late_graphs} graph(s) compiled after the clock started"
                                         if loop.compile_on else "off")}}


def evaluate(model, kind, dev, args, device, variant: str) -> tuple[float, list]:
    """Seconds (collation included, as in Trainer.predict) and outputs of ours' evaluation:
    "fp32" (batches of --eval-batch-size, length-sorted), "bf16" (the same under bf16 autocast),
    "bf16_budget" (bf16, batches of --eval-max-tokens padded positions, length-sorted)."""
    sync(device)
    t0 = time.perf_counter()
    enc = Encoded(dev, [len(f["input_ids"]) for f in dev])
    budget = args.eval_max_tokens if variant == "bf16_budget" else None
    batches = eval_batches(enc, kind, PAD, args.eval_batch_size, max_tokens=budget,
                           pad_multiple=CUDA_PAD_MULTIPLE if device.type == "cuda" else 1)
    outs = run_batches(model, batches, len(dev), device, keys=kind.decode_keys,
                       precision="fp32" if variant == "fp32" else "bf16")
    sync(device)
    return time.perf_counter() - t0, outs


def run_packed(initial, task, train, dev, args, device, tmp: Path, k: int) -> dict:
    """K copies of the model (one initialisation), each with its own stream (seed + i) and
    dropout generator, trained in one step (xlt.engine.packed); timed from step --warmup-steps.
    Dev accuracy: model 0's, evaluated alone in fp32."""
    kind = kind_of(task)
    models = [copy.deepcopy(initial) for _ in range(k)]
    streams = [Stream(task.name, train, args.batch_size, args.seed + i, PAD, kind.pad_values, kind.scalars)
               for i in range(k)]
    packed = PackedModel(models).to(device)
    generators = None if device.type == "cuda" else [torch.Generator().manual_seed(args.seed + i) for i in range(k)]
    optimizer = build_optimizer(None, args.lr, args.weight_decay, device=device, named=packed.optimizer_params())
    scheduler = build_scheduler(optimizer, args.steps, args.warmup_ratio)
    marks = {}

    def clock(step: int) -> None:
        if step == args.warmup_steps:
            sync(device)
            marks["start"] = time.perf_counter()

    loop = PackedLoop(packed=packed, models=models, streams=streams, optimizer=optimizer, scheduler=scheduler,
                      device=device, checkpointer=Checkpointer(tmp / f"packed{k}_ck"), generators=generators,
                      max_steps=args.steps, checkpoint_every=None, checkpoint_minutes=None,
                      precision=resolve_precision("auto", device), on_step_begin=clock)
    with tf32(device.type == "cuda"):
        loop.run()
        sync(device)
        seconds = time.perf_counter() - marks["start"]
    timed_lengths = []
    for s in streams:  # the batches each model drew, as run_ours counts them
        drawn, epoch = [], 0
        while len(drawn) < args.steps:
            drawn.extend(s.batches(epoch))
            epoch += 1
        timed_lengths += [n for idx in drawn[args.warmup_steps : args.steps] for n in real_lengths(train, idx)]
    packed.unstack_into(0, models[0])
    models[0].to(device)
    eval_seconds, outs = evaluate(models[0], kind, dev, args, device, "fp32")
    return {"seconds": seconds, "lengths": timed_lengths, "eval_seconds": eval_seconds,
            "dev_accuracy": accuracy(task, dev, [o["logits"] for o in outs]), "pack": k,
            "flags": {"precision": "bf16 autocast" if resolve_precision("auto", device) == "bf16" else "fp32",
                      "padding": "dynamic, each model's batch padded to the pack's widest", "sampler": "length-grouped",
                      "optimizer": "AdamW fused (stacked)" if device.type == "cuda" else "AdamW (stacked)",
                      "eval": "fp32", "compile": False, "pack": k}}


def compiled_graphs() -> int:
    """Graphs dynamo has compiled in this process so far (every side's)."""
    import torch._dynamo

    return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])


class TrainerModel(torch.nn.Module):
    """xlt's TaskModel with the keyword interface the Trainer calls (same weights, same head)."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.kind = kind_of(model.task)

    def forward(self, input_ids, attention_mask, token_type_ids=None, label=None, labels=None, start_positions=None,
                end_positions=None, example_index=None):
        """The gold arrives under the kind's own field names (its gold_fields, the Trainer's
        label_names): label (classification), labels (tagging), start/end_positions (QA).
        `example_index` (dev features) comes back as a prediction: with group_by_length the
        Trainer predicts in a length-grouped order, not the dataset's."""
        batch = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            batch["token_type_ids"] = token_type_ids
        logits = self.model(batch)["logits"]
        given = dict(label=label, labels=labels, start_positions=start_positions, end_positions=end_positions)
        gold = {k: v for k, v in given.items() if v is not None}
        out = {"logits": logits} if example_index is None else {"logits": logits, "example_index": example_index}
        if set(gold) != set(self.kind.gold_fields):
            return out
        return {"loss": self.kind.loss({"logits": logits}, {**batch, **gold}), **out}


def trainer_collator(kind, pad_to: int | None, seen: list, pad_multiple: int = 1):
    """Dynamic padding (xlt's collate, as DataCollatorWithPadding does, widths rounded up to
    `pad_multiple` as its pad_to_multiple_of does), or every batch padded to `pad_to` (the
    examples' pad_to_max_length); records each batch's real lengths."""

    def fn(features):
        batch = collate(features, PAD, kind.pad_values, (*kind.scalars, "example_index"), pad_multiple)
        seen.append(batch["attention_mask"].sum(1).tolist())
        if pad_to:
            width = batch["input_ids"].shape[1]
            for key, value in batch.items():
                if value.dim() == 2 and width < pad_to:
                    fill = {"attention_mask": 0, "input_ids": PAD}.get(key, kind.pad_values.get(key, 0))
                    batch[key] = torch.nn.functional.pad(value, (0, pad_to - width), value=fill)
        return batch

    return fn


def run_hf(model, task, train, dev, args, device, tmp: Path, best: bool, compile_: bool | None = None) -> dict:
    from transformers import Trainer, TrainerCallback, TrainingArguments

    cuda = device.type == "cuda"
    kind = kind_of(task)
    if compile_ is None:
        compile_ = best and (cuda and args.compile == "auto" or args.compile == "on")
    marks = {}

    class Clock(TrainerCallback):
        def on_step_begin(self, targs, state, control, **kw):
            if state.global_step == args.warmup_steps:
                sync(device)
                marks["start"] = time.perf_counter()

    pad_multiple = (args.hf_pad_multiple or (CUDA_PAD_MULTIPLE if cuda else 1)) if best else 1
    flags = dict(bf16=best and cuda, tf32=best and cuda, train_sampling_strategy="group_by_length" if best else "random",
                 torch_compile=compile_, **({"optim": "adamw_torch_fused"} if best else {}))
    targs = TrainingArguments(
        output_dir=str(tmp / ("hf_best" if best else "hf_default")), per_device_train_batch_size=args.batch_size,
        per_device_eval_batch_size=args.eval_batch_size, max_steps=args.steps, learning_rate=args.lr,
        warmup_steps=args.warmup_ratio, weight_decay=args.weight_decay, lr_scheduler_type="linear",
        max_grad_norm=1.0, eval_strategy="no", save_strategy="no", logging_strategy="no", report_to=[],
        seed=args.seed, dataloader_num_workers=0, use_cpu=not cuda, disable_tqdm=True, remove_unused_columns=False,
        label_names=list(kind.gold_fields), **flags,
    )
    seen: list = []
    trainer = Trainer(model=TrainerModel(model), args=targs, train_dataset=train, callbacks=[Clock()],
                      data_collator=trainer_collator(kind, None if best else args.max_length, seen, pad_multiple))
    with tf32(bool(flags["tf32"])), contextlib.redirect_stdout(sys.stderr):
        trainer.train()
        sync(device)
        seconds = time.perf_counter() - marks["start"]
        timed_lengths = [n for lens in seen[args.warmup_steps : args.steps] for n in lens]
        seen.clear()
        indexed = [{**f, "example_index": i} for i, f in enumerate(dev)]
        sync(device)
        t0 = time.perf_counter()
        pred = trainer.predict(indexed)
        sync(device)
        eval_seconds = time.perf_counter() - t0
    logits: list = [None] * len(dev)
    for row, i in zip(*pred.predictions):  # back into the dataset's order
        logits[int(i)] = torch.as_tensor(row)
    return {"seconds": seconds, "lengths": timed_lengths, "eval_seconds": eval_seconds,
            "dev_accuracy": accuracy(task, dev, logits),
            "flags": {"precision": "bf16" if flags["bf16"] else "fp32", "padding": ("dynamic" + (f" to a multiple of {pad_multiple}" if pad_multiple > 1 else ""))
                      if best else f"max_length={args.max_length}", "sampler": flags["train_sampling_strategy"],
                      "optimizer": str(targs.optim.value if hasattr(targs.optim, "value") else targs.optim),
                      "eval": "bf16 autocast" if flags["bf16"] else "fp32", "compile": compile_}}


# ---------------------------------------------------------------- one workload
def run_side(side: str, initial, task, train, dev, args, device, tmp: Path, pack: int = 1) -> dict:
    def attempt(compiled: bool) -> dict:
        model = copy.deepcopy(initial).to(device)
        reset_memory(device)
        seed_everything(args.seed)
        if side == "ours_packed":
            return run_packed(initial, task, train, dev, args, device, tmp, pack)
        if side in ("ours", "ours_graphs"):
            mode = ("graphs" if side == "ours_graphs" else args.compile) if compiled else "off"
            return run_ours(model, task, train, dev, argparse.Namespace(**{**vars(args), "compile": mode}), device, tmp)
        return run_hf(model, task, train, dev, args, device, tmp, best=side == "hf_best", compile_=None if compiled else False)

    try:
        return attempt(True)
    except Exception as e:  # compilation "where it works" (hf_best's torch_compile, ours' layer): else without it
        if not (side not in ("hf_default", "ours_packed") and args.compile != "off" and device.type == "cuda"):
            raise
        log(f"{side}: failed while compiling ({e.__class__.__name__}: {str(e)[:200]}); measuring {side} without it")
    return attempt(False)


def out_of_time(args) -> bool:
    return args.budget_minutes is not None and time.perf_counter() - T0 > 60.0 * args.budget_minutes


def run_workload(shape_name: str, workload: str, args, device: torch.device, peak: float | None, results) -> None:
    """The three sides' rows into `results`, saved after each side; a side that fails is logged,
    recorded under errors and skipped, as is one not started within --budget-minutes."""
    if out_of_time(args):
        results.skipped += [f"{shape_name} / {workload} / {side}" for side in args.sides]
        log(f"{shape_name} / {workload}: skipped, past --budget-minutes {args.budget_minutes}")
        return
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
    rows = results.rows
    with tempfile.TemporaryDirectory() as tmp:
        runs = [(side, k) for side in args.sides for k in (args.pack if side == "ours_packed" else [1])]
        for side, pack in runs:
            where = f"{shape_name} / {workload} / {side}" + (f" K={pack}" if side == "ours_packed" else "")
            if out_of_time(args):
                results.skipped.append(where)
                log(f"{where}: skipped, past --budget-minutes {args.budget_minutes}")
                continue
            log(f"{where}: start ({args.steps} steps of batch {args.batch_size})")
            try:
                r = run_side(side, initial, task, train, dev, args, device, Path(tmp), pack)
            except Exception as e:
                results.errors.append({"shape": shape_name, "workload": workload, "side": side, "pack": pack,
                               "error": f"{e.__class__.__name__}: {str(e)[:500]}", "traceback": traceback.format_exc()})
                log(f"{where}: FAILED, going on\n{traceback.format_exc()}")
                reset_memory(device)
                results.save()
                continue
            if r.get("profile"):
                results.profiles.append(f"=== {where} ===\n{r['profile']}\n")
            samples = len(r["lengths"])
            flops = train_flops(shape, r["lengths"], head_params)
            dev_lengths = [len(f["input_ids"]) for f in dev]
            rows.append({
                "shape": shape_name, "workload": workload, "task": task.name, "side": side,
                "steps": args.steps, "timed_steps": args.steps - args.warmup_steps, "batch_size": args.batch_size,
                "samples_per_s": samples / r["seconds"], "tokens_per_s": sum(r["lengths"]) / r["seconds"],
                "mfu": mfu(flops, r["seconds"], peak), "peak_mem_gib": peak_memory(device),
                "eval_tokens_per_s": dev_tokens / r["eval_seconds"],
                "eval_mfu": mfu(eval_flops(shape, dev_lengths, head_params), r["eval_seconds"], peak),
                "dev_accuracy": r["dev_accuracy"], "flags": r["flags"], "pack": r.get("pack", 1),
                "eval_variants": {name: {**v, "tokens_per_s": dev_tokens / v["seconds"],
                                         "mfu": mfu(eval_flops(shape, dev_lengths, head_params), v["seconds"], peak)}
                                  for name, v in r.get("eval_variants", {}).items()},
            })  # fmt: skip
            log(f"{where}: done, {rows[-1]['samples_per_s']:.1f} samples/s, {rows[-1]['tokens_per_s']:.0f} tokens/s, "
                f"dev accuracy {r['dev_accuracy']:.2f}")
            results.save()


def fmt(value, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def table(rows: list[dict]) -> str:
    head = "| encoder | workload | side | samples/s | tokens/s | MFU | peak mem (GiB) | eval tokens/s | dev acc | ours ÷ side |"
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    for r in rows:
        ours = next((o for o in rows if (o["shape"], o["workload"], o["side"]) == (r["shape"], r["workload"], "ours")),
                    None)
        side = r["side"] + (f" K={r['pack']}" if r["side"] == "ours_packed" else "")
        ratio = fmt(ours and ours["tokens_per_s"] / r["tokens_per_s"], ".2f")
        lines.append(
            f"| {r['shape']} | {r['workload']} ({r['task']}) | {side} | {r['samples_per_s']:.1f} | "
            f"{r['tokens_per_s']:.0f} | {fmt(r['mfu'] and 100 * r['mfu'], '.1f')}{'%' if r['mfu'] else ''} | "
            f"{fmt(r['peak_mem_gib'], '.2f')} | {r['eval_tokens_per_s']:.0f} | {r['dev_accuracy']:.2f} | "
            f"{ratio}x |"
        )
    return "\n".join(lines)


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="tiny encoder, few steps, CPU: checks that it all runs")
    ap.add_argument("--shapes", nargs="+", choices=sorted(SHAPES), default=None)
    ap.add_argument("--workloads", nargs="+", choices=sorted(WORKLOADS), default=sorted(WORKLOADS))
    ap.add_argument("--steps", type=int, default=None, help="optimizer steps per side (default 300; --small 6)")
    ap.add_argument("--warmup-steps", type=int, default=None, help="steps before the clock starts (default steps/10)")
    ap.add_argument("--batch-size", type=int, default=None, help="default 32; --small 8")
    ap.add_argument("--eval-batch-size", type=int, default=64)
    ap.add_argument("--eval-max-tokens", type=int, default=None,
                    help="ours' bf16_budget evaluation: padded positions per batch (default 16384; --small 1024)")
    ap.add_argument("--pack", type=int, nargs="+", default=[1],
                    help="ours_packed: models per job (a row per value), e.g. --pack 1 4 8")
    ap.add_argument("--dev-examples", type=int, default=None, help="default 2000; --small 32")
    ap.add_argument("--max-length", type=int, default=128, help="hf_default pads every batch to this")
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--warmup-ratio", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--compile", choices=("auto", "on", "off"), default="auto",
                    help="torch_compile for hf_best and ours' compiled layer stack (xlt.engine.fastpath.compiling): "
                    "auto = on CUDA only")
    ap.add_argument("--sides", nargs="+", choices=ALL_SIDES, default=list(SIDES),
                    help=f"the sides to run, in this order (default: {' '.join(SIDES)})")
    ap.add_argument("--hf-pad-multiple", type=int, default=None,
                    help="hf_best pads batch widths to a multiple of this (DataCollatorWithPadding's "
                    "pad_to_multiple_of; default: ours' own, 16 on CUDA, 1 on a CPU) so that its torch_compile "
                    "sees as few shapes as ours")
    ap.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    ap.add_argument("--threads", type=int, default=2, help="CPU threads")
    ap.add_argument("--peak-tflops", type=float, default=None, help="bf16 dense peak, for a GPU not in the table")
    ap.add_argument("--json", help="write every number here (what the full-scale bill reads); rewritten after "
                    "every (shape, workload), \"complete\": true at the end")
    ap.add_argument("--profile-ours", metavar="FILE", help="profile ours after each timed run: phases and top-15 ops "
                    "into FILE (text, rewritten after every (shape, workload))")
    ap.add_argument("--profile-steps", type=int, default=10, help="steps --profile-ours profiles")
    ap.add_argument("--budget-minutes", type=float, default=None,
                    help="start no side after this many minutes (those left are listed as skipped)")
    args = ap.parse_args(argv)
    small = args.small
    args.shapes = args.shapes or (["small"] if small else ["mbert", "xlmr-large"])
    args.steps = args.steps or (6 if small else 300)
    args.batch_size = args.batch_size or (8 if small else 32)
    args.dev_examples = args.dev_examples or (32 if small else 2000)
    args.eval_max_tokens = args.eval_max_tokens or (1024 if small else 16384)
    args.warmup_steps = args.steps // 10 if args.warmup_steps is None else args.warmup_steps
    args.warmup_steps = max(1, min(args.warmup_steps, args.steps - 1))
    return args


def main(argv=None):
    args = parse_args(argv)
    quiet_libraries()
    torch.set_num_threads(args.threads)
    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available() else
                          "cpu" if args.device == "auto" else args.device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({args.threads} threads)"
    peak = args.peak_tflops or (peak_tflops(name) if device.type == "cuda" else None)
    log(f"device: {name}; torch {torch.__version__}; shapes {' '.join(args.shapes)}; workloads "
        f"{' '.join(args.workloads)}; {args.steps} steps of batch {args.batch_size} per side")
    from transformers.utils import is_accelerate_available

    if not is_accelerate_available():  # the Trainer needs it; ours does not
        log("WARNING: accelerate is not installed: the Trainer sides (hf_default, hf_best) will fail, ours will run")
    results = Results(args, name, device, peak)
    for s in args.shapes:
        for w in args.workloads:
            run_workload(s, w, args, device, peak, results)
    results.save(complete=True)
    rows, errors = results.rows, results.errors
    print(f"device: {name}; bf16 dense peak: {fmt(peak, '.0f')} TFLOP/s; {args.steps} steps of batch "
          f"{args.batch_size} per side, clock from step {args.warmup_steps}; "
          f"{datetime.date.today().isoformat()}")
    if device.type != "cuda":
        print("CPU run: these are not GPU figures (MFU and GPU memory n/a)")
    print(table(rows))
    for r in rows:
        if r.get("eval_variants"):
            print(f"  evaluation of ours, {r['shape']} / {r['workload']}: " + "; ".join(
                f"{name} {v['tokens_per_s']:.0f} tokens/s (MFU {fmt(v['mfu'] and 100 * v['mfu'], '.1f')}%), "
                f"dev acc {v['dev_accuracy']:.2f}" for name, v in r["eval_variants"].items()))
    for side in args.sides:
        flags = next((r["flags"] for r in rows if r["side"] == side), None)
        if flags:
            print(f"  {side}: " + ", ".join(f"{k} {v}" for k, v in flags.items()))
    if results.skipped:
        print(f"{len(results.skipped)} side(s) skipped (--budget-minutes): " + "; ".join(results.skipped))
    if errors:
        print(f"{len(errors)} side(s) FAILED: " + "; ".join(f"{e['shape']} / {e['workload']} / {e['side']}: "
                                                          f"{e['error'][:200]}" for e in errors))
        sys.exit(1)
    return rows


class Results:
    """What has finished, (re)written to --json and --profile-ours after every side, so that a
    run killed at any point keeps it ("complete": false until the end)."""

    def __init__(self, args, name: str, device: torch.device, peak: float | None):
        self.args, self.rows, self.errors, self.profiles, self.skipped = args, [], [], [], []
        self.meta = {"device": name, "gpu": device.type == "cuda", "peak_tflops": peak,
                     "date": datetime.date.today().isoformat()}
        self.provenance = None
        if args.json:
            from xlt.provenance import provenance

            self.provenance = provenance({k: v for k, v in vars(args).items() if k != "json"}, args.seed, [])

    def save(self, complete: bool = False) -> None:
        out = {**self.meta, "complete": complete, "columns": list(COLUMNS), "rows": self.rows, "errors": self.errors,
               "skipped": self.skipped, "provenance": self.provenance}
        for path, text in ((self.args.json, lambda: json.dumps(out, indent=2)),
                           (self.args.profile_ours, lambda: "\n".join(self.profiles))):
            if path:
                tmp = Path(f"{path}.tmp")
                tmp.parent.mkdir(parents=True, exist_ok=True)
                tmp.write_text(text())
                tmp.replace(path)  # whole or not at all, even if the run is killed while writing


if __name__ == "__main__":
    main()
