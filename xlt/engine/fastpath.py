"""A lean training forward for BERT-family encoders (BERT, RoBERTa, XLM-R).

Training steps run the same weights and the same maths as the Hugging Face forward, with
less work per step on a CPU (measured in benchmarks/train_throughput.py --ablations):
- query, key and value are one matrix product (their weights concatenated each step)
  instead of three, in the backward pass too;
- dropout makes its scaled keep-mask from `torch.rand` with three in-place vectorised ops
  (`use_keep_mask_dropout` puts it in every `nn.Dropout`'s place, attention dropout here):
  `bernoulli_`, behind `nn.Dropout` and SDPA's CPU dropout, costs twice as much per element
  on a CPU and was a sixth of a tiny-model step. On CUDA the native fused kernels are used;
- no per-call mask building, output dataclasses or hook dispatch.
The encoder's weights, parameter names and module tree are untouched (only each dropout
module's class changes), so saving, loading and every evaluation (which always runs the
Hugging Face forward, in fp32) are as before; a test checks that both forwards agree with
dropout off.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

LEAN_MODEL_TYPES = ("bert", "roberta", "xlm-roberta")


class _KeepMaskDropout(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, p: float) -> torch.Tensor:
        # floor(u + 1 - p) is 1 exactly when u >= p (u uniform in [0, 1)), then scaled: all
        # same-dtype in-place ops, which vectorise (a bool mask's conversions do not)
        m = torch.rand(x.shape, device=x.device).add_(1.0 - p).floor_().mul_(1.0 / (1.0 - p))
        m = m.to(x.dtype)
        ctx.save_for_backward(m)
        return x * m

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (m,) = ctx.saved_tensors
        return grad * m, None


def dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Inverted dropout: on a CPU with a `torch.rand` keep-mask, elsewhere the native kernel.
    Same distribution either way (each element kept with probability 1 - p, scaled by
    1 / (1 - p)); seeded runs stay bit-identical."""
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu":
        return F.dropout(x, p, True)
    return _KeepMaskDropout.apply(x, p)


class Dropout(torch.nn.Dropout):
    """`nn.Dropout` with the keep-mask dropout above (same `p`, no weights)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.training)


def use_keep_mask_dropout(module: torch.nn.Module) -> torch.nn.Module:
    """Swap every `nn.Dropout` inside `module` for `Dropout` (in place; returns `module`)."""
    for parent in module.modules():
        for name, child in parent.named_children():
            if type(child) is torch.nn.Dropout:
                setattr(parent, name, Dropout(child.p))
    return module


def lean_supported(encoder: torch.nn.Module) -> bool:
    """Whether `encoder` is a plain bidirectional BERT-family encoder the lean forward
    reproduces exactly (else the Hugging Face forward runs)."""
    cfg = getattr(encoder, "config", None)
    return (
        cfg is not None
        and cfg.model_type in LEAN_MODEL_TYPES
        and not cfg.is_decoder
        and not getattr(cfg, "add_cross_attention", False)
        and getattr(cfg, "position_embedding_type", "absolute") == "absolute"
        and getattr(cfg, "_attn_implementation", "sdpa") in ("sdpa", "eager")
        and hasattr(encoder, "embeddings")
        and hasattr(encoder, "encoder")
    )


def _attention(q, k, v, keep_key: torch.Tensor | None, p: float, training: bool) -> torch.Tensor:
    if q.device.type != "cpu" or not training or p == 0.0:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep_key, dropout_p=p if training else 0.0)
    # SDPA's own CPU path with dropout is this same maths with bernoulli_ masks
    scores = torch.matmul(q, k.transpose(-1, -2)) * (q.shape[-1] ** -0.5)
    if keep_key is not None:
        scores = scores.masked_fill(~keep_key, torch.finfo(scores.dtype).min)
    return torch.matmul(dropout(scores.softmax(-1), p, True), v)


def lean_forward(encoder, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                 token_type_ids: torch.Tensor | None = None,
                 output_hidden_states: bool = False) -> tuple[torch.Tensor, tuple | None]:
    """(last hidden state, all hidden states or None), as `encoder(...)` would return them."""
    b, n = input_ids.shape
    training = encoder.training
    emb = encoder.embeddings
    h = emb(input_ids=input_ids, token_type_ids=token_type_ids) if token_type_ids is not None else emb(input_ids=input_ids)
    keep_key = None if bool(attention_mask.all()) else attention_mask.bool()[:, None, None, :]
    states = [h] if output_hidden_states else None
    for layer in encoder.encoder.layer:
        sa = layer.attention.self
        heads, d = sa.num_attention_heads, sa.attention_head_size
        w = torch.cat([sa.query.weight, sa.key.weight, sa.value.weight])
        bias = torch.cat([sa.query.bias, sa.key.bias, sa.value.bias])
        q, k, v = F.linear(h, w, bias).view(b, n, 3, heads, d).permute(2, 0, 3, 1, 4).unbind(0)
        ctx = _attention(q, k, v, keep_key, sa.dropout.p, training).transpose(1, 2).reshape(b, n, heads * d)
        out = layer.attention.output
        h = out.LayerNorm(out.dropout(out.dense(ctx)) + h)
        ffn = layer.output
        h = ffn.LayerNorm(ffn.dropout(ffn.dense(layer.intermediate(h))) + h)
        if states is not None:
            states.append(h)
    return h, (tuple(states) if states is not None else None)


def encode(encoder, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None,
           output_hidden_states: bool = False) -> tuple[torch.Tensor, tuple | None]:
    """The encoder's output: the lean forward in training where supported, else (evaluation,
    other architectures) the Hugging Face forward."""
    if encoder.training and lean_supported(encoder):
        return lean_forward(encoder, input_ids, attention_mask, token_type_ids, output_hidden_states)
    kw = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
    out = encoder(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=output_hidden_states, **kw)
    return out.last_hidden_state, (out.hidden_states if output_hidden_states else None)
