# Paper tables and figures, one generic rule each; which exist, what they read and their
# captions come from the paper plugins (xlt.papers, as `P`). Every alias target
# (crossmulti_table2, underspec_all, ...) is listed by P.target_rules.


localrules:
    paper_table,
    paper_figure,
    tables_index,
    paper_claims,
    claims_page,


# A table: the published value, ours (mean ± std over seeds), the difference.
rule paper_table:
    input:
        lambda w: P.table_inputs(config, w.paper, w.table),
    output:
        **reported(T.table_outputs(config, "{paper}", "{table}"), "table"),
    log:
        "logs/tables/{paper}/{table}.log",
    wildcard_constraints:
        paper=P.wildcard_pattern("paper"),
        table=P.wildcard_pattern("table"),
    conda:
        ENV
    params:
        spec=lambda w: as_json(P.table_spec(config, w.paper, w.table)),
        ledger_notes=lambda w: as_json(FIDELITY.item_notes(config, w.paper, w.table)),
        caption=lambda w: rst_caption(
            w.paper, w.table, P.is_published_only(config, w.paper, w.table)
        ),
        prefix=lambda w, output: output[0].rsplit(".", 1)[0],
    shell:
        "make_table.py --paper {wildcards.paper} --table {wildcards.table}"
        " --spec {params.spec:q} --ledger-notes {params.ledger_notes:q} --inputs {input}"
        " --out-prefix {params.prefix} 2> {log}"


# A figure (PNG, PDF and the CSV of the numbers plotted), from what its paper's analysis wrote.
rule paper_figure:
    input:
        lambda w: P.figure_inputs(config, w.paper, w.figure),
    output:
        **reported(T.figure_outputs(config, "{paper}", "{figure}"), "figure"),
    log:
        "logs/figures/{paper}/{figure}.log",
    wildcard_constraints:
        paper=P.wildcard_pattern("paper"),
        figure=P.wildcard_pattern("figure"),
    conda:
        ENV
    params:
        spec=lambda w: as_json(P.figure_spec(config, w.paper)),
        caption=lambda w: rst_caption(w.paper, w.figure),
        out_dir=lambda w, output: os.path.dirname(output[0]),
    shell:
        "make_figure.py --paper {wildcards.paper} --figure {wildcards.figure}"
        " --spec {params.spec:q} --inputs {input} --out-dir {params.out_dir} 2> {log}"


# results/tables/index.md: every table and figure beside its paper's caption.
rule tables_index:
    input:
        P.index_items(config),
    output:
        report(P.index_file(config), caption="../report/index.rst", category="index"),
    log:
        "logs/tables/index.log",
    conda:
        ENV
    params:
        figure_notes=lambda w: as_json(P.index_figure_notes(config)),
        published_only=lambda w: P.published_only(config),
    shell:
        # the notes reach the job on stdin (echo is the shell's own: no argument-length limit)
        "echo {params.figure_notes:q} | tables_index.py --items {input} --figure-notes - "
        "--published-only {params.published_only} --out {output} 2> {log}"


# Which findings of a paper hold (xlt.claims): its claims file decided on the CSVs of its tables
# and figures (no training, no evaluation: a second of reading). <slug>_claims makes one paper's.
rule paper_claims:
    input:
        lambda w: P.claims_inputs(config, w.paper),
    output:
        csv=f"{RESULTS}/claims/{{paper}}.csv",
        md=f"{RESULTS}/claims/{{paper}}.md",
    log:
        "logs/claims/{paper}.log",
    wildcard_constraints:
        paper=P.wildcard_pattern("paper"),
    conda:
        ENV
    params:
        reflects=lambda w: P.claims_reflect(config, w.paper),
        prefix=lambda w, output: output.csv.rsplit(".", 1)[0],
    shell:
        "make_claims.py --paper {wildcards.paper} --reflects {params.reflects:q}"
        " --inputs {input} --out-prefix {params.prefix} 2> {log}"


CLAIMS_REPORT = {"caption": "../report/claims.rst", "category": "claims"}


# results/claims.md (and .csv): every configured paper's claims on one page.
rule claims_page:
    input:
        [P.claims_files(config, slug)[0] for slug in P.claim_papers(config)],
    output:
        md=report(P.claims_page_files(config)[0], **CLAIMS_REPORT),
        csv=P.claims_page_files(config)[1],
    log:
        "logs/claims/page.log",
    conda:
        ENV
    shell:
        "claims_page.py --inputs {input} --out-md {output.md} --out-csv {output.csv} 2> {log}"


for alias, files in P.target_rules(config).items():

    rule:
        name:
            alias
        input:
            files,
        localrule: True
