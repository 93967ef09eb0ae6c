"""Extras: modules between the encoder and the head (layer fusion, mixing, interventions).

An extra takes the last hidden states, every layer's hidden states and the batch, and
returns the features the next extra (or the head) reads. It is declared by name and
parameters in the model spec, so `load_model` rebuilds it exactly; its weights are saved
with the head's. A new extra is a class here and an entry in EXTRAS (dlfa's fusion and
xmixup's mixup come next).
"""

from __future__ import annotations

import torch
from torch import nn

from xlt.errors import XltError


class Extra(nn.Module):
    needs_hidden_states = False  # ask the encoder for every layer's output

    def forward(self, h: torch.Tensor, hidden_states: tuple | None, batch: dict) -> torch.Tensor:
        raise NotImplementedError


class ScalarMix(Extra):
    """A learned softmax-weighted sum of all layers (embeddings included), times a learned
    scale (Peters et al. 2018; Tenney et al. 2019's probing). Starts as the plain average."""

    needs_hidden_states = True

    def __init__(self, config, layers: list[int] | None = None):
        super().__init__()
        n = config.num_hidden_layers + 1
        self.layers = list(range(n)) if layers is None else [int(i) for i in layers]
        bad = [i for i in self.layers if not -n <= i < n]
        if bad or not self.layers:
            raise XltError(f"extra scalar_mix: layers {bad or self.layers} out of range; the encoder has {n} (0 = embeddings)")
        self.weights = nn.Parameter(torch.zeros(len(self.layers)))
        self.gamma = nn.Parameter(torch.ones(()))

    def forward(self, h, hidden_states, batch):
        w = torch.softmax(self.weights, 0)
        stacked = torch.stack([hidden_states[i] for i in self.layers], 0)
        return self.gamma * (w.view(-1, 1, 1, 1).to(stacked.dtype) * stacked).sum(0)


EXTRAS: dict[str, type[Extra]] = {"scalar_mix": ScalarMix}


def build_extra(spec: dict, encoder_config) -> Extra:
    """`spec` = {"name": <extra>, **parameters}."""
    spec = dict(spec)
    name = spec.pop("name", None)
    if name not in EXTRAS:
        raise XltError(f"unknown extra {name!r}; known: {', '.join(EXTRAS)}")
    try:
        return EXTRAS[name](encoder_config, **spec)
    except TypeError as e:
        raise XltError(f"extra {name}: {e}") from None
