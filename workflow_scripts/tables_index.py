#!/usr/bin/env python
"""Write results/tables/index.md: every table and figure beside its paper's caption."""

from xlt.process.cli import ArgumentParser, json_arg, run


def main():
    ap = ArgumentParser(description=__doc__)
    ap.add_argument("--items", nargs="+", required=True, help="the table and figure files to list")
    ap.add_argument("--figure-notes", type=json_arg, default={}, help="paper -> [[note, [figure ids]]] (JSON): the fidelity ledgers' notes on the figures")
    ap.add_argument("--published-only", nargs="*", default=[], help="the files of the tables with the paper's numbers only")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    from xlt.workflow.report import write_index

    write_index(a.items, a.out, a.figure_notes, a.published_only)


run(main)
