"""The registry of the papers: `PAPERS` maps a slug to its `Paper` (xlt.paperkit.base), one
plugin package xlt/papers/<slug>/ each, and the lookups by name. It changes no other module:
what the workflow derives from the papers (targets, recipes' settings, claims) is
xlt.dag.paper_targets; what the table, figure and claims jobs run is xlt.stages.paper_outputs;
what a paper imports is the kit, xlt.paperkit.

Adding a paper: docs/adding-a-paper.md.
"""

from __future__ import annotations

import types

from xlt.errors import XltError, unknown
from xlt.paperkit.base import Figure, Paper, Table


def _registered(namespace: dict) -> dict[str, Paper]:
    """The papers of the plugins imported on the registry's line below, in that line's order
    (the order of this module's names): each a package xlt.papers.<slug> whose PAPER has that slug."""
    out = {}
    for module in namespace.values():
        if isinstance(module, types.ModuleType) and module.__name__.startswith(f"{__name__}.") and hasattr(module, "PAPER"):
            folder = module.__name__.rsplit(".", 1)[1]
            if module.PAPER.slug != folder:
                raise XltError(f"xlt/papers/{folder}/__init__.py: PAPER's slug is {module.PAPER.slug!r}; a paper's slug is its folder's name")
            out[folder] = module.PAPER
    return out


# The registry: every paper's plugin (xlt/papers/<slug>/), in the order the targets, the tables'
# index and the report list them. A paper joins by its name on this line and nowhere else.
from xlt.papers import crossmulti, dlfa, adjust, underspec, xmixup, versus  # noqa: E402, I001

PAPERS: dict[str, Paper] = _registered(globals())

__all__ = ["PAPERS", "configured", "get_figure", "get_paper", "get_table"]


def get_paper(slug: str) -> Paper:
    try:
        return PAPERS[slug]
    except KeyError:
        raise unknown("paper", slug, PAPERS) from None


def get_table(slug: str, table_id: str) -> Table:
    tables = {t.id: t for t in get_paper(slug).tables}
    if table_id not in tables:
        raise unknown(f"table of paper {slug}", table_id, tables)
    return tables[table_id]


def get_figure(slug: str, figure_id: str) -> Figure:
    figures = {f.id: f for f in get_paper(slug).figures}
    if figure_id not in figures:
        raise unknown(f"figure of paper {slug}", figure_id, figures)
    return figures[figure_id]


def configured(cfg: dict) -> list[str]:
    """The registered papers the config has a block for, in registry order."""
    return [slug for slug in PAPERS if slug in cfg["papers"]]
