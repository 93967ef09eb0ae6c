# Word alignment (adjust paper): WikiMatrix en-xx -> pool -> backend links -> 1-to-1 links
# -> seeded samples; AER against the world's gold links; L2 distances (adjust's Figures 1-2).
# Paths and target lists: xlt/align/targets.py. Why each choice: docs/align.md.
from xlt.align import targets as A

try:
    A.check(config)
except XltError as e:
    print(f"error: invalid configuration: {e}", file=sys.stderr)
    sys.exit(1)


wildcard_constraints:
    **A.WILDCARDS,


localrules:
    align_aer_table,
    align_all,


rule align_pool:
    input:
        A.bitext_inputs(config),
    output:
        pool=f"{RESULTS}/align/en-{{xx}}/pool.tsv",
        meta=f"{RESULTS}/align/en-{{xx}}/pool.json",
    log:
        "logs/align/en-{xx}/pool.log",
    conda:
        ENV
    resources:
        **R.job_resources(config, "prepare"),
    params:
        bitext=lambda w: A.bitext_file(config, w.xx),
        pool=lambda w: as_json(A.pool_config(config)),
    shell:
        "align_stage.py pool --bitext {params.bitext} --pool-config {params.pool:q}"
        " --out {output.pool} --meta {output.meta} 2> {log}"


rule align_links:
    input:
        pool=rules.align_pool.output.pool,
    output:
        raw=directory(f"{RESULTS}/align/en-{{xx}}/{{backend}}/raw"),
        links=f"{RESULTS}/align/en-{{xx}}/{{backend}}/links.pharaoh",
        meta=f"{RESULTS}/align/en-{{xx}}/{{backend}}/align.json",
    log:
        "logs/align/en-{xx}/{backend}/links.log",
    conda:
        ENV
    threads: R.job_threads(config, "align")
    resources:
        **R.job_resources(config, "align"),
    shell:
        "align_stage.py links --pool {input.pool} --backend {wildcards.backend}"
        " --raw-dir {output.raw} --out {output.links} --meta {output.meta}"
        " --threads {threads} 2> {log}"


rule align_sample:
    input:
        pool=rules.align_pool.output.pool,
        links=rules.align_links.output.links,
        meta=rules.align_links.output.meta,
    output:
        sample=f"{RESULTS}/align/en-{{xx}}/{{backend}}/samples/n{{size}}.seed{{seed}}.jsonl",
        meta=f"{RESULTS}/align/en-{{xx}}/{{backend}}/samples/n{{size}}.seed{{seed}}.json",
    log:
        "logs/align/en-{xx}/{backend}/samples/n{size}.seed{seed}.log",
    params:
        draw="",  # the adjustment's draw
    conda:
        ENV
    shell:
        "align_stage.py sample --pool {input.pool} --links {input.links} --align-meta {input.meta}"
        " --size {wildcards.size} --seed {wildcards.seed}{params.draw} --out {output.sample} --meta {output.meta} 2> {log}"


# Continual learning's own sample (an aux set of kind aligned_pairs, its `size`): another draw of
# the same pool with the adjusted init's seed, not the adjustment's pairs (xlt/papers/adjust/inits.py, continual_pairs_file)
use rule align_sample as align_continual_sample with:
    output:
        sample=f"{RESULTS}/align/en-{{xx}}/{{backend}}/samples/continual/n{{size}}.seed{{seed}}.jsonl",
        meta=f"{RESULTS}/align/en-{{xx}}/{{backend}}/samples/continual/n{{size}}.seed{{seed}}.json",
    log:
        "logs/align/en-{xx}/{backend}/samples/continual/n{size}.seed{seed}.log",
    params:
        draw=" --draw continual",


# The subword branch (adjust Table 6's `subword alignment`, xlt/align/subword.py): the pool in
# an encoder's subwords, aligned by the same backend, sampled on the word sample's pairs; an
# adjusted init ending in -subword reads these samples.
rule align_subword_pool:
    input:
        pool=rules.align_pool.output.pool,
        encoder=lambda w: T.encoder_inputs(config, w.encoder),
    output:
        pool=f"{RESULTS}/align/en-{{xx}}/subword-{{encoder}}/pool.tsv",
        meta=f"{RESULTS}/align/en-{{xx}}/subword-{{encoder}}/pool.json",
    log:
        "logs/align/en-{xx}/subword-{encoder}/pool.log",
    conda:
        ENV
    resources:
        **R.job_resources(config, "prepare"),
    params:
        encoder=lambda w: T.encoder_source(config, w.encoder),
    shell:
        "align_stage.py subword-pool --pool {input.pool} --encoder {params.encoder}"
        " --out {output.pool} --meta {output.meta} 2> {log}"


