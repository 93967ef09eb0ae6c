# Fine-tuning: results/models/{encoder}/{init}/{task}/{recipe}/seed{seed}/


rule finetune:
    input:
        data=f"{RESULTS}/data/{{task}}",
        encoder=lambda w: T.encoder_inputs(config, w.encoder, w.init),
        aux=lambda w: T.aux_inputs(config, w.recipe, w.task, w.encoder, w.init),
    output:
        directory(
            f"{RESULTS}/models/{{encoder}}/{{init}}/{{task}}/{{recipe}}/seed{{seed}}"
        ),
    log:
        "logs/models/{encoder}/{init}/{task}/{recipe}/seed{seed}.log",
    conda:
        ENV
    threads: R.job_threads(config, "finetune")
    resources:
        **R.job_resources(config, "finetune"),
    # the costliest fine-tunes first: the run's tail then holds short jobs
    priority: lambda w: T.finetune_priority(P.hparams(config, w.recipe, w.task), w.recipe)
    params:
        task=lambda w: T.task_of(w.task),
        encoder=lambda w: T.encoder_source(config, w.encoder, w.init),
        train_langs=lambda w: " ".join(T.Recipe.parse(w.recipe).train_langs),
        hparams=lambda w: as_json(P.hparams(config, w.recipe, w.task)),
        aux=lambda w: as_json(T.aux_streams(config, w.recipe, w.task, w.encoder, w.init)),
        launcher=R.launcher(config, "finetune"),
        # under DDP the job's threads are shared by its processes (one per GPU)
        threads=R.process_threads(config, "finetune"),
        collapse_retries=config["collapse"]["retries"],
        collapse_rule=as_json({k: v for k, v in config["collapse"].items() if k != "retries"}),
        # target-dev (oracle) selection beside the model's own, where a paper's table shows it
        oracle=lambda w, output: " ".join(P.oracle_languages(config, output[0])),
        checkpoints=f"{RESULTS}/checkpoints/models/{{encoder}}/{{init}}/{{task}}/{{recipe}}/seed{{seed}}",
        tensorboard=f"{RESULTS}/logs/tensorboard/models/{{encoder}}/{{init}}/{{task}}/{{recipe}}/seed{{seed}}",
    shell:
        "{params.launcher} $(command -v finetune.py) --task {params.task} --encoder {params.encoder}"
        " --data {input.data} --train-langs {params.train_langs}"
        " --hparams {params.hparams:q} --aux {params.aux:q} --seed {wildcards.seed} --out {output}"
        " --checkpoint-dir {params.checkpoints} --threads {params.threads}"
        " --collapse-retries {params.collapse_retries} --collapse-rule {params.collapse_rule:q}"
        " --oracle-langs {params.oracle} --tensorboard-dir {params.tensorboard} 2> {log}"
