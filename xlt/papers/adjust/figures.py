"""adjust's Figures 1-2: L2 distances of related vs unrelated word pairs, per model (matplotlib
only when a figure is drawn)."""

from __future__ import annotations

import re

from xlt.errors import XltError
from xlt.papers.adjust.plan import ROW_KINDS
from xlt.papers.adjust.tables import LABELS
import pandas as pd

ROW_LABELS = {"original": "original", "adjusted": "adjusted", "finetuned": "fine-tuned",
              "adjusted_finetuned": "adjusted + fine-tuned", "adjusted_continual": "adjusted + continual"}


def _row_of(path: str) -> tuple[str, str]:
    """(pair, row) of a distances file: the alignment stage's (original) or adjust_l2's."""
    if m := re.search(r"/adjust/l2/en-([a-z]+)/([a-z_.]+)\.seed\d+\.csv$", path):
        return m[1], m[2]
    if m := re.search(r"/align/en-([a-z]+)/[^/]+/l2/[^/]+\.csv$", path):
        return m[1], "original"
    raise XltError(f"{path}: not a distances file of adjust's figures")


def _row_label(row: str) -> str:
    if "." not in row:
        return ROW_LABELS[row]
    task, kind = row.split(".")
    return f"{LABELS.get(task, task)} {ROW_LABELS[kind]}"


def draw(spec: dict, inputs: list[str], out_dir: str, figure: str) -> None:

    from xlt.align.report import l2_figure  # matplotlib: only when a figure is drawn

    frames = []
    for path in inputs:
        pair, row = _row_of(path)
        d = pd.read_csv(path)
        if d.empty:
            raise XltError(f"{path}: no word-pair distances")
        frames.append(d.assign(pair=pair, row=row))
    dist = pd.concat(frames, ignore_index=True)
    if figure == "fig1":
        keep = ["original", "adjusted"] + [f"{spec['fig1_task']}.{k}" for k in ROW_KINDS]
        pairs = [spec["fig1_pair"]]
        title = f"L2 distances, related vs unrelated\nword pairs (en-{spec['fig1_pair']}), {LABELS.get(spec['fig1_task'])}"
    else:
        keep = ["original", "adjusted"] + [f"{t}.{k}" for t in spec["tasks"] for k in ROW_KINDS]
        pairs = spec["targets"]
        title = "L2 distances of related vs unrelated word pairs, every pair and model"
    dist = dist[dist["row"].isin(keep)].copy()
    dist["row"] = pd.Categorical(dist["row"], keep, ordered=True)
    dist = dist.sort_values("row", kind="stable")
    dist["model"] = dist["row"].map(_row_label).astype(str)
    l2_figure(dist.drop(columns="row"), pairs, spec["bins"], title, f"{out_dir}/{figure}")
