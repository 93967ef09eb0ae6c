"""What each paper's tables and figures are, read from the registry (the paper plugins) and the
two configs, never typed by hand: ours on the tiny preset (`make tables`), planned on
config.yaml only (full scale), or published only (the paper's numbers are in the repo, nothing
computes ours yet, or an option is off).

docs/papers.md's table of the papers (its page, its settings beside it and what the tiny preset
trims, the same three columns) is generated here too (`make status` writes both).

    python -m xlt.workflow.status                 # print the Markdown table
    python -m xlt.workflow.status --write README.md   # replace the block between the README's markers
    python -m xlt.workflow.status --check README.md   # exit 1 if that block differs (tests/test_readme.py)
    python -m xlt.workflow.status --write docs/papers.md  # its table of the papers (tests/test_paper_config.py)
"""

from __future__ import annotations

import argparse
import re
import sys
from itertools import groupby
from pathlib import Path

from xlt import fidelity
from xlt.workflow import paper_targets as P
from xlt.workflow.config import REPO, load_configs
from xlt.papers.config_files import declared, layer, paper_file
from xlt.paperkit.published import list_published

BEGIN = "<!-- status: generated from the paper plugins; regenerate with: python -m xlt.workflow.status --write README.md -->"
END = "<!-- /status -->"
PAPERS_BEGIN = "<!-- papers: generated from the paper plugins; regenerate with: python -m xlt.workflow.status --write docs/papers.md -->"
PAPERS_END = "<!-- /papers -->"
TINY = REPO / "presets" / "tiny.yaml"


def _label(item: str) -> tuple[str, str]:
    """("Table", "2") of table2, ("Figure", "A1") of figa1; other ids as they are."""
    for prefix, kind in (("table", "Table"), ("fig", "Figure")):
        if item.startswith(prefix) and item[len(prefix):]:
            rest = item[len(prefix):].replace("_", " ")
            return kind, rest[0].upper() + rest[1:]
    return "", item


def _ranges(names: list[str]) -> list[str]:
    """1, 2, 3, 5 -> 1–3, 5; A1, A2 -> A1–A2 (consecutive numbers under one prefix)."""
    out = []
    parsed = [(m.group(1), int(m.group(2))) if (m := re.fullmatch(r"([A-Z]?)(\d+)", n)) else (n, None) for n in names]
    for _, run in groupby(enumerate(parsed), key=lambda x: (x[1][0], x[1][1] is None or x[1][1] - x[0])):
        run = [p for _, p in run]
        if run[0][1] is None:
            out += [p[0] for p in run]
        elif len(run) > 2:
            out.append(f"{run[0][0]}{run[0][1]}–{run[-1][0]}{run[-1][1]}")
        else:
            out += [f"{p[0]}{p[1]}" for p in run]
    return out


def describe(items: list[str]) -> str:
    """`Tables 1–6; Figures 1, A1–A4` of table1…table6, fig1, figa1…figa4; – of none."""
    parts = []
    for kind in ("Table", "Figure", ""):
        names = [n for k, n in map(_label, items) if k == kind]
        if names:
            word = f"{kind}{'s' if len(names) > 1 else ''} " if kind else ""
            parts.append(word + ", ".join(_ranges(names)))
    return "; ".join(parts) or "–"


def paper_status(slug: str, tiny: dict, full: dict) -> dict[str, list[str]]:
    """{"tiny": [...], "full_only": [...], "published_only": [...]} of one paper's table and figure ids."""
    paper = P.get_paper(slug)
    ours = {t.id: (bool(t.inputs(tiny)), bool(t.inputs(full))) for t in paper.tables}
    tiny_figs, full_figs = set(P.figure_names(tiny, slug)), set(P.figure_names(full, slug))
    tables = [t.id for t in paper.tables]
    published = [t for s, t in list_published() if s == slug]
    return {
        "tiny": [t for t in tables if ours[t][0]] + [f.id for f in paper.figures if f.id in tiny_figs],
        "full_only": [t for t in tables if ours[t][1] and not ours[t][0]]
                     + [f.id for f in paper.figures if f.id in full_figs - tiny_figs],
        "published_only": [t for t in published if not any(ours.get(t, ()))],
    }


def tiny_made(slug: str, items: list[str]) -> str:
    """The tiny column of a paper: its items, and for a standalone study (Paper.standalone) that its
    own target makes them, not `make tables`."""
    return describe(items) + (f" (its own target `{slug}_all`, not in `make tables`)" if P.PAPERS[slug].standalone else "")


