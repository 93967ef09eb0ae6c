"""Extras: modules between the encoder and the head (layer fusion, mixing, interventions).

An extra takes the last hidden states, the inner hidden states it asked for (`reads`, recorded
by layer hooks during the encoder's forward) and the batch, and returns the features the next
extra (or the head) reads; an extra that acts inside the encoder (xmixup's mixup) gives layer
hooks of its own (`hooks`). It is declared by name and
parameters in the model spec, so `load_model` rebuilds it exactly; its weights (and
buffers: BatchNorm's running statistics) are saved with the head's. A new extra is a class
here and an entry in EXTRAS (xmixup's mixup comes next).
"""

from __future__ import annotations

import hashlib

import torch
from torch import nn

from xlt.engine.extra_options import DLFA_BRANCHES, DLFA_READINGS
from xlt.engine.hooks import LayerHooks
from xlt.errors import XltError


class Extra(nn.Module):
    reads: tuple[int, ...] = ()  # hidden states it reads (0 = embeddings … L = the last layer's output)

    def hooks(self, batch: dict) -> LayerHooks:
        """Layer hooks that act inside the encoder for this batch (none by default)."""
        return LayerHooks()

    def forward(self, h: torch.Tensor, hidden_states: dict[int, torch.Tensor], batch: dict) -> torch.Tensor:
        raise NotImplementedError


class ScalarMix(Extra):
    """A learned softmax-weighted sum of all layers (embeddings included), times a learned
    scale (Peters et al. 2018; Tenney et al. 2019's probing). Starts as the plain average."""

    def __init__(self, config, layers: list[int] | None = None):
        super().__init__()
        n = config.num_hidden_layers + 1
        self.layers = list(range(n)) if layers is None else [int(i) for i in layers]
        bad = [i for i in self.layers if not -n <= i < n]
        if bad or not self.layers:
            raise XltError(f"extra scalar_mix: layers {bad or self.layers} out of range; the encoder has {n} (0 = embeddings)")
        self.layers = [i % n for i in self.layers]  # -1: the last layer
        self.reads = tuple(sorted(set(self.layers)))
        self.weights = nn.Parameter(torch.zeros(len(self.layers)))
        self.gamma = nn.Parameter(torch.ones(()))

    def forward(self, h, hidden_states, batch):
        w = torch.softmax(self.weights, 0)
        stacked = torch.stack([hidden_states[i] for i in self.layers], 0)
        return self.gamma * (w.view(-1, 1, 1, 1).to(stacked.dtype) * stacked).sum(0)


