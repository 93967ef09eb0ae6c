# crossmulti: analyses of Table 2's models (rule finetune; none retrained) -> Tables 3-5,
# Figure 1, Figures A1-A4 (rules paper_table / paper_figure; the plugin xlt.papers.crossmulti
# lists what each reads). One probe job per encoder: every probing task, all its heads at once.

CM = papers.crossmulti.plan


rule crossmulti_probe_vanilla:
    input:
        encoder=lambda w: T.encoder_inputs(config, w.encoder),
        data=lambda w: [p["data"] for p in CM.probe_jobs(config).values()],
    output:
        csv=f"{RESULTS}/crossmulti/probe/{{encoder}}/vanilla.csv",
        json=f"{RESULTS}/crossmulti/probe/{{encoder}}/vanilla.json",
    log:
        "logs/crossmulti/probe/{encoder}/vanilla.log",
    conda:
        ENV
    threads: R.job_threads(config, "analysis")
    resources:
        **R.job_resources(config, "analysis"),
    params:
        pretrained=lambda w: T.encoder_source(config, w.encoder),
        probes=lambda w: as_json(CM.probe_jobs(config)),
        probe=lambda w: as_json(config["papers"]["crossmulti"]["analysis"]["probe"]),
        collapse=lambda w: as_json({k: v for k, v in config["collapse"].items() if k != "retries"}),
    shell:
        "paper_job.py crossmulti probe --pretrained {params.pretrained}"
        " --probes {params.probes:q} --probe {params.probe:q} --collapse {params.collapse:q} --out {output.csv}"
        " --provenance-out {output.json} --threads {threads} 2> {log}"


rule crossmulti_probe_model:
    input:
        model=f"{RESULTS}/models/{{encoder}}/pretrained/{{task}}/{{recipe}}/seed{{seed}}",
        data=lambda w: [p["data"] for p in CM.probe_jobs(config).values()],
        encoder=lambda w: T.encoder_inputs(config, w.encoder),
    output:
        csv=f"{RESULTS}/crossmulti/probe/{{encoder}}/{{task}}/{{recipe}}/seed{{seed}}.csv",
        json=f"{RESULTS}/crossmulti/probe/{{encoder}}/{{task}}/{{recipe}}/seed{{seed}}.json",
    log:
        "logs/crossmulti/probe/{encoder}/{task}/{recipe}/seed{seed}.log",
    conda:
        ENV
    threads: R.job_threads(config, "analysis")
    resources:
        **R.job_resources(config, "analysis"),
    params:
        pretrained=lambda w: T.encoder_source(config, w.encoder),
        probes=lambda w: as_json(CM.probe_jobs(config)),
        probe=lambda w: as_json(config["papers"]["crossmulti"]["analysis"]["probe"]),
        collapse=lambda w: as_json({k: v for k, v in config["collapse"].items() if k != "retries"}),
    shell:
        "paper_job.py crossmulti probe --model {input.model} --pretrained {params.pretrained}"
        " --probes {params.probes:q} --probe {params.probe:q} --collapse {params.collapse:q} --out {output.csv}"
        " --provenance-out {output.json} --threads {threads} 2> {log}"


rule crossmulti_head_updates:
    input:
        encoder=lambda w: T.encoder_inputs(config, w.encoder),
        models=lambda w: CM.analysed_models(config),
    output:
        csv=f"{RESULTS}/crossmulti/head_updates/{{encoder}}.csv",
        json=f"{RESULTS}/crossmulti/head_updates/{{encoder}}.json",
    log:
        "logs/crossmulti/head_updates/{encoder}.log",
    conda:
        ENV
    threads: R.job_threads(config, "analysis")
    resources:
        **R.job_resources(config, "analysis"),
    params:
        pretrained=lambda w: T.encoder_source(config, w.encoder),
    shell:
        "paper_job.py crossmulti head-updates --pretrained {params.pretrained}"
        " --models {input.models} --out {output.csv} --provenance-out {output.json}"
        " --threads {threads} 2> {log}"


rule crossmulti_pppl:
    input:
        encoder=lambda w: T.encoder_inputs(config, w.encoder),
        data=f"{RESULTS}/data/{{task}}",
        models=lambda w: CM.analysed_models(config, [T.task_of(w.task)]),
    output:
        csv=f"{RESULTS}/crossmulti/pppl/{{encoder}}/{{task}}.csv",
        json=f"{RESULTS}/crossmulti/pppl/{{encoder}}/{{task}}.json",
    log:
        "logs/crossmulti/pppl/{encoder}/{task}.log",
    conda:
        ENV
    threads: R.job_threads(config, "analysis")
    resources:
        **R.job_resources(config, "analysis"),
    params:
        pretrained=lambda w: T.encoder_source(config, w.encoder),
        task=lambda w: T.task_of(w.task),
        langs=lambda w: " ".join(
            config["language_sets"][config["papers"]["crossmulti"]["languages"]]
        ),
        pppl=lambda w: as_json(config["papers"]["crossmulti"]["analysis"]["pppl"]),
    shell:
        "paper_job.py crossmulti pppl --task {params.task} --data-dir {input.data}"
        " --langs {params.langs} --pretrained {params.pretrained}"
        " --models {input.models} --pppl {params.pppl:q} --out {output.csv}"
        " --provenance-out {output.json} --threads {threads} 2> {log}"
