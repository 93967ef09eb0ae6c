"""The path grammar and every target list, computed here (tested) rather than in .smk files.

    results/world/manifest.json                                   the synthetic world
    results/encoders/{encoder}/                                   an encoder built in the DAG
    results/data/{task}/                                          normalised data ({lang}/{split}.jsonl)
    results/models/{encoder}/{init}/{task}/{recipe}/seed{seed}/   a fine-tuned model
    results/eval/{encoder}/{init}/{task}/{recipe}/seed{seed}/{split}.{langset}.json
    results/tables/{paper}/{table}.{csv,md,tex}

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
    for paper in cfg["papers"].values():
        if task in paper.get("tasks", []):
            langs += cfg["language_sets"][paper["languages"]]
    if not langs:
        raise XltError(f"no configured paper uses task {task!r}")
    return list(dict.fromkeys(langs))


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


# ---- all tables ---------------------------------------------------------------------------

TABLES = {"crossmulti": ["table2"]}


def all_tables(cfg: dict) -> list[str]:
    return [f for paper, tables in TABLES.items() if paper in cfg["papers"] for t in tables for f in table_files(cfg, paper, t)]


def paper_tables(cfg: dict, paper: str) -> list[str]:
    return [f for t in TABLES.get(paper, []) for f in table_files(cfg, paper, t)]


def ensure_dir(path: str | Path) -> Path:
    Path(path).mkdir(parents=True, exist_ok=True)
    return Path(path)
