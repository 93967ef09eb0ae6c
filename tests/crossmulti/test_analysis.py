"""crossmulti Tables 3-5 and Figures 1, A1-A4 from hand-made analysis CSVs."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from xlt.workflow.paper_outputs import draw_figure, make_table
from xlt.papers.crossmulti.tables import scaled_k, topk_compare

TASKS = ["pos", "ner", "pawsx", "marc"]
SPEC = {"encoder": "tiny", "tasks": TASKS, "source": "en", "seeds": [1, 2],
        "metric": {"pos": "f1_macro", "ner": "span_f1_macro", "pawsx": "f1_macro", "marc": "f1_macro"},
        "analysis": {"seeds": [1, 2], "topk": [40, 60, 80], "topk_of_heads": 144}, "heads_total": 16}


def probe_csv(path, task, setting, seed, model_scores: dict, head_scores: dict) -> str:
    rows = []
    for probe, v in model_scores.items():
        rows.append({"task": task, "setting": setting, "seed": seed, "probe_task": probe, "unit": "model",
                     "layer": -1, "head": -1, "value": v})
    for probe, grid in head_scores.items():
        for (layer, head), v in np.ndenumerate(grid):
            rows.append({"task": task, "setting": setting, "seed": seed, "probe_task": probe, "unit": "head",
                         "layer": layer, "head": head, "value": v})
    pd.DataFrame(rows).to_csv(path, index=False)
    return str(path)


@pytest.fixture
def probes(tmp_path):
    """Vanilla scores 50 everywhere; a model of (task, setting, seed) scores 50 + offset; head scores
    a fixed ranking, reversed for the multi models of ner."""
    ranking = np.arange(16, dtype=float).reshape(4, 4)
    files = [probe_csv(tmp_path / "vanilla.csv", "none", "vanilla", 0, {t: 50.0 for t in TASKS},
                       {t: np.full((4, 4), 10.0) for t in TASKS})]  # the same everywhere: rankings as they are
    for task, setting, seed in itertools.product(TASKS, ("cross", "multi"), (1, 2)):
        offset = (2.0 if setting == "multi" else 1.0) + seed
        heads = {t: (-ranking if (task, setting) == ("ner", "multi") else ranking) for t in TASKS}
        files.append(probe_csv(tmp_path / f"{task}-{setting}-{seed}.csv", task, setting, seed,
                               {t: 50.0 + offset for t in TASKS}, heads))
    return files


def test_table3_is_ceiling_minus_probe(probes, tmp_path):
    table = make_table("crossmulti", "table3", SPEC, probes, str(tmp_path / "table3"))
    assert len(table) == 24  # 8 models × 3 probing tasks (a model's own task left out)
    row = table[(table.task == "ner") & (table.setting == "multi") & (table.probe_task == "pos")].iloc[0]
    assert row["ours_mean"] == pytest.approx(3.5)  # 50 + 2 + seed − 50, seeds 1 and 2
    assert row["paper"] == -0.14
    assert not ((table.task == table.probe_task)).any()
    md = (tmp_path / "table3.md").read_text()
    assert "| | POS | NER | PI | SA |" in md and md.index("| POS cross") < md.index("| NER cross")  # the paper's order


def test_table4_overlap_and_rho(probes, tmp_path):
    table = make_table("crossmulti", "table4", SPEC, probes, str(tmp_path / "table4"))
    same = table[(table.task == "pos") & (table.setting == "multi") & (table.probe_task == "ner") & (table.topk == 40)]
    assert same.set_index("metric").loc["overlap", "ours_mean"] == scaled_k(40, 16, 144) == 4
    assert same.set_index("metric").loc["spearman", "ours_mean"] == pytest.approx(1.0)
    flipped = table[(table.task == "ner") & (table.setting == "multi") & (table.probe_task == "pos") & (table.topk == 80)]
    assert flipped.set_index("metric").loc["overlap", "ours_mean"] == 2  # top 9 of 16 each way share 2 heads
    md = (tmp_path / "table4.md").read_text()
    assert "K=40" in md and md.index("| POS cross") < md.index("| POS multi")  # the paper's order: cross first


def test_topk_compare_by_hand():
    a = np.array([5.0, 4.0, 3.0, 2.0, 1.0, 0.0])
    b = np.array([4.0, 5.0, 3.0, 0.0, 1.0, 2.0])
    overlap, rho, _ = topk_compare(a, b, 3)
    assert overlap == 3 and rho == pytest.approx(0.5)  # heads 0, 1, 2: ranks (1,2,3) vs (2,1,3)
    assert np.isnan(topk_compare(a, b[::-1].copy(), 2)[1])  # under three shared heads: no ρ


def test_table5_and_figures(probes, tmp_path):
    rows = []
    for task in TASKS:
        for setting, seed in [("vanilla", None), ("cross", 1), ("cross", 2), ("multi", 1), ("multi", 2)]:
            for lang in ("en", "de", "es", "fr"):
                rows.append({"task": task, "setting": setting, "seed": seed, "lang": lang, "pppl": 10.0 + (seed or 0)})
    pd.DataFrame(rows).to_csv(tmp_path / "pppl.csv", index=False)
    table = make_table("crossmulti", "table5", SPEC, [str(tmp_path / "pppl.csv")], str(tmp_path / "table5"))
    van = table[(table.task == "pos") & (table.setting == "vanilla") & (table.lang == "de")].iloc[0]
    assert van["paper"] == 10.64 and van["ours_mean"] == 10.0
    assert table[(table.setting == "cross")]["ours_mean"].eq(11.5).all()

    upd = []
    for task, setting, seed in itertools.product(TASKS, ("cross", "multi"), (1, 2)):
        for layer, head in itertools.product(range(4), range(4)):
            upd.append({"task": task, "setting": setting, "seed": seed, "layer": layer, "head": head,
                        "update": 0.01 * (layer * 4 + head) * (2 if setting == "multi" else 1)})
    upd_csv = tmp_path / "head_updates" / "tiny.csv"
    upd_csv.parent.mkdir()
    pd.DataFrame(upd).to_csv(upd_csv, index=False)
    inputs = [str(upd_csv), *probes]
    for fig in ("fig1", "figa2"):
        draw_figure("crossmulti", fig, SPEC, inputs, str(tmp_path / "figs"))
        for ext in ("png", "pdf", "csv"):
            assert (tmp_path / "figs" / f"{fig}.{ext}").stat().st_size > 0
    fig1 = pd.read_csv(tmp_path / "figs" / "fig1.csv")
    assert fig1["rho_cross_multi"].eq(1.0).all()  # multi = 2 × cross: the same ranking
    assert fig1["p_cross_multi"].lt(1e-9).all()  # ... over 16 heads: p ≈ 0, shown beside ρ
    assert fig1["diff"].ge(0).all()
    marks = pd.read_csv(tmp_path / "figs" / "figa2.csv")
    pos_cross = marks[(marks.task == "pos") & (marks.setting == "cross")]
    assert (pos_cross["mark"] == "top").sum() == 4 and pos_cross.loc[pos_cross["mark"] == "top", "value"].min() == 12 - 10  # over the vanilla probe (10)


def test_table3_marks_a_probe_that_learned_nothing(probes, tmp_path):
    """PI cross seed 1's probe on NER learned nothing: its cell is †1 with the other seed's mean
    in the notes; the vanilla encoder's SA probe learned nothing: every SA cell is over it, †2."""
    for path in probes:
        df = pd.read_csv(path)
        model = df["unit"] == "model"
        df["probe_collapsed"] = model & (
            ((df["task"] == "pawsx") & (df["setting"] == "cross") & (df["seed"] == 1) & (df["probe_task"] == "ner"))
            | ((df["setting"] == "vanilla") & (df["probe_task"] == "marc")))
        df.to_csv(path, index=False)
    table = make_table("crossmulti", "table3", SPEC, probes, str(tmp_path / "table3"))
    cells = table.set_index(["task", "setting", "probe_task"])
    assert cells.loc[("pawsx", "cross", "ner"), "n_collapsed"] == 1
    assert cells.loc[("pawsx", "cross", "ner"), "mean_without_collapsed"] == pytest.approx(3.0)  # seed 2: 50 + 1 + 2 − 50
    assert (cells.xs("marc", level="probe_task")["n_collapsed"] == 2).all()
    assert cells.loc[("pawsx", "multi", "ner"), "n_collapsed"] == 0 and cells.loc[("pos", "cross", "pawsx"), "n_collapsed"] == 0
    md = (tmp_path / "table3.md").read_text()
    assert "†1" in md and "PI cross / NER 3.00 (n=1)" in md
    assert "probe learned nothing" in md and "token accuracy" in md  # the rule, stated


