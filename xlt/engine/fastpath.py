"""A lean training forward for BERT-family encoders (BERT, RoBERTa, XLM-R).

Training steps run the same weights and the same maths as the Hugging Face forward, with
less work per step on a CPU (measured in benchmarks/train_throughput.py --ablations):
- query, key and value are one matrix product (their weights concatenated each step)
  instead of three, in the backward pass too;
- in fp32 on a CPU the layers' matrix products (forward and backward) run through oneDNN,
  not MKL's sgemm (`linear`: 2.2x its speed on this project's AMD CPUs);
- dropout multiplies by a scaled keep-mask made from half as many random draws as
  `torch.rand` would take, in vectorised in-place integer ops (`use_keep_mask_dropout`
  puts it in every `nn.Dropout`'s place, attention dropout here): `bernoulli_`, behind
  `nn.Dropout` and SDPA's CPU dropout, costs 2.5x as much per element and was a sixth of a
  tiny-model step. On CUDA the native fused kernels are used;
- the attention weights' softmax runs in fp32 over rows of at least 16 keys (a CPU softmax
  is ~10x slower per element on shorter rows, and on bf16 rows under 32);
- no per-call mask building, output dataclasses, module calls or torch hook dispatch (layer
  hooks, xlt.engine.hooks, are called in the loop itself).
The encoder's weights, parameter names and module tree are untouched (only each dropout
module's class changes), so saving, loading and every evaluation (which always runs the
Hugging Face forward, in fp32) are as before; a test checks that both forwards agree with
dropout off.
"""

from __future__ import annotations

import contextlib
import sys

import torch
import torch.nn.functional as F

from xlt.engine.hooks import LayerHooks, LayerView, apply, installed

LEAN_MODEL_TYPES = ("bert", "roberta", "xlm-roberta")


KEEP_MASK_BITS = 15  # random bits per element: p is rounded to a multiple of 2**-15


_MASK_CONSTANTS: dict = {}


def _mask_constants(cut: int, scale: float, device: torch.device) -> tuple:
    """The keep-mask's operands as 0-dim int16 tensors (a Python number costs a cast per
    op): the 15-bit mask, the cut, and the bit pattern of bf16(scale)."""
    key = (cut, scale, str(device))
    if key not in _MASK_CONSTANTS:
        pattern = torch.tensor(scale, dtype=torch.bfloat16).view(torch.int16)
        _MASK_CONSTANTS[key] = tuple(torch.tensor(v, dtype=torch.int16, device=device)
                                     for v in ((1 << KEEP_MASK_BITS) - 1, cut, int(pattern)))
    return _MASK_CONSTANTS[key]


