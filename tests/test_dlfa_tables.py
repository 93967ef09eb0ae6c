"""dlfa's plugin: recipes name the fusion setting (one model each, the baseline shared with
underspec's θ_src), the full DAG plans the mBERT sweep, and Tables II-VII are built from
hand-made evaluation files (ranks, English-family averages, the paired test over seeds)."""

import json
import subprocess
import sys

import pandas as pd
import pytest

from tests.test_config import base
from xlt.workflow import paper_targets as P
from xlt.dag import targets as T
from xlt.errors import XltError
from xlt.papers.dlfa import plan as D
from xlt.papers.dlfa.checks import check
from xlt.papers.dlfa.tables import ENF
from xlt.workflow.paper_outputs import make_table
from xlt.papers.underspec import plan as US
from xlt.papers.dlfa.similarity import parallel_rows

REPO = __import__("pathlib").Path(__file__).resolve().parent.parent


def test_settings_and_recipes_round_trip():
    p = base()["papers"]["dlfa"]
    for setting in ("baseline", "d3", "d11_g", "d8_l", "d12"):
        assert D.setting_of(D.setting_recipe(p, setting)) == setting
    assert D.setting_recipe(p, "d8_g").name == "en.dlfa-dlfa8-global"
    assert D.setting_recipe({**p, "reading": "gated"}, "d8").name == "en.dlfa-dlfa8-gated"


def test_a_dlfa_recipe_is_its_profile_plus_the_extra():
    cfg = base()
    plain = P.hparams(cfg, "en.underspec", "xnli")
    fused = P.hparams(cfg, "en.underspec-dlfa8-local-gated", "xnli")
    assert fused.pop("extras") == [{"name": "dlfa", "layer": 8, "branches": "local", "reading": "gated"}]
    assert fused == plain  # the same training settings: only the extra differs
    for bad in ("en.underspec-dlfa", "en.underspec-dlfa8-left", "en.underspec-dlfa8-gated-local", "en.nope-dlfa8"):
        with pytest.raises(XltError):
            P.hparams(cfg, bad, "xnli")
    with pytest.raises(XltError, match=r"extra tag 'mix8': no paper spells an extra so; allowed: dlfa<layer>\[-global\|-local\]\[-gated\] \(dlfa\)"):
        P.hparams(cfg, "en.underspec-mix8", "xnli")
    with pytest.raises(XltError, match="read by a paper's tag grammar"):
        T.hparams(cfg, "en.underspec-dlfa8", "xnli")  # the path grammar alone knows no paper's tags


def test_the_baseline_is_dlfas_own_model_and_every_setting_is_trained_once():
    """dlfa follows XTREME (no warmup, BERT's pooled classifier), underspec its authors' code (warmup, one
    linear layer): their EN models differ, so each has its own path."""
    cfg = base()
    inputs = D.table2_inputs(cfg)
    assert "results/eval/mbert/pretrained/xnli/en.dlfa/seed1/test.xtreme_xnli.json" in inputs
    src = US.grid_inputs(cfg, "mbert", "xnli", "en", "de", "1")["src"]
    assert src != T.model_dir(cfg, "mbert", "pretrained", "xnli", D.setting_recipe(cfg["papers"]["dlfa"], "baseline").name, 1)
    assert src.endswith("xnli/en.underspec/seed1")
    # 4 tasks x (baseline + 11 layers + control) x 3 seeds
    # and with papers.dlfa.oracle (on in config.yaml) each model, whose oracle.json Table II reads
    assert len(inputs) == len(set(inputs)) == 2 * 4 * 13 * 3 and "results/models/mbert/pretrained/xnli/en.dlfa/seed1" in inputs
    assert "results/eval/mbert/pretrained/pos.xtreme/en.dlfa-dlfa10/seed3/test.xtreme_pos.json" in inputs
    assert "results/eval/xlmr_base/pretrained/ner/en.dlfa-dlfa10/seed1/test.xtreme_ner.json" in D.table7_inputs(cfg)
    assert set(D.table3_inputs(cfg)) <= set(inputs) and set(D.table4_inputs(cfg)) <= set(inputs)
    assert "results/eval/mbert/pretrained/pawsx/en.dlfa-dlfa6-local/seed2/test.xtreme_pawsx.json" in D.table5_inputs(cfg)


def test_bad_layers_name_the_key():
    cfg = base()
    p = cfg["papers"]["dlfa"]
    with pytest.raises(XltError, match=r"papers.dlfa.layers / ablation / table7.layers: layers \[12\] are not below"):
        check(cfg, {**p, "layers": [1, 12]})
    with pytest.raises(XltError, match=r"papers.dlfa.table7.tasks: tasks \['pos', 'ner'\] not in \['pawsx'\]"):
        check(cfg, {**p, "train_tasks": ["pawsx"], "ablation": {"pawsx": [6]}})


