"""A frozen reference encoder: an input of a loss term (e.g. cross-lingual adjustment's f₀,
the original model that the adjusted one must stay close to on English).

It is held outside the trained model on purpose: not a submodule, so it is in no state dict
(never saved with the model, never in a checkpoint), in no optimizer and under no DDP wrapper.
It is a copy of the encoder the job loads from its `{init}` at every start, a resumed job
included, taken before any training step, so nothing of it needs to be stored. It runs in
evaluation mode (no dropout) without gradients.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from xlt.engine.fastpath import encode
from xlt.engine.hooks import LayerHooks


class FrozenReference:
    def __init__(self, encoder: nn.Module, lean: bool = True):
        """Freeze a copy of `encoder` (the original stays trainable). `lean`: the forward the
        trained model runs (its `fast_path`), so that f = f₀ holds to the bit before training."""
        self.encoder = copy.deepcopy(encoder).eval().requires_grad_(False)
        self.lean = lean

    def __call__(self, batch: dict, hooks: LayerHooks | None = None) -> torch.Tensor:
        """The reference's last hidden states for a (side of a) batch, with no graph."""
        with torch.no_grad():
            return encode(self.encoder, batch["input_ids"], batch["attention_mask"], batch.get("token_type_ids"),
                          hooks=hooks, lean=self.lean)
