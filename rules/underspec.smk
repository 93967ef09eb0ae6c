# underspec: θ_src / θ_tgt / θ_bi (rule finetune, recipes <lang>.underspec and
# <lang>+<lang>.underspec) -> interpolation grids scored on two dev sets -> Figures 2-10
# (rule paper_figure; the plugin xlt.papers.underspec lists what each reads).


rule underspec_grid:
    input:
        unpack(
            lambda w: P.underspec.plan.grid_inputs(
                config, w.encoder, w.task, w.source, w.target, w.seed
            )
        ),
    output:
        csv=f"{RESULTS}/underspec/grids/{{encoder}}/{{task}}/{{source}}-{{target}}/seed{{seed}}/{{variant}}.{{kind}}.csv",
        json=f"{RESULTS}/underspec/grids/{{encoder}}/{{task}}/{{source}}-{{target}}/seed{{seed}}/{{variant}}.{{kind}}.json",
    log:
        "logs/underspec/grids/{encoder}/{task}/{source}-{target}/seed{seed}/{variant}.{kind}.log",
    conda:
        ENV
    threads: R.job_threads(config, "grid")
    resources:
        **R.job_resources(config, "grid"),
    params:
        grid=lambda w: as_json(config["papers"]["underspec"]["grid"]),
        metric=lambda w: config["papers"]["underspec"]["metric"][w.task],
        evaluation=as_json(config.get("evaluation", {})),
    shell:
        "paper_job.py underspec grid --bi {input.bi} --src {input.src} --tgt {input.tgt}"
        " --data-dir {input.data} --encoder {wildcards.encoder} --source {wildcards.source}"
        " --target {wildcards.target} --kind {wildcards.kind} --variant {wildcards.variant}"
        " --grid {params.grid:q} --metric {params.metric} --out-csv {output.csv}"
        " --out-json {output.json} --evaluation {params.evaluation:q}"
        " --threads {threads} 2> {log}"