def test_full_scale_dag_plans_the_mbert_sweep(tmp_path):
    run = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "-n", "dlfa_table2",
                          "dlfa_table6", "--directory", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout + run.stderr
    assert "results/models/mbert/pretrained/pawsx/en.dlfa-dlfa6/seed3" in out
    assert "results/models/mbert/pretrained/xnli/en.dlfa-dlfa12/seed1" in out
    assert "results/dlfa/similarity/mbert/seed2.csv" in out


# ---- the builders on hand-made evaluation files ---------------------------------------------

LANGS = ["en", "de", "es", "fr", "zh"]
# per setting, a bonus on the non-English-family languages: d2 is the best layer, d1 second
BONUS = {"baseline": 0.0, "d1": 2.0, "d2": 4.0, "d3": -1.0, "d4": 0.0, "d2_g": 1.0, "d2_l": 3.0}


def _spec():
    return {"encoder": "tiny", "tasks": ["pawsx", "xnli"], "train_tasks": ["pawsx"], "source": "en", "hparams": "underspec",
            "metric": {"pawsx": "accuracy", "xnli": "accuracy"}, "reading": "weight", "layers": [1, 2, 3], "control": 4,
            "seeds": [1, 2, 3], "ablation": {"pawsx": [2]}, "languages": {"pawsx": "xtreme_pawsx"},
            "similarity": {"sentences": 4, "seed": 1, "max_length": 32},
            "table7": {"encoder": "tiny", "tasks": ["pawsx"], "layers": [1, 2, 3]}}


def _evals(tmp_path, spec, seed_noise=(0.0, 0.5, -0.5)):
    out = []
    for setting, bonus in BONUS.items():
        recipe = D.setting_recipe(spec, setting).name
        for seed, noise in zip(spec["seeds"], seed_noise):
            metrics = {lang: {"accuracy": 70 + (0 if lang in ENF else bonus) + noise, "n": 10} for lang in LANGS}
            path = tmp_path / f"{recipe}-{seed}.json"
            path.write_text(json.dumps({"task": "pawsx", "seed": seed, "metrics": metrics,
                                        "model": f"results/models/tiny/pretrained/pawsx/{recipe}/seed{seed}"}))
            out.append(str(path))
    return out


def test_the_papers_best_layers_come_from_its_published_sweep():
    assert D.paper_best("pawsx") == ("d6", "d10")  # Table II: 84.37 > 84.33; Tables III-VI print d10 first
    assert D.paper_best("xnli") == ("d11", "d8")  # 66.91 > 66.90


def test_table2_averages_languages_and_tests_the_best_layer_over_seeds(tmp_path):
    spec = _spec()
    table = make_table("dlfa", "table2", spec, _evals(tmp_path, spec), str(tmp_path / "t2")).set_index(["task", "model"])
    assert table.loc[("pawsx", "d2"), "ours_mean"] == pytest.approx(70 + 4 * 3 / 5)  # 3 of 5 languages gain 4
    assert table.loc[("pawsx", "baseline"), "paper"] == 81.94 and table.loc[("pawsx", "control"), "paper"] == 82.01
    assert table.loc[("pawsx", "d2"), "n_seeds"] == 3 and ("pawsx", "control") in table.index
    md = (tmp_path / "t2.md").read_text()
    assert "PI d2 − baseline = +2.40 ± 0.00 over seeds [1, 2, 3]" in md and "(beyond the seed spread" in md


def test_tables_3_and_4_rank_the_two_best_layers(tmp_path):
    spec = _spec()
    inputs = _evals(tmp_path, spec)
    t3 = make_table("dlfa", "table3", spec, inputs, str(tmp_path / "t3")).set_index(["task", "model", "lang"])
    assert t3.loc[("pawsx", "best", "avg_enf"), "ours_mean"] == pytest.approx(70)
    assert t3.loc[("pawsx", "best", "avg_noenf"), "ours_mean"] == pytest.approx(74)  # d2
    assert t3.loc[("pawsx", "second", "avg_noenf"), "ours_mean"] == pytest.approx(72)  # d1
    # the paper's best PAWS-X layer is d6 (Table II 84.37 > d10's 84.33), though it prints d10 first
    assert t3.loc[("pawsx", "best", "avg_noenf"), "paper"] == 82.12 and t3.loc[("pawsx", "second", "avg_noenf"), "paper"] == 81.94
    md = (tmp_path / "t3.md").read_text()
    assert "PI: ours d2 / d1, paper d6 / d10" in md
    # the upper layer (d2) gains more on noenf here: the paper's claim does not hold in these files
    assert "PI lower d1 enf +0.00 / noenf +2.00, upper d2 enf +0.00 / noenf +4.00: does not hold here" in md
    t4 = make_table("dlfa", "table4", spec, inputs, str(tmp_path / "t4")).set_index(["model", "lang"])
    assert t4.loc[("best", "zh"), "ours_mean"] == pytest.approx(74) and t4.loc[("baseline", "en"), "paper"] == 94.0
    assert t4.loc[("best", "zh"), "paper"] == 81.2 and t4.loc[("second", "zh"), "paper"] == 80.3  # d6, d10


