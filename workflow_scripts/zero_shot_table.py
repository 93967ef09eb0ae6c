#!/usr/bin/env python
"""Render the zero_shot table: per language of a set, mean ± std over seeds of every metric."""

from xlt.process.cli import ArgumentParser, json_arg, run


def main():
    ap = ArgumentParser(description=__doc__)
    ap.add_argument("--spec", type=json_arg, required=True, help="encoder, task, language set, recipe, seeds (JSON)")
    ap.add_argument("--inputs", nargs="+", required=True, help="every seed's evaluation file")
    ap.add_argument("--out-prefix", required=True, help="writes <prefix>.csv, .md, .tex")
    a = ap.parse_args()
    from xlt.zeroshot import make_table

    make_table(a.spec, a.inputs, a.out_prefix)


run(main)
