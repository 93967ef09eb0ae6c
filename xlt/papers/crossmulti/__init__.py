"""crossmulti: Enhancing Cross-Lingual Training with Knowledge Learned from Multi-Lingual Training.

Recipes: `cross` (the source language only) and `multi` (all four languages), one hparams
profile. Tables: 1 (data sizes) and 2 (cross vs multi, four tasks × four languages).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from xlt.papers import datasize
from xlt.papers.base import Paper, Table
from xlt.published import load_published
from xlt.tables import COLLAPSE_NOTE, eval_rows, paper_vs_ours, render_grid
from xlt.targets import Recipe, dataset_name, eval_file, task_of

SLUG = "crossmulti"


def recipes(cfg: dict) -> dict[str, Recipe]:
    """The two training settings: `cross` (source language only) and `multi` (all)."""
    p = cfg["papers"][SLUG]
    langs = tuple(cfg["language_sets"][p["languages"]])
    return {"cross": Recipe((p["source"],), p["hparams"]), "multi": Recipe(langs, p["hparams"])}


def model_setting(model: str) -> dict:
    """task, setting (`cross`: one training language, else `multi`) and seed of a model
    directory, from its path (…/{task}/{recipe}/seed{seed})."""
    path = Path(model)
    recipe = Recipe.parse(path.parent.name)
    return {"task": task_of(path.parent.parent.name), "setting": "cross" if len(recipe.train_langs) == 1 else "multi",
            "seed": int(path.name.removeprefix("seed"))}


def table2_inputs(cfg: dict) -> list[str]:
    p = cfg["papers"][SLUG]
    return [
        eval_file(cfg, p["encoder"], "pretrained", dataset_name(cfg, SLUG, task), recipe.name, seed, "test", p["languages"])
        for task in p["tasks"]
        for recipe in recipes(cfg).values()
        for seed in p["seeds"]
    ]


def table2(spec: dict, inputs: list[str]) -> tuple[pd.DataFrame, str, str]:
    source = spec["source"]
    ours = eval_rows(inputs, spec["metric"], lambda r: "cross" if r.train_langs == (source,) else "multi")
    published = load_published(SLUG, "table2")
    published = published[published["task"].isin(spec["tasks"])]
    keys = ["task", "setting", "lang"]
    table = paper_vs_ours(ours, published, keys)
    seeds = sorted(ours["seed"].unique().tolist())
    notes = [
        "Metric (×100): " + ", ".join(f"{t} {m}" for t, m in spec["metric"].items() if t in spec["tasks"])
        + f". Encoder: {spec['encoder']}. Seeds: {seeds}.",
        "cross = fine-tuned on the source language only; multi = on all four languages.",
        COLLAPSE_NOTE,
    ]
    md, tex = render_grid(table, ["task", "setting"], "lang", "crossmulti Table 2: cross- vs multi-lingual fine-tuning", notes)
    return table, md, tex


def table1(spec: dict, inputs: list[str]) -> tuple[pd.DataFrame, str, str]:
    ours, published = datasize.counts(SLUG, spec, inputs)
    ours = ours[ours["split"].isin(published["split"].unique())]  # the paper prints train and test
    table = datasize.counts_vs_paper(ours, published, ["task", "split", "lang"])
    notes = [
        "UD ES: the paper's 14,035 training sentences beside AnCora's test size (1,721) read as "
        "AnCora's 14,305 with two digits swapped (docs/papers.md).",
        "MARC: the mteb/amazon_reviews_multi mirror (the original was withdrawn).",
    ]
    md, tex = datasize.render(table, ["task", "split"], "lang", "crossmulti Table 1: training and test set sizes", spec, notes)
    return table, md, tex


PAPER = Paper(
    SLUG,
    tables=(
        datasize.table(SLUG, table1),
        Table("table2", inputs=table2_inputs, build=table2),
    ),
)