def keep_mask(x: torch.Tensor, p: float, generator: torch.Generator | None = None) -> torch.Tensor:
    """Each element 1 / (1 - p') with probability 1 - p', else 0, in `x`'s shape and dtype,
    where p' is p rounded to a multiple of 2**-15 (|p' - p| <= 1.6e-5); drawn from
    `generator` (default: torch's global one)."""
    levels = 1 << KEEP_MASK_BITS
    cut = round(p * levels)
    if cut >= levels:
        return torch.zeros_like(x)
    n = x.numel()
    scale = levels / (levels - cut)
    # The CPU generator's draws are the cost (torch.rand makes one per element): each 31-bit
    # draw here gives two elements a uniform 15-bit integer, kept when >= cut. `random_()`
    # with no bounds: int32's full range [0, 2**31) is the same distribution as
    # `random_(0, 2**31)` at half the cost (a constant mask instead of a modulo by a
    # run-time range per draw). All int16 ops are in place and vectorise.
    r = torch.empty((n + 1) // 2, dtype=torch.int32, device=x.device).random_(generator=generator).view(torch.int16)[:n]
    low15, cut_t, scale_bits = _mask_constants(cut, scale, x.device)
    keep = r.bitwise_and_(low15).ge_(cut_t).view(x.shape)
    if x.dtype == torch.bfloat16:
        # 0 or 1 times the bit pattern of bf16(scale), read as bf16: the values a cast and
        # a multiply by the scale give, without either
        return keep.mul_(scale_bits).view(torch.bfloat16)
    return keep.to(x.dtype).mul_(scale)


def dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Inverted dropout: on a CPU with `keep_mask`, elsewhere the native kernel. Each element
    is kept with probability 1 - p (on a CPU p to 2**-15, eager) and scaled by the inverse of
    it; seeded runs stay bit-identical."""
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu" or torch.compiler.is_compiling():  # a compiled graph has its own RNG ops
        return F.dropout(x, p, True)
    # a plain product: autograd keeps the mask for the backward pass (grad * mask), with no
    # Python in the backward as a custom autograd.Function would have
    return x * keep_mask(x, p)


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


# Softmax on a CPU is ~10x slower per element when its rows are short: fp32 rows under 16
# values, bf16 rows under 32 (measured: benchmarks/README.md). Attention rows are as long as
# the batch's longest sentence, often shorter; so the weights are computed in fp32 with rows
# padded to 16 (the padding takes exactly zero weight).
_SOFTMAX_MIN_ROW = 16


def key_bias(keep_key: torch.Tensor | None) -> torch.Tensor | None:
    """The additive fp32 attention bias for a [batch, 1, 1, keys] keep mask: 0 or the most
    negative float (exp gives exactly 0)."""
    if keep_key is None:
        return None
    return torch.zeros(keep_key.shape, device=keep_key.device).masked_fill_(~keep_key, torch.finfo(torch.float32).min)


def attention_weights(scores: torch.Tensor, scale: float, bias: torch.Tensor | None) -> torch.Tensor:
    """softmax(scores * scale + bias) over the keys, in fp32 over rows padded to at least
    `_SOFTMAX_MIN_ROW` keys."""
    scores = scores.float().mul_(scale)
    if bias is not None:
        scores = scores.add_(bias)
    m = scores.shape[-1]
    if m >= _SOFTMAX_MIN_ROW:
        return scores.softmax(-1)
    return F.pad(scores, (0, _SOFTMAX_MIN_ROW - m), value=torch.finfo(torch.float32).min).softmax(-1)[..., :m]


def _attention(q, k, v, keep_key: torch.Tensor | None, p: float, training: bool,
               bias: torch.Tensor | None = None) -> torch.Tensor:
    """Scaled dot-product attention over [batch, heads, n, d] inputs; `bias` is
    `key_bias(keep_key)` when the caller has it already."""
    if q.device.type != "cpu" or not training or p == 0.0 or torch.compiler.is_compiling():
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep_key, dropout_p=p if training else 0.0)
    # SDPA's own CPU path with dropout is this same maths, with bernoulli_ masks and the
    # softmax in the input's dtype
    b, h, n, d = q.shape
    m = k.shape[2]
    scores = torch.bmm(q.reshape(b * h, n, d), k.reshape(b * h, m, d).transpose(1, 2)).view(b, h, n, m)
    if keep_key is not None and bias is None:
        bias = key_bias(keep_key)
    weights = dropout(attention_weights(scores, d ** -0.5, bias if keep_key is not None else None).to(v.dtype), p, True)
    dv = v.shape[-1]
    return torch.bmm(weights.reshape(b * h, n, m), v.reshape(b * h, m, dv)).view(b, h, n, dv)


# fp32 matrix products on a CPU through oneDNN instead of the BLAS behind aten's mm (MKL): on
# this project's AMD EPYC machines MKL's sgemm runs at ~110 GFLOP/s for the tiny encoder's shapes
# (450 x 128 x 384), oneDNN's at ~240 (its own AVX-512 kernels; MKL's are picked by CPU vendor).
# Both are fp32 products with fp32 accumulation (their rounding differs, as two BLAS libraries'
# do), deterministic run to run. bf16 autocast and other devices keep `F.linear`.
_ONEDNN_LINEAR = getattr(torch.ops.mkldnn, "_linear_pointwise", None) if torch.backends.mkldnn.is_available() else None


def _mm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """x @ w.T through oneDNN (x [..., in], w [out, in]; either may be a strided view)."""
    return _ONEDNN_LINEAR(x, w, None, "none", [], "")


class _OneDnnLinear(torch.autograd.Function):
    """`F.linear` with oneDNN's fp32 products forward and backward (the weight and input
    gradients as two more oneDNN products, the bias gradient a column sum, as autograd's
    addmm backward takes it)."""

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        ctx.bias = b is not None
        return _ONEDNN_LINEAR(x, w, b, "none", [], "")

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        g2 = g.reshape(-1, g.shape[-1])
        dx = _mm(g, w.t()) if ctx.needs_input_grad[0] else None
        dw = _mm(g2.t(), x.reshape(-1, x.shape[-1]).t()) if ctx.needs_input_grad[1] else None
        db = g2.sum(0) if ctx.bias and ctx.needs_input_grad[2] else None
        return dx, dw, db


def linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
    """`F.linear`; in fp32 on a CPU (no autocast, not compiling, oneDNN not switched off with
    `torch.backends.mkldnn.enabled = False`) through oneDNN."""
    if (_ONEDNN_LINEAR is None or x.device.type != "cpu" or x.dtype != torch.float32 or w.dtype != torch.float32
            or torch.is_autocast_enabled("cpu") or torch.compiler.is_compiling() or not torch._C._get_mkldnn_enabled()):
        return F.linear(x, w, b)
    return _OneDnnLinear.apply(x, w, b)


def _add_norm(block, x: torch.Tensor, residual: torch.Tensor, training: bool) -> torch.Tensor:
    """LayerNorm(dropout(dense(x)) + residual) of a BERT output block, in functional calls
    (a module call costs more than these small ops on a CPU)."""
    ln = block.LayerNorm
    y = dropout(linear(x, block.dense.weight, block.dense.bias), block.dropout.p, training) + residual
    return F.layer_norm(y, ln.normalized_shape, ln.weight, ln.bias, ln.eps)


def _embed(encoder, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None, training: bool) -> torch.Tensor:
    """The embedding block. BERT without token types: word embedding + (type 0 + position)
    in one broadcast add of a [length, hidden] table (the Hugging Face module gathers a
    token-type and a position row per token and adds them one by one); otherwise (XLM-R's
    positions count from the padding id, explicit token types) the module itself."""
    emb = encoder.embeddings
    if token_type_ids is not None or encoder.config.model_type != "bert" or not hasattr(emb, "token_type_ids"):
        kw = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
        return emb(input_ids=input_ids, **kw)
    n = input_ids.shape[1]
    table = emb.token_type_embeddings.weight[0] + emb.position_embeddings.weight[:n]
    h = F.embedding(input_ids, emb.word_embeddings.weight) + table
    ln = emb.LayerNorm
    return dropout(F.layer_norm(h, ln.normalized_shape, ln.weight, ln.bias, ln.eps), emb.dropout.p, training)


def _layer(layer, h: torch.Tensor, keep_key, attn_bias, training: bool, context_hook=None,
           attended_hook=None) -> torch.Tensor:
    """One encoder layer; `context_hook(ctx)` may replace its attention context,
    `attended_hook(h)` its attention sub-layer's output (what the feed-forward reads)."""
    b, n = h.shape[:2]
    sa = layer.attention.self
    heads, d = sa.num_attention_heads, sa.attention_head_size
    w = torch.cat([sa.query.weight, sa.key.weight, sa.value.weight])
    bias = torch.cat([sa.query.bias, sa.key.bias, sa.value.bias])
    q, k, v = linear(h, w, bias).view(b, n, 3, heads, d).permute(2, 0, 3, 1, 4).unbind(0)
    ctx = _attention(q, k, v, keep_key, sa.dropout.p, training, attn_bias).transpose(1, 2).reshape(b, n, heads * d)
    if context_hook is not None:
        ctx = context_hook(ctx)
    h = _add_norm(layer.attention.output, ctx, h, training)
    if attended_hook is not None:
        h = attended_hook(h)
    mid = layer.intermediate
    return _add_norm(layer.output, mid.intermediate_act_fn(linear(h, mid.dense.weight, mid.dense.bias)), h, training)


