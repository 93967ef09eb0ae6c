"""Aggregation and figures of the interpolation grids (underspec paper, Figs. 2-10).

Input: a long frame, one row per (model, seed, grid point, dev set):

    task, source, target, seed, direction, alpha | alpha1, alpha2, eval_lang, score
    direction: "src" (Eq. 1, θ_bi ↔ θ_src), "tgt" (Eq. 2, θ_bi ↔ θ_tgt) -> `alpha`;
               "2d" (Eq. 3) -> `alpha1`, `alpha2`; optionally "bi" for a separately recorded
               bilingual score (no alpha).
    eval_lang: "source" | "target" (which dev set).

Any further column (e.g. `encoder`, `variant`) is part of the setting: rows are only ever
normalised and averaged within one value of it, unless an `aggregate(by=...)` call leaves it
out on purpose.

Normalisation (`normalise_by_bilingual`)
----------------------------------------
The paper reports the mean and variance over three seeds and normalises "both mean and
variance of each interpolated model by the bilingual model performance", so it can
aggregate over tasks and pairs; its Fig. 2 caption says performance is "normalized by the
matching bilingual model". Read literally: the bilingual model's performance is a score, the
divisor, not a spread. So, per setting (task, source, target, eval_lang, extra columns) and
grid point, over seeds:

    norm_mean = mean_s(score) / mean_s(score_bi)
    norm_var  = var_s(score)  / mean_s(score_bi)**2     (sample variance, ddof = 1)

i.e. every score is divided by the matching bilingual model's mean score (the same scale for
mean and variance, so norm_var is the variance of the normalised scores), and α = 1 / (0, 0)
has norm_mean = 1. The bilingual score comes from the rows where the model *is* θ_bi
(1D α = 1, 2D (0, 0), or direction "bi"); all such rows of one seed are averaged.
`per_seed=True` instead divides each seed's scores by that seed's own bilingual score before
taking mean and variance (then norm_var is 0 at α = 1).

Aggregation (`aggregate`): mean over the rows of each group (the aggregated units, e.g. the
task × pair settings) with a t-distribution confidence interval: mean ± t_{n−1}·s/√n.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from scipy import stats

from xlt.errors import XltError
from xlt.figures import drop_crowded_labels, fit_suptitle, nonnegative, save_figure

__all__ = [
    "COLLAPSED",
    "GRID_COLS",
    "aggregate",
    "collapse_note",
    "normalise_by_bilingual",
    "plot_1d",
    "plot_2d",
    "plot_geometry",
    "setting_columns",
]

REQUIRED = ("task", "source", "target", "seed", "direction", "eval_lang", "score")
# An optional column, added to a normalised frame: the collapsed fine-tuning runs (their ids)
# that a row's numbers come from. Kept in every mean like the tables' † cells; a figure's CSV
# counts them per plotted row (n_collapsed) and the figure says how many there were in all.
COLLAPSED = "collapsed_runs"
GRID_COLS = ("direction", "alpha", "alpha1", "alpha2")
_NOT_SETTING = set(GRID_COLS) | {"seed", "score"}
_EPS = 1e-9


def setting_columns(df: pd.DataFrame) -> list[str]:
    """Columns that identify a setting: every column but seed, score and the grid point."""
    return [c for c in df.columns if c not in _NOT_SETTING]


def _validate(df: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise XltError(f"interpolation results: missing column(s) {', '.join(missing)}")
    df = df.copy()
    for c in ("alpha", "alpha1", "alpha2"):
        if c not in df.columns:
            df[c] = np.nan
        df[c] = df[c].astype(float)
    bad_dir = sorted(set(df["direction"]) - {"src", "tgt", "2d", "bi"})
    if bad_dir:
        raise XltError(f"interpolation results: direction must be src, tgt, 2d or bi; got {bad_dir}")
    bad_lang = sorted(set(df["eval_lang"]) - {"source", "target"})
    if bad_lang:
        raise XltError(f"interpolation results: eval_lang must be source or target; got {bad_lang}")
    is1d = df["direction"].isin(["src", "tgt"])
    is2d = df["direction"] == "2d"
    if df.loc[is1d, "alpha"].isna().any():
        raise XltError("interpolation results: a src/tgt row has no alpha")
    if df.loc[is2d, ["alpha1", "alpha2"]].isna().any().any():
        raise XltError("interpolation results: a 2d row lacks alpha1 or alpha2")
    # Keep only the coordinates that belong to each direction.
    df.loc[~is1d, "alpha"] = np.nan
    df.loc[~is2d, ["alpha1", "alpha2"]] = np.nan
    score = pd.to_numeric(df["score"], errors="coerce")
    if not np.isfinite(score).all():
        raise XltError("interpolation results: score has missing or non-finite values")
    df["score"] = score.astype(float)
    return df


def _is_bilingual(df: pd.DataFrame) -> pd.Series:
    one_d = df["direction"].isin(["src", "tgt"]) & ((df["alpha"] - 1.0).abs() < _EPS)
    two_d = (df["direction"] == "2d") & (df["alpha1"].abs() < _EPS) & (df["alpha2"].abs() < _EPS)
    return one_d | two_d | (df["direction"] == "bi")


def normalise_by_bilingual(df: pd.DataFrame, per_seed: bool = False, bi_rtol: float = 5e-3) -> pd.DataFrame:
    """Per setting and grid point: seed mean and variance, normalised by the bilingual model.

    Returns one row per (setting, direction, alpha, alpha1, alpha2) with n_seeds, mean, var,
    bi_mean, norm_mean, norm_var, norm_std. See the module docstring for the definition.

    The rows that evaluate θ_bi of one seed (α = 1 on either path, (0, 0), "bi") are the same
    model on the same dev set: if they differ by more than `bi_rtol` of their mean (a loose
    bound that lets nondeterministic GPU kernels flip a prediction or two), the grid mixes up
    models and this raises.
    """
    df = _validate(df)
    setting = setting_columns(df)
    bi_rows = df[_is_bilingual(df)]
    bi_group = bi_rows.groupby(setting + ["seed"], dropna=False)["score"]
    bi_seed = bi_group.mean().rename("bi_seed")
    spread = (bi_group.max() - bi_group.min()) > bi_rtol * bi_seed.abs()
    if spread.any():
        key = spread[spread].index[0]
        where = ", ".join(f"{c}={v}" for c, v in zip(setting + ["seed"], key))
        vals = sorted(float(v) for v in bi_rows.set_index(setting + ["seed"]).loc[[key], "score"].unique())
        raise XltError(
            f"interpolation results: the bilingual model's scores disagree for {where}: {vals}"
        )
    grid = df[df["direction"] != "bi"]
    if grid.empty:
        raise XltError("interpolation results: no grid rows")

    merged = grid.merge(bi_seed.reset_index(), on=setting + ["seed"], how="left")
    lacking = merged[merged["bi_seed"].isna()]
    if not lacking.empty:
        row = lacking.iloc[0]
        where = ", ".join(f"{c}={row[c]}" for c in setting + ["seed"])
        raise XltError(
            f"interpolation results: no bilingual score (α=1, (0,0) or direction=bi) for {where}"
        )
    if (merged["bi_seed"] == 0).any():
        raise XltError("interpolation results: a bilingual score is 0; cannot normalise by it")

    keys = setting + list(GRID_COLS)
    if per_seed:
        merged["ratio"] = merged["score"] / merged["bi_seed"]
        g = merged.groupby(keys, dropna=False, sort=True)
        out = g.agg(
            n_seeds=("seed", "nunique"),
            mean=("score", "mean"),
            var=("score", lambda s: s.var(ddof=1)),
            bi_mean=("bi_seed", "mean"),
            norm_mean=("ratio", "mean"),
            norm_var=("ratio", lambda s: s.var(ddof=1)),
        ).reset_index()
    else:
        bi_mean = bi_seed.groupby(setting, dropna=False).mean().rename("bi_mean").reset_index()
        g = grid.groupby(keys, dropna=False, sort=True)
        out = g.agg(
            n_seeds=("seed", "nunique"),
            mean=("score", "mean"),
            var=("score", lambda s: s.var(ddof=1)),
        ).reset_index()
        out = out.merge(bi_mean, on=setting, how="left")
        out["norm_mean"] = out["mean"] / out["bi_mean"]
        out["norm_var"] = out["var"] / out["bi_mean"] ** 2
    out["norm_std"] = np.sqrt(out["norm_var"])
    return out


def aggregate(
    df: pd.DataFrame,
    by: Sequence[str],
    value: str = "norm_mean",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Mean of `value` per group of `by`, over the group's rows, with a t confidence interval.

    Returns by…, mean, std (ddof 1), n, sem, ci_low, ci_high; the interval is NaN when n < 2.
    """
    by = list(by)
    missing = [c for c in by + [value] if c not in df.columns]
    if missing:
        raise XltError(f"aggregate: missing column(s) {', '.join(missing)}")
    if not 0 < confidence < 1:
        raise XltError(f"aggregate: confidence must be in (0, 1), got {confidence}")
    g = df.groupby(by, dropna=False, sort=True)[value]
    out = g.agg(mean="mean", std=lambda s: s.std(ddof=1), n="count").reset_index()
    out = _count_collapsed(out, df, by)
    out["sem"] = out["std"] / np.sqrt(out["n"])
    dof = (out["n"] - 1).where(out["n"] > 1)
    half = stats.t.ppf(0.5 + confidence / 2, dof) * out["sem"]
    out["ci_low"] = out["mean"] - half
    out["ci_high"] = out["mean"] + half
    return out


