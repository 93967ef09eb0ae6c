"""Fine-tune extensions (xlt.engine.recipes.extensions): the fine-tuning recipe composes what
a run's configuration names and nothing it was not given; the papers' recipe modules register
theirs (xlt.papers.recipes), the engine names none of them."""

from __future__ import annotations

import json

import pytest

from xlt.engine.train_config import TrainConfig
from xlt.engine.objectives import task_term
from xlt.engine.recipes import extensions as X
from xlt.engine.streams import Stream
from xlt.errors import XltError

HP = {"lr": 1e-3, "epochs": 1, "batch_size": 8, "max_length": 32, "stride": 8, "progress": False}
MIX = {"name": "xmixup", "layer": 1}


@pytest.fixture
def registry(monkeypatch):
    """The registry, empty, for this test alone, as in a process where no paper's plugin is
    installed (the papers' registrations come back after)."""
    from xlt.engine import plugins

    monkeypatch.setattr(X, "EXTENSIONS", {})
    monkeypatch.setattr(plugins, "_loaded", [])
    return X.EXTENSIONS


def test_the_engine_loads_every_papers_extension_through_its_entry_point():
    from xlt.engine.plugins import load_plugins
    from xlt.papers.recipes import load_recipes

    assert load_plugins() == ["papers = xlt.papers.recipes:load_recipes"]
    assert sorted(load_recipes()) == ["xlt.papers.adjust.recipe", "xlt.papers.dlfa.recipe", "xlt.papers.xmixup.recipe"]
    assert {"xmixup", "adjust_continual"} <= set(X.EXTENSIONS)
    assert X.aux_kinds() == ["task", "aligned_pairs", "soft_labels"]


def test_an_auxiliary_kind_nobody_registered_stops_the_run_naming_the_registered_ones(registry, tmp_path):
    from xlt.engine.recipes.finetune import train

    cfg = TrainConfig.from_dict({**HP, "task": "pos", "encoder": str(tmp_path / "no-encoder")})
    with pytest.raises(XltError, match=r"auxiliary stream kind\(s\) \['aligned_pairs'\]; allowed: task \(no plugin loaded"):
        train(cfg, [], [], tmp_path / "m", tmp_path / "ck", aux=[{"kind": "aligned_pairs", "files": []}])


def test_an_extra_that_trains_through_an_extension_never_trains_without_one(registry, tmp_path):
    """Without its paper's recipe an xmixup model would train on unpaired records: refused
    before anything loads."""
    from xlt.engine.recipes.finetune import train

    cfg = TrainConfig.from_dict({**HP, "task": "pawsx", "encoder": str(tmp_path / "no-encoder"), "extras": [MIX]})
    with pytest.raises(XltError, match=r"extra\(s\) \['xmixup'\] train through their paper's fine-tune extension, "
                                       r"and none is registered \(registered: none\) \(no plugin loaded.*make install"):
        train(cfg, [], [], tmp_path / "m", tmp_path / "ck")


def test_a_second_claim_on_a_kind_or_extra_is_refused_naming_both(registry):
    @X.register
    class First(X.FinetuneExtension):
        name, aux_kinds = "first", ("pairs",)

    assert X.register(First) is First and list(registry) == ["first"]  # the same class again: no change
    with pytest.raises(XltError, match=r"claims \['pairs'\], already .*First's"):
        X.register(type("Second", (X.FinetuneExtension,), {"name": "second", "aux_kinds": ("pairs",)}))
    with pytest.raises(XltError, match="'task' is the engine's own"):
        X.register(type("Third", (X.FinetuneExtension,), {"name": "third", "aux_kinds": ("task",)}))
    with pytest.raises(XltError, match="needs a name and an extra or auxiliary kinds"):
        X.register(type("Fourth", (X.FinetuneExtension,), {"name": "fourth"}))


def test_a_registered_extension_adds_its_stream_terms_provenance_and_metadata(registry, tiny_encoder, toy_data, tmp_path):
    """A toy extension keyed by an auxiliary kind: the recipe checks it first, draws its stream
    beside the task's every step, counts its entry's files in the provenance, saves its block."""
    from xlt.engine.recipes.finetune import train

    calls = []

    @X.register
    class Echo(X.FinetuneExtension):
        name, aux_kinds = "echo", ("echo",)

        def check(self, cfg, kind):
            calls.append(("check", kind.name, len(self.entries)))

        def streams(self, run):
            enc = run.kind.encode(run.task, [json.loads(line) for line in open(self.entries[0]["files"][0])],
                                  run.tokenizer, run.cfg, train=True)
            stream = Stream("echo", enc.features, 4, run.cfg.seed, run.tokenizer.pad_token_id, run.kind.pad_values,
                            run.kind.scalars)
            return {"echo": stream}, [task_term(run.task, run.kind, stream="echo", weight=0.5)]

        def meta(self):
            return {"echo": {"entries": len(self.entries)}}

    train_file, dev_file = toy_data / "pos" / "en" / "train.jsonl", toy_data / "pos" / "en" / "dev.jsonl"
    cfg = TrainConfig.from_dict({**HP, "task": "pos", "encoder": str(tiny_encoder), "max_train_examples": 16})
    summary = train(cfg, [train_file], [dev_file], tmp_path / "m", tmp_path / "ck",
                    aux=[{"kind": "echo", "files": [str(train_file)]}])
    assert calls == [("check", "tagging", 1)]
    assert summary["global_steps"] == 2  # the task's stream sets the epoch; the extension's cycles beside it
    assert list(summary["streams"]) == ["pos", "echo"] and summary["streams"]["echo"]["batch_size"] == 4
    meta = json.loads((tmp_path / "m" / "xlt_model.json").read_text())
    assert meta["echo"] == {"entries": 1}
    assert str(train_file) in meta["provenance"]["data_sha256"]
