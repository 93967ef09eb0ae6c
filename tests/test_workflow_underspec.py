"""The underspec part of the real Snakemake DAG on the tiny preset, shrunk further here."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
import yaml

from tests.browser import dump_dom, visible_text
from tests.test_workflow import SHRINK, snakemake
from xlt.workflow import paper_targets as P
from xlt.dag import targets as T

UNDERSPEC_SHRINK = {
    **SHRINK,
    "hparams": {"underspec": {"epochs": 2, "batch_size": 16, "max_train_examples": 80}},
    "language_sets": {"underspec_sources": ["en"], "underspec_targets": ["de"]},
    "papers": {"underspec": {
        "seeds": [1, 2],
        "tasks": ["parsing"],
        "variants": ["all", "encoder"],
        "grid": {"alpha_1d": {"lo": -0.5, "hi": 1.5, "step": 0.5, "extra": [0.25]},
                 "alpha_2d": {"lo": 0, "hi": 1, "step": 0.5}},
        "figures": {"fig3": [{"task": "parsing", "source": "en", "target": "de"}],
                    "fig10": [{"task": "parsing", "source": "en", "target": "de"}]},
    }},
}
FIGURES = ["fig2", "fig3", "fig4", "fig5", "fig7", "fig10", "fig2_encoder"]


@pytest.fixture(scope="module")
def underspec_run(tmp_path_factory, zygote):
    workdir = tmp_path_factory.mktemp("underspec")
    (workdir / "shrink.yaml").write_text(yaml.safe_dump(UNDERSPEC_SHRINK))
    run = snakemake(workdir, "underspec_all", "--cores", "2", zygote=zygote)
    assert run.returncode == 0, run.stderr[-4000:]
    return workdir


@pytest.mark.slow
def test_underspec_all_writes_every_figure_with_its_csv(underspec_run):
    fig_dir = underspec_run / "results/figures/underspec"
    for name in FIGURES:
        for ext in T.FIGURE_FORMATS:
            assert (fig_dir / f"{name}.{ext}").stat().st_size > 0, f"{name}.{ext}"
    assert not (fig_dir / "fig6.png").exists()  # NER is not configured here
    fig2 = pd.read_csv(fig_dir / "fig2.csv")
    assert set(fig2["direction"]) == {"src", "tgt"} and set(fig2["dev"]) == {"source dev", "target dev"}
    assert sorted(fig2["alpha"].unique()) == [-0.5, 0.0, 0.25, 0.5, 1.0, 1.5]
    at_one = fig2[fig2["alpha"] == 1.0]
    assert (at_one["mean"] - 1.0).abs().max() < 1e-12  # normalised by the bilingual model
    fig4 = pd.read_csv(fig_dir / "fig4.csv")
    assert len(fig4) == 2 and {"ratio", "angle_deg"} <= set(fig4.columns)  # one point per seed
    fig3 = pd.read_csv(fig_dir / "fig3.csv")
    assert len(fig3) == 2 * 9  # dev sets × 3 × 3 points


@pytest.mark.slow
def test_grid_jobs_carry_provenance_and_reuse_theta_src(underspec_run):
    grid = underspec_run / "results/underspec/grids/tiny/parsing/en-de/seed1"
    meta = json.loads((grid / "all.1d.json").read_text())
    assert meta["models"]["src"]["path"] == "results/models/tiny/pretrained/parsing/en.underspec/seed1"
    assert meta["models"]["bi"]["path"] == "results/models/tiny/pretrained/parsing/de+en.underspec/seed1"
    assert meta["setting"]["metric"] == "las" and meta["points"] == 2 * 6
    assert meta["provenance"]["data_sha256"] and "source_sha256" in meta["provenance"]["code"]
    # one job scored the setting's three grids (rule underspec_grid_2d: Figs. 3 and 10 show it)
    assert meta["job_grids"] == ["all.1d", "encoder.1d", "all.2d"]
    enc = json.loads((grid / "encoder.1d.json").read_text())
    assert enc["interpolated"]["parameters"] < meta["interpolated"]["parameters"]
    rows = pd.read_csv(grid / "all.1d.csv")
    assert len(rows) == 2 * 6 * 2 and set(rows["eval_lang"]) == {"source", "target"}
    run = snakemake(underspec_run, "underspec_all", "-n")
    assert run.returncode == 0 and "Nothing to be done" in run.stdout + run.stderr


@pytest.mark.slow
def test_report_opens_in_a_browser_and_lists_every_figure_with_caption_and_rule(underspec_run, tmp_path):
    run = snakemake(underspec_run, "underspec_all", "--report", "report.html")
    assert run.returncode == 0, run.stderr[-3000:]
    page = underspec_run / "report.html"
    shown = visible_text(dump_dom(page, tmp_path))
    assert "Results" in shown and "Statistics" in shown  # the app rendered its menu (one paper: no category list)
    # A user opens the paper's category, then its figures: one row per figure, a column per format.
    figures = visible_text(dump_dom(page, tmp_path, then="app.setView({navbarMode: 'subcategory', category: 'underspec', subcategory: 'figures'})"))
    listed = figures[figures.index("figure") + 1:]
    assert listed[: len(FIGURES)] == sorted(FIGURES) and {"png", "csv"} <= set(figures), figures
    # A figure's entry: its caption from the plugin registry and the rule that made it.
    fig = visible_text(dump_dom(page, tmp_path, then="app.showResultInfo('results/figures/underspec/fig4.png')"))
    assert any(P.caption("underspec", "fig4") in t for t in fig)
    assert "Snakemake rule" in fig and fig[fig.index("Snakemake rule") + 1] == "paper_figure"
    # A table's entry shows the table itself, rendered (a heading, an HTML table, cell by cell), under its caption.
    dom = dump_dom(page, tmp_path, then="app.showResultInfo('results/tables/underspec/table1.md')")
    table = visible_text(dom)
    assert any(P.caption("underspec", "table1") in t for t in table)
    assert "underspec Table 1: number of examples" in table and not any(t.startswith(("## ", "|")) for t in table)
    assert re.search(r"<h2>underspec Table 1: number of examples</h2>", dom)
    # cells as rendered HTML: paper · ours · Δ (this run trains parsing only: the other columns' ours is –)
    assert re.search(r"<td>en train</td>\s*<td>[\d,]+ · – · –</td>(\s*<td>[^<]*</td>)*?\s*<td>– · \d+ · –</td>", dom), \
        dom[dom.find("en train") - 300:dom.find("en train") + 300]
    assert table[table.index("Snakemake rule") + 1] == "paper_table"
