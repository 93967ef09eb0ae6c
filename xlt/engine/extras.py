"""Extras: modules between the encoder and the head (layer fusion, mixing, interventions).

An extra takes the last hidden states, the inner hidden states it asked for (`reads`, recorded
by layer hooks during the encoder's forward) and the batch, and returns the features the next
extra (or the head) reads; an extra that acts inside the encoder (e.g. a manifold mixup) gives
layer hooks of its own (`hooks`), and one that reads a record's paired source side
(`reads_source`) has the model run that side first (xlt.engine.model.TaskModel.with_source). It
is declared by name and parameters in the model spec, so `load_model` rebuilds it exactly; its
weights (and buffers: BatchNorm's running statistics) are saved with the head's.

The engine's own extras are here (`ScalarMix`); a paper's extra is an `Extra` subclass in its
folder, registered by name when its recipe module is imported (`@register_extra`;
xlt/papers/<slug>/recipe.py). A name the registry does not know loads the papers' registrations
first (xlt.engine.plugins), so a saved spec naming a paper's extra loads in any process.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import torch
from torch import nn

from xlt.engine.hooks import LayerHooks
from xlt.engine.plugins import load_plugins, loaded_note
from xlt.errors import XltError


class Extra(nn.Module):
    # its registry key and a model spec's {"name": …}: saved specs name it, so it never changes
    name: str = ""
    reads: tuple[int, ...] = ()  # hidden states it reads (0 = embeddings … L = the last layer's output)
    # trains only through a fine-tune extension registered under its name (its own stream and
    # terms: xlt.engine.recipes.extensions); fine-tuning without one fails before it starts
    needs_extension: bool = False
    kinds: tuple[str, ...] | None = None  # the task kinds it is built for (None: every kind)
    # it reads a batch's paired source side (xlt.engine.model.SOURCE): the model runs that side
    # first (TaskModel.with_source); at most one such extra per model
    reads_source: bool = False

    def hooks(self, batch: dict) -> LayerHooks:
        """Layer hooks that act inside the encoder for this batch (none by default)."""
        return LayerHooks()

    def source_recorder(self) -> tuple[LayerHooks, Callable[[dict], dict]]:
        """An extra that `reads_source`: (hooks recording what it reads of the source side's
        forward, a function of the source side's batch giving the fields the target side's
        batch then carries for it)."""
        raise NotImplementedError(f"extra {self.name}: reads no source side")

    def paired_logits(self, kind: str, source_logits: torch.Tensor, target_logits: torch.Tensor) -> torch.Tensor:
        """A paired forward's prediction from both sides' logits (task kind `kind`): the target's own."""
        return target_logits

    def forward(self, h: torch.Tensor, hidden_states: dict[int, torch.Tensor], batch: dict) -> torch.Tensor:
        raise NotImplementedError


class ScalarMix(Extra):
    """A learned softmax-weighted sum of all layers (embeddings included), times a learned
    scale (Peters et al. 2018; Tenney et al. 2019's probing). Starts as the plain average."""

    name = "scalar_mix"

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


EXTRAS: dict[str, type[Extra]] = {ScalarMix.name: ScalarMix}  # the engine's, then those registered


def register_extra(cls: type[Extra]) -> type[Extra]:
    """Register an extra under its `name` (a class decorator); another class claiming the name
    fails, naming both. Registering the same class again (or its re-import) replaces it."""
    if not (isinstance(cls, type) and issubclass(cls, Extra)) or not cls.name:
        raise XltError(f"{getattr(cls, '__qualname__', cls)!s}: an extra is an Extra subclass with a name")
    other = EXTRAS.get(cls.name)
    if other is not None and (other.__module__, other.__qualname__) != (cls.__module__, cls.__qualname__):
        raise XltError(f"extra {cls.__module__}.{cls.__qualname__} claims the name {cls.name!r}, "
                       f"already {other.__module__}.{other.__qualname__}'s")
    EXTRAS[cls.name] = cls
    return cls


def extra_class(name) -> type[Extra]:
    """The extra registered as `name`; an unknown name loads the papers' registrations first
    (xlt.engine.plugins), then fails naming the known ones."""
    if name not in EXTRAS:
        load_plugins()
    if name not in EXTRAS:
        raise XltError(f"unknown extra {name!r}; known: {', '.join(EXTRAS)} {loaded_note()}")
    return EXTRAS[name]


def kind_not_built(extra: type[Extra] | Extra, kind: str) -> str:
    """The one message for a task kind an extra does not handle."""
    return f"extra {extra.name}: {kind} is not built; built for {', '.join(extra.kinds or ())}"


def check_extras(extras, kind: str) -> Extra | None:
    """Each extra handles task kind `kind`, and at most one reads a paired source side; that one
    (None: none does)."""
    for extra in extras:
        if extra.kinds is not None and kind not in extra.kinds:
            raise XltError(kind_not_built(extra, kind))
    return source_reader_of(extras)


def source_reader_of(extras) -> Extra | None:
    """The extra that reads a batch's paired source side (`Extra.reads_source`), if any (at most one)."""
    found = [e for e in extras if e.reads_source]
    if len(found) > 1:
        raise XltError(f"at most one extra per model reads the paired source side; got {', '.join(e.name for e in found)}")
    return found[0] if found else None


def build_extra(spec: dict, encoder_config) -> Extra:
    """`spec` = {"name": <extra>, **parameters}. Its initial weights come from a generator of
    its own, seeded by the last seed set and the spec: building it draws nothing from the
    global RNG, so the head's initialisation and the training randomness of a seed are those
    of the same run without the extra (a run with a fusion extra and its baseline differ by the
    module only: a paired comparison over seeds)."""
    spec = dict(spec)
    name = spec.pop("name", None)
    cls = extra_class(name)
    own = int.from_bytes(hashlib.sha256(f"{torch.initial_seed()}:{name}:{sorted(spec.items())}".encode()).digest()[:4], "little")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(own)
        try:
            return cls(encoder_config, **spec)
        except TypeError as e:
            raise XltError(f"extra {name}: {e}") from None
