"""Collapsed runs (dev predictions all one class or tag): detected, flagged, retried, marked."""

from __future__ import annotations

import json
import math
import shutil

import pandas as pd
import pytest

from xlt.errors import XltError
from xlt.finetune import RETRY_SEED_STRIDE, evaluate_model, finetune
from xlt.io import read_jsonl, write_jsonl
from xlt.engine.kinds import prediction_collapse
from xlt.tables import cell_text, paper_vs_ours

HP = {"lr": 3e-3, "epochs": 3, "batch_size": 16, "max_length": 32, "stride": 8, "progress": False}


@pytest.mark.parametrize(
    "task,preds,collapsed,majority",
    [
        ("pawsx", ["1", "1", "1"], True, "1"),
        ("pawsx", ["1", "0", "1"], False, "1"),
        ("marc", ["5"], True, "5"),
        ("ner", [["O", "O"], ["O"]], True, "O"),
        ("ner", [["O", "B-PER"], ["O"]], False, "O"),
        ("pos", [["NOUN"], ["NOUN", "NOUN"]], True, "NOUN"),
        ("parsing", [{"head": [0, 1], "deprel": ["dep", "dep"]}], True, "dep"),
        ("parsing", [{"head": [0, 1], "deprel": ["root", "dep"]}], False, "root"),
    ],
)
def test_prediction_collapse_is_one_class_or_one_tag(task, preds, collapsed, majority):
    verdict = prediction_collapse(task, preds)
    assert verdict["collapsed"] is collapsed
    assert verdict["majority"] == majority
    assert verdict["labels_predicted"] == (1 if collapsed else 2)


def test_prediction_collapse_share_and_count():
    verdict = prediction_collapse("ner", [["O", "O", "O"], ["B-LOC"]])
    assert verdict == {"collapsed": False, "labels_predicted": 2, "majority": "O", "majority_share": 0.75, "n": 4}


def test_span_qa_has_no_classes_and_no_predictions_is_an_error():
    assert prediction_collapse("qa", ["Berlin", "Berlin"]) is None
    with pytest.raises(XltError, match="no predictions"):
        prediction_collapse("pos", [[], []])


@pytest.fixture
def one_tag_data(toy_data, tmp_path):
    """The toy POS data with every training tag NOUN: whatever the seed, the model collapses."""
    data = tmp_path / "pos"
    shutil.copytree(toy_data / "pos", data)
    for f in data.glob("*/train.jsonl"):
        write_jsonl(f, [{**r, "upos": ["NOUN"] * len(r["tokens"])} for r in read_jsonl(f)])
    return data


def test_a_collapsed_run_is_flagged_retried_with_the_next_seed_and_kept(tiny_encoder, one_tag_data, tmp_path):
    out, ckpt = tmp_path / "model", tmp_path / "ckpt"
    summary = finetune("pos", str(tiny_encoder), None, one_tag_data, ["en"], HP, 3, out, ckpt, collapse_retries=1)
    meta = json.loads((out / "xlt_model.json").read_text())
    assert meta["collapse"] == summary["collapse"]
    assert meta["collapse"]["collapsed"] is True  # both attempts collapsed: the last is kept, flagged
    assert [a["seed"] for a in meta["collapse"]["attempts"]] == [3, 3 + RETRY_SEED_STRIDE]
    assert all(a["collapsed"] and a["majority"] == "NOUN" for a in meta["collapse"]["attempts"])
    assert meta["provenance"]["seed"] == 3 + RETRY_SEED_STRIDE  # the model kept is the retry's
    assert not ckpt.exists() and not (tmp_path / "ckpt.retry1").exists()
    report = evaluate_model(out, one_tag_data, "test", ["en", "de"], tmp_path / "e.json", tmp_path / "p.jsonl")
    assert report["collapsed"] is True  # every evaluation of the model carries the flag


