"""crossmulti's figures: 1 (attention-head updates) and A1–A4 (per-head probing), from the CSVs its
analysis rules write."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from xlt.errors import XltError
from xlt.papers.crossmulti.tables import over_vanilla, read_csvs, scaled_k, top_heads
from xlt.tables import TASK_LABELS


def normalise_updates(updates: pd.DataFrame) -> pd.DataFrame:
    """Each model's (task, setting, seed) head updates as shares of its total (they sum to 1):
    the paper's "normalized absolute attention-head updates" read per model, so a multi model
    trained on 4× the steps of its cross twin is compared by where its update goes, not by how
    much larger all of it is; multi − cross then sums to 0 and has both signs."""
    out = updates.copy()
    out["update"] = out["update"] / out.groupby(["task", "setting", "seed"])["update"].transform("sum")
    return out


def head_update_maps(updates: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, tuple[float, float, float]]]:
    """Seed-mean maps of the normalised updates (`normalise_updates`; task, layer, head: cross,
    multi, diff) and, per task, Spearman ρ between the cross and multi maps: its mean and std
    over seeds, and the largest of the seeds' two-sided p (scipy.stats.spearmanr): every seed's
    ρ has a p at most that."""
    from scipy.stats import spearmanr  # scipy: only in the figure job, not when the plan is read

    updates = normalise_updates(updates)
    mean = updates.groupby(["task", "setting", "layer", "head"])["update"].mean().unstack("setting").reset_index()
    mean["diff"] = mean["multi"] - mean["cross"]
    rhos = {}
    for task, g in updates.groupby("task"):
        per_seed, ps = [], []
        for _, s in g.groupby("seed"):
            w = s.pivot_table(index=["layer", "head"], columns="setting", values="update")
            rho, p = spearmanr(w["cross"], w["multi"])
            per_seed.append(rho)
            ps.append(p)
        rhos[task] = (float(np.mean(per_seed)), float(np.std(per_seed, ddof=1)) if len(per_seed) > 1 else math.nan,
                      float(np.max(ps)))
    return mean, rhos


def p_text(p: float) -> str:
    """A p-value as a figure prints it: p=0.034, p=2.1e-05."""
    return "p=–" if math.isnan(p) else f"p={p:.2g}"


def _save(fig, out_dir: str, figure: str, data: pd.DataFrame) -> None:
    """<out_dir>/<figure>.{png,pdf,csv}, the layout checked (xlt.figures.save_figure)."""
    # deferred: loads matplotlib only when this runs
    from xlt.figures import save_figure

    Path(out_dir).mkdir(parents=True, exist_ok=True)
    save_figure(fig, Path(out_dir) / figure, data)


def _grid(values: pd.DataFrame, col: str) -> np.ndarray:
    return values.pivot(index="layer", columns="head", values=col).to_numpy()


def _head_map(ax, values: pd.DataFrame) -> None:
    """A layer × head map's axes: a tick at every layer and head, numbered as in the data
    (imshow's own locator ticks cell edges, −0.5 … 3.5)."""
    layers, heads = sorted(values["layer"].unique()), sorted(values["head"].unique())
    ax.set_yticks(range(len(layers)), [str(int(x)) for x in layers])
    ax.set_xticks(range(len(heads)), [str(int(x)) for x in heads])
    ax.set_xlabel("head")
    ax.set_ylabel("layer")


# what each column of Figure 1 colours (its colorbar's label)
UPDATE_LABELS = {"cross": "share of the update", "multi": "share of the update", "diff": "multi − cross"}


def figure1(spec: dict, updates: pd.DataFrame, out_dir: str) -> None:
    # deferred: loads matplotlib only when this runs
    from matplotlib.figure import Figure

    # deferred: loads matplotlib only when this runs
    from xlt.figures import fit_suptitle

    maps, rhos = head_update_maps(updates)
    tasks = [t for t in spec["tasks"] if t in set(maps["task"].str.partition(".")[0])]
    maps["task"] = maps["task"].str.partition(".")[0]
    fig = Figure(figsize=(12, 3.2 * len(tasks)), layout="constrained")
    fig.get_layout_engine().set(wspace=0.08)  # room between a colorbar's ticks and the next panel's axis label
    axes = fig.subplots(len(tasks), 3, squeeze=False)
    for r, task in enumerate(tasks):
        m = maps[maps["task"] == task]
        rho = next(v for k, v in rhos.items() if k.partition(".")[0] == task)
        for c, (col, cmap) in enumerate((("cross", "viridis"), ("multi", "viridis"), ("diff", "coolwarm_r"))):
            grid = _grid(m, col)
            ax = axes[r, c]
            if col == "diff":
                lim = float(np.abs(grid).max()) or 1.0
                im = ax.imshow(grid, cmap=cmap, vmin=-lim, vmax=lim)
            else:
                im = ax.imshow(grid, cmap=cmap)
            name = TASK_LABELS.get(task, task)
            ax.set_title(f"{name}-{col}" + (f" (ρ={rho[0]:.2f}, {p_text(rho[2])})" if col == "diff" else ""), fontsize=9)
            _head_map(ax, m)
            # no offset text ("1e−5") over the colorbar
            fig.colorbar(im, ax=ax, fraction=0.046, format="%.2g", label=UPDATE_LABELS[col])
    fit_suptitle(fig, "Attention-head updates, each a share of its model's total; diff = multi − cross "
                 "(blue: multi updates more); "
                 "ρ: Spearman, cross vs multi, seed mean; p: the largest over seeds")
    short = {k.partition(".")[0]: v for k, v in rhos.items()}
    maps["rho_cross_multi"] = maps["task"].map({k: v[0] for k, v in short.items()})
    maps["p_cross_multi"] = maps["task"].map({k: v[2] for k, v in short.items()})
    _save(fig, out_dir, "fig1", maps)


def figure_a(spec: dict, probes: pd.DataFrame, out_dir: str, figure: str, probe_task: str) -> None:
    # deferred: loads matplotlib only when this runs
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    # deferred: loads matplotlib only when this runs
    from xlt.figures import fit_suptitle

    heads = over_vanilla(probes)
    heads = heads[heads["probe_task"] == probe_task].copy()
    heads["task"] = heads["task"].str.partition(".")[0]
    mean = (heads.groupby(["task", "setting", "layer", "head"], sort=False)
            .agg(value=("value", "mean"), unlearned_seeds=("head_flag", "sum")).reset_index())
    n_heads = int(mean.groupby(["task", "setting"]).size().iloc[0])
    a = spec["analysis"]
    k = scaled_k(min(a["topk"]), n_heads, a["topk_of_heads"])
    models = [(t, s) for t in spec["tasks"] for s in ("cross", "multi")]
    fig = Figure(figsize=(8, 3.2 * len(spec["tasks"])), layout="constrained")  # at 7-7.5 the colorbar labels (span_f1_macro − vanilla) push "layer" to the edge
    fig.get_layout_engine().set(wspace=0.08)  # room between a colorbar's label and the next panel's axis label
    axes = fig.subplots(len(spec["tasks"]), 2, squeeze=False)
    marked = []
    for i, (task, setting) in enumerate(models):
        m = mean[(mean["task"] == task) & (mean["setting"] == setting)].sort_values(["layer", "head"]).copy()
        values = m["value"].to_numpy()
        mark = np.array([""] * len(m), dtype=object)
        mark[top_heads(values, k)], mark[top_heads(-values, k)] = "top", "bottom"
        m["mark"] = mark
        marked.append(m)
        ax = axes[i // 2, i % 2]
        grid = _grid(m, "value")
        fig.colorbar(ax.imshow(grid, cmap="Blues"), ax=ax, fraction=0.046, label=f"{spec['metric'][probe_task]} − vanilla")
        for (layer, head), mk in zip(m[["layer", "head"]].itertuples(index=False), m["mark"]):
            if mk:
                ax.add_patch(Rectangle((head - 0.5, layer - 0.5), 1, 1, fill=False, lw=2,
                                           edgecolor="green" if mk == "top" else "red"))
        for layer, head in m.loc[m["unlearned_seeds"] > 0, ["layer", "head"]].itertuples(index=False):
            ax.text(head, layer, "†", ha="center", va="center", fontsize=8)  # Table 3's rule for probes
        ax.set_title(f"{TASK_LABELS.get(task, task)}-{setting}", fontsize=9)
        _head_map(ax, m)
    fit_suptitle(fig, f"Per-head probing on {TASK_LABELS.get(probe_task, probe_task)} "
                 f"(green: top {k}, red: bottom {k}; heads tied at the cut-off unmarked; †: a probe learned nothing)")
    _save(fig, out_dir, figure, pd.concat(marked).assign(probe_task=probe_task))


FIGURE_A = {"figa1": "pos", "figa2": "ner", "figa3": "pawsx", "figa4": "marc"}


def draw_figure(spec: dict, inputs: list[str], out_dir: str, figure: str) -> None:
    updates = [p for p in inputs if "/head_updates/" in p]
    if figure == "fig1":
        figure1(spec, read_csvs(updates), out_dir)
    elif figure in FIGURE_A:
        figure_a(spec, read_csvs([p for p in inputs if p not in updates]), out_dir, figure, FIGURE_A[figure])
    else:
        raise XltError(f"unknown crossmulti figure {figure!r}; allowed: fig1, {', '.join(FIGURE_A)}")
