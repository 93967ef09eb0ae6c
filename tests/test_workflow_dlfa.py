"""The dlfa part of the real Snakemake DAG on the tiny preset, shrunk further here: the layer
sweep, the control, the ablation, the similarity jobs and Tables II-VII."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

from tests.test_workflow import SHRINK, snakemake

DLFA_SHRINK = {
    **SHRINK,
    "hparams": {"underspec": {"epochs": 1, "batch_size": 16, "max_train_examples": 80}},
    "papers": {"dlfa": {"seeds": [1, 2], "layers": [1], "control": 2, "ablation": {"pawsx": [1]}, "oracle": True,
                        "similarity": {"sentences": 5, "seed": 1, "max_length": 32},
                        "table7": {"encoder": "tiny", "tasks": ["pawsx"], "layers": [1]}}},
}


@pytest.fixture(scope="module")
def dlfa_run(tmp_path_factory, zygote):
    workdir = tmp_path_factory.mktemp("dlfa")
    (workdir / "shrink.yaml").write_text(yaml.safe_dump(DLFA_SHRINK))
    run = snakemake(workdir, "dlfa_all", "--cores", "2", zygote=zygote)
    assert run.returncode == 0, run.stderr[-4000:]
    return workdir


@pytest.mark.slow
def test_dlfa_all_writes_tables_2_to_7(dlfa_run):
    tables = dlfa_run / "results/tables/dlfa"
    t2 = pd.read_csv(tables / "table2.csv").set_index(["task", "model"]).loc["pawsx"]
    assert t2.loc["baseline", "n_seeds"] == t2.loc["d1", "n_seeds"] == t2.loc["control", "n_seeds"] == 2
    assert t2["oracle_mean"].notna().sum() == 3  # baseline, d1, control: oracle selection beside ours
    md = (tables / "table2.md").read_text()
    assert "paired t =" in md and "oracle: target-dev selection" in md and "Tasks not trained in this run" in md
    oracle = json.loads((dlfa_run / "results/models/tiny/pretrained/pawsx/en.dlfa-dlfa1/seed1/oracle.json").read_text())
    assert set(oracle["languages"]) == {"en", "de", "es", "fr", "zh"}
    assert not (dlfa_run / "results/models/tiny/pretrained/pawsx/en.dlfa-dlfa1-global/seed1/oracle.json").exists()
    t5 = pd.read_csv(tables / "table5.csv")  # the ablated layer matched to the paper's by rank
    assert {"first", "first_g", "first_l", "baseline"} <= set(t5.dropna(subset=["ours_mean"])["model"])
    t6 = pd.read_csv(tables / "table6.csv").dropna(subset=["ours_mean"])
    assert t6["ours_mean"].between(-1, 1).all() and {"baseline", "d1", "best"} <= set(t6["model"])
    assert "tiny stands in for XLM-R base" in (tables / "table7.md").read_text()
    model = json.loads((dlfa_run / "results/models/tiny/pretrained/pawsx/en.dlfa-dlfa1-global/seed2/xlt_model.json").read_text())
    assert model["spec"]["extras"] == [{"name": "dlfa", "layer": 1, "branches": "global"}]
    sim = json.loads((dlfa_run / "results/dlfa/similarity/tiny/seed1.json").read_text())
    assert sim["sentences"] == 5 and "provenance" in sim and len(sim["models"]) == 2  # baseline, d1 (PAWS-X)


@pytest.mark.slow
def test_a_finished_dlfa_run_has_nothing_left_to_do(dlfa_run):
    run = snakemake(dlfa_run, "dlfa_all", "-n")
    assert run.returncode == 0 and "Nothing to be done" in run.stdout + run.stderr
