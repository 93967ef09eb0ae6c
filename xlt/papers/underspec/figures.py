"""Figures 2-10 of the underspec paper from the grid jobs' CSVs (and their JSONs).

    make_figures(spec, grid_csvs, out_dir)   # spec: the papers.underspec config block

reads every grid CSV (long form, `grid.COLUMNS`) and the JSON beside each (δ geometry),
normalises every score by the matching bilingual model (`aggregate.normalise_by_bilingual`:
per setting and grid point, seed mean and variance divided by θ_bi's mean score) and draws:

    fig2   1D, all parameters: normalised mean vs α, aggregated over tasks and pairs (95% CI);
           one panel per (source language, path): Eq. 1 (θ_src ↔ θ_bi), Eq. 2 (θ_tgt ↔ θ_bi);
           one line per (encoder, dev set)
    fig3   2D (Eq. 3) normalised mean for the settings of `figures.fig3`, per encoder
    fig4   ‖δ_src‖/‖δ_tgt‖ vs angle(δ_src, δ_tgt), one point per (encoder, task, pair, seed)
    fig5   fig2 with the normalised variance
    fig6-9 fig2 for one task each: NER, parsing, POS, XNLI
    fig10  fig3 for the settings of `figures.fig10`
    fig2_encoder  fig2 for the encoder-only variant (the paper's footnote 2)

Each figure is <out_dir>/<name>.png, .pdf and .csv (the plotted numbers). Collapsed fine-tuning
runs (a model's `collapse` verdict, copied into its grid JSON) stay in every number: each CSV
row counts the distinct collapsed runs behind it (n_collapsed) and a figure that has any says
how many under its panels, like the tables' † marks.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from xlt.errors import XltError
from xlt.io import read_json
from xlt.paperkit.base import Figure
from xlt.papers.underspec.plan import TASK_FIGURES, TASK_NAMES

__all__ = ["FIGURES", "FIGURE_IDS", "draw", "load_grids", "make_figures"]

PATHS = {"src": "Eq. 1: θ_src ↔ θ_bi", "tgt": "Eq. 2: θ_tgt ↔ θ_bi"}
_NORMALISED = "every score divided by the matching bilingual model's mean score"
# the band of a 1D figure: over the aggregated settings, or over the seeds where a line has one
# setting (aggregate._seed_band; the CSV's column `band` says which)
_BAND = "a t interval over the pairs; over the seeds where a task has one pair"


def _task_figure(fig: str, task: str) -> Figure:
    return Figure(fig, f"Figure 2 for {TASK_NAMES[task]} alone: 1D interpolation, normalised mean over the pairs "
                  f"with a 95% CI ({_BAND}).", when=lambda p: task in p["tasks"])  # fmt: skip


FIGURES = (
    Figure("fig2", "1D interpolation of all parameters along Eq. 1 (θ_src ↔ θ_bi) and Eq. 2 (θ_tgt ↔ θ_bi), "
           f"scored on the source and the target dev set ({_NORMALISED}); mean over tasks and pairs with a "
           "95% CI; one panel per source language and path, one line per encoder and dev set."),
    Figure("fig3", "2D interpolation θ_bi + α1·δ_src + α2·δ_tgt (Eq. 3), normalised score on the source and "
           "the target dev set, for the settings of papers.underspec.figures.fig3, per encoder."),
    Figure("fig4", "Geometry of the two updates: ‖δ_src‖ / ‖δ_tgt‖ against the angle between δ_src and "
           "δ_tgt, one point per encoder, task, pair and seed."),
    Figure("fig5", f"Figure 2 with the variance over seeds ({_NORMALISED}, squared) instead of the mean; "
           "its 95% band (a t interval of the mean over tasks and pairs) is clipped at 0: a variance is not "
           "negative, and the CSV's ci_low holds the clipped value."),
    *(_task_figure(fig, task) for fig, task in TASK_FIGURES.items()),
    Figure("fig10", "Figure 3 for the settings of papers.underspec.figures.fig10."),
    Figure("fig2_encoder", "Figure 2 with only the encoder interpolated, the head held at θ_bi's (the "
           "paper's footnote 2; the paper shows no figure).", when=lambda p: "encoder" in p["variants"]),
)
FIGURE_IDS = tuple(f.id for f in FIGURES)


SETTING = ("encoder", "variant", "task", "source", "target")
# The models each kind of row is made of: a 1D path interpolates θ_bi with one monolingual
# model; a 2D grid (and the δ geometry) uses all three.
MODELS_OF = {"src": ("bi", "src"), "tgt": ("bi", "tgt"), "2d": ("bi", "src", "tgt")}


def _collapsed_models(meta: dict, meta_path: Path) -> dict[str, str]:
    """{bi|src|tgt: model path} of the grid's models whose fine-tuning collapsed."""
    try:
        return {which: m["path"] for which, m in meta["models"].items() if m["collapsed"]}
    except KeyError as e:
        raise XltError(f"{meta_path}: no models.*.{e.args[0]} (a grid made before collapsed runs were "
                       "recorded: delete it and rerun its job)") from None


