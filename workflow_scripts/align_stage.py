#!/usr/bin/env python
"""The word-alignment stage (xlt.align), one subcommand per rule of rules/align.smk."""

from xlt.process.cli import ArgumentParser, json_arg, run, set_threads


def main():
    ap = ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="step", required=True)
    p = sub.add_parser("pool", help="WikiMatrix -> filtered, tokenised pool")
    p.add_argument("--bitext", required=True)
    p.add_argument("--pool-config", type=json_arg, required=True, help="align.pool (+ threshold), JSON")
    p.add_argument("--out", required=True)
    p.add_argument("--meta", required=True)
    p = sub.add_parser("links", help="pool -> backend's raw links -> final 1-to-1 links")
    p.add_argument("--pool", required=True)
    p.add_argument("--backend", required=True)
    p.add_argument("--raw-dir", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--meta", required=True)
    p.add_argument("--threads", type=int, default=1)
    p = sub.add_parser("sample", help="N aligned pairs drawn with a seed")
    p.add_argument("--pool", required=True)
    p.add_argument("--links", required=True)
    p.add_argument("--align-meta", required=True)
    p.add_argument("--size", type=int, required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--draw", default="", help="another draw of the same seed (continual: continual learning's sample)")
    p.add_argument("--out", required=True)
    p.add_argument("--meta", required=True)
    p = sub.add_parser("subword-pool", help="pool -> the same pairs in an encoder's subwords")
    p.add_argument("--pool", required=True)
    p.add_argument("--encoder", required=True, help="a local directory or a Hub id (its tokenizer)")
    p.add_argument("--revision", default=None)
    p.add_argument("--out", required=True)
    p.add_argument("--meta", required=True)
    p = sub.add_parser("subword-sample", help="the word sample's pairs in subwords, with subword links")
    p.add_argument("--pool", required=True, help="the subword pool")
    p.add_argument("--links", required=True, help="its links")
    p.add_argument("--align-meta", required=True)
    p.add_argument("--word-sample", required=True, help="the word-level sample whose pairs are taken")
    p.add_argument("--size", type=int, required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--meta", required=True)
    p = sub.add_parser("aer", help="score a backend's links against gold links")
    p.add_argument("--pair", required=True)
    p.add_argument("--pool", required=True)
    p.add_argument("--raw-dir", required=True)
    p.add_argument("--align-meta", required=True)
    p.add_argument("--gold", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("l2", help="L2 distances of aligned vs unrelated word pairs")
    p.add_argument("--encoder", required=True, help="a local directory or a Hub id")
    p.add_argument("--revision", default=None)
    p.add_argument("--pool", required=True)
    p.add_argument("--links", required=True)
    p.add_argument("--l2", type=json_arg, required=True, help="align.l2 (L2Config fields), JSON")
    p.add_argument("--out", required=True)
    p.add_argument("--meta", required=True)
    p.add_argument("--threads", type=int, default=1)
    p = sub.add_parser("table", help="the AER table")
    p.add_argument("--aer", nargs="*", default=[])
    p.add_argument("--configured", nargs="+", required=True)
    p.add_argument("--default", required=True)
    p.add_argument("--out-prefix", required=True)
    a = ap.parse_args()

    if a.step == "pool":
        from xlt.align.pool import PoolConfig, build_pool
        from xlt.io import write_json

        write_json(a.meta, {"bitext": a.bitext, **build_pool(a.bitext, a.out, PoolConfig(**a.pool_config))})
    elif a.step == "links":
        from xlt.align.stage import align_pool

        align_pool(a.pool, a.backend, a.raw_dir, a.out, a.meta, a.threads)
    elif a.step == "sample":
        from xlt.align.sample import write_sample

        write_sample(a.pool, a.links, a.align_meta, a.size, a.seed, a.out, a.meta, a.draw)
    elif a.step == "subword-pool":
        from xlt.align.subword import build_subword_pool
        from xlt.engine.model import load_tokenizer
        from xlt.io import write_json

        meta = build_subword_pool(a.pool, load_tokenizer(a.encoder, a.revision), a.out)
        write_json(a.meta, {"pool": a.pool, "encoder": a.encoder, "revision": a.revision, **meta})
    elif a.step == "subword-sample":
        from xlt.align.subword import write_subword_sample

        write_subword_sample(a.pool, a.links, a.align_meta, a.word_sample, a.size, a.seed, a.out, a.meta)
    elif a.step == "aer":
        from xlt.align.aer import aer_job

        aer_job(a.pair, a.pool, a.raw_dir, a.align_meta, a.gold, a.out)
    elif a.step == "l2":
        set_threads(a.threads)
        from xlt.align.l2 import L2Config, l2_job

        l2_job(a.encoder, a.pool, a.links, L2Config(**a.l2), a.out, a.meta, a.revision)
    elif a.step == "table":
        from xlt.align.report import aer_table

        aer_table(a.aer, a.configured, a.default, a.out_prefix)


run(main)
