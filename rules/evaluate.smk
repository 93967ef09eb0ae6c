# Evaluation of a fine-tuned model on one split of a named language set: of its own dataset,
# or of another dataset of its task (evaluate_on).


rule evaluate:
    input:
        model=f"{RESULTS}/models/{{encoder}}/{{init}}/{{task}}/{{recipe}}/seed{{seed}}",
        data=f"{RESULTS}/data/{{task}}",
    output:
        metrics=f"{RESULTS}/eval/{{encoder}}/{{init}}/{{task}}/{{recipe}}/seed{{seed}}/{{split}}.{{langset}}.json",
        predictions=f"{RESULTS}/eval/{{encoder}}/{{init}}/{{task}}/{{recipe}}/seed{{seed}}/{{split}}.{{langset}}.predictions.jsonl",
    log:
        "logs/eval/{encoder}/{init}/{task}/{recipe}/seed{seed}/{split}.{langset}.log",
    conda:
        ENV
    threads: R.job_threads(config, "evaluate")
    resources:
        **R.job_resources(config, "evaluate"),
    params:
        langs=lambda w: " ".join(T.langset_languages(config, w.langset)),
        evaluation=as_json(config.get("evaluation", {})),
        # QA's answer normalisation: a set declaring MLQA's (data.qa.sets.<set>.answer_normalisation)
        # passes each language's answer language; '' (SQuAD v1.1's) for any other dataset
        answers=lambda w: T.answer_languages_arg(config, getattr(w, "testset", None) or w.task, w.langset),
    shell:
        "evaluate.py --model {input.model} --data {input.data}"
        " --split {wildcards.split} --langs {params.langs} --out {output.metrics}"
        " --predictions {output.predictions} --evaluation {params.evaluation:q} {params.answers}"
        " --threads {threads} 2> {log}"


# The same model scored on another dataset of its task (a named set: qa -> qa.mlqa), under
# on-<testset>/; xlt.dag.targets.check_testset refuses another task, naming both, and a split or
# language the set lacks.
use rule evaluate as evaluate_on with:
    input:
        model=f"{RESULTS}/models/{{encoder}}/{{init}}/{{task}}/{{recipe}}/seed{{seed}}",
        data=lambda w: T.check_testset(config, w.task, w.testset, w.split, w.langset),
    output:
        metrics=f"{RESULTS}/eval/{{encoder}}/{{init}}/{{task}}/{{recipe}}/seed{{seed}}/on-{{testset}}/{{split}}.{{langset}}.json",
        predictions=f"{RESULTS}/eval/{{encoder}}/{{init}}/{{task}}/{{recipe}}/seed{{seed}}/on-{{testset}}/{{split}}.{{langset}}.predictions.jsonl",
    log:
        "logs/eval/{encoder}/{init}/{task}/{recipe}/seed{seed}/on-{testset}/{split}.{langset}.log",
