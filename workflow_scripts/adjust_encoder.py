#!/usr/bin/env python
"""Adjust an encoder across languages on a sample of aligned sentence pairs (the adjust paper,
Cao et al. 2020); save it in HF format with its provenance."""

from xlt.cli import ArgumentParser, json_arg, run, set_threads


def main():
    ap = ArgumentParser(description=__doc__)
    ap.add_argument("--encoder", required=True, help="Hub id or local directory")
    ap.add_argument("--revision", default=None)
    ap.add_argument("--pairs", nargs="+", required=True, help="aligned pairs, JSON lines (the alignment stage's samples)")
    ap.add_argument("--adjust", type=json_arg, required=True, help="the AdjustConfig (JSON; xlt.targets.adjust_config)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--checkpoint-dir", required=True)
    ap.add_argument("--threads", type=int, default=None)
    a = ap.parse_args()
    set_threads(a.threads)
    from xlt.papers.adjust.recipe import AdjustConfig, adjust_encoder

    cfg = AdjustConfig.from_dict({**a.adjust, "progress": True}, where="--adjust")
    adjust_encoder(cfg, a.encoder, a.pairs, a.out, a.checkpoint_dir, revision=a.revision,
                   resolved_config={"adjust": cfg.to_dict(), "encoder": a.encoder, "revision": a.revision, "pairs": a.pairs})


run(main)
