"""Sentence pairs aligned per second, each installed backend, on the same bitext, side by side.

The real stage code path (`xlt.align.stage.align_pool`: the backend's run, then parsing,
intersection / 1-to-1 and writing the links) is timed per backend on one pool built by
`xlt.align.pool.build_pool` from a WikiMatrix-format file. Without --bitext the file is the
tiny world's en-<xx> bitext at --pairs sentence pairs (same generator as `make tables`).
Backends run in alternating order over --repeats rounds (drift hits all); the table gives the
median pairs/s and each backend's ratio to the default (systran_align).

    PYTHONPATH=. python benchmarks/align_throughput.py                       # 5,000 world pairs
    PYTHONPATH=. python benchmarks/align_throughput.py --pairs 20000 --threads 2
    PYTHONPATH=. python benchmarks/align_throughput.py --bitext WikiMatrix.en-es.tsv.gz --pool-size 250000

fast_align runs when a `fast_align` binary is on PATH.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from xlt.align.backends import available_backends  # noqa: E402
from xlt.align.pool import PoolConfig, build_pool  # noqa: E402
from xlt.align.stage import align_pool  # noqa: E402

DEFAULT = "systran_align"


def world_bitext(root: Path, xx: str, pairs: int) -> Path:
    import yaml

    from xlt.world import generate

    cfg = yaml.safe_load((Path(__file__).resolve().parents[1] / "presets" / "tiny.yaml").read_text())["world"]
    cfg.update(tasks=["bitext"], sizes={**cfg["sizes"], "bitext": {"train": pairs}})
    cfg.pop("ud", None)
    cfg["languages"] = {k: v for k, v in cfg["languages"].items() if k in ("en", xx)}
    generate(cfg, root)
    return root / f"wikimatrix/WikiMatrix.en-{xx}.tsv.gz"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bitext", help="a WikiMatrix .tsv.gz (default: the tiny world's)")
    ap.add_argument("--lang", default="es", help="the world's language paired with English")
    ap.add_argument("--pairs", type=int, default=5000, help="world bitext rows (~87%% pass the pool's filters)")
    ap.add_argument("--pool-size", type=int, default=250_000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--backends", nargs="+", default=None, help="default: every installed backend")
    a = ap.parse_args()
    backends = a.backends or available_backends()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        bitext = Path(a.bitext) if a.bitext else world_bitext(tmp / "world", a.lang, a.pairs)
        pool = tmp / "pool.tsv"
        n = build_pool(bitext, pool, PoolConfig(size=a.pool_size))["counts"]["kept"]
        seconds: dict[str, list[float]] = {b: [] for b in backends}
        for r in range(a.repeats):
            for b in backends if r % 2 == 0 else reversed(backends):
                out = tmp / f"{b}.{r}"
                t0 = time.perf_counter()
                align_pool(pool, b, out / "raw", out / "links.pharaoh", out / "align.json", threads=a.threads)
                seconds[b].append(time.perf_counter() - t0)
    rate = {b: n / statistics.median(s) for b, s in seconds.items()}
    print(f"pool: {n} pairs from {bitext.name}; threads {a.threads}; median of {a.repeats} runs")
    print(f"{'backend':<14} {'seconds':>9} {'pairs/s':>10} {'vs ' + DEFAULT:>18}")
    for b in backends:
        ratio = f"{rate[b] / rate[DEFAULT]:.2f}x" if DEFAULT in rate else "-"
        print(f"{b:<14} {statistics.median(seconds[b]):>9.2f} {rate[b]:>10.0f} {ratio:>18}")


if __name__ == "__main__":
    main()
