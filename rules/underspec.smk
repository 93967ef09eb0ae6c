# underspec: θ_src / θ_tgt / θ_bi (rule finetune, recipes <lang>.underspec and
# <lang>+<lang>.underspec) -> interpolation grids scored on two dev sets -> Figures 2-10
# (rule paper_figure; the plugin xlt.papers.underspec lists what each reads).


# One job per setting scores all its grids, the three models loaded and the dev sets encoded
# once: the 1D grid of every variant, and where a 2D figure shows the setting the 2D grid too
# (underspec_grid_2d: its task constraint matches exactly those settings, and it wins there).
ruleorder: underspec_grid_2d > underspec_grid


rule underspec_grid:
    input:
        unpack(
            lambda w: papers.underspec.plan.grid_inputs(
                config, w.encoder, w.task, w.source, w.target, w.seed
            )
        ),
    output:
        papers.underspec.plan.grid_job_outputs(config, two_d=False),
    log:
        "logs/underspec/grids/{encoder}/{task}/{source}-{target}/seed{seed}.log",
    conda:
        ENV
    threads: R.job_threads(config, "grid")
    resources:
        **R.job_resources(config, "grid"),
    params:
        grids=lambda w: papers.underspec.plan.grid_job_grids(
            config, w.task, w.source, w.target
        ),
        out_dir=lambda w, output: os.path.dirname(output[0]),
        grid=lambda w: as_json(config["papers"]["underspec"]["grid"]),
        metric=lambda w: config["papers"]["underspec"]["metric"][w.task],
        evaluation=as_json(config.get("evaluation", {})),
    shell:
        "paper_job.py underspec grid --bi {input.bi} --src {input.src} --tgt {input.tgt}"
        " --data-dir {input.data} --encoder {wildcards.encoder} --source {wildcards.source}"
        " --target {wildcards.target} --grids {params.grids} --grid {params.grid:q}"
        " --metric {params.metric} --out-dir {params.out_dir} --evaluation {params.evaluation:q}"
        " --threads {threads} 2> {log}"


use rule underspec_grid as underspec_grid_2d with:
    output:
        papers.underspec.plan.grid_job_outputs(config, two_d=True),
    wildcard_constraints:
        task=papers.underspec.plan.two_d_task_constraint(config),
