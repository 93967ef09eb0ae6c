"""Cost of one interpolation grid point against one plain evaluation of the same model.

The real grid code path (`xlt.papers.underspec.grid.GridJob`: three saved models loaded
with `xlt.engine.model.load_model`, an in-place `interpolate.Interpolator`, dev sets encoded
once as `xlt.engine.evalset.EvalSet`) is timed side by side with plain evaluations of θ_bi
on the same dev sets, in one run:

    plain        : EvalSet.score on each dev set (model at θ_bi, features encoded beforehand)
    grid point   : GridJob.set_point(next α) + the same scoring (what a grid job does per point)
    plain+encode : evaluate_records on each dev set (encode + score: what an `evaluate` job does)

Runs alternate (plain, grid, grid, plain, …) so drift hits both; the ratio of medians
grid/plain is checked against the target (exit 1 above it). The target is ≤ 1.05: a grid
point should cost one evaluation.

Without --models the benchmark makes its own three models (a BERT of the given shape with
the task's head, a WordPiece vocabulary trained on synthetic text, random weights perturbed
per endpoint) and synthetic dev sets, saved in the model format the workflow writes:

    PYTHONPATH=. python xlt/papers/underspec/benchmarks/grid_point_cost.py                      # CPU, small BERT, ~1 min
    PYTHONPATH=. python xlt/papers/underspec/benchmarks/grid_point_cost.py --device cuda --hidden 768 --layers 12 \\
        --heads 12 --vocab 119547 --examples 2490 --task xnli              # mBERT-sized, XNLI-dev-sized
    PYTHONPATH=. python xlt/papers/underspec/benchmarks/grid_point_cost.py --models BI SRC TGT --data results/data/ner \\
        --source en --target de                                            # trained models
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[4]))

from xlt.papers.underspec.interpolate import alpha_grid_1d  # noqa: E402

WORDS = [a + b for a in ("ka", "lo", "mi", "te", "so", "ba", "u", "qo", "ne", "pi") for b in ("n", "r", "l", "m", "", "s")]


def _sentence(rng: random.Random, lo: int = 6, hi: int = 24) -> list[str]:
    return [rng.choice(WORDS) for _ in range(rng.randint(lo, hi))]


def _records(task: str, n: int, rng: random.Random) -> list[dict]:
    from xlt.registry import get_task

    labels = get_task(task).labels
    out = []
    for i in range(n):
        s = _sentence(rng)
        if task == "xnli":
            out.append({"id": str(i), "text": " ".join(s), "text_pair": " ".join(_sentence(rng, 4, 12)), "label": rng.choice(labels)})
        elif task in ("ner", "pos"):
            out.append({"id": str(i), "tokens": s, get_task(task).label_field: [rng.choice(labels) for _ in s]})
        elif task == "parsing":
            out.append({"id": str(i), "tokens": s, "upos": ["NOUN"] * len(s), "head": list(range(len(s))),
                        "deprel": ["root"] + ["dep"] * (len(s) - 1)})
        else:
            raise SystemExit(f"--task {task}: choose xnli, ner, pos or parsing")
    return out


def make_models(a: argparse.Namespace, root: Path) -> tuple[list[Path], Path]:
    """Three models of one architecture (θ_bi, θ_src, θ_tgt) and dev sets for en and de."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    from xlt.engine.recipes.mlm import train_wordpiece
    from xlt.engine.train_config import TrainConfig
    from xlt.engine.model import ModelSpec, build_model, save_model
    from xlt.io import write_jsonl
    from xlt.registry import get_task

    rng = random.Random(0)
    texts = [" ".join(_sentence(rng)) for _ in range(2000)]
    train_wordpiece(texts, 400, root / "tok")
    tok = BertTokenizerFast.from_pretrained(root / "tok")
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=max(a.vocab, len(tok)), hidden_size=a.hidden, num_hidden_layers=a.layers,
                     num_attention_heads=a.heads, intermediate_size=4 * a.hidden, max_position_embeddings=512,
                     pad_token_id=tok.pad_token_id)
    task = get_task(a.task)
    model = build_model(ModelSpec(task=task.name), BertModel(cfg, add_pooling_layer=False))
    init = {k: v.detach().clone() for k, v in model.state_dict().items()}
    train_cfg = TrainConfig.from_dict({"task": a.task, "encoder": "synthetic", "max_length": a.max_length,
                                       "eval_batch_size": a.batch_size, "seed": 1}).to_dict()
    dirs = []
    for i, name in enumerate(("bi", "src", "tgt")):
        g = torch.Generator().manual_seed(i + 1)
        model.load_state_dict({k: v + 1e-3 * torch.randn(v.shape, generator=g) if v.is_floating_point() else v
                               for k, v in init.items()})
        meta = {"labels": list(task.labels) if task.labels else None, "train": {"selected_epoch": 1},
                "provenance": {"seed": 1}, "train_config": train_cfg}
        save_model(model, tok, root / name, meta)
        dirs.append(root / name)
    for lang in ("en", "de"):
        write_jsonl(root / "data" / lang / "dev.jsonl", _records(a.task, a.examples, rng))
    return dirs, root / "data"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--models", nargs=3, metavar=("BI", "SRC", "TGT"), help="saved models (default: synthetic)")
    p.add_argument("--data", help="the task's normalised data folder (with --models)")
    p.add_argument("--source", default="en")
    p.add_argument("--target", default="de")
    p.add_argument("--task", default="xnli", help="synthetic models: xnli, ner, pos or parsing")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=30000, help="embedding rows (synthetic models)")
    p.add_argument("--examples", type=int, default=300, help="synthetic dev examples per language")
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=64, help="evaluation batch size (synthetic models)")
    p.add_argument("--variant", default="all", choices=["all", "encoder"])
    p.add_argument("--repeats", type=int, default=5, help="timed pairs (each runs plain and grid twice)")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--target-ratio", type=float, default=1.05, help="exit 1 if grid/plain exceeds this")
    p.add_argument("--verbose", action="store_true", help="print every timed run")
    p.add_argument("--full-grid", action="store_true",
                   help="also time the whole 1D grid (both directions, every α) in fp32 and in bf16 evaluation")
    p.add_argument("--json", help="write the timings here")
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)

    from xlt.process.cli import quiet_libraries
    from xlt.engine.evalset import evaluate_records
    from xlt.papers.underspec.grid import GridJob

    quiet_libraries()
    dev = torch.device(a.device)
    with tempfile.TemporaryDirectory() as tmp:
        if a.models:
            if not a.data:
                raise SystemExit("--models needs --data")
            dirs, data = [Path(m) for m in a.models], Path(a.data)
        else:
            dirs, data = make_models(a, Path(tmp))
        job = GridJob.load(*dirs, variant=a.variant, device=dev)
        evalsets = job.eval_sets(data, {"source": a.source, "target": a.target})
        metric = job.task.metrics[0]
        cfg_dict = job.metas["bi"]["train_config"]

        def sync() -> None:
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)

        def plain() -> None:
            job.score(evalsets, metric)

        alphas = alpha_grid_1d()
        k = iter(range(10**9))

        def grid_point() -> None:
            i = next(k)
            job.set_point("src" if i % 2 == 0 else "tgt", alphas[i % len(alphas)], float("nan"), float("nan"))
            job.score(evalsets, metric)

        def plain_encode() -> None:
            from xlt.engine.train_config import TrainConfig

            cfg = TrainConfig.from_dict(cfg_dict)
            for ev in evalsets.values():
                evaluate_records(job.model, job.tokenizer, job.task, ev.records, cfg, dev)

        def set_only() -> None:
            i = next(k)
            job.set_point("src", alphas[i % len(alphas)], float("nan"), float("nan"))

        def timed(fn) -> float:
            sync()
            t0 = time.perf_counter()
            fn()
            sync()
            return time.perf_counter() - t0

        # Warm-up: first calls allocate and pick kernels.
        plain()
        grid_point()
        plain_t, grid_t = [], []
        for _ in range(a.repeats):
            job.interp.set_endpoint("bi")
            plain_t.append(timed(plain))
            grid_t.append(timed(grid_point))
            grid_t.append(timed(grid_point))
            job.interp.set_endpoint("bi")
            plain_t.append(timed(plain))
        set_t = [timed(set_only) for _ in range(max(10, a.repeats))]
        job.interp.set_endpoint("bi")
        enc_t = [timed(plain_encode) for _ in range(max(2, a.repeats // 2))]
        full = full_grids(job, evalsets, metric, timed) if a.full_grid else None

    med = statistics.median
    ratio = med(grid_t) / med(plain_t)
    n_params = sum(t.numel() for t in job.interp._live)
    enc = job.model.encoder.config
    if a.verbose:
        print("plain runs (ms):", [round(t * 1e3, 1) for t in plain_t])
        print("grid runs  (ms):", [round(t * 1e3, 1) for t in grid_t])
    print(f"model     : {'saved models' if a.models else 'synthetic'} {job.task.name}, hidden {enc.hidden_size}, "
          f"{enc.num_hidden_layers} layers, vocab {enc.vocab_size}, on {dev} ({torch.get_num_threads()} threads)")
    print(f"interp.   : {len(job.interp.names)} tensors, {n_params / 1e6:.1f} M parameters (variant {a.variant})")
    print(f"eval sets : {', '.join(f'{r} {len(ev.records)} examples' for r, ev in evalsets.items())}; "
          f"{len(plain_t)} runs each")
    print(f"{'':22}   {'median':>10} {'min':>10}")
    for name, ts in (("plain (encoded once)", plain_t), ("grid point", grid_t), ("set_point alone", set_t),
                     ("plain + encode", enc_t)):
        print(f"{name:22} : {med(ts) * 1e3:7.2f} ms {min(ts) * 1e3:7.2f} ms")
    print(f"ratio (grid/plain): {ratio:.4f} median, {min(grid_t) / min(plain_t):.4f} min  (target ≤ {a.target_ratio})")
    print(f"ratio from parts  : {(med(plain_t) + med(set_t)) / med(plain_t):.4f}  "
          "((plain + set_point alone) / plain, medians; steadier on a busy machine)")
    if full:
        for name, f in full.items():
            print(f"full 1D grid, {name:4} : {f['seconds']:.2f} s for {f['points']} points "
                  f"({f['seconds'] / f['points'] * 1e3:.1f} ms a point); max |score - fp32's| {f['max_score_diff']:.3f}")
    if a.json:
        import json

        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps({
            "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu", "torch": torch.__version__,
            "task": job.task.name, "hidden": enc.hidden_size, "layers": enc.num_hidden_layers, "vocab": enc.vocab_size,
            "examples": {r: len(ev.records) for r, ev in evalsets.items()},
            "plain_ms": med(plain_t) * 1e3, "grid_point_ms": med(grid_t) * 1e3, "set_point_ms": med(set_t) * 1e3,
            "plain_encode_ms": med(enc_t) * 1e3, "ratio": ratio, "full_grid": full}, indent=2))
    sys.exit(0 if ratio <= a.target_ratio else 1)


def full_grids(job, evalsets, metric, timed) -> dict:
    """The whole 1D grid (GridJob.run: both directions, every α, both dev sets) timed with
    fp32 and with bf16 evaluation; the largest score difference between the two."""
    from xlt.papers.underspec.grid import GridSpec, grid_points

    from xlt.papers.underspec.alpha import alpha_axis

    points = grid_points("1d", GridSpec(tuple(alpha_axis()), ()))
    out, rows = {}, {}
    for precision in ("fp32", "bf16"):
        job.precision = precision
        got = []
        seconds = timed(lambda: got.extend(job.run(points, evalsets, metric, {})))
        rows[precision] = [r["score"] for r in got]
        out[precision] = {"seconds": seconds, "points": len(points),
                          "max_score_diff": max(abs(x - y) for x, y in zip(rows[precision], rows["fp32"]))}
    job.precision = "fp32"
    return out


if __name__ == "__main__":
    main()
