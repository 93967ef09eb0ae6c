# dlfa: the layer sweep, the ablation and the second encoder are fine-tuning recipes
# (<source>.<profile>-dlfa<X>[-global|-local][-gated], rule finetune); Table VI's cosine
# similarity of parallel XNLI sentences is one job per encoder and seed over every swept model.


rule dlfa_similarity:
    input:
        unpack(lambda w: papers.dlfa.plan.similarity_inputs(config, w.encoder, int(w.seed))),
    output:
        csv=f"{RESULTS}/dlfa/similarity/{{encoder}}/seed{{seed}}.csv",
        json=f"{RESULTS}/dlfa/similarity/{{encoder}}/seed{{seed}}.json",
    log:
        "logs/dlfa/similarity/{encoder}/seed{seed}.log",
    conda:
        ENV
    threads: R.job_threads(config, "evaluate")
    resources:
        **R.job_resources(config, "evaluate"),
    params:
        models=lambda w: as_json(
            papers.dlfa.plan.similarity_models(config, w.encoder, int(w.seed))
        ),
        langs=lambda w: " ".join(
            config["language_sets"][
                T.paper_language_set(config["papers"]["dlfa"], "xnli")
            ]
        ),
        source=lambda w: config["papers"]["dlfa"]["source"],
        sentences=lambda w: config["papers"]["dlfa"]["similarity"]["sentences"],
        sample_seed=lambda w: config["papers"]["dlfa"]["similarity"]["seed"],
        max_length=lambda w: config["papers"]["dlfa"]["similarity"]["max_length"],
    shell:
        "paper_job.py dlfa similarity --models {params.models:q} --data {input.data}"
        " --langs {params.langs} --source {params.source} --sentences {params.sentences}"
        " --sample-seed {params.sample_seed} --model-seed {wildcards.seed}"
        " --max-length {params.max_length} --out-csv {output.csv} --out-json {output.json}"
        " --threads {threads} 2> {log}"