def test_retry_stops_at_the_first_run_that_does_not_collapse(monkeypatch, tmp_path):
    """The retry loop alone: attempt 0 collapses, attempt 1 does not; each checkpoints apart."""
    import xlt.engine.recipes.finetune

    data = tmp_path / "data"
    for split in ("train", "dev"):
        write_jsonl(data / "en" / f"{split}.jsonl", [{"id": "1", "tokens": ["a"], "upos": ["NOUN"]}])
    calls = []

    verdicts = iter([{"collapsed": True, "majority": "NOUN"}, {"collapsed": False, "majority": "NOUN"}])

    def fake_train(cfg, train_files, dev_files, out, checkpoint_dir, **kw):
        calls.append((cfg.seed, str(checkpoint_dir)))
        (tmp_path / "model").mkdir(exist_ok=True)
        (tmp_path / "model" / "xlt_model.json").write_text(json.dumps({"seed_trained": cfg.seed}))
        return {"seed": cfg.seed, "dev_collapse": next(verdicts)}

    monkeypatch.setattr(xlt.engine.recipes.finetune, "train", fake_train)
    summary = finetune("pos", "enc", None, data, ["en"], {}, 2, tmp_path / "model", tmp_path / "ck", collapse_retries=5)
    assert calls == [(2, str(tmp_path / "ck")), (2 + RETRY_SEED_STRIDE, f"{tmp_path / 'ck'}.retry1")]
    meta = json.loads((tmp_path / "model" / "xlt_model.json").read_text())
    assert meta["seed_trained"] == 2 + RETRY_SEED_STRIDE
    assert meta["collapse"]["collapsed"] is False and meta["collapse"]["seed"] == 2 + RETRY_SEED_STRIDE
    assert [a["collapsed"] for a in summary["collapse"]["attempts"]] == [True, False]


def test_tables_keep_collapsed_seeds_in_the_mean_and_mark_the_cell():
    ours = pd.DataFrame([
        {"task": "pos", "lang": "de", "seed": 1, "value": 80.0, "collapsed": False},
        {"task": "pos", "lang": "de", "seed": 2, "value": 20.0, "collapsed": True},
        {"task": "pos", "lang": "es", "seed": 1, "value": 70.0, "collapsed": False},
    ])
    published = pd.DataFrame([{"task": "pos", "lang": "de", "value": 85.0}, {"task": "pos", "lang": "es", "value": 75.0},
                              {"task": "pos", "lang": "fr", "value": 75.0}])
    table = paper_vs_ours(ours, published, ["task", "lang"]).set_index("lang")
    assert table.loc["de", "ours_mean"] == 50.0 and table.loc["de", "n_seeds"] == 2  # kept, not dropped
    assert table.loc["de", "n_collapsed"] == 1 and table.loc["es", "n_collapsed"] == 0
    assert math.isnan(table.loc["fr", "n_collapsed"])  # a cell we did not compute
    assert cell_text(table.loc["de"])[1].endswith("†1")
    assert "†" not in cell_text(table.loc["es"])[1]


def test_dev_languages_pick_the_dev_sets_model_selection_reads(monkeypatch, tmp_path):
    """Translate-train data has English dev only: a profile's `dev_languages` selects on it; by
    default the training languages' dev sets are read (a missing one names the folder)."""
    import xlt.engine.recipes.finetune

    data = tmp_path / "data"
    write_jsonl(data / "en" / "dev.jsonl", [{"id": "1", "tokens": ["a"], "upos": ["NOUN"]}])
    for lang in ("en", "de"):
        write_jsonl(data / lang / "train.jsonl", [{"id": "1", "tokens": ["a"], "upos": ["NOUN"]}])
    seen = {}

    def fake_train(cfg, train_files, dev_files, out, checkpoint_dir, **kw):
        seen.update(train=[str(f) for f in train_files], dev=[str(f) for f in dev_files], option=cfg.dev_languages)
        (tmp_path / "model").mkdir(exist_ok=True)
        (tmp_path / "model" / "xlt_model.json").write_text("{}")
        return {"dev_collapse": None}

    monkeypatch.setattr(xlt.engine.recipes.finetune, "train", fake_train)
    finetune("pos", "enc", None, data, ["de", "en"], {"dev_languages": ["en"]}, 1, tmp_path / "model", tmp_path / "ck")
    assert seen == {"train": [str(data / "de" / "train.jsonl"), str(data / "en" / "train.jsonl")],
                    "dev": [str(data / "en" / "dev.jsonl")], "option": ["en"]}
    with pytest.raises(XltError, match=r"de/dev\.jsonl: missing"):
        finetune("pos", "enc", None, data, ["de", "en"], {}, 1, tmp_path / "model", tmp_path / "ck")
