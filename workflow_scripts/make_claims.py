#!/usr/bin/env python
"""Decide one paper's claims on its table and figure CSVs: <prefix>.csv and .md (xlt.claims)."""

from xlt.process.cli import ArgumentParser, run


def main():
    ap = ArgumentParser(description=__doc__)
    ap.add_argument("--paper", required=True)
    ap.add_argument("--reflects", required=True, help="the data and encoder the verdicts are about")
    ap.add_argument("--inputs", nargs="*", default=[], help="results/{tables,figures}/<paper>/<id>.csv the claims read")
    ap.add_argument("--out-prefix", required=True, help="writes <prefix>.csv, .md")
    a = ap.parse_args()
    from xlt.workflow.paper_outputs import make_claims

    make_claims(a.paper, a.reflects, a.inputs, a.out_prefix)


run(main)
