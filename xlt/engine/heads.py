"""Task heads. Each takes the encoder's hidden states and the batch, returns loss + logits.

Heads are small modules with one job; the engine picks one by the registry's `head` name.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from xlt.errors import XltError
from xlt.registry import Task


class TaggingHead(nn.Module):
    """A label per subword; only first subwords carry a gold label (others are -100)."""

    def __init__(self, hidden: int, num_labels: int, dropout: float):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(hidden, num_labels)

    def forward(self, h: torch.Tensor, batch: dict) -> dict:
        logits = self.out(self.dropout(h))
        loss = None
        if "labels" in batch:
            loss = F.cross_entropy(logits.flatten(0, 1).float(), batch["labels"].flatten(), ignore_index=-100)
        return {"loss": loss, "logits": logits}


class ClassificationHead(nn.Module):
    """Sentence(-pair) classification from the first token ([CLS] / <s>), RoBERTa-style."""

    def __init__(self, hidden: int, num_labels: int, dropout: float):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.dense = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, num_labels)

    def forward(self, h: torch.Tensor, batch: dict) -> dict:
        x = self.dropout(h[:, 0])
        logits = self.out(self.dropout(torch.tanh(self.dense(x))))
        loss = F.cross_entropy(logits.float(), batch["label"]) if "label" in batch else None
        return {"loss": loss, "logits": logits}


class SpanQAHead(nn.Module):
    """Start and end logits per token; the [CLS] position stands for 'not in this window'."""

    def __init__(self, hidden: int, dropout: float):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(hidden, 2)

    def forward(self, h: torch.Tensor, batch: dict) -> dict:
        start, end = self.out(self.dropout(h)).float().unbind(-1)
        pad = batch["attention_mask"] == 0
        start, end = start.masked_fill(pad, -1e4), end.masked_fill(pad, -1e4)
        loss = None
        if "start_positions" in batch:
            loss = (F.cross_entropy(start, batch["start_positions"]) + F.cross_entropy(end, batch["end_positions"])) / 2
        return {"loss": loss, "logits": torch.stack([start, end], -1)}


class ParsingHead(nn.Module):
    """Biaffine dependency parser over the first subword of each word; [CLS] stands for ROOT."""

    def __init__(self, hidden: int, num_labels: int, dropout: float):
        super().__init__()
        from xlt.engine.biaffine import BiaffineParser

        self.parser = BiaffineParser(hidden, num_labels, root="cls")

    def forward(self, h: torch.Tensor, batch: dict) -> dict:
        from xlt.engine.biaffine import gather_words

        starts = batch["word_starts"]
        mask = torch.arange(starts.shape[1], device=starts.device)[None, :] < batch["n_words"][:, None]
        out = self.parser(gather_words(h, starts, mask), mask, batch.get("word_heads"), batch.get("word_rels"), root=h[:, 0])
        if not self.training:
            out["pred_heads"], out["pred_rels"] = self.parser.decode(out, mask)
        return out


def build_head(task: Task, hidden: int, dropout: float) -> nn.Module:
    if task.head == "tagging":
        return TaggingHead(hidden, task.num_labels, dropout)
    if task.head == "classification":
        return ClassificationHead(hidden, task.num_labels, dropout)
    if task.head == "span_qa":
        return SpanQAHead(hidden, dropout)
    if task.head == "biaffine":
        return ParsingHead(hidden, task.num_labels, dropout)
    raise XltError(f"task {task.name}: unknown head {task.head!r}")
