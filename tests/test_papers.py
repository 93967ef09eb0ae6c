"""The paper plugins (xlt.papers): the registry, what each paper's targets read, and that a
table added to a plugin reaches every list, rule and index without touching anything else."""

import dataclasses
import os
import re
from pathlib import Path

import pandas as pd
import pytest

from tests.test_config import base
from xlt.workflow import paper_outputs as PO
from xlt.workflow import paper_targets as P
from xlt.errors import XltError
from xlt.paperkit import datasize
from xlt.paperkit.base import Table
from xlt.papers.crossmulti import plan as crossmulti
from xlt.papers.underspec import plan as US
from xlt.paperkit.published import list_published
from xlt.workflow.report import index_markdown, rst_escape

EXISTING_TARGETS = ("crossmulti_table1", "crossmulti_table2", "dlfa_table1", "underspec_table1", "crossmulti_all", "underspec_all")


# ---- the registry ------------------------------------------------------------------------------


def test_every_table_and_figure_has_a_caption_and_every_table_its_published_numbers():
    published = set(list_published())
    for slug, paper in P.PAPERS.items():
        assert P.title(slug)
        for table in paper.tables:
            assert table.caption or (slug, table.id) in published, (slug, table.id)
            assert len(P.caption(slug, table.id)) > 20
        for fig in paper.figures:
            assert len(P.caption(slug, fig.id)) > 20
        assert len({t.id for t in paper.tables} | {f.id for f in paper.figures}) == len(paper.tables) + len(paper.figures)


def test_target_rules_keep_their_names_and_files():
    cfg = base()
    rules = P.target_rules(cfg)
    assert set(EXISTING_TARGETS) <= set(rules)
    assert rules["crossmulti_table2"] == [f"results/tables/crossmulti/table2.{ext}" for ext in ("csv", "md", "tex", "html")]
    tables = [f for t in ("table1", "table2", "table3", "table4", "table5", "table6") for f in rules[f"crossmulti_{t}"]]
    assert set(rules["crossmulti_all"]) == set(tables + P.paper_figures(cfg, "crossmulti"))
    assert {Path(f).stem for f in P.paper_figures(cfg, "crossmulti")} == {"fig1", "figa1", "figa2", "figa3", "figa4"}
    assert set(rules["underspec_all"]) == set(rules["underspec_table1"] + P.paper_figures(cfg, "underspec"))
    assert P.all_tables(cfg)[-1] == "results/tables/index.md"
    # every figure has its own target too, in the paper's order after the tables
    assert rules["crossmulti_fig1"] == [f"results/figures/crossmulti/fig1.{ext}" for ext in ("png", "pdf", "csv")]
    # a paper's tables in its own order (the paper's numbering), then its figures
    ids = [t.id for t in P.get_paper("xmixup").tables]
    assert [k.removeprefix("xmixup_") for k in rules if k.startswith("xmixup_")][:len(ids)] == sorted(ids, key=lambda t: int(t[5:]))
    assert P.item_targets("underspec") == ["table1", "fig2", "fig2_encoder", *(f"fig{i}" for i in range(3, 11))]
    assert P.item_targets("crossmulti")[-5:] == ["fig1", "figa1", "figa2", "figa3", "figa4"]
    del cfg["papers"]["underspec"]  # a paper not configured: none of its files is a target
    assert not any("/underspec/" in f for f in P.all_tables(cfg))


def test_unknown_names_fail_with_the_allowed_ones():
    with pytest.raises(XltError, match=r"unknown table of paper crossmulti 'tabel2'; allowed: table1, table2, table3, table4, table5, table6\. Did you mean 'table2'\?"):
        P.get_table("crossmulti", "tabel2")
    with pytest.raises(XltError, match="unknown paper 'underspc'.*Did you mean 'underspec'"):
        P.table_inputs(base(), "underspc", "table1")
    cfg = base()
    cfg["papers"]["underspec"]["tasks"] = ["ner"]
    with pytest.raises(XltError, match="fig7"):  # parsing's figure: not made by this config
        P.figure_inputs(cfg, "underspec", "fig7")


