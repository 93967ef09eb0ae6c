"""Cost of one interpolation grid point against a plain evaluation of the same model.

Both are timed side by side in one run, on the same model and the same fixed batches:

    plain : evaluate the model (forward over every batch, accuracy-style reduction)
    grid  : Interpolator.set_1d(α) (in-place lerp into the live parameters) + the same evaluation

The runs alternate (plain, grid, grid, plain, …) so drift hits both; medians and minima are
reported, and the ratio of medians is checked against the target (exit 1 above it).
The target is grid/plain ≤ 1.05: a grid point should cost one evaluation.

    PYTHONPATH=. python benchmarks/grid_point_cost.py                # CPU default, ~1 min
    PYTHONPATH=. python benchmarks/grid_point_cost.py --device cuda --hidden 768 --layers 12 \\
        --vocab 119547 --batches 78                                   # mBERT-sized, XNLI-dev-sized
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from xlt.interpolate import Interpolator, alpha_grid_1d  # noqa: E402


class Classifier(nn.Module):
    """A BERT-shaped encoder (transformers' BertModel when installed) and a linear head."""

    def __init__(self, a: argparse.Namespace):
        super().__init__()
        try:
            from transformers import BertConfig, BertModel

            cfg = BertConfig(
                vocab_size=a.vocab,
                hidden_size=a.hidden,
                num_hidden_layers=a.layers,
                num_attention_heads=a.heads,
                intermediate_size=4 * a.hidden,
                max_position_embeddings=max(512, a.seq_len),
            )
            self.encoder = BertModel(cfg, add_pooling_layer=False)
            self.kind = "transformers.BertModel"
        except ImportError:  # plain torch stand-in with the same sizes
            self.encoder = _TorchEncoder(a)
            self.kind = "torch TransformerEncoder"
        self.head = nn.Linear(a.hidden, 3)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.encoder(input_ids=ids)
        h = h.last_hidden_state if hasattr(h, "last_hidden_state") else h
        return self.head(h[:, 0])


class _TorchEncoder(nn.Module):
    def __init__(self, a: argparse.Namespace):
        super().__init__()
        self.emb = nn.Embedding(a.vocab, a.hidden)
        layer = nn.TransformerEncoderLayer(a.hidden, a.heads, 4 * a.hidden, dropout=0.0, batch_first=True)
        self.layers = nn.TransformerEncoder(layer, a.layers, enable_nested_tensor=False)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.layers(self.emb(input_ids))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=30000)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--batches", type=int, default=8, help="size of the fixed evaluation set, in batches")
    p.add_argument("--repeats", type=int, default=5, help="timed pairs (each pair runs plain and grid twice)")
    p.add_argument("--filter", default="all", choices=["all", "encoder"])
    p.add_argument("--target", type=float, default=1.05, help="exit 1 if grid/plain exceeds this")
    p.add_argument("--verbose", action="store_true", help="print every timed run")
    a = p.parse_args()

    torch.manual_seed(0)
    dev, dtype = torch.device(a.device), getattr(torch, a.dtype)
    model = Classifier(a).to(device=dev, dtype=dtype).eval()
    init = {k: v.detach().clone() for k, v in model.state_dict().items()}

    def finetuned(seed: int) -> dict[str, torch.Tensor]:
        g = torch.Generator(device="cpu").manual_seed(seed)
        return {
            k: (v + 1e-3 * torch.randn(v.shape, generator=g).to(dev, dtype)) if v.is_floating_point() else v.clone()
            for k, v in init.items()
        }

    bi, src, tgt = finetuned(1), finetuned(2), finetuned(3)
    interp = Interpolator(model, bi, src, tgt, param_filter=model.encoder if a.filter == "encoder" else "all")
    g = torch.Generator(device="cpu").manual_seed(0)
    batches = [torch.randint(0, a.vocab, (a.batch_size, a.seq_len), generator=g).to(dev) for _ in range(a.batches)]
    labels = [torch.randint(0, 3, (a.batch_size,), generator=g).to(dev) for _ in range(a.batches)]

    def sync() -> None:
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    def evaluate() -> float:
        correct = torch.zeros((), device=dev)
        with torch.inference_mode():
            for ids, y in zip(batches, labels):
                correct += (model(ids).argmax(-1) == y).sum()
        return float(correct) / (a.batch_size * a.batches)

    def timed(fn) -> float:
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        return time.perf_counter() - t0

    alphas = alpha_grid_1d()
    k = iter(range(10**9))

    def grid_point() -> None:
        i = next(k)
        interp.set_1d(alphas[i % len(alphas)], "src" if i % 2 == 0 else "tgt")
        evaluate()

    def set_only() -> None:
        i = next(k)
        interp.set_1d(alphas[i % len(alphas)], "src")

    # Warm-up: first calls allocate and pick kernels.
    evaluate()
    evaluate()
    grid_point()
    plain_t, grid_t = [], []
    for _ in range(a.repeats):
        plain_t.append(timed(evaluate))
        grid_t.append(timed(grid_point))
        grid_t.append(timed(grid_point))
        plain_t.append(timed(evaluate))
    set_t = [timed(set_only) for _ in range(max(10, a.repeats))]
    if a.verbose:
        print("plain runs (ms):", [round(t * 1e3, 1) for t in plain_t])
        print("grid runs  (ms):", [round(t * 1e3, 1) for t in grid_t])

    n_params = sum(t.numel() for t in interp._live)
    med = statistics.median
    ratio = med(grid_t) / med(plain_t)
    print(f"model     : {model.kind} + linear head, hidden {a.hidden}, {a.layers} layers, vocab {a.vocab}, "
          f"{a.dtype} on {dev} ({torch.get_num_threads()} threads)")  # fmt: skip
    print(f"interp.   : {len(interp.names)} tensors, {n_params / 1e6:.1f} M parameters (filter {a.filter})")
    print(f"eval set  : {a.batches} batches × {a.batch_size} × {a.seq_len} tokens; {len(plain_t)} runs each")
    print(f"{'':18}   {'median':>10} {'min':>10}")
    for name, ts in (("plain eval", plain_t), ("set_1d + eval", grid_t), ("set_1d alone", set_t)):
        print(f"{name:18} : {med(ts) * 1e3:7.2f} ms {min(ts) * 1e3:7.2f} ms")
    print(f"ratio (grid/plain): {ratio:.4f} median, {min(grid_t) / min(plain_t):.4f} min  (target ≤ {a.target})")
    print(f"ratio from parts  : {(med(plain_t) + med(set_t)) / med(plain_t):.4f}  "
          "((plain + set_1d alone) / plain, medians; steadier on a busy machine)")  # fmt: skip
    sys.exit(0 if ratio <= a.target else 1)


if __name__ == "__main__":
    main()
