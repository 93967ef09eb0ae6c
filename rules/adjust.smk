# adjust's own rules: the adjusted encoders (Cao et al. 2020), and the L2 distances of Figures
# 1-2 for every model row but the original (whose are the alignment stage's, rules/align.smk).
# Paths and rows: xlt/papers/adjust.


# Cross-lingual adjustment of an encoder, one of the adapted encoders of rules/encoder.smk's
# path grammar: {init} = adjust-<xx>-n<size>-seed<seed>[-<variant>], on the alignment stage's
# sample of aligned pairs, settings from config `adapt.adjust`.
rule adjust_encoder:
    input:
        unpack(lambda w: papers.adjust.inits.adjust_inputs(config, w.encoder, w.init)),
    output:
        directory(f"{RESULTS}/encoders/{{encoder}}/{{init}}"),
    log:
        "logs/encoders/{encoder}/{init}.log",
    wildcard_constraints:
        init=r"adjust-[^/]+",
    conda:
        ENV
    threads: R.job_threads(config, "adapt_encoder")
    resources:
        **R.job_resources(config, "adapt_encoder"),
    params:
        encoder=lambda w: T.encoder_source(config, w.encoder),
        adjust=lambda w: as_json(papers.adjust.inits.adjust_config(config, w.init)),
        checkpoints=f"{RESULTS}/checkpoints/encoders/{{encoder}}/{{init}}",
    shell:
        "paper_job.py adjust encoder --encoder {params.encoder} --pairs {input.pairs}"
        " --adjust {params.adjust:q} --out {output} --checkpoint-dir {params.checkpoints}"
        " --threads {threads} 2> {log}"


rule adjust_l2:
    input:
        pool=lambda w: f"{A.pair_dir(config, w.xx)}/pool.tsv",
        links=lambda w: f"{A.backend_dir(config, w.xx)}/links.pharaoh",
        model=lambda w: papers.adjust.plan.l2_model(config, w.xx, w.row, w.seed),
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
        encoder=lambda w: papers.adjust.plan.l2_encoder(config, w.xx, w.row, w.seed),
        l2=lambda w: as_json(A.l2_job_config(config)),
    shell:
        "align_stage.py l2 --encoder {params.encoder} --pool {input.pool}"
        " --links {input.links} --l2 {params.l2:q} --out {output.csv} --meta {output.meta}"
        " --threads {threads} 2> {log}"
