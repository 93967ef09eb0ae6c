# toy (tests/toy_paper): the examples of each prepared test split per language, counted by the
# paper's own job; Table 1 (the generic rule paper_table) reads the counts.


rule toy_count:
    input:
        lambda w: papers.toy.plan.count_inputs(config),
    output:
        papers.toy.plan.counts_file(config),
    log:
        "logs/toy/count.log",
    conda:
        ENV
    params:
        split=papers.toy.plan.SPLIT,
    shell:
        "paper_job.py toy count --data {input} --split {params.split} --out {output} 2> {log}"
