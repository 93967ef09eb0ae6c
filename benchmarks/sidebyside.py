"""What the training benchmarks share: the tiny world and encoder both sides train, runs
alternated in one process, and one table of the results.

Every side is a function `out_dir -> {"seconds", "samples", <metric>}`; `alternate` calls
each once per repeat, rotating which goes first, so that neither side always runs on the
warmer (or the busier) machine, and keeps every run. A side's time is the best of its
repeats: on a shared machine a slower run was slowed by others, never by the code.
"""

from __future__ import annotations

import contextlib
import json
import random
import sys
from pathlib import Path
from typing import Callable

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SHAPE = {"layers": 4, "hidden": 128, "heads": 4, "intermediate": 512, "max_positions": 128}


def world_texts(n_train: int, n_dev: int, n_pretrain: int) -> tuple[dict, dict[str, list[str]]]:
    """The synthetic two-language world (en, de; POS) and its pretraining sentences per language."""
    from xlt.world import pretraining_text

    world = {"seed": 13, "languages": {"en": {"order": "SVO"}, "de": {"order": "SVO", "case_suffix": True}},
             "sizes": {"train": n_train, "dev": n_dev, "test": 10}, "tasks": ["pos"]}
    return world, pretraining_text(world, n_pretrain)


def aligned_pairs(n: int, seed: int) -> list[dict]:
    """`n` EN-DE pairs of the benchmark world with at least one 1-to-1 gold link (the aligned-pairs
    benchmarks: the adjustment's and the mixup extra's)."""
    # deferred: the world and the aligner only where a benchmark reads aligned pairs
    from xlt.align.links import one_to_one
    from xlt.world import World
    from xlt.world.datasets import gold_alignment

    world = World(world_texts(10, 10, 1)[0])
    en, de = world.realiser("en"), world.realiser("de")
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        meaning = world.sampler.any_sentence(rng)
        s_en, s_de = en.sentence(meaning, rng), de.sentence(meaning, rng)
        links = one_to_one(gold_alignment(s_en, s_de))
        if links and s_en.surface_tokens != s_de.surface_tokens:
            out.append({"src": s_en.surface_tokens, "tgt": s_de.surface_tokens, "links": [list(x) for x in links]})
    return out


def build_tokenizer(root: Path, texts: list[str]) -> Path:
    from xlt.engine.recipes.mlm import train_wordpiece

    if not (root / "tok").exists():
        train_wordpiece(texts, 1000, root / "tok")
    return root / "tok"


def build_world_and_encoder(root: Path, n_train: int, n_dev: int = 300, mlm_steps: int = 150) -> tuple[Path, Path]:
    """POS data in results/data layout and a tiny BERT MLM-trained on the world's text, under
    `root` (reused when already there, so repeated benchmark runs can skip building)."""
    from xlt.engine.recipes.mlm import EncoderShape, MLMConfig, train_mlm
    from xlt.io import write_jsonl
    from xlt.stages.prepare import prepare_split
    from xlt.world import generate

    enc, data = root / "enc", root / "data"
    world, by_lang = world_texts(n_train, n_dev, 1500)
    texts = [s for lang_texts in by_lang.values() for s in lang_texts]
    if not (data / "en" / "dev.jsonl").exists():
        manifest = generate(world, root / "raw")
        for split in ("train", "dev"):
            write_jsonl(data / "en" / f"{split}.jsonl", prepare_split("pos", "en", split, root / "raw", manifest["source_cfg"]))
    if not enc.exists():
        train_mlm(texts, enc, root / "ck_enc", MLMConfig(steps=mlm_steps, batch_size=64),
                  tokenizer_dir=build_tokenizer(root, texts), shape=EncoderShape(**SHAPE), progress=False)
    return enc, data


def alternate(sides: dict[str, Callable[[Path], dict]], repeats: int, root: Path) -> dict[str, list[dict]]:
    runs: dict[str, list[dict]] = {name: [] for name in sides}
    names = list(sides)
    for r in range(repeats):
        for name in names[r % len(names):] + names[: r % len(names)]:
            runs[name].append(sides[name](root / f"{name}.{r}"))
    return runs


def report(runs: dict[str, list[dict]], ours: str, metric: str, header: str, json_path: str | None = None,
           unit: str = "samples", others: list[str] | None = None, others_label: str = "fastest HF side",
           extra: dict | None = None) -> dict:
    """Print one row per side (best-of `unit`/s, the metric of that run, ours / side) and the
    ratio against the fastest of `others` (default: the Hugging Face sides; ablations of xlt
    are rows, never the baseline); return (and optionally write, with `extra`) the numbers."""
    best = {name: min(rs, key=lambda x: x["seconds"]) for name, rs in runs.items()}
    rate = {name: b[unit] / b["seconds"] for name, b in best.items()}
    fastest = max(others or [n for n in best if n.startswith("HF")], key=rate.get)
    width = max(32, *map(len, best))
    print(header)
    print(f"{'side':{width}} {unit + '/s':>10} {'seconds':>8} {metric:>12} {'xlt/side':>9}  all runs (s)")
    for name, b in best.items():
        all_s = " ".join(f"{r['seconds']:.1f}" for r in runs[name])
        print(f"{name:{width}} {rate[name]:10.1f} {b['seconds']:8.1f} {b[metric]:12.3f} {rate[ours] / rate[name]:9.2f}  {all_s}")
    ratio = rate[ours] / rate[fastest]
    print(f"ratio (xlt / {others_label}, {fastest}): {ratio:.2f}x")
    result = {"sides": {n: {**best[n], f"{unit}_per_s": rate[n], "all_seconds": [r["seconds"] for r in runs[n]]}
                        for n in best},
              "fastest_other": fastest, "ratio": ratio, "torch_threads": torch.get_num_threads(), **(extra or {})}
    if json_path:
        Path(json_path).write_text(json.dumps(result, indent=2, default=str))
    return result


