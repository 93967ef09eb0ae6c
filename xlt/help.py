"""`make help`: every make target and the main Snakemake targets, one line each, read from the
Makefile, the rules and the paper registry (nothing here is a copy to keep in step).

A make target's line is its `## …` comment (`tables: install  ## …`); a Snakemake target is a
rule with no output (an alias of files: `all_tables`, `data_all`, …), described by the comment
line right above it, plus the per-paper aliases the registry makes (`<slug>_all`, `<slug>_<table>`, `<slug>_claims`).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_MAKE_TARGET = re.compile(r"^([A-Za-z][\w-]*):(?!=)[^#]*(?:##\s*(.*))?$")
_RULE = re.compile(r"^rule (\w+):")


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


def paper_targets() -> list[tuple[str, str]]:
    """<slug>_all and <slug>_<table> of every registered paper (needs the installed packages)."""
    from xlt import papers as P

    out = []
    for slug, paper in P.PAPERS.items():
        tables = [t.id for t in paper.tables]
        out.append((f"{slug}_all", f"every table and figure of {slug} ({P.title(slug)})"))
        if tables:
            out.append((f"{slug}_<table>", f"one table of {slug}: {', '.join(tables)}"))
        if paper.claims:
            out.append((f"{slug}_claims", f"which of {slug}'s findings hold (results/claims/{slug}.md)"))
    out.append(("all_claims", "results/claims.md: which findings of every paper hold"))
    return out


def lines() -> list[str]:
    rows = [("make " + t, d) for t, d in make_targets()]
    snake = target_rules()
    try:
        snake += paper_targets()
    except ImportError:
        snake.append(("<paper>_all, <paper>_<table>", "per paper (listed once `make install` has run)"))
    width = max(len(n) for n, _ in rows + snake) + 2
    out = ["make targets (PRESET=… names the config files, layered in order; see README.md):"]
    out += [f"  {n:<{width}}{d}" for n, d in rows]
    out += ["", "Snakemake targets (.venv/bin/snakemake --cores all <target> --configfile presets/tiny.yaml):"]
    out += [f"  {n:<{width}}{d}" for n, d in snake]
    return out


def main() -> None:
    print("\n".join(lines()))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
