"""Collapsed fine-tuning runs in the underspec figures: kept, counted per plotted row in the
figures' CSVs (n_collapsed) and in a note under the figure, like the tables' † marks."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from xlt.errors import XltError
from xlt.papers.underspec.aggregate import COLLAPSED, collapse_note
from xlt.papers.underspec.figures import make_figures

SETTING = {"encoder": "tiny", "variant": "all", "task": "parsing", "source": "en", "target": "de"}
SPEC = {"figures": {"fig3": [{"task": "parsing", "source": "en", "target": "de"}]}}


def model(which: str, seed: int) -> str:
    return f"results/models/tiny/pretrained/parsing/{which}/seed{seed}"


def write_grid(root, seed: int, collapsed: set[str], kind: str) -> str:
    """One grid job's CSV and JSON, scores made up (θ_bi scores 80 on both dev sets)."""
    rows = []
    for lang in ("source", "target"):
        if kind == "1d":
            rows += [{"direction": d, "alpha": a, "alpha1": None, "alpha2": None, "eval_lang": lang,
                      "score": 80.0 - 10 * (1 - a) + seed} for d in ("src", "tgt") for a in (0.0, 0.5, 1.0)]
        else:
            rows += [{"direction": "2d", "alpha": None, "alpha1": a1, "alpha2": a2, "eval_lang": lang,
                      "score": 80.0 + seed if (a1, a2) == (0.0, 0.0) else 70.0 + a1 + seed} for a1 in (0.0, 1.0) for a2 in (0.0, 1.0)]
    stem = root / f"seed{seed}.{kind}"
    pd.DataFrame([{**SETTING, "metric": "las", "seed": seed, **r} for r in rows]).to_csv(f"{stem}.csv", index=False)
    meta = {"setting": {**SETTING, "seed": seed}, "geometry": {"ratio": 1.0 + seed / 10, "angle_deg": 60.0 + seed},
            "models": {w: {"path": model(w, seed), "collapsed": w in collapsed} for w in ("bi", "src", "tgt")}}
    (root / f"seed{seed}.{kind}.json").write_text(json.dumps(meta))
    return f"{stem}.csv"


def figures(root, collapsed_of_seed: dict[int, set[str]]) -> dict:
    root.mkdir()
    csvs = [write_grid(root, seed, collapsed_of_seed.get(seed, set()), kind) for seed in (1, 2) for kind in ("1d", "2d")]
    return make_figures(SPEC, csvs, root / "out", ["fig2", "fig3", "fig4"])


def test_a_collapsed_model_is_counted_where_its_numbers_are_plotted(tmp_path):
    made = figures(tmp_path / "one", {2: {"tgt"}})  # seed 2's θ_tgt collapsed
    fig2 = pd.read_csv(made["fig2"]["csv"])
    # θ_tgt is on Eq. 2's path only; the curves are still drawn from both seeds.
    assert set(fig2.loc[fig2["direction"] == "tgt", "n_collapsed"]) == {1}
    assert set(fig2.loc[fig2["direction"] == "src", "n_collapsed"]) == {0}
    assert set(fig2["n"]) == {1}  # one setting (mean over seeds first): nothing dropped
    fig3 = pd.read_csv(made["fig3"]["csv"])
    assert set(fig3["n_collapsed"]) == {1}  # the 2D grid uses all three models
    fig4 = pd.read_csv(made["fig4"]["csv"]).set_index("seed")
    assert fig4.loc[1, "n_collapsed"] == 0 and fig4.loc[2, "n_collapsed"] == 1 and COLLAPSED not in fig4


def test_the_figure_says_how_many_runs_collapsed_and_is_unchanged_without_any(tmp_path):
    clean = figures(tmp_path / "clean", {})
    again = figures(tmp_path / "again", {})
    marked = figures(tmp_path / "marked", {1: {"src"}, 2: {"bi", "src"}})
    assert set(pd.read_csv(clean["fig2"]["csv"])["n_collapsed"]) == {0}
    png = {name: run["fig2"]["png"].read_bytes() for name, run in (("clean", clean), ("again", again), ("marked", marked))}
    assert png["clean"] == png["again"] and png["marked"] != png["clean"]  # the note is drawn
    # θ_src of seeds 1 and 2 and θ_bi of seed 2: three distinct runs, each counted once.
    fig2 = pd.read_csv(marked["fig2"]["csv"])
    assert set(fig2.loc[fig2["direction"] == "src", "n_collapsed"]) == {3}
    assert set(fig2.loc[fig2["direction"] == "tgt", "n_collapsed"]) == {1}


def test_collapse_note_counts_distinct_runs():
    rows = pd.DataFrame({COLLAPSED: [("a",), ("a", "b"), ()]})
    assert collapse_note(rows).startswith("† 2 collapsed fine-tuning runs (dev predictions nearly all one class or tag, or not clearly better than the majority baseline)")
    assert collapse_note(pd.DataFrame({COLLAPSED: [(), ()]})) is None
    assert collapse_note(pd.DataFrame({"x": [1]})) is None


def test_a_grid_json_without_collapse_flags_is_refused_with_its_path(tmp_path):
    root = tmp_path / "old"
    root.mkdir()
    csv = write_grid(root, 1, set(), "1d")
    meta = json.loads((root / "seed1.1d.json").read_text())
    del meta["models"]["src"]["collapsed"]
    (root / "seed1.1d.json").write_text(json.dumps(meta))
    with pytest.raises(XltError, match=r"seed1\.1d\.json: no models\.\*\.collapsed .*rerun its job"):
        make_figures(SPEC, [csv], root / "out", ["fig2"])


def test_a_task_figure_of_one_pair_draws_the_seeds_band(tmp_path):
    """Figure 7 (parsing) with one pair, as the tiny preset has: its band is over the seeds."""
    root = tmp_path / "grids"
    root.mkdir()
    csvs = [write_grid(root, seed, set(), "1d") for seed in (1, 2)]
    made = make_figures(SPEC, csvs, tmp_path / "out", ["fig7"])
    csv = pd.read_csv(made["fig7"]["csv"])
    assert set(csv["band"]) == {"seeds"} and (csv["n"] == 1).all()
    assert (csv["ci_high"] > csv["mean"]).all() and (csv["ci_low"] < csv["mean"]).all()
