"""Dependency parsing end to end: biaffine head training, decoding, LAS without PUNCT/SYM."""

import json

import pytest
import torch

from tests.conftest import encode_with as encode
from xlt.engine.biaffine import BiaffineParser
from xlt.engine.train_config import TrainConfig
from xlt.engine.model import load_model
from xlt.engine.evalset import evaluate_records
from xlt.stages.finetune import evaluate_model, finetune
from xlt.stages.finetune_job import FinetuneJob
from xlt.io import read_jsonl
from xlt.registry import UD_DEPRELS, get_task

HP = {"lr": 2e-3, "epochs": 4, "batch_size": 8, "warmup_ratio": 0.1, "max_length": 32, "stride": 8, "progress": False}

# A hand-made treebank. Sentence 2 is longer than the parse limit used below (5 words).
TREEBANK = [
    {"id": "s1", "tokens": ["Anna", "ka", "lo", "."], "upos": ["PROPN", "VERB", "NOUN", "PUNCT"],
     "head": [2, 0, 2, 2], "deprel": ["nsubj", "root", "obj", "punct"]},
    {"id": "s2", "tokens": ["mi", "ten", "sor", "42", "bal", "ura", "$"],
     "upos": ["VERB", "NOUN", "NOUN", "NUM", "NOUN", "NOUN", "SYM"],
     "head": [0, 1, 2, 3, 4, 5, 1], "deprel": ["root", "obj", "nmod", "nummod", "obj", "obj", "dep"]},
]


def _left_neighbour_decode(self, out, word_mask, method="mst", single_root=False):
    """A parser whose decisions are known: word i attaches to word i-1 (the first to ROOT),
    relation `root` for the first word and `obj` for every other."""
    B, W = word_mask.shape
    heads = torch.arange(W).expand(B, W).clone()
    rels = torch.full((B, W), UD_DEPRELS.index("obj"))
    rels[:, 0] = UD_DEPRELS.index("root")
    return heads.masked_fill(~word_mask.bool(), -1), rels.masked_fill(~word_mask.bool(), -1)


def test_las_of_a_known_parser_on_a_hand_made_treebank(tiny_encoder, toy_data, tmp_path, monkeypatch):
    """The whole evaluation path (features, parse limit, decode, metric) against a hand count.

    Predictions (left-neighbour parser, parse limit 5 words):
      s1: heads 0 1 2 3, rels root obj obj obj; gold heads 2 0 2 2, rels nsubj root obj punct
          word 1 head wrong; word 2 head wrong; word 3 head and rel right; word 4 PUNCT: skipped
          -> 3 words scored, 1 head right, 1 labelled right
      s2: first five words heads 0 1 2 3 4 (all right), rels root obj obj obj obj
          (right: words 1, 2, 5; words 3, 4 have nmod / nummod); word 6 is past the limit, so
          no head (gold 5): wrong; word 7 SYM: skipped
          -> 6 words scored, 5 heads right, 3 labelled right
      UAS = 6/9, LAS = 4/9.
    """
    finetune(FinetuneJob.of_seed("parsing", str(tiny_encoder), toy_data / "parsing", ["en"], {**HP, "epochs": 1}, 1,
                                 tmp_path / "m", tmp_path / "ck"))
    model, tok, meta = load_model(tmp_path / "m")
    monkeypatch.setattr(BiaffineParser, "decode", _left_neighbour_decode)
    cfg = TrainConfig.from_dict({**meta["train_config"], "parse_max_words": 5})
    preds, metrics = evaluate_records(model, tok, get_task("parsing"), TREEBANK, cfg, torch.device("cpu"))
    assert preds[1]["head"] == [0, 1, 2, 3, 4, -1, -1]  # words past the limit get no head
    assert metrics["uas"] == pytest.approx(100 * 6 / 9)
    assert metrics["las"] == pytest.approx(100 * 4 / 9)

    # A word past the limit whose gold head is ROOT gets no credit either: the root of this
    # sentence is its 6th word; the five parsed words all attach to it in gold, and the
    # left-neighbour parser attaches them elsewhere, so nothing is right.
    late_root = [{"id": "s3", "tokens": ["a", "b", "c", "d", "e", "f"], "upos": ["NOUN"] * 6,
                  "head": [6, 6, 6, 6, 6, 0], "deprel": ["obj"] * 5 + ["root"]}]
    _, metrics = evaluate_records(model, tok, get_task("parsing"), late_root, cfg, torch.device("cpu"))
    assert metrics["uas"] == 0.0 and metrics["las"] == 0.0


