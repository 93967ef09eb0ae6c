"""dlfa's addition to the engine: its layer-fusion extra `dlfa` (`DLFA`, registered with the
engine's extras on import: xlt.engine.extras; xlt.papers.recipes loads this module, and any
process that meets the name in a model spec loads it through xlt.engine.plugins). A profile
turns it on with `extras: [{name: dlfa, layer: <X>, …}]` (the recipe tag `dlfa<X>…`:
xlt.papers.dlfa.plan)."""

from __future__ import annotations

import torch
from torch import nn

from xlt.engine.extras import Extra, register_extra
from xlt.errors import XltError
from xlt.papers.dlfa.plan import BRANCHES, READINGS


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


@register_extra
class DLFA(Extra):
    """dlfa's layer fusion: out = L1 ⊙ w + L2 ⊙ (1 − w), L2 the last layer, L1 layer `layer`
    (0 = embeddings), w = AIF((L1 + L2) / 2), per token (sentence heads pool afterwards).

    AIF: a global branch on the mean over the real tokens of each sentence and a local branch
    per token, broadcast-added, then σ. `reading` picks Eq. 3's: "weight" (w = σ(…), as in
    the AFF module AIF follows) or "gated" (w = W ⊙ σ(…), Eq. 3's AIF(W) taken literally).
    `branches`: "both", or Table V's ablation as the paper builds it (Sect. V-A, Fig. 4): the
    removed branch replaced by one of the kept kind, so AIF keeps two branches, "global" two
    global ones and "local" two local ones, each with its own parameters, summed before σ.
    Padding enters neither the mean nor any BatchNorm statistics (masked by the attention mask)."""

    name = "dlfa"  # saved model specs name it so: it never changes
    READINGS = READINGS
    BRANCHES = BRANCHES

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
        # AIF's two branches, the left (global in the paper's AIF) then the right (local); an
        # ablation puts a second branch of the kept kind in the removed one's place
        self.aif_kinds = {"both": ("global", "local"), "global": ("global", "global"), "local": ("local", "local")}[branches]
        self.global_branch = AIFBranch(hidden, reduction) if "global" in self.aif_kinds else None
        self.local_branch = AIFBranch(hidden, reduction) if "local" in self.aif_kinds else None
        if branches != "both":  # the replacing branch: same kind, its own parameters
            setattr(self, f"{branches}_branch_2", AIFBranch(hidden, reduction))

    def aif_branches(self) -> list[AIFBranch]:
        """AIF's two branches, in the order of `aif_kinds`."""
        if self.branches == "both":
            return [self.global_branch, self.local_branch]
        return [getattr(self, f"{self.branches}_branch"), getattr(self, f"{self.branches}_branch_2")]

    def weight(self, z: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """w = AIF(z) for z (B, T, C) and the real-token mask (B, T)."""
        logits = torch.zeros_like(z)
        if "global" in self.aif_kinds:
            m = mask.unsqueeze(-1).to(z.dtype)
            pooled = (z * m).sum(1) / m.sum(1).clamp(min=1)  # mean over the real tokens
            sentences = torch.ones(z.shape[0], dtype=torch.bool, device=z.device)
        for branch, kind in zip(self.aif_branches(), self.aif_kinds):
            if kind == "global":
                logits = logits + branch(pooled, sentences).unsqueeze(1)
            else:
                logits = logits + branch(z, mask)
        w = torch.sigmoid(logits)
        return z * w if self.reading == "gated" else w

    def forward(self, h, hidden_states, batch):
        lower = hidden_states[self.layer]
        w = self.weight((lower + h) / 2, batch["attention_mask"].bool())
        return lower * w + h * (1 - w)
