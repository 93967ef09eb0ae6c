"""Layer hooks: read or replace what flows between (and inside) the encoder's layers.

Hidden states are numbered as Hugging Face numbers `hidden_states`: 0 is the embeddings'
output (layer 0's input), k is layer k's output and layer k+1's input, L (the number of
layers) the encoder's output. A hook at k is called with a `LayerView` of hidden state k and
returns None (it only reads, e.g. records) or a tensor of the same shape that replaces it:
every later layer reads the replacement, the earlier ones are untouched. A context hook at
layer k sees that layer's attention context (every head's output, concatenated, before the
output projection) and may replace it the same way. An attended hook at layer k sees the
output of layer k's attention sub-layer (after its residual and LayerNorm), before the
layer's feed-forward reads it, and may replace it (a manifold mixup mixes there).

The lean training forward (`xlt.engine.fastpath`) calls hooks in its own loop; the Hugging Face
forward runs them as torch module hooks, put in place for one call and removed after it, ahead
of any hook Hugging Face installs itself (so its `hidden_states` carry the replacements too).
No hook, no change: both forwards run exactly as without this module.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import nn

from xlt.errors import XltError


@dataclass
class LayerView:
    index: int  # hidden-state index (0 = embeddings … L = the encoder's output), or the layer (context, attended hooks)
    hidden: torch.Tensor  # (batch, tokens, hidden): hidden state `index`, or layer `index`'s attention context / attended state
    attention_mask: torch.Tensor  # (batch, tokens), 1 on real tokens
    layer: nn.Module | None  # the layer that reads `hidden` next (its attention's Q/K/V, its LayerNorms; attended hooks:
    # the layer whose feed-forward reads it); None after the last
    encoder: nn.Module  # the whole encoder (config, embeddings, every layer)


Hook = Callable[[LayerView], "torch.Tensor | None"]


def layers_of(encoder: nn.Module) -> nn.ModuleList:
    """The transformer layers of a BERT-family encoder (BERT, RoBERTa, XLM-R)."""
    try:
        return encoder.encoder.layer
    except AttributeError:
        raise XltError(f"layer hooks: {type(encoder).__name__} has no encoder.layer list (BERT-family encoders only)") from None


@dataclass
class LayerHooks:
    """Hooks by hidden-state index (`hidden`) and by layer (`context`, `attended`), run in the order added."""

    hidden: dict[int, list[Hook]] = field(default_factory=dict)
    context: dict[int, list[Hook]] = field(default_factory=dict)
    attended: dict[int, list[Hook]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.hidden or self.context or self.attended)

    def at(self, index: int, hook: Hook) -> "LayerHooks":
        self.hidden.setdefault(index, []).append(hook)
        return self

    def at_context(self, layer: int, hook: Hook) -> "LayerHooks":
        self.context.setdefault(layer, []).append(hook)
        return self

    def at_attended(self, layer: int, hook: Hook) -> "LayerHooks":
        self.attended.setdefault(layer, []).append(hook)
        return self

    def record(self, indices, where: str = "hidden") -> dict[int, torch.Tensor]:
        """Hooks that keep hidden states `indices` (`where`="attended": layers `indices`'
        attention sub-layer outputs), as they are after any hook added before these: the dict
        fills during the next forward."""
        states: dict[int, torch.Tensor] = {}
        add = {"hidden": self.at, "attended": self.at_attended}[where]
        for i in indices:
            add(i, lambda view, i=i: states.__setitem__(i, view.hidden))
        return states

    def extend(self, other: "LayerHooks") -> "LayerHooks":
        for mine, theirs in ((self.hidden, other.hidden), (self.context, other.context), (self.attended, other.attended)):
            for k, hooks in theirs.items():
                mine.setdefault(k, []).extend(hooks)
        return self

    def resolved(self, n_layers: int) -> "LayerHooks":
        """The same hooks with negative indices counted from the end, every index checked."""
        out = LayerHooks()
        for name, family, n in (("hidden state", "hidden", n_layers + 1), ("layer", "context", n_layers),
                                ("layer", "attended", n_layers)):
            for k, fns in getattr(self, family).items():
                if not -n <= k < n:
                    raise XltError(f"layer hook at {name} {k}: out of range; the encoder has {n} "
                                   + ("(0 = embeddings … the last layer's output)" if n == n_layers + 1 else "layers"))
                getattr(out, family).setdefault(k % n, []).extend(fns)
        return out


def apply(hooks: list[Hook], view: LayerView) -> torch.Tensor:
    """Run `hooks` over `view` in order; the hidden states after the last replacement."""
    for hook in hooks:
        out = hook(view)
        if out is not None:
            if out.shape != view.hidden.shape:
                raise XltError(f"layer hook at {view.index} returned {tuple(out.shape)}; "
                               f"it must keep the shape {tuple(view.hidden.shape)}")
            view.hidden = out
    return view.hidden


@contextmanager
def installed(encoder: nn.Module, hooks: LayerHooks, attention_mask: torch.Tensor):
    """`hooks` as torch module hooks on a Hugging Face encoder for the calls inside the block:
    hidden state k as the output of the embeddings (k = 0) or of layer k-1, the context of layer
    k as the input of its attention's output projection, layer k's attended state as the first
    output of its attention module (BertAttention: the sub-layer after its LayerNorm). Prepended, so that Hugging Face's own
    output-capturing hooks see the replaced states."""
    layers = layers_of(encoder)
    hooks = hooks.resolved(len(layers))
    producers = [encoder.embeddings, *layers]
    handles = []

    def replace_output(k: int, fns: list[Hook]):
        def hook(module, args, output):
            h = output[0] if isinstance(output, tuple) else output
            nxt = layers[k] if k < len(layers) else None
            new = apply(fns, LayerView(k, h, attention_mask, nxt, encoder))
            if new is h:
                return None
            return (new, *output[1:]) if isinstance(output, tuple) else new
        return hook

    def replace_context(k: int, fns: list[Hook]):
        def hook(module, args):
            new = apply(fns, LayerView(k, args[0], attention_mask, layers[k], encoder))
            return None if new is args[0] else (new, *args[1:])
        return hook

    def replace_attended(k: int, fns: list[Hook]):
        def hook(module, args, output):
            h = output[0] if isinstance(output, tuple) else output
            new = apply(fns, LayerView(k, h, attention_mask, layers[k], encoder))
            if new is h:
                return None
            return (new, *output[1:]) if isinstance(output, tuple) else new
        return hook

    try:
        for k, fns in sorted(hooks.hidden.items()):
            handles.append(producers[k].register_forward_hook(replace_output(k, fns), prepend=True))
        for k, fns in sorted(hooks.context.items()):
            dense = layers[k].attention.output.dense
            handles.append(dense.register_forward_pre_hook(replace_context(k, fns), prepend=True))
        for k, fns in sorted(hooks.attended.items()):
            handles.append(layers[k].attention.register_forward_hook(replace_attended(k, fns), prepend=True))
        yield
    finally:
        for handle in handles:
            handle.remove()
