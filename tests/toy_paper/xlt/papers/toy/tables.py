"""The toy paper's table: the counts of its job beside the published sizes."""

from __future__ import annotations

import pandas as pd

from xlt.io import read_json
from xlt.paperkit import datasize
from xlt.paperkit.published import load_published
from xlt.papers.toy.plan import SLUG
from xlt.tables import why_notes

KEYS = ["task", "lang", "split"]


def table1(spec: dict, inputs: list[str]):
    """Examples per language of each task's test split: the paper's · ours (the count job's) · Δ,
    for the languages of papers.toy.languages."""
    counts = read_json(inputs[0])["counts"]
    ours = pd.DataFrame([r for r in counts if r["task"] in spec["tasks"] and r["lang"] in spec["tasks"][r["task"]]["languages"]],
                        columns=[*KEYS, "value"])
    table = datasize.counts_vs_paper(ours, load_published(SLUG, "table1"), KEYS, spec)
    md, tex = datasize.render(table, ["task", "split"], "lang", "toy Table 1: test examples per language", spec,
                              why_notes(table))
    return table, md, tex