def test_table5_and_table7(tmp_path):
    spec = _spec()
    inputs = _evals(tmp_path, spec)
    t5 = make_table("dlfa", "table5", spec, inputs, str(tmp_path / "t5")).set_index(["task", "model"])
    # the ablated layers matched by rank: ours papers.dlfa.ablation (d2), the paper's d10 / d6
    assert t5.loc[("pawsx", "first_l"), "ours_mean"] > t5.loc[("pawsx", "first_g"), "ours_mean"]
    assert round(t5.loc[("pawsx", "first"), "paper"], 2) == 84.33 and round(t5.loc[("pawsx", "second_g"), "paper"], 2) == 83.98
    assert "papers.dlfa.ablation lists 1 layer(s)" in t5.loc[("pawsx", "second"), "why"]
    assert t5.loc[("xnli", "first"), "why"].startswith("Tasks not trained in this run")
    t7 = make_table("dlfa", "table7", spec, inputs, str(tmp_path / "t7")).set_index(["task", "model", "metric"])
    assert t7.loc[("pawsx", "dlfa", "best_layer"), "ours_mean"] == 2
    assert t7.loc[("pawsx", "dlfa", "score"), "paper"] == 85.10
    assert "tiny stands in for XLM-R base" in (tmp_path / "t7.md").read_text()


def test_table6_similarity_ranks_and_tracks_noenf_accuracy(tmp_path):
    spec = _spec()
    inputs = _evals(tmp_path, spec)
    for seed in spec["seeds"]:  # similarity grows with the setting's bonus, as the paper claims
        rows = [{"task": "pawsx", "model": s, "lang": lang, "seed": seed, "value": 0.5 + BONUS[s] / 100}
                for s in ("baseline", "d1", "d2", "d3") for lang in LANGS[1:]]
        path = tmp_path / f"sim{seed}.csv"
        pd.DataFrame(rows).to_csv(path, index=False)
        inputs.append(str(path))
    t6 = make_table("dlfa", "table6", spec, inputs, str(tmp_path / "t6")).set_index(["task", "model"])
    assert t6.loc[("pawsx", "best"), "ours_mean"] == pytest.approx(0.54) and t6.loc[("pawsx", "best"), "paper"] == 0.9461  # d6
    assert t6.loc[("pawsx", "d3"), "ours_mean"] == pytest.approx(0.49)
    assert "PI ρ = +1.00 over 4 settings" in (tmp_path / "t6.md").read_text()


def test_parallel_rows_are_the_same_rows_in_every_language(tmp_path):
    for lang in ("en", "de"):
        (tmp_path / lang).mkdir()
        (tmp_path / lang / "test.jsonl").write_text(
            "".join(json.dumps({"text": f"{lang}{i}", "text_pair": "x", "label": "neutral"}) + "\n" for i in range(30)))
    rows = parallel_rows(tmp_path, ["en", "de"], 5, seed=1)
    assert [t[2:] for t in rows["en"]] == [t[2:] for t in rows["de"]] and len(set(rows["en"])) == 5
    assert rows == parallel_rows(tmp_path, ["en", "de"], 5, seed=1)
    with pytest.raises(XltError, match="fewer than the 40 sentences"):
        parallel_rows(tmp_path, ["en", "de"], 40, seed=1)


