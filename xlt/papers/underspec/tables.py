"""underspec's Table 1: the data sizes."""

from __future__ import annotations

import pandas as pd

from xlt.papers import datasize
from xlt.papers.underspec.plan import SLUG


def table1(spec: dict, inputs: list[str]) -> tuple[pd.DataFrame, str, str]:
    ours, published = datasize.counts(SLUG, spec, inputs)
    if "pos" in spec["tasks"]:  # the paper's one column "POS tagging / Parsing": same treebanks
        ours = ours[ours["task"] != "parsing"]
    ours = ours[ours["split"].isin(published["split"].unique())]  # train and dev
    table = datasize.counts_vs_paper(ours, published, ["task", "lang", "split"], spec)
    notes = [
        "XNLI: the paper prints 392,703 training examples per language; XNLI-MT's training TSVs "
        "hold 392,702 pairs and a header line, so it likely counted lines (ours: 392,702).",
        "POS and parsing read the same treebanks; their counts are one column, as in the paper.",
    ]
    md, tex = datasize.render(table, ["lang", "split"], "task", "underspec Table 1: number of examples", spec, notes)
    return table, md, tex
