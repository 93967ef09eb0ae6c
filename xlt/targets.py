"""The path grammar and every target list, computed here (tested) rather than in .smk files.

    results/world/manifest.json                                   the synthetic world
    results/encoders/{encoder}/                                   an encoder built in the DAG
    results/data/{task}/                                          normalised data ({lang}/{split}.jsonl)
    results/models/{encoder}/{init}/{task}/{recipe}/seed{seed}/   a fine-tuned model
    results/eval/{encoder}/{init}/{task}/{recipe}/seed{seed}/{split}.{langset}.json
    results/tables/{paper}/{table}.{csv,md,tex}
    results/underspec/grids/{encoder}/{task}/{source}-{target}/seed{seed}/{variant}.{kind}.{csv,json}
    results/figures/{paper}/{figure}.{png,pdf,csv}

A recipe is `<training languages joined by '+'>.<hparams profile>`, e.g. `en.crossmulti`
or `de+en+es+fr.crossmulti` (languages sorted, so a recipe has one spelling).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xlt.errors import XltError

TABLE_FORMATS = ("csv", "md", "tex")
WILDCARDS = {
    "encoder": r"[A-Za-z0-9_]+",
    "init": r"[a-z0-9_-]+",
    "task": r"[a-z]+",
    "recipe": r"[a-z]{2,3}(\+[a-z]{2,3})*\.[A-Za-z0-9_-]+",
    "seed": r"\d+",
    "split": r"train|dev|test",
    "langset": r"[A-Za-z0-9_]+",
    "paper": r"[a-z]+",
    # underspec grids
    "source": r"[a-z]{2,3}",
    "target": r"[a-z]{2,3}",
    "variant": r"all|encoder",
    "kind": r"1d|2d",
    "figure": r"fig[0-9]+[a-z_]*",
}


@dataclass(frozen=True)
class Recipe:
    train_langs: tuple[str, ...]
    hparams: str

    @property
    def name(self) -> str:
        return f"{'+'.join(sorted(self.train_langs))}.{self.hparams}"

    @classmethod
    def parse(cls, name: str) -> "Recipe":
        langs, sep, hparams = name.partition(".")
        if not sep or not langs or not hparams:
            raise XltError(f"recipe {name!r}: expected '<lang>[+<lang>…].<hparams>'")
        return cls(tuple(langs.split("+")), hparams)


def model_dir(cfg: dict, encoder: str, init: str, task: str, recipe: str, seed: int) -> str:
    return f"{cfg['results']}/models/{encoder}/{init}/{task}/{recipe}/seed{seed}"


def eval_file(cfg: dict, encoder: str, init: str, task: str, recipe: str, seed: int, split: str, langset: str) -> str:
    return f"{cfg['results']}/eval/{encoder}/{init}/{task}/{recipe}/seed{seed}/{split}.{langset}.json"


def table_files(cfg: dict, paper: str, table: str) -> list[str]:
    return [f"{cfg['results']}/tables/{paper}/{table}.{ext}" for ext in TABLE_FORMATS]


def encoder_source(cfg: dict, name: str) -> str:
    """Where fine-tuning loads an encoder from: a built directory, a local path, or the Hub."""
    try:
        spec = cfg["encoders"][name]
    except KeyError:
        raise XltError(f"unknown encoder {name!r}; allowed: {', '.join(sorted(cfg['encoders']))}") from None
    if "build" in spec:
        return f"{cfg['results']}/encoders/{name}"
    return spec.get("path") or spec["hub"]


def built_encoders(cfg: dict) -> list[str]:
    return [name for name, spec in cfg["encoders"].items() if "build" in spec]


def encoder_inputs(cfg: dict, name: str) -> list[str]:
    """The DAG dependency of a fine-tuning job on its encoder (none for Hub encoders)."""
    return [encoder_source(cfg, name)] if name in built_encoders(cfg) else []


def encoder_revision_arg(cfg: dict, name: str) -> str:
    rev = cfg["encoders"][name].get("revision")
    return f"--revision {rev}" if rev else ""


def hparams(cfg: dict, recipe: str) -> dict:
    name = Recipe.parse(recipe).hparams
    if name not in cfg["hparams"]:
        raise XltError(f"recipe {recipe!r}: unknown hparams profile {name!r}; allowed: {', '.join(sorted(cfg['hparams']))}")
    return cfg["hparams"][name]


def raw_inputs(cfg: dict) -> list[str]:
    """What a prepare job waits for: the world (tiny preset), or the raw sources."""
    if cfg.get("world"):
        return [f"{cfg['results']}/world/manifest.json"]
    return []


def task_languages(cfg: dict, task: str) -> list[str]:
    """Every language any configured paper needs for `task`, in a stable order."""
    langs: list[str] = []
    for slug, paper in cfg["papers"].items():
        if task in paper.get("tasks", []):
            langs += paper_languages(cfg, slug)
    if not langs:
        raise XltError(f"no configured paper uses task {task!r}")
    return list(dict.fromkeys(langs))


def paper_languages(cfg: dict, slug: str) -> list[str]:
    """Every language a paper's experiments read (train or evaluate)."""
    paper = cfg["papers"][slug]
    if slug == "underspec":
        return list(dict.fromkeys(cfg["language_sets"][paper["sources"]] + cfg["language_sets"][paper["targets"]]))
    return list(cfg["language_sets"][paper["languages"]])


