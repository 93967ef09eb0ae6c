# xlt: zero-shot cross-lingual transfer experiments of five papers, end to end.
# This file is the table of contents; each stage lives in rules/<stage>.smk and every
# target list is computed in xlt/targets.py. docs/papers.md maps tables to targets.
import os

from snakemake.utils import min_version

min_version("9.19")


configfile: os.path.join(workflow.basedir, "config.yaml")


include: "rules/common.smk"
include: "rules/world.smk"
include: "rules/encoder.smk"
include: "rules/data.smk"
include: "rules/finetune.smk"
include: "rules/evaluate.smk"
include: "rules/tables.smk"
include: "rules/underspec.smk"
include: "rules/align.smk"


localrules:
    all_tables,


rule all_tables:
    input:
        T.all_tables(config),
