"""The papers' additions to fine-tuning: each paper's recipe module (xlt/papers/<slug>/recipe.py,
where it has one) registers its extensions with the engine when imported
(xlt.engine.recipes.extensions). The engine imports no paper, so whoever fine-tunes loads
them first: the workflow's fine-tuning job (workflow_scripts/finetune.py). Torch: a recipe
module imports the engine, so only a job loads them, never the DAG."""

from __future__ import annotations

import importlib
import importlib.util

from xlt.papers import PAPERS

RECIPE = "recipe"  # the module of a paper's package that registers its fine-tune extensions


def load_recipes() -> list[str]:
    """Import every registered paper's recipe module; return their names (loaded once per process)."""
    names = [f"{__package__}.{slug}.{RECIPE}" for slug in PAPERS]
    names = [n for n in names if importlib.util.find_spec(n) is not None]
    for name in names:
        importlib.import_module(name)
    return names
