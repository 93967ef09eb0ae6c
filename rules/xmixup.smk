# xmixup's own rule: linear CKA (Kornblith et al. 2019) between English and each language of a
# language set, on the parallel test set of the model's task, for one fine-tuned model (its
# Tables 2 and 7, Figure 3); beside it, each language's 2-D PCA coordinates of the same
# representations (Figure 1). An X-Mixup model reads the translate-test set: its mixed states.
# Library: xlt/papers/xmixup/cka.py.


rule xmixup_cka:
    input:
        model=lambda w: T.model_dir(config, w.encoder, w.init, w.task, w.recipe, int(w.seed)),
        data=lambda w: T.data_dir(config, papers.xmixup.plan.cka_dataset(config, w.task, w.recipe)),
    output:
        cka=f"{RESULTS}/xmixup/cka/{{encoder}}/{{init}}/{{task}}/{{recipe}}/seed{{seed}}/{{split}}.{{langset}}.json",
        pca=f"{RESULTS}/xmixup/cka/{{encoder}}/{{init}}/{{task}}/{{recipe}}/seed{{seed}}/{{split}}.{{langset}}.pca.json",
    log:
        "logs/xmixup/cka/{encoder}/{init}/{task}/{recipe}/seed{seed}/{split}.{langset}.log",
    conda:
        ENV
    threads: R.job_threads(config, "evaluate")
    resources:
        **R.job_resources(config, "evaluate"),
    params:
        langs=lambda w: " ".join(T.langset_languages(config, w.langset)),
    shell:
        "paper_job.py xmixup cka --model-dir {input.model} --data-dir {input.data} --langs {params.langs}"
        " --split {wildcards.split} --source en --out {output.cka} --pca-out {output.pca}"
        " --threads {threads} 2> {log}"


# Figure 4: one fine-tuned model's language centroids (the mean of each language's mean-pooled
# last-layer sentence representations) on the test split of another task's dataset (a POS
# set); figures.centroids_file names it. Library: xlt/papers/xmixup/centroids.py.
rule xmixup_centroids:
    input:
        model=lambda w: T.model_dir(config, w.encoder, w.init, w.task, w.recipe, int(w.seed)),
        data=lambda w: T.data_dir(config, w.testset),
    output:
        f"{RESULTS}/xmixup/centroids/{{encoder}}/{{init}}/{{task}}/{{recipe}}/seed{{seed}}/on-{{testset}}/{{split}}.{{langset}}.json",
    log:
        "logs/xmixup/centroids/{encoder}/{init}/{task}/{recipe}/seed{seed}/on-{testset}/{split}.{langset}.log",
    conda:
        ENV
    threads: R.job_threads(config, "evaluate")
    resources:
        **R.job_resources(config, "evaluate"),
    params:
        langs=lambda w: " ".join(T.langset_languages(config, w.langset)),
        max_sentences=lambda w: papers.xmixup.figures.max_sentences_arg(config),
    shell:
        "paper_job.py xmixup centroids --model-dir {input.model} --data-dir {input.data} --langs {params.langs}"
        " --split {wildcards.split} --source en {params.max_sentences} --out {output} --threads {threads} 2> {log}"
