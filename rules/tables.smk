# Paper tables: published value, ours (mean ± std over seeds), difference.


localrules:
    crossmulti_table2,
    data_size_table,
    crossmulti_table1,
    dlfa_table1,
    underspec_table1,
    crossmulti_all,


rule crossmulti_table2:
    input:
        T.crossmulti_table2_inputs(config),
    output:
        T.table_files(config, "crossmulti", "table2"),
    log:
        "logs/tables/crossmulti/table2.log",
    conda:
        ENV
    params:
        spec=lambda w: as_json(config["papers"]["crossmulti"]),
        prefix=lambda w, output: output[0].rsplit(".", 1)[0],
    shell:
        "make_table.py --paper crossmulti --table table2"
        " --spec {params.spec:q} --inputs {input} --out-prefix {params.prefix} 2> {log}"


# Data-size tables (Table 1 of crossmulti, dlfa, underspec): the papers' counts beside the
# record counts in each prepared dataset's manifest.json. One rule; a target per paper.
rule data_size_table:
    input:
        lambda w: T.stats_table_inputs(config, w.paper),
    output:
        T.table_files(config, "{paper}", "table1"),
    log:
        "logs/tables/{paper}/table1.log",
    wildcard_constraints:
        paper="|".join(T.STATS_TABLES),
    conda:
        ENV
    params:
        spec=lambda w: as_json(T.stats_table_spec(config, w.paper)),
        prefix=lambda w, output: output[0].rsplit(".", 1)[0],
    shell:
        "make_table.py --paper {wildcards.paper} --table table1"
        " --spec {params.spec:q} --inputs {input} --out-prefix {params.prefix} 2> {log}"


rule crossmulti_table1:
    input:
        T.table_files(config, "crossmulti", "table1"),


rule dlfa_table1:
    input:
        T.table_files(config, "dlfa", "table1"),


rule underspec_table1:
    input:
        T.table_files(config, "underspec", "table1"),


rule crossmulti_all:
    input:
        T.paper_tables(config, "crossmulti"),
