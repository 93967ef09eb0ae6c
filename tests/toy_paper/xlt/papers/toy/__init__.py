"""toy: a paper of one table, kept in the tests (tests/test_toy_paper.py copies it into a copy of
the repository): the examples of each prepared test split, per language, beside the sizes the
dataset's paper prints. It shows what a paper is: this folder, rules/toy.smk and its name on the
registry's line (docs/adding-a-paper.md). This module only declares the paper: `plan` holds its
inputs (no pandas), `tables` builds the table, `jobs` is what its rule runs.
"""

from __future__ import annotations

from xlt.paperkit.base import Paper, PaperBill, Table
from xlt.papers.toy.plan import SLUG, table1_inputs, table1_spec
from xlt.papers.toy.tables import table1

PAPER = Paper(
    SLUG,
    jobs=f"{__name__}.jobs",  # its job (jobs.py), run by workflow_scripts/paper_job.py
    tables=(Table("table1", inputs=table1_inputs, build=table1, spec=table1_spec),),
    bill=PaperBill(no_device_time={"toy_count": "it counts the lines of prepared files"}),
)
