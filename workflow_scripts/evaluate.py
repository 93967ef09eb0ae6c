#!/usr/bin/env python
"""Evaluate a fine-tuned model on one split of several languages; write metrics and predictions."""

from xlt.process.cli import ArgumentParser, json_arg, run, set_threads


def main():
    ap = ArgumentParser(description=__doc__)
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--split", required=True)
    ap.add_argument("--langs", nargs="+", required=True)
    ap.add_argument("--out", required=True, help="metrics JSON")
    ap.add_argument("--predictions", required=True, help="predictions JSON lines")
    ap.add_argument("--evaluation", type=json_arg, default=None, help="the config's evaluation block (JSON)")
    ap.add_argument("--answer-languages", type=json_arg, default=None,
                    help="QA: language -> MLQA answer language (JSON; xlt.dag.targets.answer_languages); default SQuAD v1.1")
    ap.add_argument("--threads", type=int, default=None)
    a = ap.parse_args()
    set_threads(a.threads)
    from xlt.stages.finetune import evaluate_model

    evaluate_model(a.model, a.data, a.split, a.langs, a.out, a.predictions, evaluation=a.evaluation,
                   answer_languages=a.answer_languages)


run(main)
