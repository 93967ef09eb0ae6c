# Encoders made inside the DAG: results/encoders/{encoder}/{init}/.
# `pretrained` of a built encoder (tiny preset): corpus -> WordPiece + MLM-pretrained BERT.
# Hub encoders (config.yaml) are snapshots fetched by download_encoder (rules/data.smk) into
# {raw_root}/encoders/{encoder}/; jobs load them from there, never from the Hub.
# Adapted encoders (any {init} but `pretrained`, xlt.dag.targets.Init) start from either; the adjusted
# ones (adjust-…) are made by the adjust paper's rule adjust_encoder (rules/adjust.smk).


localrules:
    encoder_corpus,


rule encoder_corpus:
    input:
        world=rules.world.output.manifest,
    output:
        f"{RESULTS}/encoders/{{encoder}}.corpus.txt",
    log:
        "logs/encoders/{encoder}.corpus.log",
    conda:
        ENV
    params:
        world=lambda w: as_json(config["world"]),
        sentences=lambda w: config["encoders"][w.encoder]["build"].get(
            "pretrain_sentences", 2000
        ),
    shell:
        "encoder_corpus.py --world {params.world:q}"
        " --sentences {params.sentences} --out {output} 2> {log}"


rule build_encoder:
    input:
        corpus=rules.encoder_corpus.output,
    output:
        directory(f"{RESULTS}/encoders/{{encoder}}/pretrained"),
    log:
        "logs/encoders/{encoder}/pretrained.log",
    conda:
        ENV
    threads: R.job_threads(config, "build_encoder")
    resources:
        **R.job_resources(config, "build_encoder"),
    params:
        build=lambda w: as_json(
            {
                **config["encoders"][w.encoder]["build"],
                "mlm": T.engine_options(config, config["encoders"][w.encoder]["build"]["mlm"]),
            }
        ),
        checkpoints=f"{RESULTS}/checkpoints/encoders/{{encoder}}",
    shell:
        "build_encoder.py --corpus {input.corpus} --build {params.build:q}"
        " --out {output} --checkpoint-dir {params.checkpoints} --threads {threads} 2> {log}"


# MLM on a task's training text in the languages of a language set (crossmulti's +DA):
# {init} = mlm-<dataset>-<language set>, settings from config `adapt.mlm`.
rule adapt_mlm:
    input:
        unpack(lambda w: T.adapt_inputs(config, w.encoder, w.init)),
    output:
        directory(f"{RESULTS}/encoders/{{encoder}}/{{init}}"),
    log:
        "logs/encoders/{encoder}/{init}.log",
    wildcard_constraints:
        init=r"mlm-[^/]+",
    conda:
        ENV
    threads: R.job_threads(config, "adapt_encoder")
    resources:
        **R.job_resources(config, "adapt_encoder"),
    params:
        encoder=lambda w: T.encoder_source(config, w.encoder),
        task=lambda w: T.task_of(T.Init.parse(w.init).dataset),
        langs=lambda w: " ".join(T.adapt_languages(config, w.init)),
        mlm=lambda w: as_json(T.engine_options(config, config["adapt"]["mlm"])),
        checkpoints=f"{RESULTS}/checkpoints/encoders/{{encoder}}/{{init}}",
    shell:
        "adapt_mlm.py --encoder {params.encoder} --data {input.data}"
        " --task {params.task} --langs {params.langs} --mlm {params.mlm:q}"
        " --out {output} --checkpoint-dir {params.checkpoints} --threads {threads} 2> {log}"
