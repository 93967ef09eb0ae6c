"""One object per head kind: how its examples become features, which fields a batch pads and
how, its head, its loss, what decoding reads, how outputs become predictions, what the gold
is, how it is scored and which predicted labels tell a collapsed run. Nothing switches on
`task.head`: it names the task's kind here, and the kind is asked.

A job resolves its task name once (`resolve`) and hands the task and its kind down.
A new kind is one subclass and one entry in KINDS, the one list of kinds.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from xlt.engine import features as feat
from xlt.engine import heads, predict
from xlt.errors import XltError
from xlt.registry import Task, get_task
from collections import Counter

IGNORE = -100  # label of a position that carries no gold (not a first subword, padding, ...)


class Kind:
    name: str = ""
    pad_values: dict = {}  # list field -> padding value (None: the tokenizer's pad id)
    scalars: tuple = ()  # per-feature integer fields
    gold_fields: tuple = ()  # fields evaluation batches leave out
    decode_keys: tuple = ("logits",)  # head outputs decoding reads; nothing else leaves the device
    per_word: bool = False  # labels per word (tagging, parsing), else one per example

    def encode(self, task: Task, records: list[dict], tokenizer, cfg, train: bool, positions: int | None = None):
        raise NotImplementedError

    def build_head(self, task: Task, hidden: int, dropout: float, classifier: str = "dense") -> torch.nn.Module:
        """The task's head; `classifier` picks the classification head (heads.CLASSIFIERS), a
        kind with one head shape ignores it."""
        raise NotImplementedError

    def loss(self, out: dict, batch: dict) -> torch.Tensor:
        raise NotImplementedError

    def decode(self, task: Task, records: list[dict], enc, outs: list) -> list:
        raise NotImplementedError

    def gold(self, task: Task, rec: dict):
        return rec[task.label_field]

    def scores(self, task: Task, golds: list, preds: list, lang: str | None) -> dict:
        """Every score xlt.metrics computes for this kind (the task's metrics among them)."""
        raise NotImplementedError

    def predicted_labels(self, preds: list) -> list | None:
        """The labels whose variety tells a collapsed run (None: the kind has no classes)."""
        return list(preds)

    def example_scores(self, task: Task, golds: list, preds: list, lang: str | None = None):
        """Per-example scores that rebuild one of the task's metrics (xlt.metrics.ExampleScores),
        for significance tests that pair examples across models."""
        raise XltError(f"task {task.name}: kind {self.name!r} has no per-example scores")

    def metrics(self, task: Task, golds: list, preds: list, lang: str | None = None) -> dict:
        """The task's metrics (Task.metrics, percent); `lang` picks QA's answer normalisation."""
        from xlt.metrics import checked_metrics  # deferred: scikit-learn and seqeval load only to score

        return checked_metrics(task, golds, preds, lambda: self.scores(task, golds, preds, lang))

    def majority_label(self, task: Task, golds: list):
        """The most frequent gold label (class, tag) of a set: the majority baseline predicts it
        everywhere (ties: the first met)."""

        return Counter(self.predicted_labels(golds)).most_common(1)[0][0]

    def majority_baseline(self, task: Task, golds: list) -> dict | None:
        """The task's metrics of the majority baseline on a set (None: the kind has no such
        baseline: its predictions are not one label per example or per token)."""
        return None

    def collapse_measure(self, task: Task, preds: list, golds: list | None = None, score: float | None = None,
                         baseline: float | None = None) -> dict | None:
        """What tells a collapsed run (xlt.metrics.collapse_measure): the predicted labels'
        variety beside the gold's, the dev score beside the majority baseline's (None: the
        kind has no classes)."""
        from xlt.metrics import collapse_measure  # deferred, as above

        values = self.predicted_labels(preds)
        gold_values = None if golds is None else self.predicted_labels(golds)
        return None if values is None else collapse_measure(task.name, values, gold_values, score, baseline)

    def collapse(self, task: Task, preds: list, golds: list | None = None, score: float | None = None,
                 baseline: float | None = None, rule: dict | None = None) -> dict | None:
        """Whether a run with these dev predictions collapsed (xlt.metrics.collapse_verdict)."""
        from xlt.metrics import collapse_verdict  # deferred, as above

        measure = self.collapse_measure(task, preds, golds, score, baseline)
        return None if measure is None else collapse_verdict(measure, rule)


class Tagging(Kind):
    name = "tagging"
    per_word = True
    pad_values = {"input_ids": None, "token_type_ids": 0, "labels": IGNORE, "word_ids": -1}
    gold_fields = ("labels",)

    def encode(self, task, records, tokenizer, cfg, train, positions=None):
        return feat.encode_token_task(task, records, tokenizer, cfg.max_length, cfg.stride, train)

    @staticmethod
    def spans(task) -> bool:
        """Scored as BIO spans (seqeval), not as tags."""
        from xlt.metrics import is_bio_labelset  # deferred, as above

        return task.name == "ner" or is_bio_labelset(task.labels)

    def build_head(self, task, hidden, dropout, classifier="dense"):
        return heads.TaggingHead(hidden, task.num_labels, dropout)

    def loss(self, out, batch):
        return F.cross_entropy(out["logits"].flatten(0, 1).float(), batch["labels"].flatten(), ignore_index=IGNORE)

    def decode(self, task, records, enc, outs):
        return predict.decode_tagging(task, records, enc, outs)

    def scores(self, task, golds, preds, lang):
        from xlt import metrics as M  # deferred, as above

        return (M.ner_metrics if self.spans(task) else M.tagging_metrics)(golds, preds, labels=task.labels)

    def predicted_labels(self, preds):
        return [t for seq in preds for t in seq]

    def majority_baseline(self, task, golds):
        tag = self.majority_label(task, golds)  # the tag share over tokens
        return self.metrics(task, golds, [[tag] * len(g) for g in golds])

    def example_scores(self, task, golds, preds, lang=None):
        from xlt import metrics as M  # deferred, as above

        if not self.spans(task):  # tag accuracy: not needed by any paper yet
            return super().example_scores(task, golds, preds, lang)
        return M.ner_span_counts(golds, preds, labels=task.labels)


class Classification(Kind):
    name = "classification"
    pad_values = {"input_ids": None, "token_type_ids": 0}
    scalars = ("label",)
    gold_fields = ("label",)

    def encode(self, task, records, tokenizer, cfg, train, positions=None):
        return feat.encode_sequence_task(task, records, tokenizer, cfg.max_length)

    def build_head(self, task, hidden, dropout, classifier="dense"):
        if classifier not in heads.CLASSIFIERS:
            raise XltError(f"classification head {classifier!r}; allowed: {', '.join(heads.CLASSIFIERS)}")
        return heads.CLASSIFIERS[classifier](hidden, task.num_labels, dropout)

    def loss(self, out, batch):
        return F.cross_entropy(out["logits"].float(), batch["label"])

    def decode(self, task, records, enc, outs):
        return predict.decode_classification(task, records, enc, outs)

    def scores(self, task, golds, preds, lang):
        from xlt.metrics import classification_metrics  # deferred, as above

        return classification_metrics(golds, preds, labels=task.labels)

    def majority_baseline(self, task, golds):
        return self.metrics(task, golds, [self.majority_label(task, golds)] * len(golds))

    def example_scores(self, task, golds, preds, lang=None):
        from xlt.metrics import accuracy_example_scores  # deferred, as above

        return accuracy_example_scores(golds, preds, labels=task.labels)


class SpanQA(Kind):
    name = "span_qa"
    pad_values = {"input_ids": None, "token_type_ids": 0}
    scalars = ("start_positions", "end_positions")
    gold_fields = scalars

    def encode(self, task, records, tokenizer, cfg, train, positions=None):
        return feat.encode_qa(records, tokenizer, cfg.max_length, cfg.stride, train)

    def build_head(self, task, hidden, dropout, classifier="dense"):
        return heads.SpanQAHead(hidden, dropout)

    def loss(self, out, batch):
        start, end = out["logits"].unbind(-1)
        return (F.cross_entropy(start, batch["start_positions"]) + F.cross_entropy(end, batch["end_positions"])) / 2

    def decode(self, task, records, enc, outs):
        return predict.decode_qa(records, enc, outs)

    def scores(self, task, golds, preds, lang):
        from xlt.metrics import qa_metrics  # deferred, as above

        return qa_metrics(golds, preds, lang=lang)

    def predicted_labels(self, preds):
        return None  # answers are spans, not classes

    def example_scores(self, task, golds, preds, lang=None):
        from xlt.metrics import qa_example_scores  # deferred, as above

        return qa_example_scores(golds, preds, lang=lang)


class Biaffine(Kind):
    name = "biaffine"
    per_word = True
    pad_values = {"input_ids": None, "token_type_ids": 0, "word_starts": 0, "word_heads": IGNORE, "word_rels": IGNORE}
    scalars = ("n_words",)
    gold_fields = ("word_heads", "word_rels")
    decode_keys = ("pred_heads", "pred_rels")

    def encode(self, task, records, tokenizer, cfg, train, positions=None):
        return feat.encode_token_task(task, records, tokenizer, cfg.max_length, cfg.stride, train,
                                      cfg.parse_max_words, positions, parsing=True)

    def build_head(self, task, hidden, dropout, classifier="dense"):
        return heads.ParsingHead(hidden, task.num_labels, dropout)

    def loss(self, out, batch):
        # The parser scores relations at the gold heads, so its arc + relation cross-entropy
        # is computed inside it (Dozat & Manning); the loss term only reads it.
        return out["loss"]

    def decode(self, task, records, enc, outs):
        return predict.decode_parsing(task, records, enc, outs)

    def gold(self, task, rec):
        return {"head": rec["head"], "deprel": rec["deprel"], "upos": rec.get("upos")}

    def scores(self, task, golds, preds, lang):
        from xlt.metrics import parsing_metrics  # deferred, as above

        return parsing_metrics(golds, preds, labels=task.labels)

    def predicted_labels(self, preds):
        return [rel for p in preds for rel in p["deprel"]]

    # No majority baseline: a parse is heads and relations, and no one label predicted everywhere
    # makes a parse; a parser's collapse is judged by the share of its relations alone.


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
    """The kind of a task, or the kind of that name."""
    name = task_or_name if isinstance(task_or_name, str) else task_or_name.head
    try:
        return KINDS[name]
    except KeyError:
        raise XltError(f"unknown head kind {name!r}; known: {', '.join(KINDS)}") from None


def resolve(task_name: str) -> tuple[Task, Kind]:
    """A task name as its registry entry and its kind: once, where a job starts."""
    task = get_task(task_name)
    return task, kind_of(task)


def compute_metrics(task_name: str, golds: list, preds: list, lang: str | None = None) -> dict:
    """The metrics of a task by name (input shapes: xlt.metrics.checked_metrics)."""
    task, kind = resolve(task_name)
    return kind.metrics(task, golds, preds, lang)


def prediction_collapse(task_name: str, preds: list, golds: list | None = None, score: float | None = None,
                        baseline: float | None = None, rule: dict | None = None) -> dict | None:
    """Whether predictions of a task tell a collapsed run (Kind.collapse; None for span QA)."""
    task, kind = resolve(task_name)
    return kind.collapse(task, preds, golds, score, baseline, rule)
