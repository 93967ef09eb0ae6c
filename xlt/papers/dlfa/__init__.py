"""dlfa: Feature Aggregation in Zero-Shot Cross-Lingual Transfer Using Multilingual BERT.

Settings (a row's `model`): `baseline` = plain EN fine-tuning with the paper's profile (the
EN-only model other papers train with the same profile: one model), `d<X>` = DLFA fusing
layer X with the last (extra `dlfa`, recipe.py), `d<X>_g` / `d<X>_l` = AIF with the
global / local branch only. Tables: I (data sizes), II (the layer sweep and the last-layer
control), III (EN family vs the rest, the two best layers), IV (PAWS-X per language),
V (branch ablation), VI (cosine similarity of parallel sentences, xlt.papers.dlfa.similarity),
VII (a second encoder at its best layer). This module only declares the paper: `plan` holds its
settings, recipes and inputs (no pandas), `tables` builds the tables, `checks` checks its config
block.
"""

from __future__ import annotations

from xlt.paperkit import datasize
from xlt.paperkit.base import Paper, RecipeTags, Table
from xlt.papers.dlfa.checks import check
from xlt.papers.dlfa import bill
from xlt.papers.dlfa.plan import (SLUG, TAG_GRAMMAR, data_sizes, extra_of_tag, models_read, oracle_models, similarity_models, table2_inputs, table3_inputs, table4_inputs,
                                  table5_inputs, table6_inputs, table7_inputs, table_spec)
from xlt.papers.dlfa.tables import table1, table2, table3, table4, table5, table6, table7

PAPER = Paper(
    SLUG,
    jobs=f"{__name__}.jobs",  # its jobs (jobs.py), run by workflow_scripts/paper_job.py
    tables=(
        datasize.table(SLUG, table1),
        # the tables of our models: their spec carries this run's profile (plan.table_spec)
        Table("table2", inputs=table2_inputs, build=table2, spec=table_spec),
        Table("table3", inputs=table3_inputs, build=table3, spec=table_spec),
        Table("table4", inputs=table4_inputs, build=table4, spec=table_spec),
        Table("table5", inputs=table5_inputs, build=table5, spec=table_spec),
        Table("table6", inputs=table6_inputs, build=table6, spec=table_spec),
        Table("table7", inputs=table7_inputs, build=table7, spec=table_spec),
    ),
    check=check,
    recipe_tags=RecipeTags(TAG_GRAMMAR, extra_of_tag),
    data_sizes=data_sizes,
    bill=bill.paper_bill(SLUG, similarity_models),
    oracle_models=oracle_models,
    models_read=models_read,  # Table VI's similarity jobs
    claims="claims.yaml",
)
