#!/usr/bin/env python
"""Read one task's raw files (real formats) into the normalised form, every language and split."""

from xlt.process.cli import ArgumentParser, json_arg, run


def main():
    ap = ArgumentParser(description=__doc__)
    ap.add_argument("--task", required=True)
    ap.add_argument("--langs", nargs="+", required=True)
    ap.add_argument("--raw-root", required=True)
    ap.add_argument("--data", type=json_arg, required=True, help="the config's data block (JSON)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    from xlt.stages.prepare import prepare_task

    prepare_task(a.task, a.langs, a.raw_root, a.data, a.out)


run(main)
