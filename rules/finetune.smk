# Fine-tuning: results/models/{encoder}/{init}/{task}/{recipe}/seed{seed}/
#
# One rule body for every fine-tune job: the one-seed rule `finetune`, then one rule per pack
# (config engine.pack; xlt.workflow.packs computes the packs): a pack's outputs are its seeds'
# model directories, so asking for one seed's model runs the pack, and a seed in no pack is the
# `finetune` job. A job's settings are one JSON argument (xlt.workflow.packs.finetune_job).
REMOVED = FOOT.removed_families(config)
for _rule in PACKS.finetune_rules(config, set(REMOVED)):

    rule:
        name:
            _rule.name
        input:
            data=f"{RESULTS}/data/{{task}}",
            encoder=lambda w: T.encoder_inputs(config, w.encoder, w.init),
            aux=lambda w: P.aux_inputs(config, w.recipe, w.task, w.encoder, w.init),
        output:
            [
                temp(directory(path)) if _rule.temp else directory(path)
                for path in _rule.model_dirs(RESULTS)
            ],
        log:
            _rule.log,
        wildcard_constraints:
            **_rule.wildcard_constraints,
        conda:
            ENV
        threads: R.job_threads(config, "finetune")
        resources:
            **_rule.resources(config),
        # the costliest fine-tunes first: the run's tail then holds short jobs
        priority: lambda w: T.finetune_priority(P.hparams(config, w.recipe, w.task), w.recipe)
        params:
            launcher=R.launcher(config, "finetune"),
            job=lambda w, output: PACKS.finetune_job(config, w, output).to_json(),
        shell:
            "{params.launcher} $(command -v finetune.py) --job {params.job:q} 2> {log}"


# A model no rule but evaluate reads is removed once its predictions and metrics are written
# (config keep_models: false; xlt.workflow.footprint computes which): the same job, its output temp().
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


for _pack in PACKS.packs(config, set(REMOVED)):
    workflow.ruleorder(_pack.rule, "finetune")
    if REMOVED:
        workflow.ruleorder(_pack.rule, "finetune_temp")
