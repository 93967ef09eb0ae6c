# Zero-shot transfer of any encoder on any task, outside the papers (xlt.zeroshot):
#   snakemake zero_shot --config encoder=<name, local dir or Hub id> task=<task> langs=<language set>
# Its models and evaluations are the shared rules' (finetune, evaluate) at the papers' paths.


localrules:
    zero_shot_table,
    zero_shot,


# One table across the languages of a set: mean ± std over the zero_shot seeds.
rule zero_shot_table:
    input:
        lambda w: Z.table_inputs(config, w.encoder, w.task, w.langset),
    output:
        **Z.table_outputs(config, "{encoder}", "{task}", "{langset}"),
    log:
        "logs/tables/zero_shot/{encoder}.{task}.{langset}.log",
    conda:
        ENV
    params:
        spec=lambda w: as_json(Z.table_spec(config, w.encoder, w.task, w.langset)),
        prefix=lambda w, output: output[0].rsplit(".", 1)[0],
    shell:
        "zero_shot_table.py --spec {params.spec:q} --inputs {input} --out-prefix {params.prefix} 2> {log}"


# The table the --config keys ask for. Without them, one line saying which and exit 1, as for a
# bad config (an exception here would come with Snakemake's traceback); run only when asked for.
def zero_shot_files(wildcards):
    try:
        return Z.table_files(config)
    except XltError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)


# zero_shot --config encoder=… task=… langs=…: any encoder fine-tuned on English, one table across a language set
rule zero_shot:
    input:
        zero_shot_files,
