"""Loss terms, weighted and summed by a recipe.

A term reads the batch of one named stream, runs the model and returns a scalar; the
objective is Σ weight · term. The building blocks here: the task's own loss (its kind decides:
CE for tagging/classification/QA, the parser's arc + relation CE), MLM masking (pretraining
and domain adaptation), and over a paired stream of aligned sentences the alignment and
anchor terms of cross-lingual adjustment (Cao et al. 2020), the anchor against a frozen
reference encoder (xlt.engine.reference). A paper's terms over a paired stream (e.g. manifold
mixup's: two sides' CE, MSE of pooled representations, KL) are built on these in its recipe
module (xlt/papers/<slug>/recipe.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from xlt.engine.fastpath import REPRESENTATIONS
from xlt.engine.kinds import IGNORE, Kind
from xlt.errors import XltError
from xlt.registry import Task


def alignment_loss(src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    """Σ‖f(s) − f(t)‖² over aligned vector pairs (rows), divided by the number of pairs and
    the width: the authors' mean squared error, in whose units their weights are given (the
    0.01 of continual learning, Eq. 2). Eq. 1 as printed sums; the scale changes neither the
    ratio of its two terms nor (up to Adam's eps) the adjustment."""
    if src.shape != tgt.shape:
        raise XltError(f"alignment loss: {tuple(src.shape)} vs {tuple(tgt.shape)} aligned vectors")
    return (src.float() - tgt.float()).pow(2).mean()


def word_vectors(h: torch.Tensor, word_rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Word vectors from subword states h (B, T, H): row r of example b is the mean of the
    subwords with word_rows[b, t] == r (-1: none; see features.encode_aligned_pairs). Returns
    the (B·W, H) table, which of its rows have a subword, and W (rows per example)."""
    b, _, hidden = h.shape
    w = int(word_rows.max()) + 1 if word_rows.numel() else 1
    keep = word_rows >= 0
    flat = (torch.arange(b, device=h.device)[:, None] * w + word_rows)[keep]
    sums = h.new_zeros(b * w, hidden).index_add(0, flat, h[keep])
    counts = torch.bincount(flat, minlength=b * w)
    return sums / counts.clamp(min=1).unsqueeze(1).to(h.dtype), counts > 0, w




def pair_representations(model, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """Both sides' last hidden states, through one forward of the model per step whichever
    terms read them (kept in the batch, which lives for one step)."""
    if REPRESENTATIONS not in batch:
        batch[REPRESENTATIONS] = model(batch, task=REPRESENTATIONS)
    return batch[REPRESENTATIONS]


def alignment_term(stream: str = "pairs", weight: float = 1.0) -> "Term":
    """Cao et al. 2020, Eq. 1's first sum: ‖f(s) − f(t)‖² over the aligned word pairs of a
    paired stream (features.encode_aligned_pairs), averaged over pairs."""

    def fn(model, batch, step):
        hs, ht = pair_representations(model, batch)
        vs, _, ws = word_vectors(hs, batch["source"]["word_rows"])
        vt, _, wt = word_vectors(ht, batch["target"]["word_rows"])
        links = batch["links"]
        real = links[..., 0] >= 0
        example = torch.arange(links.shape[0], device=links.device)[:, None].expand_as(real)
        rows_s, rows_t = (example * ws + links[..., 0])[real], (example * wt + links[..., 1])[real]
        if not rows_s.numel():  # no link survived truncation: a zero that keeps the graph
            return hs.sum() * 0.0
        return alignment_loss(vs[rows_s], vt[rows_t])

    return Term("align", stream, weight, fn)


def anchor_term(reference, stream: str = "pairs", side: str = "source", weight: float = 1.0) -> "Term":
    """Eq. 1's second sum: ‖f(e) − f₀(e)‖² over the words of one side (English) against the
    frozen reference f₀ (xlt.engine.reference), averaged over words and the width as the
    alignment term is (alignment_loss), so their ratio and scale are the authors'."""

    def fn(model, batch, step):
        h = pair_representations(model, batch)[0 if side == "source" else 1]
        rows = batch[side]["word_rows"]
        v, has, _ = word_vectors(h, rows)
        v0, _, _ = word_vectors(reference(batch[side]), rows)
        return alignment_loss(v[has], v0[has])

    if side not in ("source", "target"):
        raise XltError(f"anchor term: side={side!r}; allowed: source, target")
    return Term("anchor", stream, weight, fn)


def mask_tokens(input_ids: torch.Tensor, special: torch.Tensor, mask_id: int, vocab: int, prob: float,
                generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masking: choose `prob` of the non-special tokens; 80/10/10 mask/random/keep.

    Returns (input ids, labels with IGNORE off the chosen positions).
    """
    labels = input_ids.clone()
    chosen = (torch.rand(input_ids.shape, generator=generator) < prob) & ~special
    labels[~chosen] = IGNORE
    r = torch.rand(input_ids.shape, generator=generator)
    ids = input_ids.clone()
    ids[chosen & (r < 0.8)] = mask_id
    rand_pos = chosen & (r >= 0.8) & (r < 0.9)
    ids[rand_pos] = torch.randint(vocab, input_ids.shape, generator=generator)[rand_pos]
    return ids, labels


@dataclass
class Term:
    name: str  # shown in the progress bar and the loss log
    stream: str  # the named stream whose batch it reads
    weight: float
    fn: Callable  # (model, batch, step) -> scalar tensor


def task_term(task: Task, kind: Kind, stream: str | None = None, weight: float = 1.0) -> Term:
    """The task's own loss through its head (the main task, or an auxiliary one)."""
    name = task.name
    return Term(name, stream or name, weight, lambda model, batch, step: kind.loss(model(batch, task=name), batch))


class Objective:
    def __init__(self, terms: list[Term]):
        if not terms:
            raise XltError("an objective needs at least one loss term")
        self.terms = terms

    @property
    def streams(self) -> set[str]:
        return {t.stream for t in self.terms}

    def __call__(self, model, batches: dict, step: int) -> tuple[torch.Tensor, dict[str, float]]:
        total, parts = None, {}
        for t in self.terms:
            if t.weight == 0:
                continue  # a zero-weighted term costs nothing and changes nothing
            value = t.fn(model, batches[t.stream], step)
            parts[t.name] = value.detach()
            total = t.weight * value if total is None else total + t.weight * value
        return total, parts
