"""Collapsed runs (dev predictions all one class or tag): detected, flagged, retried, marked."""

from __future__ import annotations

import json
import math
import shutil

from pathlib import Path

import pandas as pd
import pytest
import yaml

from xlt.errors import XltError
from xlt.stages.finetune import RETRY_SEED_STRIDE, evaluate_model, finetune
from xlt.stages.finetune_job import FinetuneJob
from xlt.io import read_jsonl, write_jsonl
from xlt.engine.kinds import prediction_collapse, resolve
from xlt.metrics import COLLAPSE_RULE
from xlt.tables import COLLAPSE_NOTE, cell_text, paper_vs_ours, render_grid

ROOT = Path(__file__).resolve().parents[1]

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
    assert verdict == {"collapsed": False, "by": [], "labels_predicted": 2, "majority": "O", "majority_share": 0.75,
                       "n": 4, "rule": COLLAPSE_RULE}


def test_a_run_with_97_percent_one_class_is_flagged():
    preds = ["1"] * 97 + ["0"] * 3
    golds = ["1"] * 50 + ["0"] * 50
    verdict = prediction_collapse("pawsx", preds, golds, score=53.0, baseline=50.0)
    # 53 of 100 right where the majority label is right 50 times: not clearly better either
    assert verdict["collapsed"] is True and verdict["by"] == ["share", "chance"]
    assert verdict["majority_share"] == 0.97 and verdict["gold_majority_share"] == 0.5 and verdict["n_correct"] == 53
    assert verdict["rule"] == {"max_share": 0.95, "min_gain": 0.0, "alpha": 0.01}  # the thresholds travel with the verdict


def test_a_run_at_the_majority_baseline_is_flagged():
    """Two classes predicted in equal measure, but no better than the trivial predictor."""
    golds = ["1"] * 60 + ["0"] * 40
    preds = ["1", "0"] * 50
    verdict = prediction_collapse("pawsx", preds, golds, score=60.0, baseline=60.0)
    assert verdict["collapsed"] is True and verdict["by"] == ["baseline", "chance"]
    assert prediction_collapse("pawsx", preds, golds, score=59.0, baseline=60.0)["by"] == ["baseline", "chance"]  # below it too