def test_adding_a_table_touches_only_its_plugin(monkeypatch, tmp_path):
    """A table declared in a plugin is a target, a rule alias, a wildcard value of the generic
    rule, built by make_table and listed in the index, with nothing else edited."""

    def build(spec, inputs):
        table = pd.DataFrame({"file": inputs, "seeds": [len(spec["seeds"])] * len(inputs)})
        return table, "## toy\n", "% toy\n"

    toy = Table("table9", inputs=lambda cfg: [f"{cfg['results']}/eval/toy.json"], build=build, caption="A toy table.")
    paper = P.PAPERS["crossmulti"]
    monkeypatch.setitem(P.PAPERS, "crossmulti", dataclasses.replace(paper, tables=paper.tables + (toy,)))
    cfg = base()
    files = [f"results/tables/crossmulti/table9.{ext}" for ext in ("csv", "md", "tex", "html")]
    assert set(files) <= set(P.all_tables(cfg))
    assert P.target_rules(cfg)["crossmulti_table9"] == files
    assert set(files) <= set(P.target_rules(cfg)["crossmulti_all"])
    assert "table9" in P.wildcard_pattern("table").split("|")
    assert P.table_inputs(cfg, "crossmulti", "table9") == ["results/eval/toy.json"]
    spec = P.table_spec(cfg, "crossmulti", "table9")
    assert spec == cfg["papers"]["crossmulti"]
    table = PO.make_table("crossmulti", "table9", spec, ["a.json", "b.json"], str(tmp_path / "table9"))
    assert list(table["seeds"]) == [3, 3] and (tmp_path / "table9.md").read_text() == "## toy\n"
    assert "- [crossmulti/table9.md](crossmulti/table9.md) ([csv](crossmulti/table9.csv), [tex](crossmulti/table9.tex), [html](crossmulti/table9.html)): A toy table." in index_markdown(files, "results/tables/index.md")


# ---- the index and the report's captions -------------------------------------------------------


def test_index_links_every_table_and_figure_beside_its_caption():
    cfg = base()
    md = index_markdown(P.tables_and_figures(cfg), P.index_file(cfg))
    assert "## crossmulti: Enhancing Cross-Lingual Training with Knowledge Learned from Multi-Lingual Training" in md
    for slug, paper in P.PAPERS.items():
        if paper.standalone:  # a study beside the papers: made by its own target, not listed by make tables' index
            assert f"[{slug}/" not in md
            continue
        for table in paper.tables:
            assert f"- [{slug}/{table.id}.md]({slug}/{table.id}.md) ([csv]({slug}/{table.id}.csv), [tex]({slug}/{table.id}.tex), [html]({slug}/{table.id}.html)): {P.caption(slug, table.id)}" in md
    for fig in P.figure_names(cfg, "underspec"):
        assert f"- [underspec/{fig}.png](../figures/underspec/{fig}.png) ([pdf](../figures/underspec/{fig}.pdf), [csv](../figures/underspec/{fig}.csv)): " in md
    assert md.index("## crossmulti") < md.index("## dlfa") < md.index("## underspec")
    with pytest.raises(XltError, match="not a table or figure"):
        index_markdown(["results/eval/x.json"], "results/tables/index.md")


def test_captions_are_escaped_for_restructured_text():
    from docutils.core import publish_parts

    text = "a *b* `c` d_ |e| [f] <g> \\h"
    html = publish_parts(rst_escape(text), writer="html")["body"]
    assert "<em>" not in html and "<cite>" not in html and "problematic" not in html
    assert "a *b* `c` d_ |e| [f] &lt;g&gt; \\h" in html


