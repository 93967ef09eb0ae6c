#!/usr/bin/env python
"""Write results/claims.md and .csv: every paper's claims (results/claims/<paper>.csv) on one page."""

from xlt.process.cli import ArgumentParser, run


def main():
    ap = ArgumentParser(description=__doc__)
    ap.add_argument("--inputs", nargs="+", required=True, help="results/claims/<paper>.csv")
    ap.add_argument("--out-md", required=True)
    ap.add_argument("--out-csv", required=True)
    a = ap.parse_args()
    from xlt.workflow.paper_outputs import claims_page

    claims_page(a.inputs, a.out_md, a.out_csv)


run(main)