def test_a_run_not_clearly_above_the_majority_predictor_did_not_learn():
    """The case of issue 52: a dev score a few points over the majority baseline on a small dev
    set is chance; the same gain on a large one is not. The exact binomial test tells them apart
    where a fixed margin in points could not."""
    def run(n, right, majority):  # 3 classes, the gold majority class `majority` of n; the first `right` labels right
        rest = n - majority
        golds = ["0"] * majority + ["1"] * (rest // 2) + ["2"] * (rest - rest // 2)
        preds = golds[:right] + [str((int(g) + 1) % 3) for g in golds[right:]]
        return prediction_collapse("xnli", preds, golds, 100 * right / n, 100 * majority / n)

    small = run(150, 62, 54)  # 41.3 % right where the majority label is 36 %: p ~ 0.1
    assert small["n_correct"] == 62 and small["by"] == ["chance"] and small["collapsed"] is True
    assert 0.05 < small["chance_p"] < 0.2
    large = run(5000, 2065, 1800)  # the same 41.3 % against 36 % on 5,000 examples
    assert large["by"] == [] and large["chance_p"] < 1e-9
    assert run(150, 62, 54)["rule"]["alpha"] == 0.01
    assert run(150, 150, 54)["by"] == []  # all right: far past any doubt


def test_a_healthy_run_is_not_flagged():
    golds = ["1"] * 60 + ["0"] * 40
    preds = ["1"] * 55 + ["0"] * 45
    verdict = prediction_collapse("pawsx", preds, golds, score=85.0, baseline=60.0)
    assert verdict["collapsed"] is False and verdict["by"] == []
    assert verdict["dev_score"] == 85.0 and verdict["majority_baseline"] == 60.0


def test_the_share_says_nothing_where_the_gold_is_as_skewed():
    """A tagger on text that is 97% O predicts O 97% of the time when it is right: only the
    baseline test can call it collapsed."""
    golds = [["O"] * 970 + ["B-PER"] * 30]  # 1,000 tokens: enough for a perfect tagger to be clearly better
    good = [["O"] * 970 + ["B-PER"] * 30]
    assert prediction_collapse("ner", good, golds, score=100.0, baseline=0.0)["collapsed"] is False
    assert prediction_collapse("ner", [["O"] * 1000], golds, score=0.0, baseline=0.0)["by"] == ["baseline", "chance"]


def test_the_rule_is_configurable_and_stated_once():
    preds, golds = ["1"] * 97 + ["0"] * 3, ["1"] * 50 + ["0"] * 50
    assert prediction_collapse("pawsx", preds, golds, rule={"max_share": 0.98})["collapsed"] is False
    assert "baseline" in prediction_collapse("pawsx", ["1", "0"], ["1", "0"], 70.0, 50.0, rule={"min_gain": 25.0})["by"]
    assert "chance" not in prediction_collapse("pawsx", ["1", "0"], ["1", "0"], 70.0, 50.0, rule={"alpha": 0.5})["by"]  # p = 0.25
    schema = yaml.safe_load((ROOT / "schemas" / "config.schema.yaml").read_text())["properties"]["collapse"]["properties"]
    assert {k: schema[k]["default"] for k in COLLAPSE_RULE} == COLLAPSE_RULE
    for path in ("config.yaml", "presets/tiny.yaml"):  # both state the thresholds, as the schema's defaults
        stated = yaml.safe_load((ROOT / path).read_text())["collapse"]
        assert {k: stated[k] for k in COLLAPSE_RULE} == COLLAPSE_RULE and stated["retries"] == 0


@pytest.mark.parametrize("task, golds, metric, expected", [
    ("pawsx", ["1", "0", "1", "1"], "accuracy", 75.0),
    ("pos", [["NOUN", "VERB", "NOUN"], ["NOUN"], ["DET", "NOUN", "ADJ", "VERB"]], "accuracy", 50.0),  # tag share over tokens
    ("ner", [["O", "B-PER", "O"], ["O"]], "span_f1", 0.0),  # all O finds no entity
])
def test_majority_baseline_predicts_the_most_frequent_gold_label(task, golds, metric, expected):
    task_, kind = resolve(task)
    assert kind.majority_baseline(task_, golds)[metric] == pytest.approx(expected)


def test_qa_and_parsing_have_no_majority_baseline():
    for name in ("qa", "parsing"):
        task, kind = resolve(name)
        assert kind.majority_baseline(task, []) is None


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
    [summary] = finetune(FinetuneJob.of_seed("pos", str(tiny_encoder), one_tag_data, ["en"], HP, 3, out, ckpt, collapse_retries=1))
    meta = json.loads((out / "xlt_model.json").read_text())
    assert meta["collapse"] == summary["collapse"]
    assert meta["collapse"]["collapsed"] is True  # both attempts collapsed: the last is kept, flagged
    assert [a["seed"] for a in meta["collapse"]["attempts"]] == [3, 3 + RETRY_SEED_STRIDE]
    assert all(a["collapsed"] and a["majority"] == "NOUN" for a in meta["collapse"]["attempts"])
    # training measured the dev score beside the majority baseline of the same dev set (tag accuracy)
    assert all(a["dev_score"] <= a["majority_baseline"] + 1e-6 and "baseline" in a["by"] for a in meta["collapse"]["attempts"])
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

    # what training measures; finetune judges it by the rule
    verdicts = iter([{"majority": "NOUN", "majority_share": 0.97}, {"majority": "NOUN", "majority_share": 0.6}])

    def fake_train(cfg, train_files, dev_files, out, checkpoint_dir, **kw):
        calls.append((cfg.seed, str(checkpoint_dir)))
        (tmp_path / "model").mkdir(exist_ok=True)
        (tmp_path / "model" / "xlt_model.json").write_text(json.dumps({"seed_trained": cfg.seed}))
        return {"seed": cfg.seed, "dev_collapse": next(verdicts)}

    monkeypatch.setattr(xlt.engine.recipes.finetune, "train", fake_train)
    [summary] = finetune(FinetuneJob.of_seed("pos", "enc", data, ["en"], {}, 2, tmp_path / "model", tmp_path / "ck", collapse_retries=5))
    assert calls == [(2, str(tmp_path / "ck")), (2 + RETRY_SEED_STRIDE, f"{tmp_path / 'ck'}.retry1")]
    meta = json.loads((tmp_path / "model" / "xlt_model.json").read_text())
    assert meta["seed_trained"] == 2 + RETRY_SEED_STRIDE
    assert meta["collapse"]["collapsed"] is False and meta["collapse"]["seed"] == 2 + RETRY_SEED_STRIDE
    assert [a["collapsed"] for a in summary["collapse"]["attempts"]] == [True, False]
    assert [a["by"] for a in summary["collapse"]["attempts"]] == [["share"], []]
    assert meta["collapse"]["rule"] == COLLAPSE_RULE  # the thresholds are in the model's provenance


def test_finetune_judges_by_the_configured_rule(monkeypatch, tmp_path):
    import xlt.engine.recipes.finetune

    data = tmp_path / "data"
    for split in ("train", "dev"):
        write_jsonl(data / "en" / f"{split}.jsonl", [{"id": "1", "tokens": ["a"], "upos": ["NOUN"]}])

    def fake_train(cfg, train_files, dev_files, out, checkpoint_dir, **kw):
        (tmp_path / "model").mkdir(exist_ok=True)
        (tmp_path / "model" / "xlt_model.json").write_text("{}")
        return {"dev_collapse": {"majority_share": 0.97, "gold_majority_share": 0.3, "dev_score": 40.0,
                                 "majority_baseline": 30.0}}

    monkeypatch.setattr(xlt.engine.recipes.finetune, "train", fake_train)
    [loose] = finetune(FinetuneJob.of_seed("pos", "enc", data, ["en"], {}, 1, tmp_path / "model", tmp_path / "ck",
                                           collapse_rule={"max_share": 0.99, "min_gain": 5.0}))
    assert loose["collapse"]["collapsed"] is False and loose["collapse"]["rule"] == {"max_share": 0.99, "min_gain": 5.0, "alpha": 0.01}
    [strict] = finetune(FinetuneJob.of_seed("pos", "enc", data, ["en"], {}, 1, tmp_path / "model", tmp_path / "ck",
                                            collapse_rule={"min_gain": 10.0}))
    assert strict["collapse"]["by"] == ["share", "baseline"] and strict["collapse"]["rule"]["max_share"] == 0.95


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
    assert table.loc["de", "mean_without_collapsed"] == 80.0 and table.loc["de", "n_without_collapsed"] == 1


def test_the_table_note_gives_the_mean_without_collapsed_seeds():
    ours = pd.DataFrame([
        {"task": "pawsx", "lang": "en", "seed": 1, "value": 63.2, "collapsed": False},
        {"task": "pawsx", "lang": "en", "seed": 2, "value": 50.2, "collapsed": True},
        {"task": "pawsx", "lang": "de", "seed": 1, "value": 55.0, "collapsed": True},
        {"task": "pawsx", "lang": "de", "seed": 2, "value": 51.0, "collapsed": True},
        {"task": "pos", "lang": "en", "seed": 1, "value": 90.0, "collapsed": False},
    ])
    published = pd.DataFrame([{"task": "pawsx", "lang": "en", "value": 94.0}])
    table = paper_vs_ours(ours, published, ["task", "lang"])
    md, _ = render_grid(table, ["task"], "lang", "T", ["first note", COLLAPSE_NOTE, "last note"])
    notes = [line for line in md.splitlines() if line.startswith("- ")]
    assert notes[0] == "- first note" and notes[2] == "- last note"  # in the place the plugin gave it
    assert notes[1].startswith(f"- {COLLAPSE_NOTE}; without collapsed seeds")
    assert "PI / EN 63.20 (n=1)" in notes[1] and "PI / DE – (n=0)" in notes[1]
    assert "POS" not in notes[1]  # an unmarked cell is not listed
    assert "56.70 ± 9.19 †1" in md and "53.00 ± 2.83 †2" in md  # the cells keep every seed
    md, _ = render_grid(table, ["task"], "lang", "T", ["a note"])  # a plugin that did not list it: appended
    assert md.rstrip().splitlines()[-1].startswith(f"- {COLLAPSE_NOTE}; without collapsed seeds")
    healthy = paper_vs_ours(ours.assign(collapsed=False), published, ["task", "lang"])
    md, _ = render_grid(healthy, ["task"], "lang", "T", [COLLAPSE_NOTE])
    assert "without collapsed seeds" not in md and "†" in md  # nothing marked: the legend alone


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
    finetune(FinetuneJob.of_seed("pos", "enc", data, ["de", "en"], {"dev_languages": ["en"]}, 1, tmp_path / "model", tmp_path / "ck"))
    assert seen == {"train": [str(data / "de" / "train.jsonl"), str(data / "en" / "train.jsonl")],
                    "dev": [str(data / "en" / "dev.jsonl")], "option": ["en"]}
    with pytest.raises(XltError, match=r"de/dev\.jsonl: missing"):
        finetune(FinetuneJob.of_seed("pos", "enc", data, ["de", "en"], {}, 1, tmp_path / "model", tmp_path / "ck"))


def test_dlfa_table6_similarity_carries_its_models_collapse(tmp_path):
    """A similarity is of fine-tuned models: a seed whose model collapsed is marked there too."""
    from tests.test_dlfa_tables import BONUS, LANGS, _evals, _spec
    from xlt.workflow.paper_outputs import make_table

    spec = _spec()
    inputs = _evals(tmp_path, spec)
    collapsed = next(p for p in inputs if p.endswith("en.underspec-dlfa3-2.json"))  # d3, seed 2
    Path(collapsed).write_text(json.dumps({**json.loads(Path(collapsed).read_text()), "collapsed": True}))
    for seed in spec["seeds"]:
        rows = [{"task": "pawsx", "model": s, "lang": lang, "seed": seed, "value": 0.5 + BONUS[s] / 100 + seed ** 2 / 1000}
                for s in ("baseline", "d1", "d2", "d3") for lang in LANGS[1:]]
        pd.DataFrame(rows).to_csv(tmp_path / f"sim{seed}.csv", index=False)
        inputs.append(str(tmp_path / f"sim{seed}.csv"))
    t6 = make_table("dlfa", "table6", spec, inputs, str(tmp_path / "t6")).set_index(["task", "model"])
    assert t6.loc[("pawsx", "d3"), "n_collapsed"] == 1 and t6.loc[("pawsx", "d1"), "n_collapsed"] == 0
    assert t6.loc[("pawsx", "d3"), "mean_without_collapsed"] == pytest.approx(0.495)  # seeds 1 and 3
    md = (tmp_path / "t6.md").read_text()
    assert "0.4947 ± 0.0040 †1" in md and "PI d3 / COS 0.4950 (n=2)" in md


def test_scored_predictions_nearly_all_one_class_are_a_collapse_whatever_the_dev_verdict():
    """X-Mixup is scored on another path than its dev set (its translate-test side): the
    evaluation judges its own predictions by the share test of the model's recorded rule."""
    from xlt.stages.finetune import scored_collapse

    task, kind = resolve("xnli")
    golds = ["entailment", "neutral", "contradiction"] * 10
    meta = {"collapse": {"collapsed": False, "rule": {"max_share": 0.9, "min_gain": 0.0}}}
    one = scored_collapse(kind, task, ["contradiction"] * 30, golds, meta)
    assert one["collapsed"] and one["by"] == ["share"] and one["rule"]["max_share"] == 0.9
    mostly = ["contradiction"] * 27 + ["neutral"] * 3  # 90 %: at the model's own threshold
    assert scored_collapse(kind, task, mostly, golds, meta)["collapsed"]
    assert not scored_collapse(kind, task, mostly, golds, {})["collapsed"]  # COLLAPSE_RULE's 0.95
    assert not scored_collapse(kind, task, golds, golds, meta)["collapsed"]
    qa_task, qa_kind = resolve("qa")
    assert scored_collapse(qa_kind, qa_task, ["Berlin"] * 3, ["Berlin"] * 3, meta) is None  # no labels to judge