# ---- crossmulti ---------------------------------------------------------------------------


def crossmulti_recipes(cfg: dict) -> dict[str, Recipe]:
    """The two training settings: `cross` (source language only) and `multi` (all)."""
    p = cfg["papers"]["crossmulti"]
    langs = tuple(cfg["language_sets"][p["languages"]])
    return {"cross": Recipe((p["source"],), p["hparams"]), "multi": Recipe(langs, p["hparams"])}


def crossmulti_table2_inputs(cfg: dict) -> list[str]:
    p = cfg["papers"]["crossmulti"]
    return [
        eval_file(cfg, p["encoder"], "pretrained", task, recipe.name, seed, "test", p["languages"])
        for task in p["tasks"]
        for recipe in crossmulti_recipes(cfg).values()
        for seed in p["seeds"]
    ]


# ---- underspec -----------------------------------------------------------------------------
#
#   results/underspec/grids/{encoder}/{task}/{source}-{target}/seed{seed}/{variant}.{kind}.{csv,json}
#   results/figures/underspec/{figure}.{png,pdf,csv}

FIGURE_FORMATS = ("png", "pdf", "csv")
UNDERSPEC_VARIANTS = ("all", "encoder")
# Figure -> task, for the per-task breakdowns of Figure 2 (App. D).
UNDERSPEC_TASK_FIGURES = {"fig6": "ner", "fig7": "parsing", "fig8": "pos", "fig9": "xnli"}


@dataclass(frozen=True)
class Setting:
    """One underspec setting: an encoder, a task, a (source, target) pair and a seed."""

    encoder: str
    task: str
    source: str
    target: str
    seed: int


def underspec_pairs(cfg: dict) -> list[tuple[str, str]]:
    """(source, target) pairs in config order; a target equal to its source is skipped."""
    p = cfg["papers"]["underspec"]
    sources, targets = cfg["language_sets"][p["sources"]], cfg["language_sets"][p["targets"]]
    return [(s, t) for s in sources for t in targets if s != t]


def underspec_recipes(cfg: dict, source: str, target: str) -> dict[str, Recipe]:
    """θ_src (source data only), θ_tgt (target only), θ_bi (both): one hparams profile."""
    hp = cfg["papers"]["underspec"]["hparams"]
    return {"src": Recipe((source,), hp), "tgt": Recipe((target,), hp), "bi": Recipe((source, target), hp)}


def underspec_settings(cfg: dict) -> list[Setting]:
    p = cfg["papers"]["underspec"]
    return [Setting(enc, task, s, t, seed) for enc in p["encoders"] for task in p["tasks"]
            for s, t in underspec_pairs(cfg) for seed in p["seeds"]]


