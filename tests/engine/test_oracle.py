"""Oracle selection beside the model's own: per target language, the test score of the epoch
whose dev score in that language was best (xlt.engine.recipes.finetune.oracle_step), written
beside the model without changing it; the tables show it beside the paper's selection."""

from __future__ import annotations

import json

import pandas as pd
import torch
from safetensors.torch import load_file

from xlt.engine.recipes.finetune import oracle_step
from xlt.workflow.paper_outputs import make_table


def test_oracle_keeps_each_languages_best_dev_epoch_and_scores_test_only_then():
    dev = [{"en": 70.0, "de": 50.0, "fr": 40.0},  # epoch 1
           {"en": 80.0, "de": 45.0, "fr": 40.0},  # 2: en improves; de drops; fr ties (keeps epoch 1)
           {"en": 75.0, "de": 60.0, "fr": 39.0}]  # 3: de's best
    state, tested = {}, []

    def test_of(epoch):
        def score(lang):
            tested.append((epoch, lang))
            return {"accuracy": 100.0 * epoch + len(lang)}
        return score

    for epoch, scores in enumerate(dev):
        oracle_step(state, epoch, {lang: {"accuracy": v} for lang, v in scores.items()}, test_of(epoch + 1), "accuracy")
    best = state["oracle"]["best"]
    assert {lang: b["epoch"] for lang, b in best.items()} == {"en": 2, "de": 3, "fr": 1}
    assert best["de"] == {"epoch": 3, "dev": 60.0, "test": {"accuracy": 302.0}}
    # test is scored only when a language's dev improves: 3 at epoch 1, en at 2, de at 3
    assert tested == [(1, "en"), (1, "de"), (1, "fr"), (2, "en"), (3, "de")]
    assert [h["dev"]["de"] for h in state["oracle"]["history"]] == [50.0, 45.0, 60.0]


def test_oracle_leaves_the_model_as_it_was(tiny_encoder, toy_data, tmp_path):
    """Through xlt.stages.finetune: the same weights and training config with and without the oracle;
    oracle.json holds per language the test score of its own best-dev epoch, and for the
    training language, whose dev the model's own selection reads, the selected epoch."""
    from xlt.stages.finetune import finetune
    from xlt.stages.finetune_job import FinetuneJob

    hp = {"lr": 1e-3, "epochs": 2, "batch_size": 8, "max_length": 32, "stride": 8, "progress": False}
    args = ("pos", str(tiny_encoder), str(toy_data / "pos"), ["en"], hp, 3)
    finetune(FinetuneJob.of_seed(*args, tmp_path / "plain", tmp_path / "c1"))
    finetune(FinetuneJob.of_seed(*args, tmp_path / "oracle", tmp_path / "c2", oracle_langs=["en", "de"]))
    plain, oracle = ({**load_file(tmp_path / n / "encoder" / "model.safetensors"), **load_file(tmp_path / n / "modules.safetensors")}
                     for n in ("plain", "oracle"))
    assert all(torch.equal(plain[k], oracle[k]) for k in plain)
    metas = [json.loads((tmp_path / n / "xlt_model.json").read_text()) for n in ("plain", "oracle")]
    assert metas[0]["provenance"] == metas[1]["provenance"] and not (tmp_path / "plain" / "oracle.json").exists()
    report = json.loads((tmp_path / "oracle" / "oracle.json").read_text())
    assert report["task"] == "pos" and report["seed"] == 3 and set(report["languages"]) == {"en", "de"}
    assert report["languages"]["en"]["epoch"] == metas[1]["train"]["selected_epoch"]
    for lang, best in report["languages"].items():
        devs = [h["dev"][lang] for h in report["history"]]
        assert best["epoch"] == devs.index(max(devs)) + 1


def test_crossmulti_table2_shows_the_oracle_beside_the_papers_selection(tmp_path):
    spec = {"source": "en", "metric": {"pos": "f1_macro"}, "tasks": ["pos"], "encoder": "tiny", "oracle": True,
            "hparams": "crossmulti", "select": "best"}
    inputs, models = [], []
    for recipe in ("en.crossmulti", "de+en+es+fr.crossmulti"):
        for seed in (1, 2):
            model = tmp_path / "models/tiny/pretrained/pos" / recipe / f"seed{seed}"
            model.mkdir(parents=True)
            langs = {lang: {"epoch": 2, "dev": 1.0, "test": {"f1_macro": 60.0 + seed}} for lang in ("en", "de", "es", "fr")}
            (model / "oracle.json").write_text(json.dumps({"task": "pos", "seed": seed, "languages": langs}))
            path = tmp_path / f"{recipe}-{seed}.json"
            path.write_text(json.dumps({"task": "pos", "seed": seed, "model": str(model),
                                        "metrics": {lang: {"f1_macro": 50.0 + seed, "n": 1} for lang in langs}}))
            inputs.append(str(path))
            models.append(str(model))
    table = make_table("crossmulti", "table2", spec, inputs + models, str(tmp_path / "t2"))
    row = table[(table.setting == "cross") & (table.lang == "de")].iloc[0]
    assert row["ours_mean"] == 51.5 and row["oracle_mean"] == 61.5
    md = (tmp_path / "t2.md").read_text()
    assert "| POS cross | 93.85 · 51.50 ± 0.71 · -42.35 · oracle 61.50 ± 0.71 |" in md
    assert "oracle: target-dev selection" in md and "oracle = ours with the checkpoint chosen per target language" in md
    assert list(pd.read_csv(tmp_path / "t2.csv").columns[-2:]) == ["oracle_mean", "oracle_std"]


def test_only_the_models_of_tables_that_show_the_oracle_ask_for_it():
    """The finetune rule's --oracle-langs (xlt.papers.oracle_languages): Table 2's and Table II's
    models with their languages; any other model none, so it is trained as before."""
    from tests.test_config import base
    from xlt.workflow import paper_targets as P

    cfg = base()
    assert P.oracle_languages(cfg, "results/models/mbert/pretrained/ner/en.crossmulti/seed2") == ["en", "de", "es", "fr"]
    assert P.oracle_languages(cfg, "results/models/mbert/pretrained/pawsx/en.dlfa-dlfa6/seed1") == \
        cfg["language_sets"]["xtreme_pawsx"]
    assert P.oracle_languages(cfg, "results/models/mbert/pretrained/xnli/en.adjust/seed1") == []
    off = {**cfg, "papers": {**cfg["papers"], "crossmulti": {**cfg["papers"]["crossmulti"], "oracle": False}}}
    assert P.oracle_languages(off, "results/models/mbert/pretrained/ner/en.crossmulti/seed2") == []
