#!/usr/bin/env python
"""dlfa Table VI: cosine similarity of EN and the other languages' parallel XNLI test sentences, per model."""

from xlt.cli import ArgumentParser, json_arg, run, set_threads


def main():
    ap = ArgumentParser(description=__doc__)
    ap.add_argument("--models", type=json_arg, required=True, help='JSON {"<task>:<setting>": model directory}')
    ap.add_argument("--data", required=True, help="the normalised XNLI folder (parallel test sets)")
    ap.add_argument("--langs", nargs="+", required=True)
    ap.add_argument("--source", required=True, help="the language the others are compared with")
    ap.add_argument("--sentences", type=int, required=True)
    ap.add_argument("--sample-seed", type=int, required=True, help="seed of the draw of test rows")
    ap.add_argument("--seed", type=int, required=True, help="the models' training seed (a column of the CSV)")
    ap.add_argument("--max-length", type=int, required=True)
    ap.add_argument("--out", required=True, help="CSV: task, model, lang, seed, value")
    ap.add_argument("--provenance", required=True)
    ap.add_argument("--threads", type=int, default=None)
    a = ap.parse_args()
    set_threads(a.threads)
    from xlt.papers.dlfa.similarity import run_similarity_job

    run_similarity_job(a.models, a.data, a.langs, a.source, a.sentences, a.sample_seed, a.seed, a.max_length,
                       a.out, a.provenance)


run(main)
