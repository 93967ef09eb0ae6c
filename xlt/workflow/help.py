"""`make help`: every make target and the main Snakemake targets, one line each, read from the
Makefile, the rules and the paper registry (nothing here is a copy to keep in step).

A make target's line is its `## …` comment (`tables: install  ## …`); a Snakemake target is a
rule with no output (an alias of files: `all_tables`, `data_all`, …), described by the comment
line right above it, plus the per-paper aliases the registry makes (`<slug>_all`, and
`<slug>_<table>` / `<slug>_<figure>` for each table and figure, in paper order, `<slug>_claims`
and `all_claims`).

`python -m xlt.workflow.help --preset FILE…` marks the tables that show the paper's numbers
only under those config files (the Makefile passes PRESET).

`python -m xlt.workflow.help --check NAME…` is the gate our entry points (`make <target>`, `make plan`)
pass a target through before Snakemake runs: an unknown name stops with one line giving the
nearest names (Snakemake itself would say only "No rule to produce").
"""

from __future__ import annotations

import difflib
import re
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
_MAKE_TARGET = re.compile(r"^([A-Za-z][\w-]*):(?!=)[^#]*(?:##\s*(.*))?$")
_RULE = re.compile(r"^rule (\w+):")
_USE_RULE = re.compile(r"^use rule \w+ (?:from \w+ )?as (\w+)")


def make_targets(makefile: Path = REPO / "Makefile") -> list[tuple[str, str]]:
    """(target, its `##` line) of each phony target, in the Makefile's order."""
    text = makefile.read_text(encoding="utf-8")
    phony = {t for line in text.splitlines() if line.startswith(".PHONY:") for t in line.split(":", 1)[1].split()}
    out = []
    for line in text.splitlines():
        if (m := _MAKE_TARGET.match(line)) and m.group(1) in phony:
            out.append((m.group(1), (m.group(2) or "").strip()))
    return out


def target_rules(sources: list[Path] | None = None) -> list[tuple[str, str]]:
    """(rule, the comment line above it) of every rule without `output:`: the alias targets."""
    sources = sources or [REPO / "Snakefile", *sorted((REPO / "rules").glob("*.smk"))]
    out = []
    for path in sources:
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if not (m := _RULE.match(line)):
                continue
            body = []
            for nxt in lines[i + 1:]:
                if nxt and not nxt[0].isspace():
                    break
                body.append(nxt)
            if any(b.strip() == "output:" for b in body):
                continue
            above = lines[i - 1].strip() if i else ""
            out.append((m.group(1), above[1:].strip() if above.startswith("#") else ""))
    return out


# after a table target that shows the paper's numbers only under the preset (xlt.papers.published_only)
PUBLISHED_MARK = "*"


def published_only_targets(preset: list[str]) -> set[str]:
    """`<slug>_<table>` of each table that shows the paper's numbers alone under the preset's files."""
    # deferred: loads jsonschema, numpy, pandas, yaml only when this runs
    from xlt.workflow import paper_targets as P
    from xlt.workflow.config import load_configs

    cfg = load_configs(preset)
    return {f"{slug}_{t.id}" for slug in P.configured(cfg) for t in P.get_paper(slug).tables
            if P.is_published_only(cfg, slug, t.id)}


def paper_targets(published: set[str] = frozenset()) -> list[tuple[str, str]]:
    """<slug>_all and every <slug>_<table> / <slug>_<figure> of each registered paper, in paper
    order (needs the installed packages); the tables among `published` marked."""
    # deferred: loads numpy, pandas, yaml only when this runs
    from xlt.workflow import paper_targets as P

    out = []
    for slug in P.PAPERS:
        items = P.item_targets(slug)
        out.append((f"{slug}_all", f"every table and figure of {slug} ({P.title(slug)})"))
        table_ids = {t.id for t in P.PAPERS[slug].tables}
        tables = [f"{slug}_{i}" + PUBLISHED_MARK * (f"{slug}_{i}" in published) for i in items if i in table_ids]
        figures = [f"{slug}_{i}" for i in items if i not in table_ids]
        out += [("", f"{kind}: {' '.join(names)}") for kind, names in (("tables", tables), ("figures", figures)) if names]
        if P.PAPERS[slug].claims:
            out.append((f"{slug}_claims", f"which of {slug}'s findings hold (results/claims/{slug}.md)"))
    out.append(("all_claims", "results/claims.md: which findings of every paper hold"))
    return out


def declared_rules(path: Path) -> list[str]:
    """The rules a Snakefile or rules file declares by name (`rule x:`, `use rule y as x …`)."""
    return [m.group(1) for line in path.read_text(encoding="utf-8").splitlines()
            if (m := _RULE.match(line) or _USE_RULE.match(line))]


def rule_names(sources: list[Path] | None = None) -> set[str]:
    """Every rule the Snakefile and rules/*.smk declare by name."""
    sources = sources or [REPO / "Snakefile", *sorted((REPO / "rules").glob("*.smk"))]
    return {r for path in sources for r in declared_rules(path)}


def known_targets() -> set[str]:
    """What `make` and `snakemake` accept as a target name: make targets, rules and the papers' aliases."""
    # deferred: loads numpy, pandas, yaml only when this runs
    from xlt.workflow import paper_targets as P

    return {t for t, _ in make_targets()} | rule_names() | set(P.target_names())


def check_targets(names: list[str], known: set[str] | None = None) -> str | None:
    """One error line for the first unknown target name with the nearest known ones, or None.
    A path (with '/' or '.') is a file target: Snakemake's to judge."""
    known = known_targets() if known is None else known
    for name in names:
        if "/" in name or "." in name or name in known:
            continue
        close = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        return f"error: no target {name!r}{hint} (`make help` lists every target)"
    return None


def lines(preset: list[str] = ()) -> list[str]:
    rows = [("make " + t, d) for t, d in make_targets()]
    snake = target_rules()
    published: set[str] = set()
    try:
        published = published_only_targets(list(preset)) if preset else set()
        snake += paper_targets(published)
    except ImportError:
        snake.append(("<paper>_all, <paper>_<table>", "per paper (listed once `make install` has run)"))
    width = max(len(n) for n, _ in rows + snake) + 2
    out = ["make targets (PRESET=… names the config files, layered in order; see README.md):"]
    out += [f"  {n:<{width}}{d}" for n, d in rows]
    out += ["", "Snakemake targets (`make <target>`, or .venv/bin/snakemake --cores all <target> --configfile presets/tiny.yaml):"]
    for n, d in snake:
        if n:
            out.append(f"  {n:<{width}}{d}")
        else:  # a paper's tables or figures: every target named, wrapped under its paper
            out += textwrap.wrap(d, width=100, initial_indent=" " * (width + 2), subsequent_indent=" " * (width + 4),
                                 break_on_hyphens=False)  # fmt: skip
    if published:
        out += ["", f"{PUBLISHED_MARK} published numbers only on {' '.join(preset)}: the table shows the paper's numbers, "
                "nothing computes ours there"]
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--check"]:
        if line := check_targets(argv[1:]):
            print(line, file=sys.stderr)
            return 1
        return 0
    preset = argv[argv.index("--preset") + 1:] if "--preset" in argv else []
    print("\n".join(lines(preset)))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
