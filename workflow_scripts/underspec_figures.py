#!/usr/bin/env python
"""Draw the underspec paper's Figures 2-10 (PNG, PDF and the CSV behind each) from the grid CSVs."""

from xlt.cli import ArgumentParser, json_arg, run


def main():
    ap = ArgumentParser(description=__doc__)
    ap.add_argument("--spec", type=json_arg, required=True, help="the papers.underspec config block (JSON)")
    ap.add_argument("--grids", nargs="+", required=True, help="grid CSVs (each with its JSON beside it)")
    ap.add_argument("--figures", nargs="+", required=True, help="figure names, e.g. fig2 fig3")
    ap.add_argument("--out-dir", required=True)
    a = ap.parse_args()
    from xlt.underspec_report import make_figures

    make_figures(a.spec, a.grids, a.out_dir, a.figures)


run(main)
