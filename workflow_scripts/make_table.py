#!/usr/bin/env python
"""Render one paper table: the published value, ours (mean ± std over seeds), the difference."""

from xlt.process.cli import ArgumentParser, json_arg, run


def main():
    ap = ArgumentParser(description=__doc__)
    ap.add_argument("--paper", required=True)
    ap.add_argument("--table", required=True)
    ap.add_argument("--spec", type=json_arg, required=True, help="what the table's builder reads (JSON)")
    ap.add_argument("--inputs", nargs="*", default=[], help="the evaluation files the table reads (none: a table of a task the config does not run)")
    ap.add_argument("--ledger-notes", type=json_arg, default=[], help="the fidelity ledger's notes on this table (JSON list)")
    ap.add_argument("--out-prefix", required=True, help="writes <prefix>.csv, .md, .tex")
    a = ap.parse_args()
    from xlt.workflow.paper_outputs import make_table

    make_table(a.paper, a.table, a.spec, a.inputs, a.out_prefix, a.ledger_notes)


run(main)
