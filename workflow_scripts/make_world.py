#!/usr/bin/env python
"""Generate the synthetic world's datasets, in their real sources' formats, under a raw root."""

from xlt.process.cli import ArgumentParser, json_arg, run
from xlt.io import write_json


def main():
    ap = ArgumentParser(description=__doc__)
    ap.add_argument("--world", type=json_arg, required=True, help="the config's world block (JSON)")
    ap.add_argument("--raw-root", required=True)
    ap.add_argument("--manifest", required=True)
    a = ap.parse_args()
    from xlt.world import generate

    write_json(a.manifest, generate(a.world, a.raw_root))


run(main)
