#!/usr/bin/env python
"""Adapt an encoder by MLM on a task's training text in some languages; save it in HF format."""

from xlt.process.cli import ArgumentParser, json_arg, run, set_threads


def main():
    ap = ArgumentParser(description=__doc__)
    ap.add_argument("--encoder", required=True, help="Hub id or local directory")
    ap.add_argument("--revision", default=None)
    ap.add_argument("--data", required=True, help="the task's normalised data folder")
    ap.add_argument("--task", required=True)
    ap.add_argument("--langs", nargs="+", required=True)
    ap.add_argument("--mlm", type=json_arg, required=True, help="config block adapt.mlm (JSON)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--checkpoint-dir", required=True)
    ap.add_argument("--threads", type=int, default=None)
    a = ap.parse_args()
    set_threads(a.threads)
    from xlt.stages.adapt import adapt_mlm

    adapt_mlm(a.encoder, a.revision, a.data, a.task, a.langs, a.mlm, a.out, a.checkpoint_dir)


run(main)
