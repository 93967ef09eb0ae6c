"""The papers' additions to the engine: each paper's recipe module (xlt/papers/<slug>/recipe.py,
where it has one) registers its model extras (xlt.engine.extras) and fine-tune extensions
(xlt.engine.recipes.extensions) when imported. The engine imports no paper: `load_recipes` is
the package's entry point of group `xlt.engine` (pyproject.toml), which the engine calls when a
registry is asked a name it does not know (xlt.engine.plugins), and the fork server before it
forks. Torch: a recipe module imports the engine, so only a job loads them, never the DAG."""

from __future__ import annotations

import importlib
import importlib.util

from xlt.papers import PAPERS

RECIPE = "recipe"  # the module of a paper's package that registers its extras and fine-tune extensions


def load_recipes() -> list[str]:
    """Import every registered paper's recipe module; return their names (loaded once per process)."""
    names = [f"{__package__}.{slug}.{RECIPE}" for slug in PAPERS]
    names = [n for n in names if importlib.util.find_spec(n) is not None]
    for name in names:
        importlib.import_module(name)
    return names