def _count_collapsed(out: pd.DataFrame, df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """`out` (one row per group of `by`) with n_collapsed: the distinct collapsed runs behind
    each group's rows (a run shared by several rows counts once)."""
    if COLLAPSED not in df.columns:
        return out
    counts = df.groupby(by, dropna=False, sort=True)[COLLAPSED].agg(lambda s: len(set().union(*s)))
    return out.merge(counts.rename("n_collapsed").reset_index(), on=by, how="left")


def collapse_note(df: pd.DataFrame) -> str | None:
    """The line a figure prints under its panels: how many collapsed runs its numbers include
    (None when there is none)."""
    n = len(set().union(*df[COLLAPSED])) if COLLAPSED in df.columns else 0
    if not n:
        return None
    return (f"† {n} collapsed fine-tuning run{'s' if n > 1 else ''} (dev predictions nearly all one class or tag, or not clearly better than the majority baseline) behind "
            "these numbers: kept, counted per point in the CSV's n_collapsed")


def _note_collapsed(fig: Figure, df: pd.DataFrame) -> None:
    if note := collapse_note(df):  # wrapped to the figure's width (~4 pt a character at 7 pt)
        fig.supxlabel(textwrap.fill(note, max(40, int(fig.get_figwidth() * 72 / 4))), fontsize=7)


# --------------------------------------------------------------------------- figures


MARKERS = "osD^v<>Pp*hX"  # with the colour cycle: a series told apart in black and white too


def _label(keys: Sequence[str], values) -> str:
    if not isinstance(values, tuple):
        values = (values,)
    return ", ".join(str(v) for v in values) if keys else ""


def _as_list(x: str | Sequence[str] | None) -> list[str]:
    if x is None:
        return []
    return [x] if isinstance(x, str) else list(x)


def _seed_band(agg: pd.DataFrame, data: pd.DataFrame, by: list[str], value: str, confidence: float) -> pd.DataFrame:
    """`agg` with the band of each point that aggregates a single setting (n = 1: no interval
    over settings) drawn over that setting's seeds instead: norm_mean ± t_{k−1}·√(norm_var / k)
    for k seeds (norm_var is the variance of the normalised scores over the seeds), where
    `value` is the normalised mean and `data` holds n_seeds and norm_var. Column `band` says
    which interval each point has: settings, seeds or none."""
    agg = agg.copy()
    agg["band"] = np.where(np.isfinite(agg["ci_low"]), "settings", "none")
    if value != "norm_mean" or not {"n_seeds", "norm_var"} <= set(data.columns):
        return agg
    seeds = data.groupby(by, dropna=False, sort=True).agg(k=("n_seeds", "first"), var=("norm_var", "first")).reset_index()
    m = agg[by].merge(seeds, on=by, how="left")
    k, var = m["k"].to_numpy(dtype=float), m["var"].to_numpy(dtype=float)
    single = (agg["n"].to_numpy() == 1) & (k > 1) & np.isfinite(var)
    if single.any():
        half = stats.t.ppf(0.5 + confidence / 2, np.where(single, k - 1, 1)) * np.sqrt(np.where(single, var / k, 0))
        mean = agg["mean"].to_numpy(dtype=float)
        agg.loc[single, "ci_low"] = (mean - half)[single]
        agg.loc[single, "ci_high"] = (mean + half)[single]
        agg.loc[single, "band"] = "seeds"
    return agg


NO_BAND = "(no CI: one setting, one seed)"


def plot_1d(
    norm: pd.DataFrame,
    out_stem: str | Path,
    *,
    value: str = "norm_mean",
    directions: Sequence[str] = ("src",),
    hue: str | Sequence[str] | None = ("eval_lang",),
    panel: str | Sequence[str] | None = None,
    confidence: float = 0.95,
    title: str | None = None,
    ylabel: str | None = None,
    nonnegative_value: bool = False,
) -> dict[str, Path]:
    """Curves of `value` vs α with confidence bands (Figs. 2, 5-9).

    `norm` is `normalise_by_bilingual` output (or any frame with direction, alpha, value).
    Rows are aggregated over everything not in panel, hue, direction, alpha: e.g. with
    hue=("encoder", "eval_lang") the units are the task × pair settings; a point of a single
    setting gets the t interval over its seeds instead (`_seed_band`; the CSV's `band` says
    which). One subplot per panel value; one line per (direction, hue) value. Writes
    <stem>.png/.pdf/.csv (the CSV holds the aggregated points plotted). `nonnegative_value` (a variance): the t interval,
    which can reach below 0, is clipped at 0, in the figure and the CSV.
    """
    hue_cols, panel_cols = _as_list(hue), _as_list(panel)
    data = norm[norm["direction"].isin(list(directions))]
    if data.empty:
        raise XltError(f"plot_1d: no rows with direction in {list(directions)}")
    line_cols = ["direction"] + hue_cols
    agg = _seed_band(aggregate(data, panel_cols + line_cols + ["alpha"], value=value, confidence=confidence),
                     data, panel_cols + line_cols + ["alpha"], value, confidence)
    if nonnegative_value:
        agg["ci_low"] = agg["ci_low"].clip(lower=0.0)
    panels = list(agg.groupby(panel_cols, sort=True)) if panel_cols else [((), agg)]
    n = len(panels)
    ncols = min(n, 4)
    nrows = math.ceil(n / ncols)
    fig = Figure(figsize=(4.2 * ncols, 3.4 * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    for ax, (pkey, pdata) in zip(axes.flat, panels):
        if nonnegative_value:
            nonnegative(ax)
        for lkey, ldata in pdata.groupby(line_cols, sort=True):
            ldata = ldata.sort_values("alpha")
            x, y = ldata["alpha"].to_numpy(), ldata["mean"].to_numpy()
            lo, hi = ldata["ci_low"].to_numpy(), ldata["ci_high"].to_numpy()
            banded = np.isfinite(lo).any()
            # the caption promises a 95% CI: a line that has none (one setting, one seed) says so
            label = _label(line_cols, lkey) + ("" if banded else f" {NO_BAND}")
            line = ax.plot(x, y, marker=".", ms=3, lw=1.2, label=label)[0]
            if banded:
                ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
        if value == "norm_mean":
            ax.axhline(1.0, color="0.5", lw=0.6, ls="--")
        for v in (0.0, 1.0):
            ax.axvline(v, color="0.8", lw=0.6, zorder=0)
        ax.set_xlabel("α  (0 = monolingual, 1 = bilingual)")
        ax.set_ylabel(ylabel or value.replace("_", " "))
        if panel_cols:
            ax.set_title(_label(panel_cols, pkey), fontsize=10)
        ax.legend(fontsize=7)
    if title:
        fit_suptitle(fig, title)
    _note_collapsed(fig, data)
    return save_figure(fig, out_stem, agg)


# what a 2D figure's colour shows (its colorbar's label)
COLORBAR_LABELS = {"norm_mean": "normalised score (÷ θ_bi's)", "norm_var": "normalised variance over seeds"}


def plot_2d(
    norm: pd.DataFrame,
    out_stem: str | Path,
    *,
    value: str = "norm_mean",
    panel: str | Sequence[str] | None = "eval_lang",
    title: str | None = None,
    levels: int = 10,
    ncols: int | None = None,
    letters: bool = False,
) -> dict[str, Path]:
    """Heat map with contours of `value` over (α1, α2) (Figs. 3, 10).

    Select one setting beforehand (e.g. one task, pair and encoder); rows left over beyond
    panel and grid point are averaged. Marks θ_bi (0,0), θ_src (1,0), θ_tgt (0,1). Writes
    <stem>.png/.pdf/.csv (the CSV holds the averaged grid). Panels fill rows of `ncols`
    (default: one row); `letters`: each panel's title starts (a), (b), … in panel order
    (a categorical panel column orders them by its categories).
    """
    panel_cols = _as_list(panel)
    data = norm[norm["direction"] == "2d"]
    if data.empty:
        raise XltError("plot_2d: no rows with direction 2d")
    by = panel_cols + ["alpha1", "alpha2"]
    agg = _count_collapsed(data.groupby(by, sort=True, observed=True)[value].agg(mean="mean", n="count").reset_index(),
                           data, by)
    panels = list(agg.groupby(panel_cols, sort=True, observed=True)) if panel_cols else [((), agg)]
    n = len(panels)
    ncols = min(n, ncols or n)
    nrows = math.ceil(n / ncols)
    fig = Figure(figsize=(4.6 * ncols, 3.9 * nrows), layout="constrained")
    axes = list(fig.subplots(nrows, ncols, squeeze=False).flat)
    for ax in axes[n:]:
        ax.set_visible(False)
    contour_labels = []
    for ax, (pkey, pdata) in zip(axes, panels):
        grid = pdata.pivot(index="alpha2", columns="alpha1", values="mean").sort_index().sort_index(axis=1)
        a1, a2, z = grid.columns.to_numpy(), grid.index.to_numpy(), grid.to_numpy()
        mesh = ax.pcolormesh(a1, a2, z, shading="nearest", cmap="viridis")
        if z.shape[0] >= 2 and z.shape[1] >= 2 and np.isfinite(z).sum() >= 4 and np.nanmax(z) > np.nanmin(z):
            cs = ax.contour(a1, a2, z, levels=levels, colors="white", linewidths=0.6)
            contour_labels.append((ax, ax.clabel(cs, fontsize=6, fmt="%.2f")))
        fig.colorbar(mesh, ax=ax, shrink=0.9, label=COLORBAR_LABELS.get(value, value.replace("_", " ")))
        for (x, y), name in (((0, 0), "bi"), ((1, 0), "src"), ((0, 1), "tgt")):
            ax.plot([x], [y], marker="o", ms=5, mfc="red", mec="white")
            ax.annotate(name, (x, y), textcoords="offset points", xytext=(4, 4), color="red", fontsize=8)
        ax.set_xlabel("α1 (toward θ_src)")
        ax.set_ylabel("α2 (toward θ_tgt)")
        ax.set_aspect("equal")
        if panel_cols:
            letter = f"({chr(ord('a') + axes.index(ax))}) " if letters else ""
            ax.set_title(letter + _label(panel_cols, pkey), fontsize=10)
    if title:
        fit_suptitle(fig, title)
    _note_collapsed(fig, data)
    drop_crowded_labels(contour_labels)  # once the layout is final: none on a marker, its name or another label
    return save_figure(fig, out_stem, agg)


def plot_geometry(
    geom: pd.DataFrame,
    out_stem: str | Path,
    *,
    hue: str | Sequence[str] | None = None,
    title: str | None = None,
) -> dict[str, Path]:
    """Scatter of ‖δ_src‖/‖δ_tgt‖ (y) against the angle between δ_src and δ_tgt (x) (Fig. 4).

    `geom` has one row per (setting, seed) with columns `ratio` and `angle_deg` (the output of
    `interpolate.delta_geometry`), plus the `hue` column(s) if given: one series per value,
    each with its own colour and marker and a legend entry. Writes <stem>.png/.pdf/.csv (the
    CSV holds the plotted rows).
    """
    hue_cols = _as_list(hue)
    need = ["ratio", "angle_deg"] + hue_cols
    missing = [c for c in need if c not in geom.columns]
    if missing:
        raise XltError(f"plot_geometry: missing column(s) {', '.join(missing)}")
    if geom.empty:
        raise XltError("plot_geometry: no rows")
    fig = Figure(figsize=(4.6, 3.6), layout="constrained")
    ax = fig.subplots()
    groups = list(geom.groupby(hue_cols, sort=True)) if hue_cols else [(None, geom)]
    for i, (key, g) in enumerate(groups):
        ax.scatter(g["angle_deg"], g["ratio"], s=16, alpha=0.8, color=f"C{i % 10}", marker=MARKERS[i % len(MARKERS)],
                   label=None if not hue_cols else _label(hue_cols, key))
    ax.axhline(1.0, color="0.5", lw=0.6, ls="--")
    ax.set_xlabel("angle between δ_src and δ_tgt (degrees)")
    ax.set_ylabel("‖δ_src‖ / ‖δ_tgt‖")
    if hue_cols:
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    if title:
        ax.set_title(title)
    _note_collapsed(fig, geom)
    table = geom.reset_index(drop=True)
    if COLLAPSED in table.columns:  # one row per point: its own runs, counted
        table = table.assign(n_collapsed=table[COLLAPSED].map(len)).drop(columns=COLLAPSED)
    return save_figure(fig, out_stem, table)
