# Raw sources -> the normalised form (docs/data.md), one folder per dataset (task[.treebank set]).
# With the tiny preset the world writes the raw files, so no download job appears.


# Downloads need the internet, which cluster compute nodes often lack: run them where
# Snakemake runs.
localrules:
    download,
    download_encoder,
    data_all,
    prefetch,


rule download:
    output:
        T.download_manifest(config, "{entry}"),
    log:
        "logs/download/{entry}.log",
    conda:
        ENV
    params:
        langs=lambda w: " ".join(P.download_langs(config, w.entry)),
        download=lambda w: as_json(config.get("download", {})),
        # the manifest is <raw_root>/manifests/<source>.json
        raw_root=lambda w, output: os.path.dirname(os.path.dirname(output[0])),
    shell:
        "download.py --source {wildcards.entry} --raw-root {params.raw_root}"
        " --langs {params.langs} --manifest {output} --download {params.download:q} 2> {log}"


# A Hub encoder's files at one commit (locked like the data, section `encoders`), read by every
# job that loads it: jobs never reach for the Hub (xlt.sources.encoders).
rule download_encoder:
    output:
        directory(T.snapshot_dir(config, "{encoder}")),
    log:
        "logs/download/encoders/{encoder}.log",
    conda:
        ENV
    params:
        hub=lambda w: config["encoders"][w.encoder]["hub"],
        revision=lambda w: T.snapshot_revision_arg(config, w.encoder),
        download=lambda w: as_json(config.get("download", {})),
    shell:
        "download.py --encoder {wildcards.encoder} --hub {params.hub} {params.revision}"
        " --out {output} --download {params.download:q} 2> {log}"


# Run once where there is network (a login node) before jobs run where there is none:
# every dataset download and every Hub encoder snapshot the configured papers read.
rule prefetch:
    input:
        P.prefetch(config),


rule prepare_task:
    input:
        lambda w: T.raw_inputs(config, w.task),
    output:
        directory(f"{RESULTS}/data/{{task}}"),
    log:
        "logs/data/{task}.prepare.log",
    conda:
        ENV
    threads: R.job_threads(config, "prepare")
    resources:
        **R.job_resources(config, "prepare"),
    params:
        task=lambda w: T.task_of(w.task),
        langs=lambda w: " ".join(T.task_languages(config, w.task)),
        data=lambda w: as_json(T.source_cfg(config, w.task)),
        raw_root=config["raw_root"],
    shell:
        "prepare_task.py --task {params.task} --langs {params.langs}"
        " --raw-root {params.raw_root} --data {params.data:q} --out {output} 2> {log}"


# every download and every prepared dataset the configured papers read
rule data_all:
    input:
        P.data_all(config),
