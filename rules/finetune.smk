# Fine-tuning: results/models/{encoder}/{init}/{task}/{recipe}/seed{seed}/
#
# Every fine-tune job is one FinetuneJob (xlt/stages/finetune_job.py), built once by
# xlt.workflow.packs.finetune_job from the rule's wildcards and outputs and handed to finetune.py
# as one JSON argument. The one-seed rule `finetune` and each pack's rule (config engine.pack;
# xlt.workflow.packs computes the packs) differ in their outputs, log, constraint and resources
# alone; what they read, run and pass is this one body.
_FINETUNE_INPUT = dict(
    data=f"{RESULTS}/data/{{task}}",
    encoder=lambda w: T.encoder_inputs(config, w.encoder, w.init),
    aux=lambda w: P.aux_inputs(config, w.recipe, w.task, w.encoder, w.init),
)
# the costliest fine-tunes first: the run's tail then holds short jobs
_FINETUNE_PRIORITY = lambda w: T.finetune_priority(P.hparams(config, w.recipe, w.task), w.recipe)
_FINETUNE_PARAMS = dict(
    launcher=R.launcher(config, "finetune"),
    job=lambda w, output: PACKS.finetune_job(config, w, output).to_json(),
)
_FINETUNE_SHELL = "{params.launcher} $(command -v finetune.py) --job {params.job:q} 2> {log}"


rule finetune:
    input:
        **_FINETUNE_INPUT,
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
    priority: _FINETUNE_PRIORITY
    params:
        **_FINETUNE_PARAMS,
    shell:
        _FINETUNE_SHELL


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


# The seeds of one model trained in one job: the same job with several seeds, its outputs its
# seeds' model directories, so asking for one seed's model runs the pack, and a seed in no pack
# is the `finetune` job above.
for _pack in PACKS.packs(config, set(REMOVED)):

    rule:
        name:
            _pack.rule
        input:
            **_FINETUNE_INPUT,
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
        conda:
            ENV
        threads: R.job_threads(config, "finetune")
        resources:
            **PACKS.pack_resources(config, _pack),
        priority: _FINETUNE_PRIORITY
        params:
            **_FINETUNE_PARAMS,
        shell:
            _FINETUNE_SHELL

    workflow.ruleorder(_pack.rule, "finetune")
    if REMOVED:
        workflow.ruleorder(_pack.rule, "finetune_temp")
