"""underspec's plan: its settings, the three recipes of a setting, what each grid job and figure reads,
and what the full-scale bill prices of a grid job (no pandas, no torch: the workflow reads it when it
builds the DAG)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from xlt.dag.targets import Recipe, data_dir, model_dir

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
