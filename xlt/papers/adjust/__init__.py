"""adjust: The Impact of Cross-Lingual Adjustment of Contextual Word Representations on
Zero-Shot Transfer.

A row's `model`: `original` = EN fine-tuning of the encoder as released (the EN-only model
other papers train with the same profile: one model), `adjusted` = EN fine-tuning of the
encoder adjusted on en–xx aligned pairs (init `adjust-<xx>-n<size>-seed<seed>`, inits.
Adjusted; one adjustment per target language and seed, as the authors' scripts do), and
`adjusted_continual` = the same with continual learning (the recipe's aux set, Eq. 2). Every
model is scored on every language of the paper's set; a column xx reads the models adjusted
on en–xx. Tables 2 (XNLI, mixed-language XNLI), 3 (NER), 4 (QA test sets, both cross-lingual
directions), 5 (en–ru sample sizes), 6 (how subword vectors make a word's), 7 (which tokens
are aligned), 8 (SQuAD dev; translated SQuAD on MLQA); Figures 1-2 (L2 distances of related
and unrelated words, per model). This module only declares the paper (no torch): `plan` holds its models, recipes and inputs
(no pandas), `tables` and `figures` build them, `checks` checks its config block.
"""

from __future__ import annotations

from xlt.papers.adjust.checks import check
from xlt.papers.adjust.figures import draw
from xlt.papers.adjust import bill
from xlt.papers.adjust.inits import AUX_KINDS, INIT_KIND
from xlt.papers.adjust.plan import (SLUG, WILDCARDS, data_sizes, figure_inputs, figure_spec, models_read, table2_inputs, table3_inputs, table4_inputs,
                                    table8_inputs, table9_inputs, table_spec)
from xlt.papers.adjust.tables import VARIANT_NOTES, table2, table3, table4, table8, table9, variant_table
from xlt.paperkit.base import Figure, Paper, Table

PAPER = Paper(
    SLUG,
    jobs=f"{__name__}.jobs",  # its jobs (jobs.py), run by workflow_scripts/paper_job.py
    tables=(
        Table("table2", inputs=table2_inputs, build=table2, spec=table_spec),
        Table("table3", inputs=table3_inputs, build=table3, spec=table_spec),
        Table("table4", inputs=table4_inputs, build=table4, spec=table_spec),
        *(variant_table(t) for t in VARIANT_NOTES),
        Table("table8", inputs=table8_inputs, build=table8, spec=table_spec),
        Table("table9", inputs=table9_inputs, build=table9, spec=table_spec),
    ),
    figures=(
        Figure("fig1", "Histograms of the L2 distances between the last-layer vectors of related (aligned) and "
                       "unrelated word pairs of one language pair (align.l2.fig1_pair): original, adjusted, fine-tuned "
                       "on English NLI, adjusted + fine-tuned, adjusted + continual learning."),
        Figure("fig2", "Histograms of the L2 distances of related vs unrelated word pairs for every aligned language "
                       "pair: original, adjusted, and per task fine-tuned, adjusted + fine-tuned, adjusted + continual."),
    ),
    figure_inputs=figure_inputs,
    models_read=models_read,  # adjust_l2 (the figures)
    draw=draw,
    figure_spec=figure_spec,
    check=check,
    data_sizes=data_sizes,
    bill=bill.BILL,
    wildcards=WILDCARDS,
    inits=(INIT_KIND,),  # adjust-<xx>-n<size>-seed<seed>[…], made by rules/adjust.smk
    aux_kinds=AUX_KINDS,  # continual learning's aligned pairs
    claims="claims.yaml",
    reads_alignment=True,  # its adjusted encoders learn from aligned word pairs
)
