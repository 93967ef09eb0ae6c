#!/usr/bin/env python
"""Score every point of one interpolation grid (underspec paper) on the source and target dev sets."""

from xlt.cli import ArgumentParser, json_arg, run, set_threads


def main():
    ap = ArgumentParser(description=__doc__)
    ap.add_argument("--bi", required=True, help="θ_bi: the model trained on source + target")
    ap.add_argument("--src", required=True, help="θ_src: the model trained on the source language")
    ap.add_argument("--tgt", required=True, help="θ_tgt: the model trained on the target language")
    ap.add_argument("--data", required=True, help="the task's normalised data folder")
    ap.add_argument("--encoder", required=True, help="the encoder's config name (a column of the CSV)")
    ap.add_argument("--source", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--kind", required=True, choices=["1d", "2d"])
    ap.add_argument("--variant", required=True, choices=["all", "encoder"])
    ap.add_argument("--grid", type=json_arg, required=True, help="papers.underspec.grid (JSON)")
    ap.add_argument("--metric", required=True)
    ap.add_argument("--out", required=True, help="long-form CSV, one row per (point, dev set)")
    ap.add_argument("--provenance", required=True, help="JSON: provenance, δ geometry, timing")
    ap.add_argument("--evaluation", type=json_arg, default=None, help="the config's evaluation block (JSON)")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--kill-after-points", type=int, default=None, help="testing aid: SIGKILL itself after N points")
    a = ap.parse_args()
    set_threads(a.threads)
    from xlt.papers.underspec.grid import run_grid_job

    run_grid_job(a.bi, a.src, a.tgt, a.data, a.encoder, a.source, a.target, a.kind, a.variant, a.grid, a.metric,
                 a.out, a.provenance, kill_after_points=a.kill_after_points, evaluation=a.evaluation)


run(main)
