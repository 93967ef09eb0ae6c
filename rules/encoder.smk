# Encoders built inside the DAG (tiny preset): corpus -> WordPiece + MLM-pretrained BERT.
# Hub encoders (config.yaml) need no rule: fine-tuning loads them by their Hub id.


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
        directory(f"{RESULTS}/encoders/{{encoder}}"),
    log:
        "logs/encoders/{encoder}.build.log",
    conda:
        ENV
    threads: R.job_threads(config, "build_encoder")
    resources:
        **R.job_resources(config, "build_encoder"),
    params:
        build=lambda w: as_json(config["encoders"][w.encoder]["build"]),
        checkpoints=f"{RESULTS}/checkpoints/encoders/{{encoder}}",
    shell:
        "build_encoder.py --corpus {input.corpus} --build {params.build:q}"
        " --out {output} --checkpoint-dir {params.checkpoints} --threads {threads} 2> {log}"
