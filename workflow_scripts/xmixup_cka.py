#!/usr/bin/env python
"""xmixup: linear CKA between English and each other language's mean-pooled last-layer sentence
representations of one fine-tuned model, on a parallel test set (xlt.papers.xmixup.cka); with
--pca-out, also each language's 2-D PCA coordinates of them (Figure 1)."""

from xlt.cli import ArgumentParser, run, set_threads


def main():
    ap = ArgumentParser(description=__doc__)
    ap.add_argument("--model", required=True, help="a fine-tuned model directory")
    ap.add_argument("--data", required=True, help="a normalised data folder whose split is parallel by row")
    ap.add_argument("--langs", nargs="+", required=True)
    ap.add_argument("--split", default="test")
    ap.add_argument("--source", default="en", help="the language every other is compared with")
    ap.add_argument("--max-length", type=int, default=None, help="default: the model's training max_length")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--out", required=True, help="JSON: {cka: {lang: value}, n: {lang: rows}, provenance}")
    ap.add_argument("--pca-out", default=None, help="JSON: each language's 2-D PCA coordinates (Figure 1)")
    ap.add_argument("--pca-rows", type=int, default=None, help="rows per language in the PCA (default: the first 200)")
    ap.add_argument("--threads", type=int, default=None)
    a = ap.parse_args()
    set_threads(a.threads)
    from xlt.papers.xmixup.cka import PCA_ROWS, cka_job

    cka_job(a.model, a.data, a.langs, a.split, a.out, source=a.source, max_length=a.max_length,
            batch_size=a.batch_size, pca_out=a.pca_out, pca_rows=a.pca_rows or PCA_ROWS)


run(main)