def load_grids(csv_paths: list[str | Path]) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """All grid rows; one δ-geometry row per (encoder, variant, task, source, target, seed)
    from the JSON beside each grid CSV, with the collapsed runs among its models
    (`aggregate.COLLAPSED`); and per setting (`SETTING`) the collapsed model paths of each of
    bi, src and tgt over the seeds."""
    from xlt.papers.underspec.aggregate import COLLAPSED  # matplotlib, scipy: only in the figure job

    if not csv_paths:
        raise XltError("underspec figures: no grid CSV given")
    frames, geo, collapsed = [], {}, {}
    for p in map(Path, csv_paths):
        frames.append(pd.read_csv(p, keep_default_na=True))
        meta_path = p.with_suffix(".json")
        if not meta_path.exists():
            raise XltError(f"{meta_path}: missing (every grid CSV has its JSON beside it)")
        meta = read_json(meta_path)
        s = meta["setting"]
        runs = _collapsed_models(meta, meta_path)
        for which, path in runs.items():
            collapsed.setdefault(tuple(s[k] for k in SETTING), {}).setdefault(which, set()).add(path)
        key = tuple(s[k] for k in SETTING) + (s["seed"],)
        geo.setdefault(key, {**{k: s[k] for k in (*SETTING, "seed")}, **meta["geometry"],
                             COLLAPSED: tuple(sorted(set(runs.values())))})
    grid = pd.concat(frames, ignore_index=True)
    return grid, pd.DataFrame(list(geo.values())), collapsed


def _with_collapsed(norm: pd.DataFrame, collapsed: dict) -> pd.DataFrame:
    """Each normalised row with the collapsed runs behind it: of its setting, over the seeds,
    the models its direction is made of."""
    from xlt.papers.underspec.aggregate import COLLAPSED  # matplotlib, scipy: only in the figure job

    def runs(row) -> tuple[str, ...]:
        by_model = collapsed.get(tuple(row[k] for k in SETTING), {})
        return tuple(sorted(set().union(*(by_model.get(w, set()) for w in MODELS_OF[row["direction"]]))))

    return norm.assign(**{COLLAPSED: [runs(r) for _, r in norm.iterrows()] if len(norm) else []})


def _with_labels(norm: pd.DataFrame) -> pd.DataFrame:
    out = norm.copy()
    out["panel"] = [f"source {s.upper()} · {PATHS.get(d, d)}" for s, d in zip(out["source"], out["direction"])]
    out["dev"] = out["eval_lang"].map({"source": "source dev", "target": "target dev"})
    return out


def _fig_1d(norm: pd.DataFrame, stem: Path, value: str, title: str) -> dict:
    from xlt.papers.underspec.aggregate import plot_1d  # matplotlib, scipy: only in the figure job

    if norm.empty:
        raise XltError(f"{stem.name}: no 1D rows to plot")
    ylabel = "normalised performance" if value == "norm_mean" else "normalised variance"
    return plot_1d(_with_labels(norm), stem, value=value, directions=("src", "tgt"), hue=("encoder", "dev"),
                   panel="panel", title=title, ylabel=ylabel, nonnegative_value=value == "norm_var")


