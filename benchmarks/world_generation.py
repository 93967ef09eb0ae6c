"""How long the tiny world takes to build: the default world's records, and a small world
written to disk (the cost every workflow run and test session pays before any training).

Both are timed in CPU seconds of this process (a shared machine slows wall time, not CPU
time) and in wall seconds, fastest of --repeats. It replaces the two wall-clock assertions
that tests/world/test_world.py used to make: speed is reported here, not asserted in tests.

    PYTHONPATH=. python benchmarks/world_generation.py
    PYTHONPATH=. python benchmarks/world_generation.py --repeats 5 --json world.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from xlt.world import World, generate  # noqa: E402
from xlt.world.schema import default_config  # noqa: E402

SMALL = {"train": 40, "dev": 12, "test": 12, "bitext": {"train": 40}}


def timed(fn) -> tuple[float, float]:
    c0, w0 = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - c0, time.perf_counter() - w0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args()
    cases = {
        "default world, records in memory": lambda tmp: World(default_config()).units(),
        "small world, written to disk": lambda tmp: generate(default_config(seed=5, sizes=SMALL), tmp),
    }
    best: dict[str, tuple[float, float]] = {}
    for r in range(a.repeats):
        for name, fn in cases.items() if r % 2 == 0 else reversed(cases.items()):
            with tempfile.TemporaryDirectory() as tmp:
                cpu, wall = timed(lambda fn=fn, tmp=tmp: fn(Path(tmp)))
            best[name] = min(best.get(name, (cpu, wall)), (cpu, wall))
    print(f"fastest of {a.repeats} (CPU s, wall s)")
    for name, (cpu, wall) in best.items():
        print(f"{name:<36} {cpu:>7.2f} {wall:>7.2f}")
    if a.json:
        Path(a.json).write_text(json.dumps({k: {"cpu_s": c, "wall_s": w} for k, (c, w) in best.items()}, indent=1))


if __name__ == "__main__":
    main()
