"""An evaluation set encoded once and scored many times.

`EvalSet.build` tokenises the records, cuts windows and collates the batches once; `score`
then costs one forward pass per batch, the decoding and the metric. Dev evaluation after
every epoch and the interpolation grids (one model state per grid point, the same dev sets
at every point) both reuse one EvalSet, so a grid point costs what one plain evaluation costs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from xlt.engine.features import Encoded, encode
from xlt.engine.predict import decode, eval_batches, run_batches
from xlt.registry import Task


def gold_of(task: Task, rec: dict):
    if task.head == "biaffine":
        return {"head": rec["head"], "deprel": rec["deprel"], "upos": rec.get("upos")}
    return rec[task.label_field]


def max_positions(model, tokenizer) -> int | None:
    """Subwords the encoder takes in one sequence (specials included), if it says."""
    limits = [getattr(getattr(getattr(model, "encoder", None), "config", None), "max_position_embeddings", None),
              getattr(tokenizer, "model_max_length", None)]
    limits = [int(v) for v in limits if isinstance(v, int) and 0 < v < 1_000_000]
    return min(limits) if limits else None


@dataclass
class EvalSet:
    task: Task
    records: list[dict]
    enc: Encoded
    golds: list
    batches: list[tuple[list[int], dict]]
    name: str = ""
    _on: dict = field(default_factory=dict, repr=False)  # device -> batches moved there

    @classmethod
    def build(cls, task: Task, records: list[dict], tokenizer, cfg, positions: int | None = None,
              name: str = "") -> "EvalSet":
        """Encode `records` as evaluation features with `cfg`'s max_length / stride / batch size.

        `positions`: the encoder's sequence limit (`max_positions`); parsing uses it to parse
        the first `cfg.parse_max_words` words whatever their subword count.
        """
        enc = encode(task, records, tokenizer, cfg.max_length, cfg.stride, train=False,
                     parse_max_words=cfg.parse_max_words, max_positions=positions)
        batches = eval_batches(enc, tokenizer.pad_token_id, cfg.eval_batch_size)
        return cls(task, records, enc, [gold_of(task, r) for r in records], batches, name)

    def batches_on(self, device: torch.device) -> list[tuple[list[int], dict]]:
        """The collated batches, moved to `device` once (CUDA) or left where they are (CPU)."""
        if torch.device(device).type == "cpu":
            return self.batches
        key = str(device)
        if key not in self._on:
            self._on[key] = [(idx, {k: v.to(device) for k, v in b.items()}) for idx, b in self.batches]
        return self._on[key]

    def predict(self, model, device: torch.device) -> list:
        outs = run_batches(model, self.batches_on(device), len(self.enc.features), device)
        return decode(self.task, self.records, self.enc, outs)

    def score(self, model, device: torch.device) -> tuple[list, dict]:
        """Predictions per record and every metric of the task (percent)."""
        from xlt.metrics import compute_metrics

        preds = self.predict(model, device)
        return preds, compute_metrics(self.task.name, self.golds, preds)