def make_parser(doc: str, batch_size: int, lr: float):
    """The options every side-by-side benchmark takes; a script adds its own."""
    import argparse

    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch-size", type=int, default=batch_size)
    ap.add_argument("--lr", type=float, default=lr)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch intra-op threads, both sides (see benchmarks/README.md for why 1 by default)")
    ap.add_argument("--repeats", type=int, default=3, help="runs per side, alternated; the fastest counts")
    ap.add_argument("--ablations", action="store_true", help="also run xlt with each speed feature turned off")
    ap.add_argument("--precision", choices=("auto", "fp32", "bf16"), default="auto",
                    help="xlt's training precision; the Trainer's sides follow it: fp32 runs them in fp32 only "
                         "(like for like), bf16 adds a bf16 Trainer side, auto adds it where xlt's auto means bf16")
    ap.add_argument("--workdir", help="build the world and encoder here and reuse them (default: a temp dir)")
    ap.add_argument("--json", help="also write the numbers here")
    return ap


def hf_sides(device: torch.device, precision: str = "auto") -> dict[str, tuple[str, bool]]:
    """The Trainer's sides, {name: (sampling strategy, bf16)}: its example defaults (fp32,
    random batches), its best flags as the papers' era knew them (group_by_length), and where
    xlt trains in bf16 (`precision` "bf16", or "auto" where the device multiplies bf16 in
    hardware) the same with `bf16=True`, so that xlt's bf16 meets a bf16 Trainer."""
    from xlt.engine.runtime import resolve_precision

    sides = {"HF Trainer (defaults)": ("random", False), "HF Trainer (group_by_length)": ("group_by_length", False)}
    if resolve_precision(precision, device) == "bf16":
        sides["HF Trainer (group_by_length, bf16)"] = ("group_by_length", True)
    return sides


def hf_trainer_args(args, out: Path, sampling: str, bf16: bool = False, **schedule):
    """The Trainer's arguments both benchmarks share: no evaluation, saving or logging inside
    the timed run, the given sampling strategy and precision."""
    from transformers import TrainingArguments

    cuda = torch.cuda.is_available() and not getattr(args, "cpu", False)
    return TrainingArguments(
        output_dir=str(out), per_device_train_batch_size=args.batch_size, learning_rate=args.lr,
        lr_scheduler_type="linear", max_grad_norm=1.0, eval_strategy="no", save_strategy="no",
        logging_strategy="no", report_to=[], seed=args.seed, dataloader_num_workers=0, use_cpu=not cuda,
        disable_tqdm=True, bf16=bf16, train_sampling_strategy=sampling, **schedule)


@contextlib.contextmanager
def per_tensor_adamw(recipe_module):
    """Ablation: the recipe's optimizer as it was before the fused kernel on CPU (AdamW's
    per-tensor loop), same groups and hyperparameters."""
    original = recipe_module.build_optimizer

    def build(*a, **kw):
        fused = original(*a, **kw)
        groups = [{"params": g["params"], "weight_decay": g["weight_decay"]} for g in fused.param_groups]
        d = fused.defaults
        return torch.optim.AdamW(groups, lr=d["lr"], betas=d["betas"], eps=d["eps"], foreach=False)

    recipe_module.build_optimizer = build
    try:
        yield
    finally:
        recipe_module.build_optimizer = original


@contextlib.contextmanager
def without_lean_forward(keep_mask_dropout: bool = False):
    """Ablation: training steps through the Hugging Face forward (xlt.engine.fastpath off),
    with native dropout unless `keep_mask_dropout` (then only the lean forward is off)."""
    import torch.nn.functional as F

    from xlt.engine import fastpath

    saved = fastpath.lean_supported, fastpath.dropout
    fastpath.lean_supported = lambda encoder: False
    if not keep_mask_dropout:
        fastpath.dropout = lambda x, p, training: F.dropout(x, p, training)
    try:
        yield
    finally:
        fastpath.lean_supported, fastpath.dropout = saved


@contextlib.contextmanager
def aten_linears():
    """Ablation: the lean forward's fp32 linears through aten (`F.linear`: MKL's sgemm on a
    CPU) instead of oneDNN."""
    import torch.nn.functional as F

    from xlt.engine import fastpath

    saved = fastpath.linear
    fastpath.linear = F.linear
    try:
        yield
    finally:
        fastpath.linear = saved


@contextlib.contextmanager
def softmax_as_it_comes():
    """Ablation: the lean forward's attention softmax in the scores' own dtype (bf16 under
    autocast) over unpadded rows, as SDPA's CPU maths does it."""
    from xlt.engine import fastpath

    saved = fastpath.attention_weights

    def plain(scores, scale, bias):
        scores = scores * scale
        return (scores if bias is None else scores + bias.to(scores.dtype)).softmax(-1)

    fastpath.attention_weights = plain
    try:
        yield
    finally:
        fastpath.attention_weights = saved
