"""The model spec: extras and auxiliary heads are saved and rebuilt exactly; damaged files
are refused with their path; evaluation runs in full precision."""

import json

import pytest
import torch

from xlt.engine.train_config import TrainConfig
from xlt.engine.evalset import EvalSet, load_records, max_positions
from xlt.engine.model import load_model
from xlt.errors import XltError

HP = {"lr": 1e-3, "epochs": 1, "batch_size": 8, "max_length": 32, "stride": 8, "progress": False}


@pytest.fixture(scope="module")
def model_with_extra(tiny_encoder, toy_data, tmp_path_factory):
    from xlt.engine.recipes.finetune import train

    out = tmp_path_factory.mktemp("extra") / "m"
    cfg = TrainConfig.from_dict({**HP, "task": "pos", "encoder": str(tiny_encoder), "seed": 1,
                                 "extras": [{"name": "scalar_mix"}]})
    train(cfg, [toy_data / "pos" / "en" / "train.jsonl"], [toy_data / "pos" / "en" / "dev.jsonl"], out, out.parent / "ck")
    return out


def test_a_model_with_an_extra_reloads_and_predicts_identically(model_with_extra, toy_data):
    model, tok, meta = load_model(model_with_extra)
    assert meta["spec"]["extras"] == [{"name": "scalar_mix"}]
    mix = model.extras[0]
    assert not torch.equal(mix.weights.detach(), torch.zeros_like(mix.weights))  # trained, and saved
    records = load_records([toy_data / "pos" / "en" / "test.jsonl"])
    cfg = TrainConfig.from_dict(meta["train_config"])
    ev = EvalSet.build(model.task, records, tok, cfg, max_positions(model, tok))
    cpu = torch.device("cpu")
    again, _, _ = load_model(model_with_extra)
    outs = [torch.cat([model(b)["logits"].flatten() for _, b in ev.batches]) for model in (model, again)]
    assert torch.equal(outs[0], outs[1])
    assert ev.score(model, cpu) == ev.score(again, cpu)
    # without its extra the same weights predict something else: the extra is really used
    plain, _, _ = load_model(model_with_extra)
    plain.extras = torch.nn.ModuleList()
    assert not torch.equal(outs[0], torch.cat([plain(b)["logits"].flatten() for _, b in ev.batches]))


def test_weights_that_do_not_match_the_spec_are_refused(model_with_extra, tmp_path):
    import shutil

    bad = tmp_path / "m"
    shutil.copytree(model_with_extra, bad)
    meta = json.loads((bad / "xlt_model.json").read_text())
    meta["spec"]["extras"] = []  # the file says no extra, the weights have one
    (bad / "xlt_model.json").write_text(json.dumps(meta))
    with pytest.raises(XltError, match=r"modules.safetensors: weights do not match the model spec.*unexpected: \['extras"):
        load_model(bad)


def test_a_truncated_weights_file_is_refused_with_its_path(model_with_extra, tmp_path):
    import shutil

    bad = tmp_path / "m"
    shutil.copytree(model_with_extra, bad)
    f = bad / "modules.safetensors"
    f.write_bytes(f.read_bytes()[:100])
    with pytest.raises(XltError, match=rf"{f}: truncated or corrupted safetensors file"):
        load_model(bad)


def test_an_unknown_extra_names_the_known_ones(tiny_encoder, toy_data, tmp_path):
    from xlt.engine.recipes.finetune import train

    cfg = TrainConfig.from_dict({**HP, "task": "pos", "encoder": str(tiny_encoder), "extras": [{"name": "fusion9"}]})
    with pytest.raises(XltError, match="unknown extra 'fusion9'; known: scalar_mix"):
        train(cfg, [toy_data / "pos" / "en" / "train.jsonl"], [toy_data / "pos" / "en" / "dev.jsonl"], tmp_path / "m", tmp_path / "c")


def test_an_unknown_extra_names_the_papers_ones_once_their_plugins_loaded():
    """A name the engine does not know loads the papers' registrations first (its entry point),
    so the error names theirs too."""
    from types import SimpleNamespace

    from xlt.engine.extras import build_extra

    with pytest.raises(XltError, match=r"unknown extra 'fusion9'; known: scalar_mix, .*\(loaded the plugins of "
                                       r"entry-point group 'xlt.engine': papers = xlt.papers.recipes:load_recipes\)") as e:
        build_extra({"name": "fusion9"}, SimpleNamespace(num_hidden_layers=2, hidden_size=8))
    assert {"dlfa", "xmixup"} <= set(str(e.value).split("known: ")[1].split(" (")[0].split(", "))


def test_an_unknown_extra_says_when_no_plugin_registered_any(monkeypatch):
    """Where the package's metadata declares no plugin (not installed), the error says so."""
    from types import SimpleNamespace

    from xlt.engine import extras, plugins

    monkeypatch.setattr(extras, "EXTRAS", {"scalar_mix": extras.ScalarMix})
    monkeypatch.setattr(plugins, "_loaded", None)
    monkeypatch.setattr(plugins, "entry_points", lambda group: [])
    with pytest.raises(XltError, match=r"unknown extra 'dlfa'; known: scalar_mix \(no plugin loaded: the package "
                                       r"declares none of entry-point group 'xlt.engine' here.*make install"):
        extras.build_extra({"name": "dlfa", "layer": 1}, SimpleNamespace(num_hidden_layers=2, hidden_size=8))


def test_a_second_extra_claiming_a_name_is_refused_naming_both(monkeypatch):
    from xlt.engine import extras

    monkeypatch.setattr(extras, "EXTRAS", dict(extras.EXTRAS))
    assert extras.register_extra(extras.ScalarMix) is extras.ScalarMix  # the same class again: no change
    with pytest.raises(XltError, match=r"claims the name 'scalar_mix', already xlt.engine.extras.ScalarMix's"):
        extras.register_extra(type("Other", (extras.Extra,), {"name": "scalar_mix"}))
    with pytest.raises(XltError, match="an Extra subclass with a name"):
        extras.register_extra(type("Nameless", (extras.Extra,), {}))


def test_evaluation_is_full_precision_even_inside_autocast(model_with_extra, toy_data):
    model, tok, meta = load_model(model_with_extra)
    records = load_records([toy_data / "pos" / "en" / "test.jsonl"])
    ev = EvalSet.build(model.task, records, tok, TrainConfig.from_dict(meta["train_config"]), max_positions(model, tok))
    cpu = torch.device("cpu")
    from xlt.engine.predict import run_batches

    fp32 = run_batches(model, ev.batches, len(ev.enc.features), cpu)
    with torch.autocast("cpu", dtype=torch.bfloat16):  # a caller that trains in bf16
        inside = run_batches(model, ev.batches, len(ev.enc.features), cpu)
        assert model(ev.batches[0][1])["logits"].dtype == torch.bfloat16  # autocast is really on here
    assert all(torch.equal(a["logits"], b["logits"]) for a, b in zip(fp32, inside))
