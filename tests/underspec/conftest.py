"""Fixtures: a small BERT-like model and three fine-tuned-looking endpoints."""

from __future__ import annotations

import pytest
import torch

from tests.underspec.tiny import TinyModel


def _finetuned(base: dict[str, torch.Tensor], seed: int, scale: float = 0.05) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    out = {}
    for k, v in base.items():
        if v.is_floating_point():
            out[k] = v + scale * torch.randn(v.shape, generator=g, dtype=v.dtype)
        else:
            out[k] = v.clone()
    return out


@pytest.fixture
def endpoints():
    torch.manual_seed(0)
    init = {k: v.clone() for k, v in TinyModel().state_dict().items()}
    bi, src, tgt = _finetuned(init, 1), _finetuned(init, 2), _finetuned(init, 3)
    # Tied weights: the endpoints hold one tensor under both names, as a state dict does.
    for sd in (bi, src, tgt):
        sd["lm.weight"] = sd["bert.embeddings.word.weight"]
    return bi, src, tgt


@pytest.fixture
def model():
    torch.manual_seed(123)
    return TinyModel().eval()
