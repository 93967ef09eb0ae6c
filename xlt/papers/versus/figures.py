"""versus's figure: the gain of each row over the zero-shot baseline (the target-language average),
with its paired 95 % interval, one panel per task, from the methods table's CSV. No matplotlib at
import time (the plugin is imported when the DAG is built)."""

from __future__ import annotations

import pandas as pd

from xlt.paperkit.base import Figure
from xlt.papers.versus.plan import BASELINE
from xlt.tables import TASK_LABELS

FIGURES = (
    Figure("fig1", "Gain over the zero-shot baseline of each method alone and each combination (the mean over "
           "the target languages, paired by seed), with its 95 % interval, one panel per task; a row without a "
           "result is left out (the methods table says why)."),
)


def gains(table: pd.DataFrame, spec: dict) -> pd.DataFrame:
    """The numbers plotted: per task and row, Δ vs the baseline and its interval."""
    avg = table[(table["lang"] == "avg") & (table["row"] != BASELINE) & table["delta"].notna()]
    out = avg[["task", "row", "delta", "ci_low", "ci_high", "n_seeds"]].copy()
    out.insert(2, "label", out["row"].map(spec["labels"]))
    return out.reset_index(drop=True)


def draw(spec: dict, inputs: list[str], out_dir: str, figure: str) -> None:
    # deferred: loads matplotlib only when this runs (the plugin is imported when the DAG is built)
    import matplotlib
    import matplotlib.pyplot as plt

    from xlt.figures import save_figure

    matplotlib.use("Agg")

    data = gains(pd.read_csv(inputs[0], dtype={"per_seed": str}), spec)
    tasks = [t for t in spec["tasks"] if t in set(data["task"])] or list(spec["tasks"])
    rows = [r for r in spec["rows"] if r != BASELINE]
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.2 * len(tasks) + 2.5, 0.45 * len(rows) + 1.6), sharey=True,
                             squeeze=False)
    for ax, task in zip(axes[0], tasks):
        d = data[data["task"] == task].set_index("row")
        for y, row in enumerate(rows):
            if row not in d.index:  # its reason, short, where its point would be (the table has it in full)
                why = (spec.get("why_not", {}).get(row, {}).get(task) or "no result").split(":")[0]
                ax.text(0.02, y, why, transform=ax.get_yaxis_transform(), va="center", fontsize=7, color="gray")
                continue
            r = d.loc[row]
            lo = r["delta"] - r["ci_low"] if pd.notna(r["ci_low"]) else 0
            hi = r["ci_high"] - r["delta"] if pd.notna(r["ci_high"]) else 0
            ax.errorbar(r["delta"], y, xerr=[[lo], [hi]], fmt="o", color="tab:blue", capsize=3)
        ax.axvline(0, color="gray", lw=0.8, ls="--")
        ax.set_title(TASK_LABELS.get(task, task))
        ax.set_xlabel("Δ vs baseline (points)")
    axes[0][0].set_yticks(range(len(rows)), [spec["labels"][r] for r in rows], fontsize=8)
    axes[0][0].set_ylim(len(rows) - 0.5, -0.5)  # the first row on top, half a row of margin at each end
    fig.tight_layout()
    save_figure(fig, f"{out_dir}/{figure}", data)
    plt.close(fig)
