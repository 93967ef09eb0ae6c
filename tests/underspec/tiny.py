"""A small BERT-like module for the interpolation tests."""

from __future__ import annotations

import torch
from torch import nn


class TinyEncoder(nn.Module):
    def __init__(self, vocab: int = 40, hidden: int = 16, layers: int = 2, max_len: int = 12):
        super().__init__()
        self.embeddings = nn.Module()
        self.embeddings.word = nn.Embedding(vocab, hidden)
        self.embeddings.position = nn.Embedding(max_len, hidden)
        self.embeddings.norm = nn.LayerNorm(hidden)
        # A persistent integer buffer, like BERT's position_ids in older transformers.
        self.embeddings.register_buffer("position_ids", torch.arange(max_len).unsqueeze(0))
        layer = nn.TransformerEncoderLayer(hidden, 2, 2 * hidden, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        pos = self.embeddings.position_ids[:, : ids.size(1)]
        h = self.embeddings.norm(self.embeddings.word(ids) + self.embeddings.position(pos))
        return self.encoder(h)


class TinyModel(nn.Module):
    """Encoder + task head + an output layer tied to the word embeddings."""

    def __init__(self, n_labels: int = 3, **kw):
        super().__init__()
        self.bert = TinyEncoder(**kw)
        hidden = self.bert.embeddings.word.embedding_dim
        self.head = nn.Linear(hidden, n_labels)
        self.lm = nn.Linear(hidden, self.bert.embeddings.word.num_embeddings, bias=False)
        self.lm.weight = self.bert.embeddings.word.weight  # tied
        self.register_buffer("temperature", torch.tensor(1.0))  # a float buffer

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.bert(ids)
        return self.head(h) / self.temperature + self.lm(h).mean(-1, keepdim=True)
