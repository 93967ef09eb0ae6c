"""Task heads. Each takes the encoder's (or an extra's) hidden states and the batch and
returns its outputs (logits); the losses are terms the recipe composes (xlt.engine.kinds,
xlt.engine.objectives). The parser is the exception: its relation scores depend on the gold
heads, so it returns its own loss too.
"""

from __future__ import annotations

import torch
from torch import nn


class TaggingHead(nn.Module):
    """A label per subword; only first subwords carry a gold label (others are -100)."""

    def __init__(self, hidden: int, num_labels: int, dropout: float):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(hidden, num_labels)

    def forward(self, h: torch.Tensor, batch: dict) -> dict:
        return {"logits": self.out(self.dropout(h))}


class ClassificationHead(nn.Module):
    """Sentence(-pair) classification from the first token ([CLS] / <s>), RoBERTa-style: a
    fresh dense + tanh layer, then a linear one (Hugging Face's RobertaClassificationHead)."""

    def __init__(self, hidden: int, num_labels: int, dropout: float):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.dense = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, num_labels)

    def forward(self, h: torch.Tensor, batch: dict) -> dict:
        x = self.dropout(h[:, 0])
        return {"logits": self.out(self.dropout(torch.tanh(self.dense(x))))}


class LinearClassificationHead(TaggingHead):
    """One linear layer on the first token (shijie-wu/crosslingual-nlp's classifier): the
    tagging head's dropout and linear layer, read at [CLS] only."""

    def forward(self, h: torch.Tensor, batch: dict) -> dict:
        return super().forward(h[:, 0], batch)


class PooledClassificationHead(nn.Module):
    """BERT's pooler (dense + tanh on [CLS]), then dropout and a linear layer: Hugging Face's
    BertForSequenceClassification. `pooler` starts as the encoder's pretrained one
    (`adopt_pooler`)."""

    def __init__(self, hidden: int, num_labels: int, dropout: float):
        super().__init__()
        self.pooler = nn.Linear(hidden, hidden)
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(hidden, num_labels)

    def forward(self, h: torch.Tensor, batch: dict) -> dict:
        return {"logits": self.out(self.dropout(torch.tanh(self.pooler(h[:, 0]))))}

    def adopt_pooler(self, pooler: nn.Module, init_std: float) -> None:
        """The encoder's pretrained pooler's weights into ours; the linear layer initialised
        as Hugging Face initialises a new classifier (normal, std `init_std`; bias 0)."""
        self.pooler.load_state_dict(pooler.dense.state_dict())
        nn.init.normal_(self.out.weight, std=init_std)
        nn.init.zeros_(self.out.bias)


# The classification heads a model spec names (ModelSpec.classifier); the default is the first.
CLASSIFIERS = {"dense": ClassificationHead, "linear": LinearClassificationHead, "pooler": PooledClassificationHead}


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
        return {"logits": torch.stack([start, end], -1)}


class ParsingHead(nn.Module):
    """Biaffine dependency parser over the first subword of each word; [CLS] stands for ROOT."""

    def __init__(self, hidden: int, num_labels: int, dropout: float):
        super().__init__()
        # deferred: loads numpy only when this runs
        from xlt.engine.biaffine import BiaffineParser

        self.parser = BiaffineParser(hidden, num_labels, root="cls")

    def forward(self, h: torch.Tensor, batch: dict) -> dict:
        # deferred: loads numpy only when this runs
        from xlt.engine.biaffine import gather_words

        starts = batch["word_starts"]
        mask = torch.arange(starts.shape[1], device=starts.device)[None, :] < batch["n_words"][:, None]
        out = self.parser(gather_words(h, starts, mask), mask, batch.get("word_heads"), batch.get("word_rels"), root=h[:, 0])
        if not self.training:
            out["pred_heads"], out["pred_rels"] = self.parser.decode(out, mask)
        return out
