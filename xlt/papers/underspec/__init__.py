"""underspec: Zero-shot Cross-lingual Transfer is Under-specified Optimization.

Per (encoder, task, source, target, seed) three models from one initialisation (θ_src,
θ_tgt, θ_bi; recipes below), interpolation grids scored on the source and target dev sets
(`grid`, `interpolate`), normalised and aggregated (`aggregate`) into Figures 2-10
(`figures`); Table 1 counts the data (`tables`). This module only declares the paper (it
imports neither torch nor matplotlib: the workflow reads it when it builds the DAG): `plan`
holds its settings, recipes and inputs (no pandas), `checks` the check of its config block.

    results/underspec/grids/{encoder}/{task}/{source}-{target}/seed{seed}/{variant}.{kind}.{csv,json}
    results/figures/underspec/{figure}.{png,pdf,csv}
"""

from __future__ import annotations

from xlt.paperkit import datasize
from xlt.paperkit.base import Paper
from xlt.papers.underspec import bill
from xlt.papers.underspec.checks import check
from xlt.papers.underspec.figures import FIGURES, draw
from xlt.papers.underspec.plan import SLUG, grids, models, settings
from xlt.papers.underspec.tables import table1

PAPER = Paper(
    SLUG,
    jobs=f"{__name__}.jobs",  # its jobs (jobs.py), run by workflow_scripts/paper_job.py
    tables=(datasize.table(SLUG, table1),),
    figures=FIGURES,
    figure_inputs=grids,
    models_read=lambda cfg: [m for st in settings(cfg) for m in models(cfg, st).values()],
    draw=draw,
    check=check,
    data_sizes=lambda: datasize.published_sizes(SLUG, rank=0),  # counted per language from the release
    bill=bill.paper_bill(SLUG),
    # a grid's source and target languages, what it interpolates, its dimensions
    wildcards={"source": r"[a-z]{2,3}", "target": r"[a-z]{2,3}", "variant": r"all|encoder", "kind": r"1d|2d"},
    claims="claims.yaml",
)
