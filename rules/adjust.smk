# adjust's own rule: the L2 distances of Figures 1-2 for every model row but the original
# (whose are the alignment stage's, rules/align.smk). Paths and rows: xlt/papers/adjust.


rule adjust_l2:
    input:
        pool=lambda w: f"{A.pair_dir(config, w.xx)}/pool.tsv",
        links=lambda w: f"{A.backend_dir(config, w.xx)}/links.pharaoh",
        model=lambda w: P.adjust.plan.l2_model(config, w.xx, w.row, w.seed),
    output:
        csv=f"{RESULTS}/adjust/l2/en-{{xx}}/{{row}}.seed{{seed}}.csv",
        meta=f"{RESULTS}/adjust/l2/en-{{xx}}/{{row}}.seed{{seed}}.json",
    log:
        "logs/adjust/l2/en-{xx}/{row}.seed{seed}.log",
    conda:
        ENV
    threads: R.job_threads(config, "l2")
    resources:
        **R.job_resources(config, "l2"),
    params:
        encoder=lambda w: P.adjust.plan.l2_encoder(config, w.xx, w.row, w.seed),
        l2=lambda w: as_json(A.l2_job_config(config)),
    shell:
        "align_stage.py l2 --encoder {params.encoder} --pool {input.pool}"
        " --links {input.links} --l2 {params.l2:q} --out {output.csv} --meta {output.meta}"
        " --threads {threads} 2> {log}"
