#!/usr/bin/env python
"""Draw one paper figure: <out-dir>/<figure>.png, .pdf and .csv (the numbers plotted)."""

from xlt.process.cli import ArgumentParser, json_arg, run


def main():
    ap = ArgumentParser(description=__doc__)
    ap.add_argument("--paper", required=True)
    ap.add_argument("--figure", required=True, help="e.g. fig2")
    ap.add_argument("--spec", type=json_arg, required=True, help="the paper's config block (JSON)")
    ap.add_argument("--inputs", nargs="+", required=True, help="what the paper's figures read, e.g. grid CSVs")
    ap.add_argument("--out-dir", required=True)
    a = ap.parse_args()
    from xlt.workflow.paper_outputs import draw_figure

    draw_figure(a.paper, a.figure, a.spec, a.inputs, a.out_dir)


run(main)
