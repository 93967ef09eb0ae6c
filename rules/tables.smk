# Paper tables: published value, ours (mean ± std over seeds), difference.


localrules:
    crossmulti_table2,
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


rule crossmulti_all:
    input:
        T.paper_tables(config, "crossmulti"),