use rule align_links as align_subword_links with:
    input:
        pool=rules.align_subword_pool.output.pool,
    output:
        raw=directory(f"{RESULTS}/align/en-{{xx}}/subword-{{encoder}}/{{backend}}/raw"),
        links=f"{RESULTS}/align/en-{{xx}}/subword-{{encoder}}/{{backend}}/links.pharaoh",
        meta=f"{RESULTS}/align/en-{{xx}}/subword-{{encoder}}/{{backend}}/align.json",
    log:
        "logs/align/en-{xx}/subword-{encoder}/{backend}/links.log",


rule align_subword_sample:
    input:
        pool=rules.align_subword_pool.output.pool,
        links=rules.align_subword_links.output.links,
        meta=rules.align_subword_links.output.meta,
        words=rules.align_sample.output.sample,
    output:
        sample=f"{RESULTS}/align/en-{{xx}}/subword-{{encoder}}/{{backend}}/samples/n{{size}}.seed{{seed}}.jsonl",
        meta=f"{RESULTS}/align/en-{{xx}}/subword-{{encoder}}/{{backend}}/samples/n{{size}}.seed{{seed}}.json",
    log:
        "logs/align/en-{xx}/subword-{encoder}/{backend}/samples/n{size}.seed{seed}.log",
    conda:
        ENV
    shell:
        "align_stage.py subword-sample --pool {input.pool} --links {input.links} --align-meta {input.meta}"
        " --word-sample {input.words} --size {wildcards.size} --seed {wildcards.seed}"
        " --out {output.sample} --meta {output.meta} 2> {log}"


rule align_aer:
    input:
        pool=rules.align_pool.output.pool,
        raw=rules.align_links.output.raw,
        meta=rules.align_links.output.meta,
    output:
        f"{RESULTS}/align/en-{{xx}}/{{backend}}/aer.json",
    log:
        "logs/align/en-{xx}/{backend}/aer.log",
    conda:
        ENV
    params:
        gold=lambda w: A.gold_file(config, w.xx),
    shell:
        "align_stage.py aer --pair {wildcards.xx} --pool {input.pool} --raw-dir {input.raw}"
        " --align-meta {input.meta} --gold {params.gold} --out {output} 2> {log}"


rule align_l2:
    input:
        pool=rules.align_pool.output.pool,
        links=rules.align_links.output.links,
        encoder=lambda w: T.encoder_inputs(config, w.encoder),
    output:
        csv=f"{RESULTS}/align/en-{{xx}}/{{backend}}/l2/{{encoder}}.csv",
        meta=f"{RESULTS}/align/en-{{xx}}/{{backend}}/l2/{{encoder}}.json",
    log:
        "logs/align/en-{xx}/{backend}/l2/{encoder}.log",
    conda:
        ENV
    threads: R.job_threads(config, "l2")
    resources:
        **R.job_resources(config, "l2"),
    params:
        encoder=lambda w: T.encoder_source(config, w.encoder),
        l2=lambda w: as_json(A.l2_job_config(config)),
    shell:
        "align_stage.py l2 --encoder {params.encoder} --pool {input.pool}"
        " --links {input.links} --l2 {params.l2:q} --out {output.csv} --meta {output.meta}"
        " --threads {threads} 2> {log}"


rule align_aer_table:
    input:
        A.aer_inputs(config),
    output:
        A.aer_table(config),
    log:
        "logs/tables/align/aer.log",
    conda:
        ENV
    params:
        configured=" ".join(config["align"]["aer_backends"]),
        default=config["align"]["backend"],
        prefix=lambda w, output: output[0].rsplit(".", 1)[0],
    shell:
        "align_stage.py table --aer {input} --configured {params.configured}"
        " --default {params.default} --out-prefix {params.prefix} 2> {log}"


# the alignment stage: bitext, word links, AER and L2 distances of every configured pair
rule align_all:
    input:
        A.align_all(config),
