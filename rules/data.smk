# Raw sources -> the normalised form (docs/data.md), one folder per task.


rule prepare_task:
    input:
        T.raw_inputs(config),
    output:
        directory(f"{RESULTS}/data/{{task}}"),
    log:
        "logs/data/{task}.prepare.log",
    conda:
        ENV
    threads: R.job_threads(config, "prepare")
    resources:
        **R.job_resources(config, "prepare"),
    params:
        langs=lambda w: " ".join(T.task_languages(config, w.task)),
        data=lambda w: as_json(config["data"]),
        raw_root=config["raw_root"],
    shell:
        "prepare_task.py --task {wildcards.task} --langs {params.langs}"
        " --raw-root {params.raw_root} --data {params.data:q} --out {output} 2> {log}"
