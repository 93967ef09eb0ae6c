"""X-Mixup for tagging and span QA (xlt.papers.xmixup.recipe): a step runs on each; tagging's
target side learns a source model's soft labels (another source model, another target loss;
the source's own loss unchanged); QA's target learns its own span; inference reads the target
alone; a tagging X-Mixup model saved and reloaded predicts identically."""

import random

import pytest
import torch

from tests.conftest import WORDS, _sentence, _upos
from tests.engine.test_xmixup import HP, MIX, PARTNER
from xlt.engine.train_config import TrainConfig
from xlt.engine.evalset import EvalSet, load_records, max_positions
from xlt.engine.model import load_encoder, load_model, save_model
from xlt.engine.objectives import Objective
from xlt.papers.xmixup import recipe as xmixup
from xlt.errors import XltError
from xlt.io import write_jsonl


def _tagging_records(n: int, seed: int, source: bool = True, gold: bool = False) -> list[dict]:
    """Target: the partner words in reverse order, no gold tags (unless `gold`: a test set);
    source: the English words and their tags."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        en = _sentence(rng)
        rec = {"id": f"t{i}", "tokens": [PARTNER[w] for w in reversed(en)]}
        if gold:
            rec["upos"] = [_upos(w) for w in rec["tokens"]]
        if source:
            rec["source"] = {"tokens": en, "upos": [_upos(w) for w in en]}
        out.append(rec)
    return out


def _qa_records(n: int, seed: int) -> list[dict]:
    """Target and source each with its own answer span (the translation's and the original's)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        en = _sentence(rng) + ["Anna"] + _sentence(rng)
        tgt = [PARTNER[w] for w in en]
        out.append({"id": f"q{i}", "question": "who ka ?", "context": " ".join(tgt),
                    "answers": {"text": [PARTNER["Anna"]], "answer_start": [len(" ".join(tgt[:en.index("Anna")])) + 1]},
                    "source": {"question": "who lo ?", "context": " ".join(en),
                               "answers": {"text": ["Anna"], "answer_start": [len(" ".join(en[:en.index("Anna")])) + 1]}}})
    return out


def _setup(tiny_encoder, task: str, seed: int = 3):
    from xlt.engine.recipes.finetune import build_task_model

    encoder, tok = load_encoder(str(tiny_encoder), dropout=0.0)
    cfg = TrainConfig.from_dict({**HP, "task": task, "encoder": str(tiny_encoder), "extras": [MIX], "dropout": 0.0,
                                 "seed": seed})
    return build_task_model(cfg, encoder), tok, cfg


def _teacher(tiny_encoder, seed: int):
    """A pos model without the extra (its head drawn with `seed`): a stand-in for the English tagger."""
    from xlt.engine.recipes.finetune import build_task_model

    encoder, _ = load_encoder(str(tiny_encoder), dropout=0.0)
    cfg = TrainConfig.from_dict({**HP, "task": "pos", "encoder": str(tiny_encoder), "dropout": 0.0, "seed": seed})
    return build_task_model(cfg, encoder).eval()


def _parts(model, tok, kind, stream, soft=None):
    batch = stream.collate(stream.batches(0)[0])
    objective = Objective(xmixup.xmixup_terms(model.source_reader, model.task.name, 1, tok.pad_token_id, kind, soft))
    model.train()
    model.zero_grad()
    loss, parts = objective(model, {model.task.name: batch}, 0)
    loss.backward()
    return loss, parts


def test_a_tagging_step_learns_the_source_models_soft_labels_on_the_target_side(tiny_encoder):
    model, tok, cfg = _setup(tiny_encoder, "pos")
    records = _tagging_records(12, 0)
    parts = {}
    for teacher_seed in (1, 2):
        stream = xmixup.paired_stream("pos", model.task, model.kind, records, tok, cfg)
        soft = xmixup.soft_labels(_teacher(tiny_encoder, teacher_seed), stream, 16, "cpu")
        assert soft.shape == (sum(len(r["tokens"]) for r in records), len(model.task.labels))
        torch.testing.assert_close(soft.sum(-1), torch.ones(len(soft)))
        assert all("labels" not in f["target"] and "labels" in f["source"] for f in stream.features)
        loss, parts[teacher_seed] = _parts(model, tok, model.kind, stream, soft)
        assert torch.isfinite(loss) and set(parts[teacher_seed]) == {"src", "tgt", "mse"}  # no KL: tagging
        assert model.source_reader.w.grad is not None and model.heads["pos"].out.weight.grad.abs().sum() > 0
    assert float(parts[1]["src"]) == float(parts[2]["src"])  # the source side learns its own gold
    assert abs(float(parts[1]["tgt"]) - float(parts[2]["tgt"])) > 1e-4  # the target side, the source model's tags


def test_tagging_without_soft_labels_or_with_a_back_translation_fails_with_one_line(tiny_encoder, tmp_path):
    model, tok, cfg = _setup(tiny_encoder, "pos")
    with pytest.raises(XltError, match="soft labels; none given"):
        xmixup.xmixup_terms(model.source_reader, "pos", 1, tok.pad_token_id, model.kind)
    records = _tagging_records(2, 0)
    records[1]["source_bt"] = records[1]["source"]
    write_jsonl(tmp_path / "train.jsonl", records)
    with pytest.raises(XltError, match="record 2 .*'source_bt' .* classification only"):
        xmixup.read_paired_records(model.task, [tmp_path / "train.jsonl"])