def _fig_2d(norm: pd.DataFrame, settings: list[dict], stem: Path, title: str) -> dict:
    from xlt.papers.underspec.aggregate import plot_2d  # matplotlib, scipy: only in the figure job

    rows, order = [], []
    for st in settings:
        for enc in sorted(norm["encoder"].unique()):
            sel = norm[(norm["direction"] == "2d") & (norm["task"] == st["task"]) & (norm["source"] == st["source"])
                       & (norm["target"] == st["target"]) & (norm["encoder"] == enc)]
            if sel.empty:
                raise XltError(f"{stem.name}: no 2D grid for {st['task']} {st['source']}-{st['target']} with {enc}")
            label = f"{st['source'].upper()}-{st['target'].upper()} {TASK_NAMES.get(st['task'], st['task'])} w/ {enc}"
            order.append(label)
            rows.append(sel.assign(setting=label, dev=sel["eval_lang"].map({"source": "source dev", "target": "target dev"})))
    data = pd.concat(rows, ignore_index=True)
    data["setting"] = pd.Categorical(data["setting"], categories=list(dict.fromkeys(order)), ordered=True)
    return plot_2d(data, stem, panel=("setting", "dev"), title=title, ncols=4, letters=True)


def make_figures(spec: dict, grid_csvs: list[str | Path], out_dir: str | Path, figures: list[str] | None = None) -> dict:
    """Write the figures (default: every one the data allows); return {figure: {ext: path}}."""
    from xlt.papers.underspec.aggregate import normalise_by_bilingual, plot_geometry  # matplotlib, scipy: only in the figure job

    out_dir = Path(out_dir)
    grid, geom, collapsed = load_grids(grid_csvs)
    norm = _with_collapsed(normalise_by_bilingual(grid), collapsed)
    one_d = norm[norm["direction"].isin(["src", "tgt"])]
    all_params = one_d[one_d["variant"] == "all"]
    figures = list(figures or FIGURE_IDS)
    unknown = sorted(set(figures) - set(FIGURE_IDS))
    if unknown:
        raise XltError(f"unknown underspec figure(s) {unknown}; known: {', '.join(FIGURE_IDS)}")
    made = {}
    note = "normalised by the bilingual model; mean over tasks and pairs, 95% CI"
    for fig in figures:
        stem = out_dir / fig
        if fig == "fig2":
            made[fig] = _fig_1d(all_params, stem, "norm_mean", f"Figure 2: 1D interpolation ({note})")
        elif fig == "fig5":
            made[fig] = _fig_1d(all_params, stem, "norm_var", "Figure 5: normalised variance over seeds, 1D interpolation")
        elif fig in TASK_FIGURES:
            task = TASK_FIGURES[fig]
            rows = all_params[all_params["task"] == task]
            one_pair = not rows.empty and rows.groupby(["encoder", "source"])["target"].nunique().max() == 1
            band = "95% CI over the seeds: one pair" if one_pair else "95% CI over the pairs"
            made[fig] = _fig_1d(rows, stem, "norm_mean",
                                f"Figure {fig[3:]}: {TASK_NAMES[task]}, 1D interpolation (normalised; mean over pairs, {band})")
        elif fig == "fig2_encoder":
            made[fig] = _fig_1d(one_d[one_d["variant"] == "encoder"], stem, "norm_mean",
                                f"Figure 2, encoder only (head held at θ_bi) ({note})")
        elif fig in ("fig3", "fig10"):
            made[fig] = _fig_2d(norm, spec["figures"][fig], stem,
                                f"Figure {fig[3:]}: 2D interpolation θ_bi + α1·δ_src + α2·δ_tgt (normalised)")
        elif fig == "fig4":
            g = geom[geom["variant"] == "all"]
            if g.empty:
                raise XltError("fig4: no geometry of the all-parameter variant")
            g = g.assign(pair=g["source"].str.upper() + "-" + g["target"].str.upper())
            made[fig] = plot_geometry(g.sort_values(["encoder", "task", "source", "target", "seed"]), stem,
                                      hue=("encoder", "task", "pair"), title="Figure 4: ‖δ_src‖/‖δ_tgt‖ vs angle")
    return made


def draw(spec: dict, inputs: list[str], out_dir: str, figure: str) -> None:
    make_figures(spec, inputs, out_dir, [figure])
