"""The path grammar and every target list, computed here (tested) rather than in .smk files.

    {raw_root}/manifests/{entry}.json                             a downloaded catalog source
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

The `{task}` of a path is a *dataset*: the registry task, plus `.<treebank set>` for a UD task
whose paper picks a named selection (`pos.es_ancora`, `pos.xtreme`; config `data.ud.sets`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xlt.errors import XltError
from xlt.registry import get_task

TABLE_FORMATS = ("csv", "md", "tex")
WILDCARDS = {
    "encoder": r"[A-Za-z0-9_]+",
    "init": r"[a-z0-9_-]+",
    "task": r"[a-z]+(\.[a-z0-9_]+)?",  # a dataset: <task>[.<treebank set>]
    "entry": r"[a-z0-9][a-z0-9.-]*",  # a catalog entry (xlt/sources/catalog.yaml)
    "recipe": r"[a-z]{2,3}(\+[a-z]{2,3})*\.[A-Za-z0-9_-]+",
    "seed": r"\d+",
    "split": r"train|dev|test",
    "langset": r"[A-Za-z0-9_]+",
    "paper": r"[a-z]+",
    # underspec grids: source and target languages
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


# ---- datasets: a task's prepared data, per treebank selection ------------------------------


def paper_language_set(paper: dict, task: str) -> str:
    """The language set a paper names for `task` (one for all tasks, or one per task)."""
    langs = paper["languages"]
    return langs[task] if isinstance(langs, dict) else langs


def paper_languages(cfg: dict, paper: str, task: str) -> list[str]:
    return list(cfg["language_sets"][paper_language_set(cfg["papers"][paper], task)])


def dataset_name(cfg: dict, paper: str, task: str) -> str:
    """The data folder a paper's task reads: the task, `.<set>` added for a named UD selection."""
    tb_set = cfg["papers"][paper].get("treebanks")
    return f"{task}.{tb_set}" if tb_set and get_task(task).source == "ud" else task


def task_of(dataset: str) -> str:
    return dataset.partition(".")[0]


def treebank_set_of(dataset: str) -> str | None:
    return dataset.partition(".")[2] or None


def datasets(cfg: dict) -> dict[str, list[str]]:
    """Every dataset the configured papers read, with the languages they need, stable order."""
    out: dict[str, list[str]] = {}
    for slug, paper in cfg["papers"].items():
        for task in paper.get("tasks", []):
            out.setdefault(dataset_name(cfg, slug, task), []).extend(paper_languages(cfg, slug, task))
    return {d: list(dict.fromkeys(langs)) for d, langs in out.items()}


def task_languages(cfg: dict, task: str) -> list[str]:
    """Every language any configured paper needs for `task` (a dataset name), in a stable order."""
    try:
        return datasets(cfg)[task]
    except KeyError:
        raise XltError(f"no configured paper uses task {task!r}") from None


def data_dir(cfg: dict, dataset: str) -> str:
    return f"{cfg['results']}/data/{dataset}"


def ud_selection(cfg: dict, set_name: str | None = None) -> dict:
    """`{version, treebanks}` of the default UD selection, or of a named set laid over it."""
    ud = cfg["data"].get("ud") or {}
    out = {"version": ud.get("version", "2.7"), "treebanks": ud.get("treebanks", {})}
    if set_name is None:
        return out
    sets = ud.get("sets") or {}
    if set_name not in sets:
        raise XltError(f"unknown treebank set {set_name!r}; allowed: {', '.join(sorted(sets)) or '(none: data.ud.sets is empty)'}")
    chosen = sets[set_name]
    out["version"] = chosen.get("version", out["version"])
    tbs = chosen.get("treebanks")
    if tbs == "all" or (tbs and out["treebanks"] == "all"):
        out["treebanks"] = tbs
    elif tbs:
        out["treebanks"] = {**out["treebanks"], **tbs}
    return out


def source_cfg(cfg: dict, dataset: str) -> dict:
    """The `data` block `prepare_task` reads for `dataset`, `ud` resolved to its selection."""
    out = {k: v for k, v in cfg["data"].items() if k != "ud"}
    if "ud" in cfg["data"]:
        out["ud"] = ud_selection(cfg, treebank_set_of(dataset))
    return out


# ---- downloads: the catalog sources behind each dataset -----------------------------------


def raw_sources(cfg: dict, dataset: str) -> dict[str, list[str]]:
    """The catalog sources whose files `prepare_task` reads for `dataset`, each with the
    languages to fetch (empty for a source holding all languages in one file).

    Computed from `xlt.prepare.raw_patterns` (the raw layout) and the catalog's file paths, so a
    path the catalog does not deliver fails here, when the DAG is built.
    """
    from xlt.prepare import raw_patterns
    from xlt.sources.catalog import providers

    task, cfg_for_task = task_of(dataset), source_cfg(cfg, dataset)
    out: dict[str, list[str]] = {}
    for lang in task_languages(cfg, dataset):
        for split in get_task(task).splits:
            for pattern in raw_patterns(task, lang, split, cfg_for_task):
                if Path(pattern).is_absolute():
                    continue  # a file of the user's own, outside the raw root
                found = providers(pattern, lang)
                if len(found) != 1:
                    what = "no catalog source delivers" if not found else (
                        f"several catalog sources ({', '.join(s.name for s, _ in found)}) deliver"
                    )
                    raise XltError(
                        f"dataset {dataset!r}, language {lang!r}, split {split!r}: {what} {pattern} "
                        "(xlt/sources/catalog.yaml); check the config's data block"
                    )
                source, fetch_lang = found[0]
                langs = out.setdefault(source.name, [])
                if fetch_lang and fetch_lang not in langs:
                    langs.append(fetch_lang)
    return out


