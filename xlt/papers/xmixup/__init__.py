"""xmixup: Enhancing Cross-lingual Transfer by Manifold Mixup.

Three models per task and seed, one profile (`papers.xmixup.hparams`):
- `zero_shot`: fine-tuned on English (the task's own data), scored on every language;
- `trans_train`: fine-tuned on English and every target language's machine translation of
  it (the dataset `<task>.translate_train`, XTREME's translate-train), scored on every language;
- `xmixup`: fine-tuned on the same translate-train pairs (the English original as the source
  side, the translation as the target side) with the X-Mixup extra (extra.py), spelt
  `<profile>-xmixup<layer>[-nomix][-fixed][-nomse][-nokl]` in the recipe; scored with both
  sides where a translate-test set gives the English side (`<task>.translate_test`:
  classification averages the two sides' class probabilities) and on the plain test set (the target side
  alone: Table 5's "w/o mixup inference").
Tasks: XNLI, PAWS-X (classification) and QA (span QA: trained on XTREME's translated SQuAD,
scored on XQuAD, MLQA; TyDiQA-GoldP's three models train on its own English train and its
translation, `qa_tests.tydiqa.train`). Tagging's X-Mixup is built in the engine but has no public translate-train
data (POS, NER: the paper's values only, and why; their zero-shot rows in Tables 1, 13, 14 read
another paper's English models, `zero_shot_tagging`). Tables 2 (Spearman ρ of CKA vs
accuracy), 3 (main), 6 (seen / unseen languages, from Table 11's models), 7 (CKA and accuracy per
language), 8 (transfer gap), 15 (XQuAD per language), 4 (XLM-R base: ours only with that
encoder); the CKA of a model is computed by the rule `xmixup_cka` (rules/xmixup.smk).
This module only declares the paper (no torch): `plan` holds its models, recipes and
inputs (no pandas), `tables` and `figures` build them, `checks` checks its config block.
"""

from __future__ import annotations

from xlt.paperkit.base import Paper, RecipeTags, Table
from xlt.papers.xmixup import figures
from xlt.papers.xmixup.checks import check
from xlt.papers.xmixup import bill
from xlt.papers.xmixup.plan import (QA_TESTS, SLUG, TAG_GRAMMAR, TAGGING_TABLES, _qa_test_inputs, _zero_shot_tagging_inputs, data_sizes, extra_of,
                                    main_inputs, table2_inputs, table3_inputs, table4_inputs, table5_inputs, table6_inputs, table7_inputs,
                                    table9_inputs, table10_inputs, table11_inputs, table12_inputs, table15_inputs, table_spec)
from xlt.papers.xmixup.tables import (_qa_test_table, _zero_shot_tagging_table, table2, table3, table4, table5, table6, table7, table8, table9, table10,
                                      table11, table12, table15)

PAPER = Paper(
    slug=SLUG,
    jobs=f"{__name__}.jobs",  # its jobs (jobs.py), run by workflow_scripts/paper_job.py
    tables=(
        Table("table2", table2_inputs, table2, spec=table_spec),
        Table("table3", table3_inputs, table3, spec=table_spec),
        Table("table4", table4_inputs, table4, spec=table_spec),
        Table("table5", table5_inputs, table5, spec=table_spec),
        Table("table6", table6_inputs, table6, spec=table_spec),
        Table("table7", table7_inputs, table7, spec=table_spec),
        Table("table8", main_inputs, table8, spec=table_spec),
        Table("table9", table9_inputs, table9, spec=table_spec),
        Table("table10", table10_inputs, table10, spec=table_spec),
        Table("table11", table11_inputs, table11, spec=table_spec),
        Table("table12", table12_inputs, table12, spec=table_spec),
        Table("table15", table15_inputs, table15, spec=table_spec),
        *(Table(t, _zero_shot_tagging_inputs(t), _zero_shot_tagging_table(t), spec=table_spec) for t in TAGGING_TABLES),
        *(Table(t, _qa_test_inputs(t), _qa_test_table(t), spec=table_spec) for t in QA_TESTS),
    ),
    figures=figures.FIGURES,
    figure_inputs=figures.figure_inputs,
    draw=figures.draw,
    figure_spec=figures.figure_spec,
    check=figures.with_figure_check(check),
    recipe_tags=RecipeTags(TAG_GRAMMAR, extra_of),
    reasons_in_notes=True,  # free-text notes say why a published cell has no ours (not yet per cell)
    data_sizes=data_sizes,
    bill=bill.BILL,
    claims="claims.yaml",
)