def layer_stack(layers, h: torch.Tensor, keep_key, attn_bias, training: bool, layer_fn=_layer) -> torch.Tensor:
    """Every layer, no hooks."""
    for layer in layers:
        h = layer_fn(layer, h, keep_key, attn_bias, training)
    return h


class _Compile:
    """The compiled layer of `compiling`: one per process, one graph for every layer (each
    layer's weights are its inputs) and every length (dynamic)."""

    on = False
    graphs = False  # CUDA graphs: the whole stack compiled as one graph, replayed per length bucket
    fn = None  # ((backend, graphs), the compiled `_layer`, or `layer_stack` with graphs)
    failed: str | None = None
    backend = "inductor"  # tests trace with "eager" (seconds, no C++ compiler)
    shapes: set = set()  # the (batch, length) shapes the compiled layer has run


@contextlib.contextmanager
def compiling(on: bool, backend=None, graphs: bool = False):
    """Within: the lean forward runs each layer (no hooks) through `torch.compile` (length
    dimension dynamic). The loop sets this on CUDA, where an eager step was host-bound
    (profile: 41-79 ms of host time against 6-12 ms of kernels for mBERT at batch 32): the
    eager layer launches ~30 ops, the compiled one a few fused kernels. One layer, not the
    stack, is the unit: twelve times less to compile, the same graph for every layer. A
    compile failure logs one line and the eager layers run from then on.

    `graphs`: the whole stack is one compiled function in inductor's "reduce-overhead" mode,
    which replays a recorded CUDA graph per batch width (the loop pads widths to buckets of 16,
    so few are recorded): the layers' host time per step becomes one replay. The caller marks
    each training step's start (torch.compiler.cudagraph_mark_step_begin). Off a GPU inductor
    skips the graphs and this is a plain compiled stack."""
    old = (_Compile.on, _Compile.backend, _Compile.graphs)
    _Compile.on, _Compile.graphs = on, graphs
    if backend:
        _Compile.backend = backend
    try:
        yield
    finally:
        _Compile.on, _Compile.backend, _Compile.graphs = old