def test_table4_marks_a_cell_whose_top_heads_learned_nothing(probes, tmp_path):
    """The ner multi seed-1 model's probe of its best POS head learned nothing: its POS cells are †."""
    for path in probes:
        df = pd.read_csv(path)
        df["probe_collapsed"] = ((df["task"] == "ner") & (df["setting"] == "multi") & (df["seed"] == 1)
                                 & (df["probe_task"] == "pos") & (df["unit"] == "head") & (df["layer"] == 0) & (df["head"] == 0))
        df.to_csv(path, index=False)
    table = make_table("crossmulti", "table4", SPEC, probes, str(tmp_path / "table4"))
    cells = table.dropna(subset=["ours_mean"]).set_index(["task", "setting", "probe_task"])
    assert (cells.loc[("ner", "multi", "pos"), "n_collapsed"] == 1).all()  # head 0 is its best (its ranking is reversed)
    assert (cells.drop(index=("ner", "multi", "pos"))["n_collapsed"] == 0).all()
    assert "learned nothing" in (tmp_path / "table4.md").read_text()
    draw_figure("crossmulti", "figa1", SPEC, probes, str(tmp_path / "figs"))  # per-head POS probes: that head †
    heads = pd.read_csv(tmp_path / "figs" / "figa1.csv").set_index(["task", "setting", "layer", "head"])
    assert heads.loc[("ner", "multi", 0, 0), "unlearned_seeds"] == 1 and heads["unlearned_seeds"].sum() == 1
