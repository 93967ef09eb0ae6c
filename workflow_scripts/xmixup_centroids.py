#!/usr/bin/env python
"""xmixup Figure 4: one fine-tuned model's language centroids (the mean of each language's
mean-pooled last-layer sentence representations) on a test set, e.g. POS
(xlt.papers.xmixup.centroids)."""

from xlt.cli import ArgumentParser, run, set_threads


def main():
    ap = ArgumentParser(description=__doc__)
    ap.add_argument("--model", required=True, help="a fine-tuned model directory")
    ap.add_argument("--data", required=True, help="a normalised data folder (<lang>/<split>.jsonl)")
    ap.add_argument("--langs", nargs="+", required=True)
    ap.add_argument("--split", default="test")
    ap.add_argument("--source", default="en", help="the language every centroid's distance is measured to")
    ap.add_argument("--max-length", type=int, default=None, help="default: the model's training max_length")
    ap.add_argument("--max-sentences", type=int, default=None, help="the first N records per language (default: all)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--out", required=True, help="JSON: {centroids: {lang: vector}, n, radius, distance_to_source, provenance}")
    ap.add_argument("--threads", type=int, default=None)
    a = ap.parse_args()
    set_threads(a.threads)
    from xlt.papers.xmixup.centroids import centroids_job

    centroids_job(a.model, a.data, a.langs, a.split, a.out, source=a.source, max_length=a.max_length,
                  batch_size=a.batch_size, max_sentences=a.max_sentences)


run(main)