def compile_status() -> str:
    """"on", "off" or "failed: why" (for benchmark flags and run metadata)."""
    if _Compile.failed:
        return f"failed: {_Compile.failed}"
    return "on" if _Compile.fn is not None else "off"


def _eager_backward_compile():
    """The backward graph compiled with the forward (else at the first backward, outside the
    fallback below), where this torch can."""
    # deferred: loads torch only when this runs
    import torch._functorch.config as aot

    if hasattr(aot, "force_non_lazy_backward_lowering"):
        return aot.patch(force_non_lazy_backward_lowering=True)
    return contextlib.nullcontext()


def _run_compiled(unit, h, keep_key, attn_bias, training: bool) -> torch.Tensor:
    """The compiled function on `unit`: one layer (each in turn), or with graphs the layer list."""
    torch._dynamo.maybe_mark_dynamic(h, 1)
    if keep_key is not None:
        torch._dynamo.maybe_mark_dynamic(keep_key, 3)
    with _eager_backward_compile():
        return _Compile.fn[1](unit, h, keep_key, attn_bias, training)


def _compiled_stack(layers, h, keep_key, attn_bias, training: bool) -> torch.Tensor:
    key = (_Compile.backend, _Compile.graphs)
    if _Compile.fn is None or _Compile.fn[0] != key:
        if _Compile.graphs:  # the mode is inductor's; another backend (tests: "eager") takes none
            mode = {"mode": "reduce-overhead"} if _Compile.backend == "inductor" else {}
            _Compile.fn = (key, torch.compile(layer_stack, backend=_Compile.backend, **mode))
        else:
            _Compile.fn = (key, torch.compile(_layer, backend=_Compile.backend))
    try:
        if _Compile.graphs:
            out = _run_compiled(layers, h, keep_key, attn_bias, training)
        else:
            out = layer_stack(layers, h, keep_key, attn_bias, training, _run_compiled)
    except Exception as e:  # noqa: BLE001 - any compiler failure: run eager from now on
        _Compile.failed = f"{e.__class__.__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        print(f"xlt: torch.compile of the lean forward failed ({_Compile.failed}); running eager", file=sys.stderr)
        return layer_stack(layers, h, keep_key, attn_bias, training)
    _Compile.shapes.add(tuple(h.shape[:2]))
    return out


