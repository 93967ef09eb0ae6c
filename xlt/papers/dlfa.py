"""dlfa: Feature Aggregation in Zero-Shot Cross-Lingual Transfer Using Multilingual BERT.

Configured so far: its data side. Table I (XTREME dataset statistics).
"""

from __future__ import annotations

import pandas as pd

from xlt.papers import datasize
from xlt.papers.base import Paper
from xlt.tables import TASK_LABELS

SLUG = "dlfa"
STATS = ("train", "dev", "test", "test_min", "test_max", "langs")


def table1(spec: dict, inputs: list[str]) -> tuple[pd.DataFrame, str, str]:
    """XTREME statistics: English train / dev / test, the range of test sizes, #languages."""
    counts, published = datasize.counts(SLUG, spec, inputs)
    rows = []
    for task, group in counts.groupby("task", sort=False):
        english = group[group["lang"] == "en"].set_index("split")["value"]
        tests = group[group["split"] == "test"]["value"]
        stats = {s: english.get(s) for s in ("train", "dev", "test")}
        stats.update(test_min=tests.min(), test_max=tests.max(), langs=len(tests))
        rows += [{"task": task, "stat": k, "value": v} for k, v in stats.items() if not pd.isna(v)]
    ours = pd.DataFrame(rows, columns=["task", "stat", "value"])
    ours = ours.merge(published[["task", "stat"]], on=["task", "stat"])  # the statistics the paper prints
    table = datasize.counts_vs_paper(ours, published, ["task", "stat"])
    table = table.sort_values("stat", key=lambda c: c.map(STATS.index), kind="stable")
    notes = [
        "Train / dev / test: English; test min / max and langs: over the languages of the task "
        "that have a test set (" + "; ".join(f"{t} {len(s['languages'])}" for t, s in spec["tasks"].items()) + " configured).",
        "XNLI train: MultiNLI (data.xnli.train_source).",
    ]
    md, tex = datasize.render(table, ["task"], "stat", "dlfa Table I: XTREME dataset statistics", spec, notes,
                              labels={**TASK_LABELS, **datasize.STAT_LABELS})  # fmt: skip
    return table, md, tex


PAPER = Paper(SLUG, tables=(datasize.table(SLUG, table1),))