def test_crossmulti_table2_needs_every_task_setting_seed():
    cfg = base()
    paths = crossmulti.table2_inputs(cfg)
    p = cfg["papers"]["crossmulti"]
    # every evaluation file, and with papers.crossmulti.oracle (on in config.yaml) every model (its oracle.json)
    assert len(paths) == len(set(paths)) == 2 * len(p["tasks"]) * 2 * len(p["seeds"])
    assert "results/models/mbert/pretrained/ner/en.crossmulti/seed2" in paths
    assert len(crossmulti.table2_inputs({**cfg, "papers": {**cfg["papers"], "crossmulti": {**p, "oracle": False}}})) == len(paths) // 2
    # crossmulti's POS reads its own UD selection (es AnCora): dataset pos.es_ancora
    assert "results/eval/mbert/pretrained/pos.es_ancora/en.crossmulti/seed1/test.crossmulti.json" in paths
    assert "results/eval/mbert/pretrained/marc/de+en+es+fr.crossmulti/seed3/test.crossmulti.json" in paths




def test_data_size_tables_are_targets():
    cfg = base()
    for paper in ("crossmulti", "dlfa", "underspec"):
        assert f"results/tables/{paper}/table1.csv" in P.all_tables(cfg)
    spec = datasize.spec(cfg, "dlfa")
    assert spec["tasks"]["pos"]["dataset"] == "pos.xtreme" and spec["tasks"]["pos"]["ud"]["version"] == "2.5"
    assert len(spec["tasks"]["ner"]["languages"]) == 40
    assert datasize.inputs(cfg, "underspec") == ["results/data/xnli", "results/data/ner", "results/data/pos", "results/data/parsing"]
    assert datasize.inputs(cfg, "crossmulti") == ["results/data/pos.es_ancora", "results/data/ner", "results/data/pawsx", "results/data/marc"]


# ---- underspec -------------------------------------------------------------------------------


def test_underspec_recipes_share_theta_src_across_targets():
    cfg = base()
    pairs = US.pairs(cfg)
    assert len(pairs) == 8 + 7 and ("en", "ar") in pairs and ("ar", "ar") not in pairs
    r = US.recipes(cfg, "en", "de")
    assert {k: v.name for k, v in r.items()} == {"src": "en.underspec", "tgt": "de.underspec", "bi": "de+en.underspec"}
    models = {d for st in US.settings(cfg) for d in US.models(cfg, st).values()}
    # per encoder, task and seed: 9 monolingual models (θ_tgt of EN-AR is θ_src of source AR:
    # one recipe, one model) + 15 θ_bi
    assert len(models) == 2 * 4 * 3 * (9 + 15)
    assert "results/models/xlmr_large/pretrained/parsing/ar+zh.underspec/seed3" in models
    assert US.grid_inputs(cfg, "mbert", "ner", "en", "ru", "2") == {
        "src": "results/models/mbert/pretrained/ner/en.underspec/seed2",
        "tgt": "results/models/mbert/pretrained/ner/ru.underspec/seed2",
        "bi": "results/models/mbert/pretrained/ner/en+ru.underspec/seed2",
        "data": "results/data/ner",
    }


def test_underspec_grids_and_figures():
    cfg = base()
    grids = US.grids(cfg)
    assert len(grids) == len(set(grids))
    one_d = [g for g in grids if g.endswith(".1d.csv")]
    two_d = [g for g in grids if g.endswith(".2d.csv")]
    assert len(one_d) == 2 * 4 * 15 * 3 * 2  # encoders × tasks × pairs × seeds × variants
    # 2D grids for the four settings of Figs. 3 and 10, all parameters, every encoder and seed
    assert len(two_d) == 4 * 2 * 3
    assert "results/underspec/grids/xlmr_large/ner/en-ru/seed1/all.2d.csv" in two_d
    assert "results/underspec/grids/mbert/pos/ar-de/seed3/all.2d.csv" in two_d
    names = P.figure_names(cfg, "underspec")
    assert names == ["fig2", "fig3", "fig4", "fig5", "fig6", "fig7", "fig8", "fig9", "fig10", "fig2_encoder"]
    figs = P.paper_figures(cfg, "underspec")
    assert len(figs) == 3 * len(names) and "results/figures/underspec/fig7.pdf" in figs
    assert set(figs) <= set(P.all_tables(cfg)) and set(P.paper_figures(cfg, "underspec")) == set(figs)
    # a per-task figure exists only when its task runs; the encoder-only figure only with its variant
    cfg["papers"]["underspec"].update(tasks=["ner", "parsing"], variants=["all"])
    assert P.figure_names(cfg, "underspec") == ["fig2", "fig3", "fig4", "fig5", "fig6", "fig7", "fig10"]