def test_every_published_cell_is_shown_with_ours_or_a_reason(tmp_path):
    """On a PAWS-X-only spec (the tiny preset's shape) the other tasks' and the unswept layers'
    published cells stay, each with its reason; the best layer prints as an integer, no Δ."""
    spec = _spec()
    inputs = _evals(tmp_path, spec)
    t2 = make_table("dlfa", "table2", spec, inputs, str(tmp_path / "t2")).set_index(["task", "model"])
    assert t2["paper"].notna().sum() == 48 + 3 and t2.loc[("xnli", "d3"), "why"].startswith("Tasks not trained in this run (papers.dlfa.train_tasks: pawsx")
    assert t2.loc[("pawsx", "d7"), "why"].startswith("d4–d11: the encoder tiny has 4 layers")
    md = (tmp_path / "t2.md").read_text()
    assert "The control row fuses the last layer with itself" in md and "Fine-tuning: hparams profile underspec" in md
    t4 = make_table("dlfa", "table4", spec, inputs, str(tmp_path / "t4")).set_index(["model", "lang"])
    assert t4.loc[("best", "ko"), "why"].startswith("KO: not among the PI test languages")
    assert "look swapped" in (tmp_path / "t4.md").read_text()
    t7 = make_table("dlfa", "table7", spec, inputs, str(tmp_path / "t7")).set_index(["task", "model", "metric"])
    assert pd.isna(t7.loc[("pawsx", "dlfa", "best_layer"), "delta"]) and len(t7) == 9
    assert "| PI dlfa | 85.10 · 72.40 ± 0.50 · -12.70 | 6 · 2 · – |" in (tmp_path / "t7.md").read_text()


def test_table2_shows_the_oracle_beside_the_papers_selection(tmp_path):
    """papers.dlfa.oracle: each model's oracle.json (per language, the test score of its own
    best-dev epoch), averaged over languages as the headline, beside it."""
    spec = {**_spec(), "oracle": True}
    models = []
    for setting in D.sweep(spec):
        for seed in spec["seeds"]:
            model = tmp_path / "models/tiny/pretrained/pawsx" / D.setting_recipe(spec, setting).name / f"seed{seed}"
            model.mkdir(parents=True)
            langs = {lang: {"epoch": 1, "dev": 0.0, "test": {"accuracy": 80.0 + (lang != "en") * BONUS[setting]}} for lang in LANGS}
            (model / "oracle.json").write_text(json.dumps({"task": "pawsx", "seed": seed, "languages": langs}))
            models.append(str(model))
    table = make_table("dlfa", "table2", spec, _evals(tmp_path, spec) + models, str(tmp_path / "t2")).set_index(["task", "model"])
    assert table.loc[("pawsx", "d2"), "oracle_mean"] == pytest.approx(80 + 4 * 4 / 5)
    assert table.loc[("pawsx", "control"), "oracle_mean"] == pytest.approx(80)
    md = (tmp_path / "t2.md").read_text()
    assert "| d2 | 66.15 · – · – · oracle – | 83.04 · 72.40 ± 0.50 · -10.64 · oracle 83.20 ± 0.00 |" in md
    assert "oracle: target-dev selection" in md

    make_table("dlfa", "table2", {**spec, "oracle": False}, _evals(tmp_path, spec), str(tmp_path / "t2off"))
    assert "oracle (target-dev) selection: not run here (papers.dlfa.oracle: false)" in (tmp_path / "t2off.md").read_text()


def test_a_one_layer_sweep_says_why_the_second_best_is_missing(tmp_path):
    spec = {**_spec(), "layers": [2]}
    inputs = [f for f in _evals(tmp_path, spec) if "dlfa1-" not in f and "dlfa3-" not in f]
    for table_id in ("table3", "table4"):
        t = make_table("dlfa", table_id, spec, inputs, str(tmp_path / table_id))
        second = t[(t["model"] == "second") & (t["task"] == "pawsx")]
        assert len(second) and second["why"].str.startswith("second: the sweep has 1 layer(s)").all()


def test_the_notes_carry_the_ledger_and_this_runs_profile(tmp_path):
    """The table rule's notes from the fidelity ledger (every deviation, and on the tiny preset
    its scalings) end the table; the recipe note prints this run's profile (the tiny preset's 64
    subwords, not the full scale's 128)."""
    from xlt import fidelity as F
    from xlt.workflow.config import load_configs

    tiny = load_configs(["presets/tiny.yaml"])
    spec = P.table_spec(tiny, "dlfa", "table2")
    make_table("dlfa", "table2", spec, _evals(tmp_path, spec), str(tmp_path / "t2"), F.item_notes(tiny, "dlfa", "table2"))
    md = (tmp_path / "t2.md").read_text()
    assert "max subwords 64" in md and "128" not in md.split("Fine-tuning:")[1].split("\n")[0]
    for e in F.deviations("dlfa"):
        assert f"- {F.deviation_note('dlfa', e)}" in md
    assert "never move" in md  # the control's gate: this profile has no weight decay
