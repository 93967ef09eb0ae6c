"""underspec's Table 1: the data sizes."""

from __future__ import annotations

import pandas as pd

from xlt.paperkit import datasize
from xlt.papers.underspec.plan import SLUG


def table1(spec: dict, inputs: list[str]) -> tuple[pd.DataFrame, str, str]:
    ours, published = datasize.counts(SLUG, spec, inputs)
    if "pos" in spec["tasks"]:  # the paper's one column "POS tagging / Parsing": same treebanks
        ours = ours[ours["task"] != "parsing"]
    ours = ours[ours["split"].isin(published["split"].unique())]  # train and dev
    table = datasize.counts_vs_paper(ours, published, ["task", "lang", "split"], spec)
    notes = [n for n in [_xnli_note(ours, published, spec)] if n]
    notes.append("POS and parsing read the same treebanks; their counts are one column, as in the paper.")
    md, tex = datasize.render(table, ["lang", "split"], "task", "underspec Table 1: number of examples", spec, notes)
    return table, md, tex


def _xnli_note(ours: pd.DataFrame, published: pd.DataFrame, spec: dict) -> str | None:
    """Why the paper's XNLI training count is one above the pairs: its number from the published
    CSV, this run's from the prepared data (where both count the real corpora), none typed."""
    paper = published[(published["task"] == "xnli") & (published["split"] == "train")]["value"]
    if paper.empty:
        return None
    note = (f"XNLI: the paper prints {int(paper.iloc[0]):,} training examples per language; XNLI-MT's "
            "training TSVs have a header line, so it likely counted lines, one more than the pairs")
    counted = ours[(ours["task"] == "xnli") & (ours["split"] == "train")]["value"]
    if datasize.same_quantity(spec) and not counted.empty:
        note += f" (this run counts {', '.join(f'{int(n):,}' for n in sorted(set(counted)))} pairs)"
    return note + "."
