"""The end of a table or zero-shot target (`make <table>`, `snakemake zero_shot …`): the table's
first rows and its path, rather than only Snakemake's "Complete log(s)".

    python -m xlt.workflow.shown TARGET ... --configfile presets/tiny.yaml [my.yaml ...]

A target of one or two tables prints each (its first rows); a target of more (`<slug>_all`)
prints their paths, a figure its image and CSV. A table with the paper's numbers only under
the config says so. `all_tables` prints nothing (`make tables` lists its own).
"""

from __future__ import annotations

import sys
from pathlib import Path

from xlt.process.cli import ArgumentParser, run

ROWS = 12  # the table's lines printed (its header included); the rest is in the file
SHOWN_IN_FULL = 2  # a target of more tables lists their paths only
NOT_SHOWN = {"all_tables"}


def target_files(cfg: dict, target: str) -> list[str]:
    """The table and figure files a target makes: a paper's alias, zero_shot, or a file itself."""
    # deferred: loads numpy, pandas, yaml only when this runs
    from xlt.workflow import paper_targets as P
    from xlt import zeroshot as Z

    if target == "zero_shot":
        return Z.table_files(cfg)
    if "/" in target:
        return [target]
    return P.target_rules(cfg).get(target, [])


def table_lines(md: str | Path, rows: int = ROWS) -> list[str]:
    """The first `rows` lines of a Markdown table file, and how many more it has."""
    text = Path(md).read_text(encoding="utf-8").splitlines()
    more = len(text) - rows
    return text[:rows] + ([f"… {more} more lines in the file"] if more > 0 else [])


def shown_lines(cfg: dict, targets: list[str]) -> list[str]:
    """What to print after the targets were made (only files that exist)."""
    # deferred: loads numpy, pandas, yaml only when this runs
    from xlt.workflow import paper_targets as P
    from xlt.workflow.report import PUBLISHED_ONLY

    published = set(P.published_only(cfg))
    files = [f for t in targets if t not in NOT_SHOWN for f in target_files(cfg, t)]
    tables = [f for f in files if f.endswith(".md") and Path(f).is_file()]
    figures = [f for f in files if f.endswith((".png", ".csv")) and "/figures/" in f and Path(f).is_file()]
    out: list[str] = []
    for md in tables:
        mark = f"; {PUBLISHED_ONLY}" if md in published else ""
        if len(tables) <= SHOWN_IN_FULL:
            out += ["", *table_lines(md)]
        out.append(f"Table: {md} (also {', '.join(Path(md).with_suffix(s).name for s in ('.csv', '.tex'))}){mark}")
    if figures:
        out += ["Figures (image, and the CSV behind it):", *(f"  {f}" for f in figures)]
    return out


def after_success(cfg: dict, targets: list[str]) -> str:
    """`shown_lines` as text for the workflow's onsuccess: a courtesy after a run that succeeded,
    so a failure here is one line and never fails the run."""
    try:
        return "\n".join(shown_lines(cfg, targets))
    except Exception as e:  # noqa: BLE001  (whatever it is, the run's outputs are made)
        return f"xlt: no table shown ({type(e).__name__}: {e})"


def main(argv: list[str] | None = None) -> None:
    # deferred: loads jsonschema, numpy, pandas, yaml only when this runs
    from xlt import zeroshot as Z
    from xlt.workflow.config import load_configs

    ap = ArgumentParser(prog="python -m xlt.workflow.shown", description=__doc__.split("\n\n")[0])
    ap.add_argument("targets", nargs="+", help="the targets just made")
    ap.add_argument("--configfile", nargs="*", default=[], help="the config files of the run, in order")
    a = ap.parse_args(argv)
    cfg = load_configs(a.configfile)
    cfg["encoders"].update(Z.declared_encoders(cfg))  # as the workflow does (rules/common.smk)
    if lines := shown_lines(cfg, a.targets):
        print("\n".join(lines))


if __name__ == "__main__":
    run(main)
