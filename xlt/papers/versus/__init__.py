"""versus: the five papers' methods side by side on one encoder, and whether they stack (issue 55).

Not a paper: a study beside them (`Paper.standalone`), made by its own targets (`versus_all`,
`make compare`), not by `all_tables`. Rows: the zero-shot baseline, each method alone (cross-lingual
adjustment, MLM domain adaptation, feature augmentation, DLFA, X-Mixup) and their combinations,
composed from the other plugins' recipes as the path grammar spells them (plan.py); tables:
`methods` (every row per task and target language, paired tests, training cost) and `verdicts`
(per combination: stacks, no better than the best part, or worse); figure `fig1` (gains).
"""

from __future__ import annotations

from xlt.paperkit.base import Paper, Table
from xlt.papers.versus.checks import check
from xlt.papers.versus.figures import FIGURES, draw
from xlt.papers.versus.plan import SLUG, figure_inputs, methods_inputs, table_spec, verdicts_inputs
from xlt.papers.versus.tables import methods, verdicts

PAPER = Paper(
    SLUG,
    tables=(
        Table("methods", inputs=methods_inputs, build=methods, spec=table_spec,
              caption="The methods side by side on one encoder: each method alone and combined, per task and target "
                      "language, mean ± std over seeds, the target average, paired tests against the baseline and each "
                      "component alone, and the training cost of each row."),
        Table("verdicts", inputs=verdicts_inputs, build=verdicts, spec=table_spec,
              caption="Do the methods stack? Each combination against its best part: stacks, no better than the best "
                      "part, or worse (paired 95 % interval over seeds), with the seeds that would decide it."),
    ),
    figures=FIGURES,
    figure_inputs=figure_inputs,
    figure_spec=table_spec,
    draw=draw,
    check=check,
    reads_alignment=True,  # the adjusted rows' encoders read the alignment stage's aligned pairs
    standalone=True,
)
