"""X-Mixup's extra (Yang et al. 2022, §4.1): the cross-lingual manifold mixup inside one
encoder layer, registered with the engine's extras as `xmixup` on import (xlt.engine.extras;
xlt.papers.recipes loads it through recipe.py, and any process that meets the name in a model
spec loads it through xlt.engine.plugins). Its training (the paired stream and the four terms)
is recipe.py's."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from xlt.engine.extras import Extra, register_extra
from xlt.engine.fastpath import dropout, linear
from xlt.engine.hooks import LayerHooks, LayerView
from xlt.errors import XltError


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


@register_extra
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

    It reads the record's paired source side (`reads_source`): the model's paired forward
    (xlt.engine.model.TaskModel.with_source) runs the source first while `source_recorder`
    notes its attended state here, then the target with it (`MIXUP_SOURCE`); the extra only
    acts when a batch carries it, and `mixup` false (the "w/o mixup" ablation) never mixes nor
    averages the two sides at inference (`paired_logits`). The
    other parameters are the objective's (xlt/papers/xmixup/recipe.py): `alpha` weighs the
    source's task loss (1 − alpha the target's), `schedule_k` the scheduled sampling's k,
    `mse` and `kl` switch the consistency terms (KL acts on classification only: §4.2, a
    translation changes a tagging's or an answer's labels). Kinds: classification, tagging
    (the target side learns the source model's soft labels), span QA (each side its own span)."""

    name = "xmixup"  # saved model specs name it so: it never changes
    RATIOS = ("learned", "fixed")
    kinds = ("classification", "tagging", "span_qa")
    needs_extension = True  # paired records and stream, its four terms: recipe.py's XMixupFinetune
    reads_source = True

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

    def source_recorder(self) -> tuple[LayerHooks, Callable[[dict], dict]]:
        """The source side's attended state in the mixup layer, recorded during its forward,
        and its attention mask: what the target side's batch carries (`MIXUP_SOURCE`)."""
        recorder = LayerHooks()
        site = self.site
        states = recorder.record([site], where="attended")
        return recorder, lambda source: {MIXUP_SOURCE: {"hidden": states[site], "attention_mask": source["attention_mask"]}}

    def paired_logits(self, kind: str, source_logits: torch.Tensor, target_logits: torch.Tensor) -> torch.Tensor:
        """§4.3: classification, the log of the mean of both sides' class distributions (the
        paper's inference averages the probabilities; its argmax is theirs); tagging and span
        QA, the target's own (their labels are the target's words and spans). Without `mixup`
        (Table 5's "w/o mixup": no mixup in training nor inference) the target's own too."""
        if kind == "classification" and self.mixup:
            both = torch.stack([source_logits.float().log_softmax(-1), target_logits.float().log_softmax(-1)])
            return both.logsumexp(0) - math.log(2)
        return target_logits

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