def test_parse_limit_counts_words_not_subwords(tiny_encoder):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_encoder)
    task = get_task("parsing")
    rec = {"tokens": ["Annalo"] * 40, "upos": ["NOUN"] * 40, "head": [0] + list(range(1, 40)), "deprel": ["root"] + ["flat"] * 39}
    n_sub = len(tok(rec["tokens"], is_split_into_words=True, add_special_tokens=False)["input_ids"])
    assert n_sub >= 80  # several subwords per word
    # max_length 16 subwords, but the test-time limit is in words (and the encoder's 64 positions)
    f = encode(task, [rec], tok, max_length=16, stride=4, train=False, parse_max_words=12, max_positions=64).features
    assert len(f) == 1 and f[0]["word_index"] == list(range(12))
    assert len(f[0]["input_ids"]) > 16
    # the encoder's positions still bound it
    f = encode(task, [rec], tok, max_length=16, stride=4, train=False, parse_max_words=40, max_positions=n_sub // 2).features
    assert len(f[0]["input_ids"]) <= n_sub // 2 and 0 < f[0]["n_words"] < 40
    # a training tree longer than one window is cut at the window, not dropped: the words
    # kept whose head lies past the cut carry no gold (-100), the others keep theirs
    (f,) = encode(task, [rec], tok, max_length=16, stride=4, train=True).features
    n = f["n_words"]
    assert len(f["input_ids"]) <= 16 and 0 < n < 40 and f["word_index"] == list(range(n))
    assert f["word_heads"] == [0] + list(range(1, n))  # a chain: word i's head i-1 is always kept
    cut = dict(rec, head=[0] + [40] * 39)  # every word headed by the last one, past the cut
    (f,) = encode(task, [cut], tok, max_length=16, stride=4, train=True).features
    assert f["word_heads"] == [0] + [-100] * (n - 1) and f["word_rels"][1:] == [-100] * (n - 1)


def test_parser_trains_and_evaluates_end_to_end(tiny_encoder, toy_data, tmp_path):
    [summary] = finetune(FinetuneJob.of_seed("parsing", str(tiny_encoder), toy_data / "parsing", ["en", "de"], HP, 3,
                                             tmp_path / "m", tmp_path / "ck"))
    first, last = summary["history"][0], summary["history"][-1]
    assert last["las"] >= first["las"]  # (the toy chains can be learnt whole in one epoch)
    # the toy trees are chains: a parser that learnt nothing scores near 1/len on heads
    assert summary["selected_dev_score"] > 60
    report = evaluate_model(str(tmp_path / "m"), str(toy_data / "parsing"), "test", ["en", "de"],
                            tmp_path / "eval.json", tmp_path / "pred.jsonl")
    assert set(report["metrics"]["en"]) == {"las", "uas", "n"}
    assert report["metrics"]["en"]["las"] <= report["metrics"]["en"]["uas"]
    rows = read_jsonl(tmp_path / "pred.jsonl")
    gold = read_jsonl(toy_data / "parsing" / "en" / "test.jsonl")
    assert len(rows[0]["prediction"]["head"]) == len(gold[0]["tokens"])
    assert all(r in UD_DEPRELS for row in rows for r in row["prediction"]["deprel"])
    assert json.loads((tmp_path / "m" / "xlt_model.json").read_text())["task"] == "parsing"