def download_plan(cfg: dict) -> dict[str, list[str]]:
    """Every catalog source the configured papers read, with its languages; none with the world."""
    if cfg.get("world"):
        return {}
    plan: dict[str, list[str]] = {}
    for dataset in datasets(cfg):
        for source, langs in raw_sources(cfg, dataset).items():
            plan[source] = list(dict.fromkeys(plan.get(source, []) + langs))
    return dict(sorted(plan.items()))


def download_manifest(cfg: dict, source: str) -> str:
    return f"{cfg['raw_root']}/manifests/{source}.json"


def download_langs(cfg: dict, source: str) -> list[str]:
    """The languages to fetch; [] (every language of the entry) for a source no paper reads."""
    return download_plan(cfg).get(source, [])


def raw_inputs(cfg: dict, dataset: str) -> list[str]:
    """What a prepare job waits for: the world (tiny preset), or its sources' download manifests."""
    if cfg.get("world"):
        return [f"{cfg['results']}/world/manifest.json"]
    return [download_manifest(cfg, source) for source in raw_sources(cfg, dataset)]


def data_all(cfg: dict) -> list[str]:
    """One download per real source (the catalog, less second routes to the same data, plus
    any route a configured paper reads) and every prepared dataset of the configured papers."""
    from xlt.sources.catalog import catalog

    entries = dict(download_plan(cfg))
    if not cfg.get("world"):
        entries.update({name: [] for name, src in catalog().items() if src.same_data_as is None and name not in entries})
    return [download_manifest(cfg, s) for s in sorted(entries)] + [data_dir(cfg, d) for d in datasets(cfg)]


# ---- crossmulti ---------------------------------------------------------------------------


def crossmulti_recipes(cfg: dict) -> dict[str, Recipe]:
    """The two training settings: `cross` (source language only) and `multi` (all)."""
    p = cfg["papers"]["crossmulti"]
    langs = tuple(cfg["language_sets"][p["languages"]])
    return {"cross": Recipe((p["source"],), p["hparams"]), "multi": Recipe(langs, p["hparams"])}


def crossmulti_table2_inputs(cfg: dict) -> list[str]:
    p = cfg["papers"]["crossmulti"]
    return [
        eval_file(cfg, p["encoder"], "pretrained", dataset_name(cfg, "crossmulti", task), recipe.name, seed, "test", p["languages"])
        for task in p["tasks"]
        for recipe in crossmulti_recipes(cfg).values()
        for seed in p["seeds"]
    ]


# ---- data-size tables (Table 1 of crossmulti, dlfa, underspec) ----------------------------

STATS_TABLES = ("crossmulti", "dlfa", "underspec")  # their table1 counts the prepared data


def stats_table_spec(cfg: dict, paper: str) -> dict:
    """What a paper's data-size table counts: per task, its dataset and languages (and, for
    UD tasks, the treebank selection, which the table's notes name)."""
    tasks = {}
    for task in cfg["papers"][paper]["tasks"]:
        dataset = dataset_name(cfg, paper, task)
        tasks[task] = {"dataset": dataset, "languages": paper_languages(cfg, paper, task)}
        if get_task(task).source == "ud":
            tasks[task]["ud"] = ud_selection(cfg, treebank_set_of(dataset))
    return {"paper": paper, "tasks": tasks}


def stats_table_inputs(cfg: dict, paper: str) -> list[str]:
    """The prepared data folders (their manifest.json holds the counts)."""
    return [data_dir(cfg, spec["dataset"]) for spec in stats_table_spec(cfg, paper)["tasks"].values()]


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

TABLES = {"crossmulti": ["table1", "table2"], "dlfa": ["table1"], "underspec": ["table1"]}
# Papers whose results are figures: paper -> the function listing the figure files.
FIGURES = {"underspec": underspec_figures}


def all_tables(cfg: dict) -> list[str]:
    from xlt.align.targets import align_tables  # the alignment stage's AER table and L2 figures

    return [f for paper, tables in TABLES.items() if paper in cfg["papers"] for t in tables for f in table_files(cfg, paper, t)] + all_figures(cfg) + align_tables(cfg)


def all_figures(cfg: dict) -> list[str]:
    return [f for paper, files in FIGURES.items() if paper in cfg["papers"] for f in files(cfg)]


def paper_figures(cfg: dict, paper: str) -> list[str]:
    return FIGURES[paper](cfg) if paper in FIGURES and paper in cfg["papers"] else []


def paper_tables(cfg: dict, paper: str) -> list[str]:
    return [f for t in TABLES.get(paper, []) for f in table_files(cfg, paper, t)]


def ensure_dir(path: str | Path) -> Path:
    Path(path).mkdir(parents=True, exist_ok=True)
    return Path(path)
