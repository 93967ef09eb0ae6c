"""One object per head kind: how its examples become features, which fields a batch pads and
how, its head, its loss, what decoding reads, how outputs become predictions, what the gold
is and how it is scored. Everything that used to switch on `task.head` asks its kind.

A new kind is one subclass and one entry in KINDS.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from xlt.engine import features as feat
from xlt.engine import heads, predict
from xlt.errors import XltError
from xlt.registry import Task

IGNORE = -100  # label of a position that carries no gold (not a first subword, padding, ...)


class Kind:
    name: str = ""
    pad_values: dict = {}  # list field -> padding value (None: the tokenizer's pad id)
    scalars: tuple = ()  # per-feature integer fields
    gold_fields: tuple = ()  # fields evaluation batches leave out
    decode_keys: tuple = ("logits",)  # head outputs decoding reads; nothing else leaves the device

    def encode(self, task: Task, records: list[dict], tokenizer, cfg, train: bool, positions: int | None = None):
        raise NotImplementedError

    def build_head(self, task: Task, hidden: int, dropout: float) -> torch.nn.Module:
        raise NotImplementedError

    def loss(self, out: dict, batch: dict) -> torch.Tensor:
        raise NotImplementedError

    def decode(self, task: Task, records: list[dict], enc, outs: list) -> list:
        raise NotImplementedError

    def gold(self, task: Task, rec: dict):
        return rec[task.label_field]

    def metrics(self, task: Task, golds: list, preds: list, lang: str | None = None) -> dict:
        from xlt.metrics import compute_metrics

        return compute_metrics(task.name, golds, preds, lang)


class Tagging(Kind):
    name = "tagging"
    pad_values = {"input_ids": None, "token_type_ids": 0, "labels": IGNORE, "word_ids": -1}
    gold_fields = ("labels",)

    def encode(self, task, records, tokenizer, cfg, train, positions=None):
        return feat.encode_token_task(task, records, tokenizer, cfg.max_length, cfg.stride, train)

    def build_head(self, task, hidden, dropout):
        return heads.TaggingHead(hidden, task.num_labels, dropout)

    def loss(self, out, batch):
        return F.cross_entropy(out["logits"].flatten(0, 1).float(), batch["labels"].flatten(), ignore_index=IGNORE)

    def decode(self, task, records, enc, outs):
        return predict.decode_tagging(task, records, enc, outs)


class Classification(Kind):
    name = "classification"
    pad_values = {"input_ids": None, "token_type_ids": 0}
    scalars = ("label",)
    gold_fields = ("label",)

    def encode(self, task, records, tokenizer, cfg, train, positions=None):
        return feat.encode_sequence_task(task, records, tokenizer, cfg.max_length)

    def build_head(self, task, hidden, dropout):
        return heads.ClassificationHead(hidden, task.num_labels, dropout)

    def loss(self, out, batch):
        return F.cross_entropy(out["logits"].float(), batch["label"])

    def decode(self, task, records, enc, outs):
        return predict.decode_classification(task, records, enc, outs)


class SpanQA(Kind):
    name = "span_qa"
    pad_values = {"input_ids": None, "token_type_ids": 0}
    scalars = ("start_positions", "end_positions")
    gold_fields = scalars

    def encode(self, task, records, tokenizer, cfg, train, positions=None):
        return feat.encode_qa(records, tokenizer, cfg.max_length, cfg.stride, train)

    def build_head(self, task, hidden, dropout):
        return heads.SpanQAHead(hidden, dropout)

    def loss(self, out, batch):
        start, end = out["logits"].unbind(-1)
        return (F.cross_entropy(start, batch["start_positions"]) + F.cross_entropy(end, batch["end_positions"])) / 2

    def decode(self, task, records, enc, outs):
        return predict.decode_qa(records, enc, outs)


class Biaffine(Kind):
    name = "biaffine"
    pad_values = {"input_ids": None, "token_type_ids": 0, "word_starts": 0, "word_heads": IGNORE, "word_rels": IGNORE}
    scalars = ("n_words",)
    gold_fields = ("word_heads", "word_rels")
    decode_keys = ("pred_heads", "pred_rels")

    def encode(self, task, records, tokenizer, cfg, train, positions=None):
        return feat.encode_token_task(task, records, tokenizer, cfg.max_length, cfg.stride, train,
                                      cfg.parse_max_words, positions)

    def build_head(self, task, hidden, dropout):
        return heads.ParsingHead(hidden, task.num_labels, dropout)

    def loss(self, out, batch):
        # The parser scores relations at the gold heads, so its arc + relation cross-entropy
        # is computed inside it (Dozat & Manning); the loss term only reads it.
        return out["loss"]

    def decode(self, task, records, enc, outs):
        return predict.decode_parsing(task, records, enc, outs)

    def gold(self, task, rec):
        return {"head": rec["head"], "deprel": rec["deprel"], "upos": rec.get("upos")}


class MLM(Kind):
    """Masked language modelling: features are plain token ids; masking happens per step
    (objectives.mlm_masking), seeded by the step, so a resumed job masks identically."""

    name = "mlm"
    pad_values = {"input_ids": None}

    def encode(self, task, texts, tokenizer, cfg, train, positions=None):
        ids = tokenizer(list(texts), truncation=True, max_length=cfg.max_length)["input_ids"]
        features = [{"input_ids": x} for x in ids if len(x) > 2]
        return feat.Encoded(features, [len(f["input_ids"]) for f in features])

    def loss(self, out, batch):
        if "mlm_targets" in out:  # logits of the masked positions only (recipes.mlm.MLMModel)
            return F.cross_entropy(out["logits"].float(), out["mlm_targets"])
        logits = out["logits"]
        return F.cross_entropy(logits.flatten(0, 1).float(), batch["mlm_labels"].flatten(), ignore_index=IGNORE)


KINDS: dict[str, Kind] = {k.name: k for k in (Tagging(), Classification(), SpanQA(), Biaffine(), MLM())}


def kind_of(task_or_name: Task | str) -> Kind:
    name = task_or_name if isinstance(task_or_name, str) else task_or_name.head
    try:
        return KINDS[name]
    except KeyError:
        raise XltError(f"unknown head kind {name!r}; known: {', '.join(KINDS)}") from None
