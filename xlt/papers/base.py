"""What a paper plugin declares: its tables, its figures and the check of its config block.

A plugin is one module of `xlt.papers` (a package for a paper with its own analysis code)
that defines `PAPER = Paper(...)`. The registry (`xlt.papers.PAPERS`) is built from those
modules; the target lists, the generic table rule and the report are derived from it, so
adding a table touches the plugin, the config (+ schema), the published CSV and a test.

A table or figure is a file family under the path grammar of `xlt.targets`:
`results/tables/<paper>/<table>.{csv,md,tex}`, `results/figures/<paper>/<figure>.{png,pdf,csv}`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# (paper config block or a table's own spec, input files) -> (long table, Markdown, LaTeX)
TableBuilder = Callable[[dict, list[str]], tuple]


@dataclass(frozen=True)
class Table:
    """One table, rendered by the generic rule `paper_table` from the files `inputs` lists."""

    id: str  # the file stem and the published table id, e.g. "table2"
    inputs: Callable[[dict], list[str]]  # config -> the files the builder reads (the DAG edges)
    build: TableBuilder
    # config -> the JSON the builder gets; None: the paper's config block (papers.<slug>)
    spec: Callable[[dict], dict] | None = None
    # what the report and the index say; None: the published caption (xlt/papers/<slug>/published/index.yaml)
    caption: str | None = None


@dataclass(frozen=True)
class Figure:
    """One figure, drawn by the generic rule `paper_figure` from the files the paper's
    `figure_inputs` lists."""

    id: str  # the file stem, e.g. "fig2"
    caption: str
    # papers.<slug> -> whether the config makes this figure (e.g. only when its task runs)
    when: Callable[[dict], bool] | None = None


@dataclass(frozen=True)
class Paper:
    slug: str
    tables: tuple[Table, ...] = ()
    figures: tuple[Figure, ...] = ()
    # config -> every file the figures read (one list for all: a figure job sees every grid)
    figure_inputs: Callable[[dict], list[str]] | None = None
    # (spec, input files, out_dir, figure id) -> writes <out_dir>/<figure>.{png,pdf,csv}
    draw: Callable[[dict, list[str], str, str], object] | None = None
    # (config, papers.<slug>) -> None; raises XltError naming the key. The generic checks of
    # xlt.config (encoder, hparams, language sets, tasks, metrics) run for every paper.
    check: Callable[[dict, dict], None] | None = None
