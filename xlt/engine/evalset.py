"""An evaluation set encoded once and scored many times.

`EvalSet.build` tokenises the records, cuts windows and collates the batches once; `score`
then costs one forward pass per batch, the decoding and the metric. Dev evaluation after
every epoch and the interpolation grids (one model state per grid point, the same dev sets
at every point) both reuse one EvalSet, so a grid point costs what one plain evaluation costs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from xlt.engine.features import Encoded
from xlt.engine.kinds import Kind, kind_of
from xlt.engine.evaluation import EvalMode
from xlt.engine.predict import collect_outputs, eval_batches, launch_batches
from xlt.errors import XltError
from xlt.io import read_jsonl
from xlt.registry import Task


def load_records(paths, cap: int | None = None) -> list[dict]:
    records: list[dict] = []
    for p in paths:
        recs = read_jsonl(p)
        records.extend(recs[:cap] if cap else recs)
    if not records:
        raise XltError(f"no examples in {', '.join(map(str, paths))}")
    return records


def record_files(paths, cap: int | None = None) -> list[int]:
    """The index in `paths` of the file each record of `load_records(paths, cap)` came from."""
    return [i for i, p in enumerate(paths) for _ in (read_jsonl(p)[:cap] if cap else read_jsonl(p))]


def max_positions(model, tokenizer) -> int | None:
    """Subwords the encoder takes in one sequence (specials included), if it says."""
    limits = [getattr(getattr(getattr(model, "encoder", None), "config", None), "max_position_embeddings", None),
              getattr(tokenizer, "model_max_length", None)]
    limits = [int(v) for v in limits if isinstance(v, int) and 0 < v < 1_000_000]
    return min(limits) if limits else None


@dataclass
class EvalSet:
    task: Task
    kind: Kind
    records: list[dict]
    enc: Encoded
    golds: list
    batches: list[tuple[list[int], dict]]
    name: str = ""
    precision: str = "fp32"  # of its forwards (xlt.engine.evaluation)
    # QA's answer normalisation (xlt.metrics.normalize_answer): None, SQuAD v1.1's; a language
    # code, the MLQA script's with that answer language (a set declaring it: answer_languages)
    answer_lang: str | None = None
    _on: dict = field(default_factory=dict, repr=False)  # device -> batches moved there

    @classmethod
    def build(cls, task: Task, records: list[dict], tokenizer, cfg, positions: int | None = None,
              name: str = "", kind: Kind | None = None, with_source: bool = False,
              mode: EvalMode | None = None, answer_lang: str | None = None) -> "EvalSet":
        """Encode `records` as evaluation features with `cfg`'s max_length / stride / batch size.

        `positions`: the encoder's sequence limit (`max_positions`); parsing uses it to parse
        the first `cfg.parse_max_words` words whatever their subword count. `kind`: the task's,
        as the job resolved it (looked up here when not given). `with_source` (a model with
        an extra that reads the paired source side): a record's "source" (e.g. its English
        translation, translate-test) is encoded too and runs beside it
        (xlt.engine.model.TaskModel.with_source). `mode`: the
        precision and batching of its forwards (`xlt.engine.evaluation.eval_mode`; default
        fp32, `cfg.eval_batch_size` sentences per batch). `answer_lang`: QA's answer
        normalisation (None: SQuAD v1.1's; an MLQA language: the MLQA script's with that answer
        language; xlt.dag.targets.answer_languages).
        """
        mode = mode or EvalMode()
        kind = kind or kind_of(task)
        enc = kind.encode(task, records, tokenizer, cfg, train=False, positions=positions)
        if with_source:
            attach_sources(task, kind, records, enc, tokenizer, cfg)
        batches = eval_batches(enc, kind, tokenizer.pad_token_id, cfg.eval_batch_size, mode.max_tokens, mode.pad_multiple)
        return cls(task, kind, records, enc, [kind.gold(task, r) for r in records], batches, name, mode.precision,
                   answer_lang)

    def batches_on(self, device: torch.device) -> list[tuple[list[int], dict]]:
        """The collated batches, moved to `device` once (CUDA) or left where they are (CPU)."""
        if torch.device(device).type == "cpu":
            return self.batches
        key = str(device)
        if key not in self._on:
            self._on[key] = [(idx, {k: v.to(device) for k, v in b.items()}) for idx, b in self.batches]
        return self._on[key]

    def launch(self, model, device: torch.device, precision: str | None = None) -> list:
        """Queue the forward passes (`xlt.engine.predict.launch_batches`; `precision`: the
        set's own unless given); `finish` scores them."""
        return launch_batches(model, self.batches_on(device), device, self.kind.decode_keys, precision or self.precision)

    def decode(self, pending: list, device: torch.device) -> list:
        """Predictions per record of a `launch`."""
        return self.kind.decode(self.task, self.records, self.enc, collect_outputs(pending, len(self.enc.features), device))

    def finish(self, pending: list, device: torch.device) -> tuple[list, dict]:
        """Predictions per record and every metric of the task (percent) of a `launch`."""
        preds = self.decode(pending, device)
        return preds, self.kind.metrics(self.task, self.golds, preds, self.answer_lang)

    def predict(self, model, device: torch.device, precision: str | None = None) -> list:
        return self.decode(self.launch(model, device, precision), device)

    def score(self, model, device: torch.device, precision: str | None = None) -> tuple[list, dict]:
        """Predictions per record and every metric of the task (percent); `precision`: see
        xlt.engine.predict.launch_batches (the set's own unless given)."""
        return self.finish(self.launch(model, device, precision), device)


def source_fields(task: Task) -> tuple[str, ...]:
    """The input fields of a record's English side, by the task's input."""
    return {"text_pair": ("text", "text_pair"), "tokens": ("tokens",), "qa": ("question", "context")}.get(task.input, ("text",))


def source_side(task: Task, record: dict, key: str = "source", where: str = "record") -> dict:
    """The record with its side `key` ("source": its English original or translation;
    "source_bt": a back-translation) in place of its own: the side's input fields (text /
    text_pair, tokens, question and context), and whatever else the side carries (a tagging
    source's gold tags, a QA source's answers); the record's own id kept. A sentence task's
    label is the pair's; a tagging's tags and a QA answer are the side's own, so the
    target's are never carried over to its source."""
    source = record.get(key)
    fields = source_fields(task)

    def bad(f) -> bool:
        v = source.get(f)
        return not (isinstance(v, list) and all(isinstance(w, str) for w in v)) if f == "tokens" else not isinstance(v, str)

    if not isinstance(source, dict) or any(bad(f) for f in fields):
        raise XltError(f"{where} (id {record.get('id')!r}): its {key!r} must be an object with "
                       f"{' and '.join(fields)} (the English side); got {source!r}")
    own = {} if task.input in ("text", "text_pair") else {task.label_field, "answers"}
    return {**{k: v for k, v in record.items() if k not in own}, **source}


def attach_sources(task: Task, kind: Kind, records: list[dict], enc: Encoded, tokenizer, cfg) -> None:
    """Give each feature of a record that has a "source" that side's feature ("source"): its
    first (a long source cut into windows pairs its first window with each window of the
    record). The kinds a paired forward handles are its extra's (`Extra.kinds`), checked where
    the model is built."""
    with_source = [i for i, r in enumerate(records) if "source" in r]
    if not with_source:
        return
    sources = kind.encode(task, [source_side(task, records[i]) for i in with_source], tokenizer, cfg, train=False)
    by_example: dict[int, dict] = {}
    for f in sources.features:
        by_example.setdefault(with_source[f["example"]], f)
    for f in enc.features:
        if f["example"] in by_example:
            f["source"] = by_example[f["example"]]


def evaluate_records(model, tokenizer, task, records, cfg, device, mode: EvalMode | None = None,
                     answer_lang: str | None = None) -> tuple[list, dict]:
    """Encode and score once; to score the same records repeatedly, keep an `EvalSet`.
    `answer_lang`: QA's answer normalisation (`EvalSet.build`)."""
    kind = model.kind if getattr(model, "task", None) == task else None  # the model's, resolved when it was built
    return EvalSet.build(task, records, tokenizer, cfg, max_positions(model, tokenizer), kind=kind,
                         with_source=getattr(model, "source_reader", None) is not None, mode=mode,
                         answer_lang=answer_lang).score(model, device)
