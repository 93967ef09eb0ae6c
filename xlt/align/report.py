"""The stage's table and figures: AER per backend (`aer_table`) and the L2 histograms
(`l2_figure`: a grid of histograms, as adjust's Figures 1-2 draw them: PNG, PDF and the CSV of the plotted counts)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from xlt.align.aer import STAGES
from xlt.errors import XltError
from xlt.io import read_json, write_text

UNDEFINED = "n/a"  # a ratio of 0/0 (xlt.align.aer.ratio)
AER_COLUMNS = ("pair", "backend", "version", "stage", "precision", "recall", "aer", "links", "gold_links", "status")


def aer_table(aer_jsons: list[str | Path], configured: list[str], default: str, out_prefix: str | Path) -> pd.DataFrame:
    """One row per (pair, backend, stage of the links); configured backends that are not
    installed here get one row each saying so. Writes <prefix>.csv and <prefix>.md."""
    rows, pairs = [], []
    for path in aer_jsons:
        meta = read_json(path)
        pairs.append(meta["pair"])
        for stage in sorted(meta["stages"], key=STAGES.index):  # the JSON's keys are sorted
            s = meta["stages"][stage]
            rows.append({"pair": meta["pair"], "backend": meta["backend"]["name"], "version": meta["backend"]["version"],
                         "stage": stage, **{k: s[k] for k in ("precision", "recall", "aer", "links", "gold_links")},
                         "status": "default" if meta["backend"]["name"] == default else ""})  # fmt: skip
    present = {r["backend"] for r in rows}
    for b in configured:
        if b not in present:
            rows.append({"pair": "all", "backend": b, "stage": "-", "status": "not installed here"})
    if not rows:
        raise XltError("AER table: no backend result given and none configured")
    table = pd.DataFrame(rows, columns=list(AER_COLUMNS))
    prefix = str(out_prefix)
    write_text(f"{prefix}.csv", table.to_csv(index=False, float_format="%.6g"))
    shown = table.copy()
    scored = shown["stage"] != "-"  # a row of scores; a backend not installed has none
    for col in ("precision", "recall", "aer"):
        shown[col] = [UNDEFINED if pd.isna(v) and row else "" if pd.isna(v) else f"{100 * v:.1f}"
                      for v, row in zip(shown[col], scored, strict=True)]  # fmt: skip
    for col in ("links", "gold_links"):
        shown[col] = shown[col].map(lambda v: "" if pd.isna(v) else str(int(v)))
    md = ["# Word alignment quality against the tiny world's gold links", "",
          "Precision, recall and AER in % (Och & Ney; the world's gold links are all sure: AER = 1 − F1), pooled",
          f"over each pool's sentence pairs; {UNDEFINED}: a ratio of 0/0 (no link predicted, or none in the gold).",
          "Stages: forward / reverse links, their intersection (directional backends) or the backend's own",
          "symmetrisation (systran-align), and the final 1-to-1 links the adjustment uses.",
          f"Default backend: `{default}`.", "",
          shown.fillna("").to_markdown(index=False), ""]  # fmt: skip
    write_text(f"{prefix}.md", "\n".join(md))
    return table


def _histograms(dist: pd.DataFrame, bins: int) -> tuple[pd.DataFrame, np.ndarray]:
    """Counts per (model, pair, kind) over one shared set of bins."""
    edges = np.linspace(dist["distance"].min(), dist["distance"].max(), bins + 1)
    rows = []
    for (model, pair, kind), g in dist.groupby(["model", "pair", "kind"], sort=False):
        counts, _ = np.histogram(g["distance"], bins=edges)
        for lo, hi, c in zip(edges[:-1], edges[1:], counts, strict=True):
            rows.append({"model": model, "pair": pair, "kind": kind, "bin_low": lo, "bin_high": hi, "count": int(c),
                         "share": c / len(g), "mean": g["distance"].mean(), "n": len(g)})  # fmt: skip
    return pd.DataFrame(rows), edges


def l2_figure(dist: pd.DataFrame, pairs: list[str], bins: int, title: str, out_stem: str | Path) -> pd.DataFrame:
    """Histograms of related vs unrelated distances: rows = models, columns = language pairs."""
    # deferred: loads matplotlib only when this runs
    import matplotlib

    matplotlib.use("Agg")
    # deferred: loads matplotlib only when this runs
    import matplotlib.pyplot as plt

    from xlt.figures import save_figure  # matplotlib: only when a figure is drawn

    dist = dist[dist["pair"].isin(pairs)]
    models = list(dict.fromkeys(dist["model"]))
    hist, edges = _histograms(dist, bins)
    fig, axes = plt.subplots(len(models), len(pairs), figsize=(3.2 * len(pairs), 2.6 * len(models)),
                             squeeze=False, sharex=True)  # fmt: skip
    width = edges[1] - edges[0]
    for r, model in enumerate(models):
        for c, pair in enumerate(pairs):
            ax = axes[r][c]
            for kind, color in (("related", "tab:blue"), ("unrelated", "tab:orange")):
                h = hist[(hist.model == model) & (hist.pair == pair) & (hist.kind == kind)]
                ax.bar(h["bin_low"], h["share"], width=width, align="edge", alpha=0.55, color=color, label=kind)
            ax.set_title(f"{pair} · {model}", fontsize=9)
            if c == 0:
                ax.set_ylabel("share of word pairs")
            if r == len(models) - 1:
                ax.set_xlabel("L2 distance (last layer)")
    axes[0][0].legend(fontsize=8)
    # the title wrapped to the figure's width (~6 pt a character at 10 pt), with room above the panels
    chars = max(24, int(fig.get_figwidth() * 72 / 6))
    title = "\n".join(textwrap.fill(line, chars) for line in title.split("\n"))
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 1 - (0.24 + 0.18 * (title.count("\n") + 1)) / fig.get_figheight()))
    save_figure(fig, out_stem, hist)
    plt.close(fig)
    return hist
