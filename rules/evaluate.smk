# Evaluation of a fine-tuned model on one split of a named language set.


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
        langs=lambda w: " ".join(config["language_sets"][w.langset]),
    shell:
        "evaluate.py --model {input.model} --data {input.data}"
        " --split {wildcards.split} --langs {params.langs} --out {output.metrics}"
        " --predictions {output.predictions} --threads {threads} 2> {log}"