def status_table() -> str:
    """The Markdown table of every registered paper, in registry order."""
    tiny, full = load_configs([TINY]), load_configs([])
    rows = ["| slug | paper | ours on the tiny preset (`make tables`) | planned on config.yaml only | published only |",
            "|---|---|---|---|---|"]
    for slug in P.PAPERS:
        st = paper_status(slug, tiny, full)
        rows.append(f"| `{slug}` | {P.title(slug)} | {tiny_made(slug, st['tiny'])} | {describe(st['full_only'])} "
                    f"| {describe(st['published_only'])} |")
    return "\n".join(rows)


def _link(path: Path, page: Path) -> str:
    """`path` as a Markdown link from `page` (both in the repository)."""
    rel = Path(*[".."] * (len(page.relative_to(REPO).parts) - 1), path.relative_to(REPO)).as_posix()
    return f"[{path.relative_to(REPO).as_posix()}]({rel})"


def papers_table(page: Path = REPO / "docs" / "papers.md") -> str:
    """docs/papers.md's table: each registered paper's page, its settings (xlt/papers/<slug>/
    config.yaml: its block and profiles; presets/tiny.yaml: what the tiny preset sets) and status."""
    tiny, full = load_configs([TINY]), load_configs([])
    profiles = {label: sorted(data.get("hparams", {})) for label, data in layer()}
    trims = {label: data for label, data in layer("tiny")}
    rows = ["| paper | page | its settings (profiles) | the tiny preset sets | ours on the tiny preset "
            "| planned on config.yaml only | published only |",
            "|---|---|---|---|---|---|---|"]
    for slug in P.PAPERS:
        st = paper_status(slug, tiny, full)
        defaults, preset = paper_file(slug), paper_file(slug, "tiny")
        own = profiles.get(defaults.relative_to(REPO).as_posix(), [])
        settings = (f"{_link(defaults, page)} ({', '.join(own) or 'none'})" if defaults.is_file() else "–")
        trim = trims.get(preset.relative_to(REPO).as_posix())
        trimmed = "–" if trim is None else (
            _link(preset, page) + ": " + ", ".join([f"`{k}`" for k in (trim.get("papers") or {}).get(slug, {})]
                                                   + [f"`{k}`" for k in declared(trim)]))
        rows.append(f"| `{slug}`: {P.title(slug)} | {_link(REPO / 'xlt' / 'papers' / slug / 'README.md', page)} "
                    f"| {settings} | {trimmed} | {tiny_made(slug, st['tiny'])} | {describe(st['full_only'])} "
                    f"| {describe(st['published_only'])} |")
    return "\n".join(rows)


def block() -> str:
    return f"{BEGIN}\n{status_table()}\n{END}"


def papers_block() -> str:
    return f"{PAPERS_BEGIN}\n{papers_table()}\n{PAPERS_END}"


def ledger_block() -> str:
    """docs/papers.md's list of each paper's deviations and silent-paper choices (xlt.fidelity)."""
    return fidelity.ledger_block(P.PAPERS)


# (begin marker, end marker, the generated block) of each block a file may hold
BLOCKS = ((BEGIN, END, block), (PAPERS_BEGIN, PAPERS_END, papers_block),
          (fidelity.LEDGER_BEGIN, fidelity.LEDGER_END, ledger_block))


def current_block(text: str, where: str, begin: str = BEGIN, end_marker: str = END) -> str:
    start, end = text.find(begin), text.find(end_marker)
    if start < 0 or end < start:
        raise SystemExit(f"error: {where}: no status block (a line {begin!r} … {end_marker!r})")
    return text[start:end + len(end_marker)]


def blocks_of(text: str, where: str) -> list[tuple[str, str]]:
    """(current, generated) of every generated block `text` holds; none fails naming the markers."""
    found = [(current_block(text, where, b, e), make()) for b, e, make in BLOCKS if b in text]
    if not found:
        raise SystemExit(f"error: {where}: no generated block (a line {BEGIN!r} or {PAPERS_BEGIN!r})")
    return found


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m xlt.workflow.status", description=__doc__.split("\n\n")[0])
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="FILE", action="append", help="replace FILE's generated blocks (repeatable)")
    group.add_argument("--check", metavar="FILE", action="append",
                       help="exit 1 if FILE's generated blocks are not the generated ones (repeatable)")
    a = ap.parse_args(argv)
    if not (a.write or a.check):
        print(status_table())
        return
    stale = []
    for name in a.write or a.check:
        path = Path(name)
        text = path.read_text(encoding="utf-8")
        for old, new in blocks_of(text, str(path)):
            text = text.replace(old, new)
            stale += [path] if old != new else []
        if a.write:
            path.write_text(text, encoding="utf-8")
    if a.check and stale:
        print(f"error: {stale[0]}: the status block is stale; regenerate with: python -m xlt.workflow.status --write {stale[0]}",
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
