# xlt: zero-shot cross-lingual transfer experiments of five papers, end to end.
# This file is the table of contents; each stage lives in rules/<stage>.smk and every
# target list is computed in xlt/dag/targets.py and xlt/papers/ (one plugin per paper).
# docs/papers.md maps tables to targets; `make report` renders them into report.html.
import os

from snakemake.utils import min_version

min_version("9.19")


configfile: os.path.join(workflow.basedir, "config.yaml")


report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/world.smk"
include: "rules/encoder.smk"
include: "rules/data.smk"
include: "rules/finetune.smk"
include: "rules/evaluate.smk"
include: "rules/tables.smk"
include: "rules/align.smk"
include: "rules/zeroshot.smk"


# each registered paper's own rules, rules/<slug>.smk (xlt.papers.PAPERS; a paper whose tables
# the generic rules make has none): adding a paper touches no line here
for _slug in P.PAPERS:
    if os.path.exists(os.path.join(workflow.basedir, "rules", f"{_slug}.smk")):

        include: f"rules/{_slug}.smk"


localrules:
    all_tables,


# every table and figure of the configured papers, and results/tables/index.md
rule all_tables:
    input:
        P.all_tables(config),
