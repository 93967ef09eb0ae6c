"""What the papers add to the engine's registries (model extras: xlt.engine.extras; fine-tune
extensions: xlt.engine.recipes.extensions), loaded where the engine first needs them.

The engine imports no paper. The package declares, as entry points of group `GROUP` in
pyproject.toml, the functions that import the modules which register (the papers' recipe
modules: xlt.papers.recipes.load_recipes). A registry asked for a name it does not know calls
`load_plugins()` once and looks again, so every process that builds or loads a model (a job, a
benchmark, a notebook) finds a paper's extra in a saved spec without importing the paper
itself; the fork server loads them before it forks (xlt.process.zygote).
"""

from __future__ import annotations

from importlib.metadata import entry_points

GROUP = "xlt.engine"  # the entry-point group of the loaders (pyproject.toml)
_loaded: list[str] | None = None  # the loaders called in this process (None: not yet)


def load_plugins() -> list[str]:
    """Call every loader of `GROUP` once per process (in name order); return them as
    "name = module:function"."""
    global _loaded
    if _loaded is None:
        _loaded = []  # set first: a loader's modules may ask a registry while they import
        try:
            for ep in sorted(entry_points(group=GROUP), key=lambda ep: ep.name):
                ep.load()()
                _loaded.append(f"{ep.name} = {ep.value}")
        except BaseException:
            _loaded = None  # a failed loader fails again, with its own error, where it is asked next
            raise
    return list(_loaded)


def loaded_note() -> str:
    """What an unknown name's error adds: which loaders ran, or that none is installed."""
    loaded = load_plugins()
    if loaded:
        return f"(loaded the plugins of entry-point group {GROUP!r}: {'; '.join(loaded)})"
    return (f"(no plugin loaded: the package declares none of entry-point group {GROUP!r} here, so no paper "
            "registered its extras; install the package, `make install`, whose metadata declares them)")
