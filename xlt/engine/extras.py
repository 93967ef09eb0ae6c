"""Extras: modules between the encoder and the head (layer fusion, mixing, interventions).

An extra takes the last hidden states, the inner hidden states it asked for (`reads`, recorded
by layer hooks during the encoder's forward) and the batch, and returns the features the next
extra (or the head) reads; an extra that acts inside the encoder (xmixup's mixup) gives layer
hooks of its own (`hooks`). It is declared by name and
parameters in the model spec, so `load_model` rebuilds it exactly; its weights (and
buffers: BatchNorm's running statistics) are saved with the head's. A new extra is a class
here and an entry in EXTRAS.
"""

from __future__ import annotations

import hashlib

import torch
import torch.nn.functional as F
from torch import nn

from xlt.engine.extra_options import DLFA_BRANCHES, DLFA_READINGS
from xlt.engine.fastpath import dropout, linear
from xlt.engine.hooks import LayerHooks, LayerView
from xlt.errors import XltError


class Extra(nn.Module):
    reads: tuple[int, ...] = ()  # hidden states it reads (0 = embeddings … L = the last layer's output)
    # trains only through a fine-tune extension registered under its name (its own stream and
    # terms: xlt.engine.recipes.extensions); fine-tuning without one fails before it starts
    needs_extension: bool = False

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


MIXUP_SOURCE = "xmixup_source"  # a target batch's key: the source side's attended state at the mixup layer and its mask


def _log_attention(scores: torch.Tensor, keep_keys: torch.Tensor) -> torch.Tensor:
    """log softmax(scores) over the kept keys, fp32: scores (B, heads, rows, keys), keep_keys
    (B, keys). A masked key gets exactly zero weight (its log is the most negative float)."""
    return scores.float().masked_fill(~keep_keys[:, None, None, :], torch.finfo(torch.float32).min).log_softmax(-1)


def _mean_row_entropy(log_weights: torch.Tensor, keep_rows: torch.Tensor) -> torch.Tensor:
    """Per example, the entropy of each attention row (`_log_attention`), averaged over the
    heads and the kept rows (keep_rows: (B, rows)). Padding takes exactly zero weight and no
    row, so it changes nothing."""
    entropy = -(log_weights.exp() * log_weights).sum(-1)  # a masked key: exp gives exactly 0, its product 0
    rows = keep_rows[:, None, :].to(entropy.dtype).expand_as(entropy)
    return (entropy * rows).sum((1, 2)) / rows.sum((1, 2)).clamp(min=1)


