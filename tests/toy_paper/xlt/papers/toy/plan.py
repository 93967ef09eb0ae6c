"""The toy paper's plan: what its rule and its table read (no pandas: the workflow reads it to plan)."""

from __future__ import annotations

from xlt.dag.targets import data_dir, dataset_name, paper_languages

SLUG = "toy"
SPLIT = "test"  # the split Table 1 counts


def count_inputs(cfg: dict) -> list[str]:
    """The prepared data folders the count job reads: one per task of papers.toy.tasks."""
    return [data_dir(cfg, dataset_name(cfg, SLUG, task)) for task in cfg["papers"][SLUG]["tasks"]]


def counts_file(cfg: dict) -> str:
    """What the count job writes (rule toy_count)."""
    return f"{cfg['results']}/{SLUG}/counts.json"


def table1_inputs(cfg: dict) -> list[str]:
    return [counts_file(cfg)]


def table1_spec(cfg: dict) -> dict:
    """What Table 1's builder gets: per task, its dataset and languages (xlt.paperkit.datasize's spec)."""
    tasks = {task: {"dataset": dataset_name(cfg, SLUG, task), "languages": paper_languages(cfg, SLUG, task)}
             for task in cfg["papers"][SLUG]["tasks"]}
    return {"paper": SLUG, "tasks": tasks, "world": bool(cfg.get("world"))}
