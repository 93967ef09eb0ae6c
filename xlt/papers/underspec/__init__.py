"""underspec: Zero-shot Cross-lingual Transfer is Under-specified Optimization.

Per (encoder, task, source, target, seed) three models from one initialisation (θ_src,
θ_tgt, θ_bi; recipes below), interpolation grids scored on the source and target dev sets
(`grid`, `interpolate`), normalised and aggregated (`aggregate`) into Figures 2-10
(`figures`); Table 1 counts the data. This module only declares (it imports neither torch
nor matplotlib: the workflow reads it when it builds the DAG).

    results/underspec/grids/{encoder}/{task}/{source}-{target}/seed{seed}/{variant}.{kind}.{csv,json}
    results/figures/underspec/{figure}.{png,pdf,csv}
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

from xlt.errors import XltError, check_config_ref
from xlt.papers import datasize
from xlt.papers.base import BillRule, Figure, Paper
from xlt.registry import TASKS
from xlt.targets import Recipe, data_dir, model_dir

SLUG = "underspec"
# Figure -> task, for the per-task breakdowns of Figure 2 (App. D), and the tasks' names there.
TASK_FIGURES = {"fig6": "ner", "fig7": "parsing", "fig8": "pos", "fig9": "xnli"}
TASK_NAMES = {"ner": "NER", "parsing": "Parsing", "pos": "POS", "xnli": "XNLI"}
TWO_D_FIGURES = ("fig3", "fig10")  # their settings are listed in the config (papers.underspec.figures)


@dataclass(frozen=True)
class Setting:
    """One underspec setting: an encoder, a task, a (source, target) pair and a seed."""

    encoder: str
    task: str
    source: str
    target: str
    seed: int


def pairs(cfg: dict) -> list[tuple[str, str]]:
    """(source, target) pairs in config order; a target equal to its source is skipped."""
    p = cfg["papers"][SLUG]
    sources, targets = cfg["language_sets"][p["sources"]], cfg["language_sets"][p["targets"]]
    return [(s, t) for s in sources for t in targets if s != t]


def recipes(cfg: dict, source: str, target: str) -> dict[str, Recipe]:
    """θ_src (source data only), θ_tgt (target only), θ_bi (both): one hparams profile."""
    hp = cfg["papers"][SLUG]["hparams"]
    return {"src": Recipe((source,), hp), "tgt": Recipe((target,), hp), "bi": Recipe((source, target), hp)}


def settings(cfg: dict) -> list[Setting]:
    p = cfg["papers"][SLUG]
    return [Setting(enc, task, s, t, seed) for enc in p["encoders"] for task in p["tasks"]
            for s, t in pairs(cfg) for seed in p["seeds"]]  # fmt: skip


def models(cfg: dict, st: Setting) -> dict[str, str]:
    """The three model directories of a setting (θ_src is shared by every target of a source)."""
    return {which: model_dir(cfg, st.encoder, "pretrained", st.task, r.name, st.seed)
            for which, r in recipes(cfg, st.source, st.target).items()}  # fmt: skip


def grid_stem(cfg: dict, st: Setting, variant: str, kind: str) -> str:
    return (f"{cfg['results']}/underspec/grids/{st.encoder}/{st.task}/{st.source}-{st.target}/"
            f"seed{st.seed}/{variant}.{kind}")  # fmt: skip


def grid_inputs(cfg: dict, encoder: str, task: str, source: str, target: str, seed) -> dict[str, str]:
    """What one grid job reads: the three models and the task's data."""
    return {**models(cfg, Setting(encoder, task, source, target, int(seed))), "data": data_dir(cfg, task)}


def two_d_settings(cfg: dict) -> list[tuple[str, str, str]]:
    """(task, source, target) of the 2D figures, in figure order, without repeats."""
    figs = cfg["papers"][SLUG]["figures"]
    return list(dict.fromkeys((p["task"], p["source"], p["target"]) for f in TWO_D_FIGURES for p in figs[f]))


def grids(cfg: dict) -> list[str]:
    """Every grid CSV the figures read: 1D for every setting and variant; 2D (variant all)
    for the settings the 2D figures show."""
    p = cfg["papers"][SLUG]
    two_d = set(two_d_settings(cfg))
    out = []
    for st in settings(cfg):
        out += [grid_stem(cfg, st, v, "1d") + ".csv" for v in p["variants"]]
        if (st.task, st.source, st.target) in two_d:
            out.append(grid_stem(cfg, st, "all", "2d") + ".csv")
    return out


def draw(spec: dict, inputs: list[str], out_dir: str, figure: str) -> None:
    from xlt.papers.underspec.figures import make_figures  # matplotlib: only in the figure job

    make_figures(spec, inputs, out_dir, [figure])