class XMixup(Extra):
    """X-Mixup's cross-lingual manifold mixup (Yang et al. 2022, §4.1, Eq. 2-4), inside
    encoder layer `layer` (the paper's numbering: 1 is the first layer) of a target sentence
    run with its source (English) sentence. Both sides' self-attention sub-layers give h_S and
    h_T (each after its residual and LayerNorm: xlt.engine.hooks' attended state). The
    target's h_T attends to the source's h_S with that layer's own attention weights (Eq. 3:
    query from h_T, key and value from h_S, its output projection W^O; multi-head, source
    padding masked, attention and output dropout as the layer's): h_{T|S}. Then (Eq. 4)
    h̃_T = LN(λ·h_{T|S} + (1−λ)·h_T), LN the layer's own attention LayerNorm (the authors'
    code passes the ratio to that LayerNorm in place of the residual sum), and the layer's
    feed-forward reads h̃_T. λ = 0 therefore gives LN(h_T), h_T normalised a second time,
    not h_T: the authors' form, kept (tests/engine: λ = 0 leaves the source without effect).

    λ per example: `ratio` "learned": λ0·σ((H(A) + H(Aᵀ))·W + b), W and b learned scalars
    (W starts at 1 and b at 0, as the authors' code initialises its Dense(1)); "fixed": λ0.
    A is the cross-attention (target rows over source keys); H the mean row entropy over the
    real tokens, per head, averaged over heads. Aᵀ, read as the authors' code computes it:
    the same scores transposed and softmax-normalised over the target tokens (each source
    token attending over the targets), so its rows sum to 1.

    The extra only acts when a batch carries its source (`MIXUP_SOURCE`, set by
    TaskModel's paired forward); `mixup` false (the "w/o mixup" ablation) never mixes. The
    other parameters are the objective's (the xmixup paper's recipe, xlt/papers/xmixup/recipe.py): `alpha` weighs the
    source's task loss (1 − alpha the target's), `schedule_k` the scheduled sampling's k,
    `mse` and `kl` switch the consistency terms (KL acts on classification only: §4.2, a
    translation changes a tagging's or an answer's labels). Kinds: classification, tagging
    (the target side learns the source model's soft labels), span QA (each side its own span)."""

    RATIOS = ("learned", "fixed")
    KINDS = ("classification", "tagging", "span_qa")
    needs_extension = True  # paired records and stream, its four terms: the xmixup paper's recipe

    def __init__(self, config, layer: int, lambda0: float = 0.5, alpha: float = 0.4, schedule_k: float = 1000,
                 mixup: bool = True, ratio: str = "learned", mse: bool = True, kl: bool = True):
        super().__init__()
        n = config.num_hidden_layers
        if not isinstance(layer, int) or isinstance(layer, bool) or not 1 <= layer <= n:
            raise XltError(f"extra xmixup: layer={layer!r} out of range; allowed: 1 … {n} "
                           "(the paper's numbering: the mixup happens inside that layer, 1 the first)")
        for name, value in (("lambda0", lambda0), ("alpha", alpha)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise XltError(f"extra xmixup: {name}={value!r} must be a number in [0, 1]")
        if isinstance(schedule_k, bool) or not isinstance(schedule_k, (int, float)) or schedule_k <= 0:
            raise XltError(f"extra xmixup: schedule_k={schedule_k!r} must be a positive number")
        if ratio not in self.RATIOS:
            raise XltError(f"extra xmixup: ratio={ratio!r}; allowed: {', '.join(self.RATIOS)}")
        for name, value in (("mixup", mixup), ("mse", mse), ("kl", kl)):
            if not isinstance(value, bool):
                raise XltError(f"extra xmixup: {name}={value!r} must be true or false")
        self.layer, self.lambda0, self.alpha, self.schedule_k = layer, float(lambda0), float(alpha), float(schedule_k)
        self.mixup, self.ratio, self.mse, self.kl = mixup, ratio, mse, kl
        if ratio == "learned":
            self.w = nn.Parameter(torch.ones(()))
            self.b = nn.Parameter(torch.zeros(()))

    @property
    def site(self) -> int:
        """The 0-based index of the layer the mixup happens in (xlt.engine.hooks' attended hooks)."""
        return self.layer - 1

    def hooks(self, batch: dict) -> LayerHooks:
        source = batch.get(MIXUP_SOURCE)
        if not self.mixup or source is None:
            return LayerHooks()
        return LayerHooks().at_attended(self.site, lambda view: self.mix(view, source["hidden"], source["attention_mask"]))

    def cross_attention(self, layer: nn.Module, h_t: torch.Tensor, h_s: torch.Tensor,
                        keep_s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """MultiHead(h_T, h_S, h_S) with `layer`'s attention weights (its Q/K/V and output
        projection, its attention and output dropout; not its residual and LayerNorm: Eq. 4
        follows). Returns h_{T|S} (B, I, hidden), the scaled scores (B, heads, I, J) and A's
        log-weights, fp32."""
        sa = layer.attention.self
        heads, d = sa.num_attention_heads, sa.attention_head_size
        (b, i, _), j = h_t.shape, h_s.shape[1]
        q = linear(h_t, sa.query.weight, sa.query.bias).view(b, i, heads, d).transpose(1, 2)
        k = linear(h_s, sa.key.weight, sa.key.bias).view(b, j, heads, d).transpose(1, 2)
        v = linear(h_s, sa.value.weight, sa.value.bias).view(b, j, heads, d).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-1, -2)).float() * d ** -0.5
        log_weights = _log_attention(scores, keep_s)
        weights = dropout(log_weights.exp().to(v.dtype), sa.dropout.p, self.training)
        ctx = torch.matmul(weights, v).transpose(1, 2).reshape(b, i, heads * d)
        out = layer.attention.output
        h_ts = dropout(linear(ctx, out.dense.weight, out.dense.bias), out.dropout.p, self.training)
        return h_ts, scores, log_weights

    def mixup_ratio(self, scores: torch.Tensor, log_weights: torch.Tensor, keep_t: torch.Tensor,
                    keep_s: torch.Tensor) -> torch.Tensor:
        """λ per example (B,), from the scores and A's log-weights (`cross_attention`)."""
        if self.ratio == "fixed":
            return scores.new_full(scores.shape[:1], self.lambda0)
        entropy = (_mean_row_entropy(log_weights, keep_t)
                   + _mean_row_entropy(_log_attention(scores.transpose(-1, -2), keep_t), keep_s))
        return self.lambda0 * torch.sigmoid(entropy * self.w + self.b)

    def mix(self, view: LayerView, h_s: torch.Tensor, mask_s: torch.Tensor) -> torch.Tensor:
        """h̃_T (Eq. 4) from the target's attended state (`view`) and the source's in the same layer."""
        keep_s, keep_t = mask_s.bool(), view.attention_mask.bool()
        h_t = view.hidden
        h_ts, scores, log_weights = self.cross_attention(view.layer, h_t, h_s.to(h_t.dtype), keep_s)
        lam = self.mixup_ratio(scores, log_weights, keep_t, keep_s).view(-1, 1, 1)
        ln = view.layer.attention.output.LayerNorm
        mixed = F.layer_norm(lam * h_ts + (1 - lam) * h_t, ln.normalized_shape, ln.weight, ln.bias, ln.eps)
        return mixed.to(h_t.dtype)  # under autocast LayerNorm gives fp32: the layer's dtype goes on

    def forward(self, h, hidden_states, batch):
        return h  # it acts inside the encoder (hooks); the head reads the encoder's output


EXTRAS: dict[str, type[Extra]] = {"scalar_mix": ScalarMix, "dlfa": DLFA, "xmixup": XMixup}


def xmixup_not_built(kind: str) -> str:
    """The one message for a kind X-Mixup does not handle yet."""
    return f"xmixup: {kind} is not built; built for {', '.join(XMixup.KINDS)}"


def xmixup_of(extras) -> XMixup | None:
    """The model's X-Mixup extra, if it has one (at most one)."""
    found = [e for e in extras if isinstance(e, XMixup)]
    if len(found) > 1:
        raise XltError(f"at most one xmixup extra per model; got {len(found)}")
    return found[0] if found else None


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