def lean_forward(encoder, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                 token_type_ids: torch.Tensor | None = None, hooks: LayerHooks | None = None) -> torch.Tensor:
    """The last hidden state, as `encoder(...)` would return it; `hooks` (xlt.engine.hooks)
    read or replace hidden state k before layer k+1 runs, layer k's attention context before
    its output projection, and layer k's attention sub-layer output before its feed-forward."""
    training = encoder.training
    layers = encoder.encoder.layer
    hooks = hooks.resolved(len(layers)) if hooks else None
    h = _embed(encoder, input_ids, token_type_ids, training)
    if hooks and 0 in hooks.hidden:
        h = apply(hooks.hidden[0], LayerView(0, h, attention_mask, layers[0] if len(layers) else None, encoder))
    cpu = input_ids.device.type == "cpu"
    if cpu:
        keep_key = None if bool(attention_mask.all()) else attention_mask.bool()[:, None, None, :]
    else:  # reading the mask would wait for the device every step; the masked kernel is as fast
        keep_key = attention_mask.bool()[:, None, None, :]
    attn_bias = key_bias(keep_key) if training and cpu else None  # only the CPU attention reads it
    if not hooks:
        if _Compile.on and not _Compile.failed and training:  # evaluation runs eager: no second compile
            return _compiled_stack(layers, h, keep_key, attn_bias, training)
        return layer_stack(layers, h, keep_key, attn_bias, training)
    for i, layer in enumerate(layers):
        ctx_hook = att_hook = None
        if i in hooks.context:
            ctx_hook = lambda ctx, i=i, layer=layer: apply(hooks.context[i], LayerView(i, ctx, attention_mask, layer, encoder))  # noqa: E731
        if i in hooks.attended:
            att_hook = lambda a, i=i, layer=layer: apply(hooks.attended[i], LayerView(i, a, attention_mask, layer, encoder))  # noqa: E731
        h = _layer(layer, h, keep_key, attn_bias, training, ctx_hook, att_hook)
        if i + 1 in hooks.hidden:
            nxt = layers[i + 1] if i + 1 < len(layers) else None
            h = apply(hooks.hidden[i + 1], LayerView(i + 1, h, attention_mask, nxt, encoder))
    return h


def encode(encoder, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None,
           hooks: LayerHooks | None = None, lean: bool = True) -> torch.Tensor:
    """The encoder's last hidden state: the lean forward where supported and allowed (`lean`:
    the config's `engine.fast_path`) in training, and in evaluation on a CPU (its oneDNN
    products: ~1.6x the Hugging Face forward there, benchmarks/README.md); else (evaluation on
    a GPU, where HF's fused attention kernels win; other architectures) the Hugging Face
    forward. `hooks` act inside either (xlt.engine.hooks)."""
    if lean and (encoder.training or input_ids.device.type == "cpu") and lean_supported(encoder):
        return lean_forward(encoder, input_ids, attention_mask, token_type_ids, hooks)
    kw = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
    with installed(encoder, hooks, attention_mask) if hooks else contextlib.nullcontext():
        return encoder(input_ids=input_ids, attention_mask=attention_mask, **kw).last_hidden_state


REPRESENTATIONS = "representations"  # model(batch, task=REPRESENTATIONS): a paired batch's encoder outputs, no head


def encode_pair(encoder, batch: dict, lean: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Both sides' last hidden states of a paired batch ({"source": …, "target": …};
    xlt.engine.streams.PairedStream), each side encoded on its own."""
    return tuple(encode(encoder, side["input_ids"], side["attention_mask"], side.get("token_type_ids"), lean=lean)
                 for side in (batch["source"], batch["target"]))