def test_tagging_without_its_source_model_fails_before_anything_loads(tmp_path):
    from xlt.engine.recipes.finetune import train

    cfg = TrainConfig.from_dict({**HP, "task": "ner", "encoder": str(tmp_path / "no-encoder"), "extras": [MIX]})
    with pytest.raises(XltError, match="xmixup tagging: the target side's labels are a source model's soft labels"):
        train(cfg, [tmp_path / "train.jsonl"], [], tmp_path / "m", tmp_path / "ck")


def test_qa_xmixup_trains_and_its_model_predicts_from_the_target_with_its_source(tiny_encoder, tmp_path):
    from xlt.engine.recipes.finetune import train

    write_jsonl(tmp_path / "train.jsonl", _qa_records(16, 0))
    write_jsonl(tmp_path / "dev.jsonl", [{k: v for k, v in r.items() if k != "source"} for r in _qa_records(4, 1)])
    cfg = TrainConfig.from_dict({**HP, "epochs": 1, "task": "qa", "encoder": str(tiny_encoder), "extras": [MIX]})
    summary = train(cfg, [tmp_path / "train.jsonl"], [tmp_path / "dev.jsonl"], tmp_path / "m", tmp_path / "ck")
    assert summary["global_steps"] == 2 and summary["train_features"] >= 16
    model, tok, meta = load_model(tmp_path / "m")
    assert "soft_labels" not in meta["xmixup"]
    records = _qa_records(4, 2)
    ev = EvalSet.build(model.task, records, tok, cfg, max_positions(model, tok), with_source=True)
    assert all("source" in b for _, b in ev.batches) and len(ev.predict(model, "cpu")) == 4


def test_a_qa_step_learns_each_sides_own_span(tiny_encoder):
    model, tok, cfg = _setup(tiny_encoder, "qa")
    records = _qa_records(8, 0)
    stream = xmixup.paired_stream("qa", model.task, model.kind, records, tok, cfg)
    f = stream.features[0]
    for side in ("source", "target"):  # each side's span points at its own answer word
        assert tok.decode(f[side]["input_ids"][f[side]["start_positions"]:f[side]["end_positions"] + 1]) == \
            (records[0]["answers"] if side == "target" else records[0]["source"]["answers"])["text"][0]
    loss, parts = _parts(model, tok, model.kind, stream)
    assert torch.isfinite(loss) and set(parts) == {"src", "tgt", "mse"} and all(float(v) > 0 for v in parts.values())


@pytest.mark.parametrize("task", ["pos", "qa"])
def test_inference_reads_the_target_alone_mixed_with_its_source(tiny_encoder, task):
    model, tok, cfg = _setup(tiny_encoder, task)
    model.eval()
    records = _tagging_records(6, 5, gold=True) if task == "pos" else _qa_records(6, 5)
    ev = EvalSet.build(model.task, records, tok, cfg, max_positions(model, tok), with_source=True)
    plain = EvalSet.build(model.task, records, tok, cfg, max_positions(model, tok))
    with torch.no_grad():
        for (_, b), (_, p) in zip(ev.batches, plain.batches):
            out = model(b)
            assert torch.equal(out["logits"], out["target_logits"])  # not averaged with the source's
            assert not torch.allclose(out["logits"], model(p)["logits"], atol=1e-4)  # the source was mixed in
    assert len(ev.predict(model, "cpu")) == len(records)


def test_a_tagging_xmixup_model_reloads_and_predicts_identically(tiny_encoder, tmp_path):
    from xlt.engine.recipes.finetune import train

    teacher = _teacher(tiny_encoder, 1)
    _, tok = load_encoder(str(tiny_encoder))
    save_model(teacher, tok, tmp_path / "teacher", {})
    write_jsonl(tmp_path / "train.jsonl", _tagging_records(16, 0))
    write_jsonl(tmp_path / "dev.jsonl", _tagging_records(6, 1, source=False, gold=True))
    cfg = TrainConfig.from_dict({**HP, "epochs": 1, "task": "pos", "encoder": str(tiny_encoder), "extras": [MIX]})
    summary = train(cfg, [tmp_path / "train.jsonl"], [tmp_path / "dev.jsonl"], tmp_path / "m", tmp_path / "ck",
                    aux=[{"kind": "soft_labels", "model": str(tmp_path / "teacher")}])
    assert summary["global_steps"] == 2
    model, tok, meta = load_model(tmp_path / "m")
    assert meta["spec"]["extras"] == [MIX] and meta["xmixup"]["soft_labels"]["model"] == str(tmp_path / "teacher")
    save_model(model, tok, tmp_path / "again", meta)
    again, _, _ = load_model(tmp_path / "again")
    records = _tagging_records(6, 2, gold=True)
    ev = EvalSet.build(model.task, records, tok, cfg, max_positions(model, tok), with_source=True)
    assert ev.predict(model, "cpu") == ev.predict(again, "cpu")
    with torch.no_grad():
        assert all(torch.equal(model(b)["logits"], again(b)["logits"]) for _, b in ev.batches)
