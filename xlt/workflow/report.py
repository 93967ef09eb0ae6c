"""What a user reads: the index of every table and figure, and the captions of the
Snakemake report (`snakemake --report report.html`, report/*.rst), both from the paper
plugins (xlt.papers).

    write_index(files, "results/tables/index.md")   # files: results/{tables,figures}/<paper>/<item>.<ext>
    rst_caption(slug, "table2")                     # a report caption, escaped for reStructuredText
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from xlt.workflow import paper_targets as P
from xlt.align.targets import CAPTIONS, TITLES
from xlt.errors import XltError
from xlt.io import write_text
from xlt.paperkit.published import paper_title

KINDS = {"tables": "Tables", "figures": "Figures"}  # results/<kind>/<paper>/<item>.<ext>
READABLE = ("md", "png")  # linked first: the form a reader opens


def parse_item(path: str) -> tuple[str, str, str, str]:
    """(kind, paper, item, ext) of a table or figure file under the path grammar."""
    p = Path(path)
    if p.parent.parent.name not in KINDS or "." not in p.name:
        raise XltError(f"{path}: not a table or figure (results/tables|figures/<paper>/<item>.<ext>)")
    item, ext = p.name.split(".", 1)
    return p.parent.parent.name, p.parent.name, item, ext


# What marks a table that shows the paper's numbers alone (xlt.papers.published_only): it looks
# like a computed one otherwise.
PUBLISHED_ONLY = "published numbers only (nothing computes ours under this config)"


def index_markdown(files: list[str], index_path: str, figure_notes: dict | None = None,
                   published_only: list[str] = ()) -> str:
    """Markdown: per paper (title), each table and figure linked (every format) beside its
    caption, then what the paper's fidelity ledger says of its figures (`figure_notes`: paper ->
    [[note, [figure ids]]]). The tables among `published_only` (their files) are marked as such.
    Links are relative to the index's folder; order: the order of `files`."""
    entries: dict[str, dict[str, dict[str, list[str]]]] = {}  # paper -> kind -> item -> links
    marked = {parse_item(f)[1:3] for f in published_only}
    for f in files:
        kind, paper, item, _ = parse_item(f)
        rel = os.path.relpath(f, os.path.dirname(index_path) or ".")
        entries.setdefault(paper, {k: {} for k in KINDS})[kind].setdefault(item, []).append(rel)
    lines = ["# Tables and figures", "",
             "Every table (paper · ours · Δ) and figure the workflow made, beside its paper's caption.", ""]  # fmt: skip
    for paper, kinds in entries.items():
        lines += [f"## {paper}: {_title(paper)}", ""]
        for kind, items in kinds.items():
            if items:
                lines += [f"{KINDS[kind]}:", ""]
                lines += [f"- {_links(paper, links)}: {f'**{PUBLISHED_ONLY}**. ' * ((paper, item) in marked)}"
                          f"{_caption(paper, item)}" for item, links in items.items()]
                lines.append("")
        shown = set(kinds["figures"])
        notes = [(n, [f for f in figs if f in shown]) for n, figs in (figure_notes or {}).get(paper, [])]
        if notes := [(n, figs) for n, figs in notes if figs]:
            lines += [f"Settings beside the paper, for its figures (from {paper}'s fidelity ledger):", ""]
            lines += [f"- ({', '.join(figs)}) {n}" for n, figs in notes]
            lines.append("")
    return "\n".join(lines)


def _title(paper: str) -> str:
    if paper in P.PAPERS:
        return P.title(paper)
    if paper in TITLES:
        readers = [slug for slug, p in P.PAPERS.items() if p.reads_alignment and not p.standalone]  # the papers of the index
        return TITLES[paper].format(readers=f"the {' and '.join(readers)} paper{'s' * (len(readers) > 1)}")
    return paper_title(paper)


def _caption(paper: str, item: str) -> str:
    """A plugin's caption, else the one of the stage that makes the item (xlt.align.targets)."""
    plugin = P.PAPERS.get(paper)
    if (paper, item) in CAPTIONS and not (plugin and item in {i.id for i in (*plugin.tables, *plugin.figures)}):
        return CAPTIONS[(paper, item)]
    return P.caption(paper, item)


def _links(paper: str, links: list[str]) -> str:
    first, *more = sorted(links, key=lambda r: Path(r).suffix[1:] not in READABLE)
    also = f" ({', '.join(f'[{Path(r).suffix[1:]}]({r})' for r in more)})" if more else ""
    return f"[{paper}/{Path(first).name}]({first}){also}"


def write_index(files: list[str], out: str, figure_notes: dict | None = None, published_only: list[str] = ()) -> None:
    if not files:
        raise XltError(f"{out}: no table or figure to list")
    write_text(out, index_markdown(files, out, figure_notes, published_only))


def rst_escape(text: str) -> str:
    """Plain text as reStructuredText: inline markup characters backslash-escaped."""
    return re.sub(r"([\\`*_|\[\]<>])", r"\\\1", text)


def rst_caption(paper: str, item: str, published_only: bool = False) -> str:
    """A report caption: the paper (slug and title), then the table's or figure's caption (a
    published-only table marked first)."""
    mark = f"*{rst_escape(PUBLISHED_ONLY)}*. " if published_only else ""
    return f"**{paper}** ({rst_escape(_title(paper))}): {mark}{rst_escape(_caption(paper, item))}"
