"""Table 6: the FA recipe's auxiliary streams, from the config to the trained model; its models and table."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file

from xlt.errors import XltError
from xlt.dag.targets import Recipe
from xlt.workflow.paper_targets import aux_streams

CFG = {"results": "results", "aux_sets": {"fa": {"weight": 0.5, "tasks": {"ner": ["pos.es_ancora", "pawsx"]}}}}


def test_recipe_names_an_aux_set():
    assert Recipe.parse("en.crossmulti.fa") == Recipe(("en",), "crossmulti", "fa")
    assert Recipe(("en",), "crossmulti", "fa").name == "en.crossmulti.fa"
    assert Recipe.parse("de+en.crossmulti").aux is None
    import re

    from xlt.dag.targets import WILDCARDS

    assert re.fullmatch(WILDCARDS["recipe"], "en.crossmulti.crossmulti_fa") and re.fullmatch(WILDCARDS["recipe"], "en.crossmulti")
    with pytest.raises(XltError, match="expected"):
        Recipe.parse("en.crossmulti.fa.more")
    assert aux_streams(CFG, "en.crossmulti.fa", "ner") == [
        {"task": "pos", "data": "results/data/pos.es_ancora", "weight": 0.5},
        {"task": "pawsx", "data": "results/data/pawsx", "weight": 0.5}]
    assert aux_streams(CFG, "en.crossmulti.fa", "pos.es_ancora") == []  # no auxiliary task for POS
    assert aux_streams(CFG, "en.crossmulti", "ner") == []
    with pytest.raises(XltError, match="unknown aux set 'nope'; allowed: fa"):
        aux_streams(CFG, "en.crossmulti.nope", "ner")


def _weights(model_dir):
    return {**load_file(model_dir / "encoder" / "model.safetensors"), **load_file(model_dir / "modules.safetensors")}


def test_fa_with_zero_weight_is_plain_finetuning(tiny_encoder, toy_data, tmp_path):
    """Through xlt.stages.finetune (what the finetune rule runs): a zero-weight auxiliary stream."""
    from xlt.stages.finetune import finetune
    from xlt.stages.finetune_job import FinetuneJob

    hp = {"lr": 1e-3, "epochs": 2, "batch_size": 8, "max_length": 32, "stride": 8, "progress": False}
    args = ("pos", str(tiny_encoder), str(toy_data / "pos"), ["en"], hp, 3)
    finetune(FinetuneJob.of_seed(*args, tmp_path / "plain", tmp_path / "c1"))
    finetune(FinetuneJob.of_seed(*args, tmp_path / "zero", tmp_path / "c2", aux=[{"task": "marc", "data": str(toy_data / "marc"), "weight": 0.0}]))
    finetune(FinetuneJob.of_seed(*args, tmp_path / "half", tmp_path / "c3", aux=[{"task": "marc", "data": str(toy_data / "marc"), "weight": 0.5}]))
    wp, wz, wh = (_weights(tmp_path / n) for n in ("plain", "zero", "half"))
    assert all(torch.equal(wp[k], wz[k]) for k in wp)
    assert {k for k in set(wz) - set(wp)} and all(k.startswith("heads.marc.") for k in set(wz) - set(wp))
    assert not all(torch.equal(wp[k], wh[k]) for k in wp)  # a weight > 0 does change the model
    meta = json.loads((tmp_path / "zero" / "xlt_model.json").read_text())
    assert meta["spec"]["aux_tasks"] == ["marc"] and meta["provenance"]["config"]["aux"][0]["task"] == "marc"


def test_table6_models_and_table(tmp_path):
    from xlt.workflow.paper_outputs import make_table
    from xlt.papers.crossmulti.plan import table6_inputs, table6_models

    cfg = {"results": "results", "aux_sets": CFG["aux_sets"], "language_sets": {"crossmulti": ["en", "de", "es", "fr"]},
           "papers": {"crossmulti": {"encoder": "tiny", "hparams": "crossmulti", "source": "en", "languages": "crossmulti",
                                     "treebanks": "es_ancora", "tasks": ["pos", "ner", "pawsx"],
                                     "table6": {"tasks": ["pos", "ner"], "seeds": [1], "fa": "fa"}}}}
    models = table6_models(cfg)
    assert [(s, i) for s, i, *_ in models] == [
        ("cross", "pretrained"), ("da", "mlm-pos.es_ancora-crossmulti"),  # POS: no auxiliary task, no fa / combined
        ("cross", "pretrained"), ("fa", "pretrained"), ("da", "mlm-ner-crossmulti"), ("combined", "mlm-ner-crossmulti")]
    assert models[-1][3] == "en.crossmulti.fa"
    inputs = []
    for path, (setting, *_rest) in zip(table6_inputs(cfg), models):
        p = tmp_path / path
        p.parent.mkdir(parents=True, exist_ok=True)
        task = "pos" if "pos" in path else "ner"
        value = {"cross": 60.0, "fa": 61.0, "da": 62.0, "combined": 63.0}[setting]
        p.write_text(json.dumps({"task": task, "seed": 1, "model": path.replace("/eval/", "/models/").rsplit("/", 1)[0],
                                 "metrics": {lang: {"span_f1_macro": value, "f1_macro": value, "n": 5} for lang in ("en", "de", "es", "fr")}}))
        inputs.append(str(p))
    spec = {**cfg["papers"]["crossmulti"], "tasks": ["pos", "ner"], "metric": {"pos": "f1_macro", "ner": "span_f1_macro"}}
    table = make_table("crossmulti", "table6", spec, inputs, str(tmp_path / "table6"))
    got = table.dropna(subset=["ours_mean"]).set_index(["task", "setting", "lang"])["ours_mean"]
    assert got[("ner", "combined", "de")] == 63.0 and got[("pos", "da", "fr")] == 62.0
    assert table.set_index(["task", "setting", "lang"]).loc[("ner", "combined", "de"), "paper"] == 93.65
    cfg["papers"]["crossmulti"]["tasks"] = ["pos", "ner", "pawsx"]  # NER's auxiliary PI is read: fine
    assert len(table6_models(cfg)) == 6
    cfg["papers"]["crossmulti"]["tasks"] = ["pos", "ner"]  # PI's data is not prepared: say so
    with pytest.raises(XltError, match=r"aux_sets.fa.tasks.ner: auxiliary task 'pawsx' is not in papers.crossmulti.tasks"):
        table6_models(cfg)