def _masked_batch_norm(bn: nn.BatchNorm1d, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """BatchNorm over the rows of `x` (…, C) where `mask` (…) is true: padding rows neither
    enter the batch statistics nor the running ones, and come out as zeros. A training batch
    with a single real row has no variance: it is normalised with the running statistics
    (not updated), as in evaluation."""
    rows = x[mask]
    if bn.training and rows.shape[0] < 2:
        rows = nn.functional.batch_norm(rows, bn.running_mean, bn.running_var, bn.weight, bn.bias, False, 0.0, bn.eps)
    else:
        rows = bn(rows)
    out = x.new_zeros(x.shape[:-1] + (rows.shape[-1],))
    out[mask] = rows
    return out


class AIFBranch(nn.Module):
    """BN(conv1x1↑(ReLU(BN(conv1x1↓(x))))): a 1x1 convolution over tokens is a Linear on the
    last dimension; `r` is the reduction of the middle width."""

    def __init__(self, hidden: int, r: int):
        super().__init__()
        mid = max(1, hidden // r)
        self.down, self.bn_down = nn.Linear(hidden, mid), nn.BatchNorm1d(mid)
        self.up, self.bn_up = nn.Linear(mid, hidden), nn.BatchNorm1d(hidden)
        for conv in (self.down, self.up):  # Kaiming (He) init, as the AFF module's convolutions
            nn.init.kaiming_normal_(conv.weight, nonlinearity="relu")
            nn.init.zeros_(conv.bias)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = torch.relu(_masked_batch_norm(self.bn_down, self.down(x), mask))
        return _masked_batch_norm(self.bn_up, self.up(x), mask)


class DLFA(Extra):
    """dlfa's layer fusion: out = L1 ⊙ w + L2 ⊙ (1 − w), L2 the last layer, L1 layer `layer`
    (0 = embeddings), w = AIF((L1 + L2) / 2), per token (sentence heads pool afterwards).

    AIF: a global branch on the mean over the real tokens of each sentence and a local branch
    per token, broadcast-added, then σ. `reading` picks Eq. 3's: "weight" (w = σ(…), as in
    the AFF module AIF follows) or "gated" (w = W ⊙ σ(…), Eq. 3's AIF(W) taken literally).
    `branches`: "both", or "global" / "local" only (Table V's ablation). Padding enters
    neither the mean nor any BatchNorm statistics (masked by the attention mask)."""

    READINGS = DLFA_READINGS
    BRANCHES = DLFA_BRANCHES

    def __init__(self, config, layer: int, reduction: int = 4, reading: str = "weight", branches: str = "both"):
        super().__init__()
        n = config.num_hidden_layers
        if not isinstance(layer, int) or not 0 <= layer <= n:
            raise XltError(f"extra dlfa: layer={layer!r} out of range; allowed: 0 (embeddings) … {n} (the last layer)")
        if reading not in self.READINGS:
            raise XltError(f"extra dlfa: reading={reading!r}; allowed: {', '.join(self.READINGS)}")
        if branches not in self.BRANCHES:
            raise XltError(f"extra dlfa: branches={branches!r}; allowed: {', '.join(self.BRANCHES)}")
        if not isinstance(reduction, int) or reduction < 1:
            raise XltError(f"extra dlfa: reduction={reduction!r} must be a positive integer")
        self.layer, self.reading, self.branches = layer, reading, branches
        self.reads = (layer,)
        hidden = config.hidden_size
        self.global_branch = AIFBranch(hidden, reduction) if branches != "local" else None
        self.local_branch = AIFBranch(hidden, reduction) if branches != "global" else None

    def weight(self, z: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """w = AIF(z) for z (B, T, C) and the real-token mask (B, T)."""
        logits = torch.zeros_like(z)
        if self.global_branch is not None:
            m = mask.unsqueeze(-1).to(z.dtype)
            pooled = (z * m).sum(1) / m.sum(1).clamp(min=1)  # mean over the real tokens
            sentences = torch.ones(z.shape[0], dtype=torch.bool, device=z.device)
            logits = logits + self.global_branch(pooled, sentences).unsqueeze(1)
        if self.local_branch is not None:
            logits = logits + self.local_branch(z, mask)
        w = torch.sigmoid(logits)
        return z * w if self.reading == "gated" else w

    def forward(self, h, hidden_states, batch):
        lower = hidden_states[self.layer]
        w = self.weight((lower + h) / 2, batch["attention_mask"].bool())
        return lower * w + h * (1 - w)


EXTRAS: dict[str, type[Extra]] = {"scalar_mix": ScalarMix, "dlfa": DLFA}


def build_extra(spec: dict, encoder_config) -> Extra:
    """`spec` = {"name": <extra>, **parameters}. Its initial weights come from a generator of
    its own, seeded by the last seed set and the spec: building it draws nothing from the
    global RNG, so the head's initialisation and the training randomness of a seed are those
    of the same run without the extra (a DLFA run and its baseline differ by the module only:
    a paired comparison over seeds)."""
    spec = dict(spec)
    name = spec.pop("name", None)
    if name not in EXTRAS:
        raise XltError(f"unknown extra {name!r}; known: {', '.join(EXTRAS)}")
    own = int.from_bytes(hashlib.sha256(f"{torch.initial_seed()}:{name}:{sorted(spec.items())}".encode()).digest()[:4], "little")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(own)
        try:
            return EXTRAS[name](encoder_config, **spec)
        except TypeError as e:
            raise XltError(f"extra {name}: {e}") from None