def underspec_models(cfg: dict, st: Setting) -> dict[str, str]:
    """The three model directories of a setting (θ_src is shared by every target of a source)."""
    return {which: model_dir(cfg, st.encoder, "pretrained", st.task, r.name, st.seed)
            for which, r in underspec_recipes(cfg, st.source, st.target).items()}


def grid_stem(cfg: dict, st: Setting, variant: str, kind: str) -> str:
    return (f"{cfg['results']}/underspec/grids/{st.encoder}/{st.task}/{st.source}-{st.target}/"
            f"seed{st.seed}/{variant}.{kind}")


def underspec_grid_inputs(cfg: dict, encoder: str, task: str, source: str, target: str, seed) -> dict[str, str]:
    """What one grid job reads: the three models and the task's data."""
    return {**underspec_models(cfg, Setting(encoder, task, source, target, int(seed))),
            "data": f"{cfg['results']}/data/{task}"}


def underspec_2d_settings(cfg: dict) -> list[tuple[str, str, str]]:
    """(task, source, target) of the 2D figures, in figure order, without repeats."""
    figs = cfg["papers"]["underspec"]["figures"]
    return list(dict.fromkeys((p["task"], p["source"], p["target"]) for f in ("fig3", "fig10") for p in figs[f]))


def underspec_grids(cfg: dict) -> list[str]:
    """Every grid CSV the figures read: 1D for every setting and variant; 2D (variant all)
    for the settings the 2D figures show."""
    p = cfg["papers"]["underspec"]
    two_d = set(underspec_2d_settings(cfg))
    out = []
    for st in underspec_settings(cfg):
        out += [grid_stem(cfg, st, v, "1d") + ".csv" for v in p["variants"]]
        if (st.task, st.source, st.target) in two_d:
            out.append(grid_stem(cfg, st, "all", "2d") + ".csv")
    return out


def underspec_figure_names(cfg: dict) -> list[str]:
    """Figures 2-10 (a per-task figure only when its task runs) and, when the encoder-only
    variant runs, Figure 2 for it (the paper's footnote 2)."""
    p = cfg["papers"]["underspec"]
    names = ["fig2", "fig3", "fig4", "fig5"]
    names += [f for f, task in UNDERSPEC_TASK_FIGURES.items() if task in p["tasks"]]
    names.append("fig10")
    if "encoder" in p["variants"]:
        names.append("fig2_encoder")
    return names


def figure_files(cfg: dict, paper: str, figure: str) -> list[str]:
    return [f"{cfg['results']}/figures/{paper}/{figure}.{ext}" for ext in FIGURE_FORMATS]


def underspec_figures(cfg: dict) -> list[str]:
    return [f for fig in underspec_figure_names(cfg) for f in figure_files(cfg, "underspec", fig)]


# ---- all tables ---------------------------------------------------------------------------

TABLES = {"crossmulti": ["table2"]}
# Papers whose results are figures: paper -> the function listing the figure files.
FIGURES = {"underspec": underspec_figures}


def all_tables(cfg: dict) -> list[str]:
    return [f for paper, tables in TABLES.items() if paper in cfg["papers"] for t in tables for f in table_files(cfg, paper, t)] + all_figures(cfg)


def all_figures(cfg: dict) -> list[str]:
    return [f for paper, files in FIGURES.items() if paper in cfg["papers"] for f in files(cfg)]


def paper_figures(cfg: dict, paper: str) -> list[str]:
    return FIGURES[paper](cfg) if paper in FIGURES and paper in cfg["papers"] else []


def paper_tables(cfg: dict, paper: str) -> list[str]:
    return [f for t in TABLES.get(paper, []) for f in table_files(cfg, paper, t)]


def ensure_dir(path: str | Path) -> Path:
    Path(path).mkdir(parents=True, exist_ok=True)
    return Path(path)