def test_underspec_one_grid_job_per_setting_and_the_2d_rule_matches_exactly_the_2d_settings():
    """Rule underspec_grid writes the 1D grids of every variant; rule underspec_grid_2d, which
    wins where both match, those and the 2D grid, in the settings its task constraint admits."""
    import re

    cfg = base()
    two_d = set(US.two_d_settings(cfg))
    assert US.grid_job_grids(cfg, "ner", "en", "ru") == ["all.1d", "encoder.1d", "all.2d"] and ("ner", "en", "ru") in two_d
    assert US.grid_job_grids(cfg, "ner", "en", "de") == ["all.1d", "encoder.1d"]
    one, both = US.grid_job_outputs(cfg, two_d=False), US.grid_job_outputs(cfg, two_d=True)
    assert both[: len(one)] == one and [o.rsplit("/", 1)[1] for o in both[len(one):]] == ["all.2d.csv", "all.2d.json"]
    assert one[0] == "results/underspec/grids/{encoder}/{task}/{source}-{target}/seed{seed}/all.1d.csv"
    # the rule's output pattern as Snakemake matches it: the task constraint, the others generic
    task = US.two_d_task_constraint(cfg)
    pattern = re.compile(rf"results/underspec/grids/\w+/(?P<task>{task})/(?P<source>[a-z]+)-(?P<target>[a-z]+)/seed\d+/all\.1d\.csv")
    matched = {(st.task, st.source, st.target) for st in US.settings(cfg)
               if pattern.fullmatch(f"{US.grid_folder(cfg, st)}/all.1d.csv")}
    assert matched == two_d and len(two_d) == 4
    cfg["papers"]["underspec"]["figures"].update(fig3=[], fig10=[])
    assert re.fullmatch(US.two_d_task_constraint(cfg), "ner") is None  # no 2D figure: no 2D job


def test_index_links_the_alignment_stages_table_and_figures():
    """The stage before the papers' tables (the AER table) is listed too, beside its own captions: the index input is every file `all_tables` makes but the index."""
    from xlt.align.targets import CAPTIONS

    cfg = base()
    cfg["world"] = {"seed": 1}  # gold links exist: the AER table is made
    items = P.index_items(cfg)
    assert P.all_tables(cfg) == items + P.claims_page_files(cfg) + [P.index_file(cfg)]
    assert "results/tables/align/aer.md" in items and "results/figures/adjust/fig2.png" in items
    md = index_markdown(items, P.index_file(cfg))
    assert "## align: Word alignment (the bitext of the adjust paper, aligned and scored)" in md and "## adjust: The Impact of Cross-Lingual Adjustment" in md
    assert f"- [align/aer.md](align/aer.md) ([csv](align/aer.csv)): {CAPTIONS[('align', 'aer')]}" in md
    for fig in ("fig1", "fig2"):  # the adjust plugin's figures, with its captions
        assert (f"- [adjust/{fig}.png](../figures/adjust/{fig}.png) ([pdf](../figures/adjust/{fig}.pdf), "
                f"[csv](../figures/adjust/{fig}.csv)): {P.caption('adjust', fig)}") in md
    linked = set(re.findall(r"\]\(([^)]+)\)", md))
    assert {os.path.relpath(f, "results/tables") for f in items} == linked
