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


# the folder of one setting's grids; each grid is <variant>.<kind>.{csv,json} in it (`grid_name`)
GRID_DIR = "{results}/underspec/grids/{encoder}/{task}/{source}-{target}/seed{seed}"
# the variant of the 2D grids (Figs. 3 and 10 show all parameters)
TWO_D_VARIANT = "all"


def grid_name(variant: str, kind: str) -> str:
    """A grid's file name in its setting's folder, without the extension: `all.1d`."""
    return f"{variant}.{kind}"


def grid_folder(cfg: dict, st: Setting) -> str:
    return GRID_DIR.format(results=cfg["results"], **vars(st))


def setting_grids(cfg: dict, two_d: bool) -> list[str]:
    """The grids (`grid_name`s) one setting's job scores: the 1D grid of every configured variant,
    then, where a 2D figure shows the setting (`two_d`), its 2D grid."""
    names = [grid_name(v, "1d") for v in cfg["papers"][SLUG]["variants"]]
    return names + [grid_name(TWO_D_VARIANT, "2d")] if two_d else names


def grid_job_grids(cfg: dict, task: str, source: str, target: str) -> list[str]:
    """The grids the job of a setting (rule underspec_grid or underspec_grid_2d) scores."""
    return setting_grids(cfg, (task, source, target) in two_d_settings(cfg))


def grid_job_outputs(cfg: dict, two_d: bool) -> list[str]:
    """The output patterns of a grid job (Snakemake wildcards {encoder} … {seed}): the CSV and
    JSON of every grid of `setting_grids`."""
    folder = GRID_DIR.format(results=cfg["results"], encoder="{encoder}", task="{task}", source="{source}",
                             target="{target}", seed="{seed}")
    return [f"{folder}/{name}.{ext}" for name in setting_grids(cfg, two_d) for ext in ("csv", "json")]


def two_d_task_constraint(cfg: dict) -> str:
    """The `task` wildcard's regex of rule underspec_grid_2d: a task followed in the grid's path
    by a (source, target) pair that a 2D figure shows with it, so that the rule matches exactly
    the 2D settings (a lookahead: one wildcard's regex cannot name the other wildcards);
    matches nothing where no 2D figure is configured."""
    alternatives = [f"{re.escape(task)}(?=/{re.escape(source)}-{re.escape(target)}/)"
                    for task, source, target in two_d_settings(cfg)]
    return "|".join(alternatives) or "(?!)"


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
    return [f"{grid_folder(cfg, st)}/{name}.csv"
            for st in settings(cfg) for name in grid_job_grids(cfg, st.task, st.source, st.target)]
