"""xlt/papers/benchmarks/tiny_baselines.py: its settings parser, its per-trial summary and its merge by
(family, trial, seed) — what makes trials add up over several calls."""

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("tiny_baselines", REPO / "xlt" / "papers" / "benchmarks" / "tiny_baselines.py")
TB = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(TB)


def test_settings_are_read_as_yaml_and_exponents_as_numbers():
    assert TB.parse_set(["lr=2e-3", "adam_betas=[0.9,0.999]", "classifier=dense", "evals_per_epoch=null"]) == {
        "lr": 0.002, "adam_betas": [0.9, 0.999], "classifier": "dense", "evals_per_epoch": None}
    with pytest.raises(SystemExit, match="expected key=value"):
        TB.parse_set(["lr"])


def _row(family, trial, seed, score, collapsed):
    return {"family": family, "trial": trial, "overrides": {}, "seed": seed, "dev_score": score,
            "majority_baseline": 36.0, "collapsed": collapsed}


def test_the_summary_names_the_seeds_that_did_not_learn():
    [line] = TB.summarise([_row("f", "preset", 1, 36.0, True), _row("f", "preset", 2, 64.0, False),
                           _row("f", "preset", 3, 71.0, False)])
    assert (line["seeds"], line["dev_min"], line["not_learnt"]) == (3, 36.0, [1])
    assert line["dev_mean"] == pytest.approx((36 + 64 + 71) / 3, abs=0.01)


def test_a_rerun_replaces_its_own_rows_and_keeps_the_others(tmp_path):
    path = tmp_path / "b.json"
    TB.merge(path, [_row("f", "preset", 1, 36.0, True), _row("f", "lr", 1, 60.0, False)])
    TB.merge(path, [_row("f", "preset", 1, 62.0, False)])
    runs = json.loads(path.read_text())["runs"]
    assert [(r["trial"], r["dev_score"]) for r in runs] == [("lr", 60.0), ("preset", 62.0)]
    assert {s["trial"]: s["not_learnt"] for s in json.loads(path.read_text())["summary"]} == {"lr": [], "preset": []}


def test_every_family_names_a_dataset_and_a_recipe_the_tiny_preset_resolves():
    from xlt.dag import targets as T
    from xlt.workflow.paper_targets import hparams
    from xlt.workflow.config import load_configs

    cfg = load_configs([str(REPO / "presets" / "tiny.yaml")])
    for dataset, recipe in TB.FAMILIES.values():
        assert hparams(cfg, recipe, dataset)["lr"] > 0
        assert T.Recipe.parse(recipe).train_langs
