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


# A model no rule but evaluate reads is removed once its predictions and metrics are written
# (config keep_models: false; xlt.workflow.footprint computes which): the same job, its output temp().
REMOVED = FOOT.removed_families(config)
if REMOVED:

    use rule finetune as finetune_temp with:
        output:
            temp(
                directory(
                    f"{RESULTS}/models/{{encoder}}/{{init}}/{{task}}/{{recipe}}/seed{{seed}}"
                )
            ),
        wildcard_constraints:
            encoder=FOOT.encoder_constraint(REMOVED),

    ruleorder: finetune_temp > finetune


# The seeds of one model trained in one job (config engine.pack; xlt.workflow.packs computes the packs):
# the pack's outputs are its seeds' model directories, so asking for one seed's model runs the
# pack, and a seed in no pack is the `finetune` job above.
for _pack in PACKS.packs(config, set(REMOVED)):

    rule:
        name:
            _pack.rule
        input:
            data=f"{RESULTS}/data/{{task}}",
            encoder=lambda w: T.encoder_inputs(config, w.encoder, w.init),
        output:
            [
                temp(directory(path)) if _pack.temp else directory(path)
                for path in [
                    f"{RESULTS}/models/{{encoder}}/{{init}}/{{task}}/{{recipe}}/seed{seed}"
                    for seed in _pack.seeds
                ]
            ],
        log:
            f"logs/models/{{encoder}}/{{init}}/{{task}}/{{recipe}}/{_pack.stem}.log",
        wildcard_constraints:
            encoder=_pack.encoder_constraint(),
        priority: lambda w: T.finetune_priority(P.hparams(config, w.recipe, w.task), w.recipe)
        conda:
            ENV
        threads: R.job_threads(config, "finetune")
        resources:
            **PACKS.pack_resources(config, _pack),
        params:
            task=lambda w: T.task_of(w.task),
            encoder=lambda w: T.encoder_source(config, w.encoder, w.init),
            train_langs=lambda w: " ".join(T.Recipe.parse(w.recipe).train_langs),
            hparams=lambda w: as_json(P.hparams(config, w.recipe, w.task)),
            seeds=" ".join(map(str, _pack.seeds)),
            threads=R.process_threads(config, "finetune"),
            collapse_retries=config["collapse"]["retries"],
            collapse_rule=as_json(
                {k: v for k, v in config["collapse"].items() if k != "retries"}
            ),
            oracle=lambda w, output: as_json(
                [P.oracle_languages(config, o) for o in output]
            ),
            checkpoints=lambda w, output: [
                o.replace(f"{RESULTS}/models/", f"{RESULTS}/checkpoints/models/", 1)
                for o in output
            ],
            pack_checkpoint=f"{RESULTS}/checkpoints/models/{{encoder}}/{{init}}/{{task}}/{{recipe}}/{_pack.stem}",
        shell:
            "$(command -v finetune.py) --task {params.task} --encoder {params.encoder}"
            " --data {input.data} --train-langs {params.train_langs} --hparams {params.hparams:q}"
            " --seed {params.seeds} --out {output} --checkpoint-dir {params.checkpoints}"
            " --pack-checkpoint-dir {params.pack_checkpoint} --oracle-langs-each {params.oracle:q}"
            " --threads {params.threads} --collapse-retries {params.collapse_retries}"
            " --collapse-rule {params.collapse_rule:q} 2> {log}"

    workflow.ruleorder(_pack.rule, "finetune")
    if REMOVED:
        workflow.ruleorder(_pack.rule, "finetune_temp")
