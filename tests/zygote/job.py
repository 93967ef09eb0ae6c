#!/usr/bin/env python
"""A workflow-script-shaped job for tests/zygote: trains a small model a few steps, writes its
weights and what the process saw (argv, cwd, env, threads), and optionally fails or waits."""

import os
import sys

from xlt.process.cli import ArgumentParser, run


def main():
    ap = ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--fail", default=None, help="raise an XltError with this message")
    ap.add_argument("--exit", type=int, default=None)
    ap.add_argument("--wait-for", default=None, help="write the pid to --out.pid, then wait until this file exists")
    args = ap.parse_args()
    import json

    import torch

    from xlt.engine.extras import EXTRAS
    from xlt.errors import XltError

    registered = sorted(EXTRAS)  # before anything asks: what the process found registered

    if args.wait_for:
        import signal
        import time

        def on_term(signum, frame):
            with open(args.out + ".term", "w") as f:
                f.write(str(signum))
            sys.exit(3)

        signal.signal(signal.SIGTERM, on_term)
        with open(args.out + ".pid", "w") as f:
            f.write(str(os.getpid()))
        while not os.path.exists(args.wait_for):
            time.sleep(0.05)
    if args.fail:
        raise XltError(args.fail)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 4))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    x, y = torch.randn(256, 64), torch.randint(0, 4, (256,))
    for _ in range(20):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
    torch.save(model.state_dict(), args.out)
    print("stdout line")
    print("stderr line", file=sys.stderr)
    with open(args.out + ".json", "w") as f:
        json.dump({"argv": sys.argv[1:], "cwd": os.getcwd(), "threads": torch.get_num_threads(),
                   "marker": os.environ.get("ZYGOTE_TEST_MARKER"), "pid": os.getpid(),
                   "served": os.environ.get("XLT_ZYGOTE_JOB") == "1", "extras": registered}, f)
    if args.exit is not None:
        sys.exit(args.exit)


run(main)