# ---- Table 1: the data sizes ----------------------------------------------------------------


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


# ---- the full-scale bill ---------------------------------------------------------------------

# a grid job's priced output (xlt.bill), relative to the results folder
GRID_OUTPUT = re.compile(r"underspec/grids/(?P<encoder>[^/]+)/(?P<dataset>[^/]+)/(?P<source>[a-z]+)-(?P<target>[a-z]+)/"
                         r"seed(?P<seed>\d+)/(?P<variant>[a-z]+)\.(?P<kind>[12]d)\.csv$")


def grid_tokens(cfg: dict, w: dict, examples) -> tuple[float, float]:
    """No training; every grid point scored on the source and the target dev set."""
    from xlt.papers.underspec.grid import GridSpec, grid_points  # torch: only when a bill prices grids

    points = len(grid_points(w["kind"], GridSpec.from_config(cfg["papers"][SLUG]["grid"])))
    return 0.0, points * examples.tokens(w["dataset"], [w["source"], w["target"]], "dev")


# ---- the config block -----------------------------------------------------------------------


def check(config: dict, paper: dict) -> None:
    """papers.underspec: encoders, language sets, metrics, grid axes and the 2D figures' settings."""
    from xlt.papers.underspec.alpha import alpha_axis  # not interpolate: it imports torch

    key = f"papers.{SLUG}"
    for enc in paper["encoders"]:
        check_config_ref("encoder", f"{key}.encoders", enc, config["encoders"])
    check_config_ref("hparams profile", f"{key}.hparams", paper["hparams"], config["hparams"])
    langs = {}
    for role in ("sources", "targets"):
        check_config_ref("language set", f"{key}.{role}", paper[role], config["language_sets"])
        langs[role] = config["language_sets"][paper[role]]
    for task in paper["tasks"]:
        if task not in paper["metric"]:
            raise XltError(f"config key {key}.metric: no metric for task {task}")
        check_config_ref(f"metric of task {task}", f"{key}.metric.{task}", paper["metric"][task], TASKS[task].metrics)
        for role in ("sources", "targets"):
            missing = [lang for lang in langs[role] if lang not in TASKS[task].languages]
            if missing:
                raise XltError(
                    f"config key {key}.{role}: task {task} has no data for {missing}; "
                    f"its source offers: {', '.join(TASKS[task].languages)}"
                )
    if not any(t != s for s in langs["sources"] for t in langs["targets"]):
        raise XltError(f"config key {key}.targets: no target differs from a source language")
    for axis in ("alpha_1d", "alpha_2d"):
        g = paper["grid"][axis]
        if not g["lo"] <= 0 < 1 <= g["hi"]:
            raise XltError(f"config key {key}.grid.{axis}: lo={g['lo']}, hi={g['hi']}: the grid must include 0 and 1 "
                           "(the monolingual and bilingual models)")  # fmt: skip
        try:
            alpha_axis(g["step"], g["lo"], g["hi"])
        except XltError as e:
            raise XltError(f"config key {key}.grid.{axis}: {e}") from None
    for fig, panels in paper["figures"].items():
        for i, p in enumerate(panels):
            where = f"{key}.figures.{fig}[{i}]"
            check_config_ref("task (not in papers.underspec.tasks)", f"{where}.task", p["task"], paper["tasks"])
            check_config_ref("source language (not in the sources set)", f"{where}.source", p["source"], langs["sources"])
            check_config_ref("target language (not in the targets set)", f"{where}.target", p["target"], langs["targets"])
            if p["source"] == p["target"]:
                raise XltError(f"config key {where}: source and target are both {p['source']!r}")


# ---- the registry entry -----------------------------------------------------------------------

_NORMALISED = "every score divided by the matching bilingual model's mean score"


def _task_figure(fig: str, task: str) -> Figure:
    return Figure(fig, f"Figure 2 for {TASK_NAMES[task]} alone: 1D interpolation, normalised mean over the pairs "
                  "with a 95% CI.", when=lambda p: task in p["tasks"])  # fmt: skip


PAPER = Paper(
    SLUG,
    jobs=f"{__name__}.jobs",  # its jobs (jobs.py), run by workflow_scripts/paper_job.py
    tables=(datasize.table(SLUG, table1),),
    figures=(
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
    ),
    figure_inputs=grids,
    draw=draw,
    check=check,
    data_sizes=lambda: datasize.published_sizes(SLUG, rank=0),  # counted per language from the release
    bill_rules=(BillRule("underspec_grid", GRID_OUTPUT, grid_tokens),),
    # a grid's source and target languages, what it interpolates, its dimensions
    wildcards={"source": r"[a-z]{2,3}", "target": r"[a-z]{2,3}", "variant": r"all|encoder", "kind": r"1d|2d"},
    claims="claims.yaml",
)
