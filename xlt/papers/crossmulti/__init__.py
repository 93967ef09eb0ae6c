"""crossmulti: Enhancing Cross-Lingual Training with Knowledge Learned from Multi-Lingual Training.

Recipes: `cross` (the source language only) and `multi` (all four languages), one hparams
profile. Tables: 1 (data sizes), 2 (cross vs multi, four tasks × four languages), and the
analyses of Table 2's models (none retrained), one rule each (rules/crossmulti.smk):

    results/crossmulti/probe/{encoder}/vanilla.{csv,json}                       the pretrained encoder's probes
    results/crossmulti/probe/{encoder}/{task}/{recipe}/seed{seed}.{csv,json}    a fine-tuned model's probes
    results/crossmulti/head_updates/{encoder}.{csv,json}                        every model's head updates
    results/crossmulti/pppl/{encoder}/{task}.{csv,json}                         PPPL on a task's test text

Table 3 (model probing) and Table 4 (head probing) read the probes, Table 5 the PPPL,
Figure 1 the head updates, Figures A1–A4 (figa1 … figa4) the head probes. This module only
declares the paper (no torch, no matplotlib): `plan` holds its settings, recipes and inputs
(no pandas), `tables` and `figures` build the tables and figures, `probing`, `head_updates`,
`pppl` compute.
"""

from __future__ import annotations

from xlt.paperkit import datasize
from xlt.paperkit.base import Figure, Paper, Table
from xlt.papers.crossmulti import bill
from xlt.papers.crossmulti.figures import draw_figure
from xlt.papers.crossmulti.plan import (SLUG, analysed_models, analysis_spec, figure_inputs, oracle_models, pppl_files, probe_files, table2_inputs,
                                        probe_jobs, table6_inputs, with_profile)
from xlt.papers.crossmulti.tables import analysis_table, table1, table2, table6

PAPER = Paper(
    SLUG,
    jobs=f"{__name__}.jobs",  # its jobs (jobs.py), run by workflow_scripts/paper_job.py
    tables=(
        datasize.table(SLUG, table1),
        Table("table2", inputs=table2_inputs, build=table2, spec=with_profile),
        Table("table3", inputs=probe_files, build=analysis_table("table3")),
        Table("table4", inputs=probe_files, build=analysis_table("table4"), spec=analysis_spec),
        Table("table5", inputs=pppl_files, build=analysis_table("table5")),
        Table("table6", inputs=table6_inputs, build=table6, spec=with_profile),
    ),
    figures=(
        Figure("fig1", "Normalised attention-head updates (L1 change of each head's Q/K/V rows and O columns, "
               "as a share of its model's total) of the cross and multi models and multi − cross, per task; "
               "Spearman ρ cross vs multi."),
        *(Figure(f"figa{i}", f"Per-head probing on {name}: every cross and multi model's heads, the most "
                 "contributive marked green, the least red.", when=lambda p, t=task: t in p["tasks"])
          for i, (task, name) in enumerate((("pos", "POS"), ("ner", "NER"), ("pawsx", "PI"), ("marc", "SA")), 1)),
    ),
    figure_inputs=figure_inputs,
    # the probes, head updates and PPPL read Table 2's models of the analysis seeds
    models_read=analysed_models,
    draw=draw_figure,
    # per language, but ES and FR POS train as printed, not re-derived from a UD release (rank 1)
    data_sizes=lambda: datasize.published_sizes(SLUG, rank=1),
    bill=bill.paper_bill(SLUG, probe_jobs, analysed_models),
    oracle_models=oracle_models,
    claims="claims.yaml",
)
