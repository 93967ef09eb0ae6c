"""What a paper plugin declares: its tables, its figures, the check of its config block, the
recipe tags it spells extras with, and what the full-scale bill needs of it.

A plugin is the package `xlt/papers/<slug>/` that defines `PAPER = Paper(...)`, beside its
config schema (`schema.yaml`), published numbers (`published/`) and page (`README.md`). The
registry (`xlt.papers.PAPERS`) is built from those packages; the target lists, the generic
table rule, the report, the config check and the bill are derived from it, so adding a table
touches the plugin, its published CSV and index entry, and a test (docs/adding-a-paper.md).

A table or figure is a file family under the path grammar of `xlt.dag.targets`:
`results/tables/<paper>/<table>.{csv,md,tex}`, `results/figures/<paper>/<figure>.{png,pdf,csv}`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the annotation only: the registry hands the kinds to the path grammar
    from xlt.dag.targets import AuxKind, InitKind

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
class RecipeTags:
    """A paper's spelling of an extra in a recipe's hparams, `<profile>-<tag>` (e.g. dlfa's
    `underspec-dlfa8`): the recipe trains the profile with one more extra, and the path names it."""

    grammar: str  # what the tags look like, for messages, e.g. "dlfa<layer>[-global|-local][-gated]"
    # tag -> the extra it adds ({"name": …, **parameters}); None: not this paper's grammar;
    # XltError: this paper's grammar, misspelt
    extra_of: Callable[[str], dict | None]


@dataclass(frozen=True)
class DataSize:
    """Examples of one split as a paper prints them: the bill's count of data not prepared."""

    task: str
    lang: str | None  # None: one count for every language of the task
    split: str
    examples: int
    where: str  # the count's source, e.g. "published dlfa table1"
    # the bill takes the lowest rank first: 0 counted per language, 1 per language as printed
    # (not re-derived from the release), 2 one count for every language, 3 an upper bound
    rank: int


@dataclass(frozen=True)
class BillRule:
    """A rule that runs an encoder for the paper (its own, or a shared one only it asks for),
    priced by xlt.workflow.bill from its output path."""

    rule: str
    output: re.Pattern  # its priced output, relative to the results folder; the groups are wildcards
    # (config, wildcards, xlt.workflow.bill.Examples) -> the job's work (xlt.dag.work.Work: tokens per workload)
    price: Callable[[dict, dict, object], list]
    # (config, wildcards) -> the encoder of a job whose path names none; None: the `encoder` wildcard
    encoder: Callable[[dict, dict], str] | None = None
    # True: its forwards run xlt.engine's evaluation path (config `evaluation`: bf16, token-budget
    # batches), priced as such
    engine_eval: bool = False


@dataclass(frozen=True)
class PaperBill:
    """What the full-scale bill (xlt.workflow.bill) needs of a paper beyond its recipes' fine-tunes and
    evaluations, declared in its bill module (xlt/papers/<slug>/bill.py)."""

    rules: tuple[BillRule, ...] = ()
    # an extra's name (hparams `extras`) -> a fine-tune's training work with it, as a multiple of
    # the same recipe's without it (e.g. 2: the extra trains on both sides of every pair)
    train_multiples: dict[str, float] = field(default_factory=dict)
    # the paper's rules that run no encoder -> why (the bill lists them as costing no device time)
    no_device_time: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Paper:
    slug: str
    tables: tuple[Table, ...] = ()
    figures: tuple[Figure, ...] = ()
    # config -> every file the figures read (one list for all: a figure job sees every grid)
    figure_inputs: Callable[[dict], list[str]] | None = None
    # (spec, input files, out_dir, figure id) -> writes <out_dir>/<figure>.{png,pdf,csv}
    draw: Callable[[dict, list[str], str, str], object] | None = None
    # config -> the JSON `draw` gets; None: the paper's config block (papers.<slug>)
    figure_spec: Callable[[dict], dict] | None = None
    # (config, papers.<slug>) -> None; raises XltError naming the key. The generic checks of
    # xlt.workflow.config (encoder, hparams, language sets, tasks, metrics) run for every paper.
    check: Callable[[dict, dict], None] | None = None
    recipe_tags: RecipeTags | None = None
    # () -> the data sizes its tables print (xlt.workflow.bill's counts of data not prepared)
    data_sizes: Callable[[], Iterable[DataSize]] | None = None
    bill: PaperBill = field(default_factory=PaperBill)
    # the wildcards of its own rules' paths -> their regex (joined to xlt.dag.targets.WILDCARDS)
    wildcards: dict[str, str] = field(default_factory=dict)
    # the encoder inits its rules make (xlt.dag.targets.InitKind: `<method>-…` in the encoders'
    # path grammar) and the aux-set kinds it adds (kind -> its streams, xlt.dag.targets.AuxKind):
    # registered with xlt.dag.targets when the registry is built
    inits: tuple[InitKind, ...] = ()
    aux_kinds: dict[str, AuxKind] = field(default_factory=dict)
    # config -> {model directory: target languages} of the models whose fine-tune also selects per
    # target language on its dev set (oracle selection, xlt.stages.finetune's `oracle_langs`)
    oracle_models: Callable[[dict], dict[str, list[str]]] | None = None
    # config -> the model directories its own rules read (a grid's models), beside those in its
    # tables' and figures' inputs: the seeds xlt.workflow.packs trains together (config engine.pack)
    models_read: Callable[[dict], list[str]] | None = None
    # True: its models read the alignment stage's aligned pairs (xlt.align), so its bitext is
    # among the downloads a run needs (xlt.dag.targets.download_plan; `prefetch` fetches it)
    reads_alignment: bool = False
    # True: its tables explain published cells without ours in free-text notes, not yet per cell
    # (xlt.tables.account); make_table then checks only that no published cell is dropped
    reasons_in_notes: bool = False
    # the file of its findings beside the plugin (xlt/papers/<slug>/claims.yaml): each claim of its
    # abstract and conclusion, the cells it compares and the test that decides it (xlt.claims)
    claims: str | None = None
    # the module declaring its jobs, `JOBS = {name: function}` (xlt/papers/<slug>/jobs.py): what
    # its rules run as `paper_job.py <slug> <job> --option …`, each option read from the function's
    # signature (xlt.papers.job_cli). A module name: imported by that script alone (jobs load torch)
    jobs: str | None = None
    # True: a study beside the papers (e.g. the methods compared on one encoder), made by its own
    # targets (`<slug>_<item>`, `<slug>_all`) alone: not in all_tables, the tables' index or the
    # claims page, so that `make tables` runs exactly what it ran before the study was added
    standalone: bool = False
