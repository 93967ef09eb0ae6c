"""Loss terms, weighted and summed by a recipe.

A term reads the batch of one named stream, runs the model and returns a scalar; the
objective is Σ weight · term. The functions below are the building blocks the papers need:
the task's own loss (its kind decides: CE for tagging/classification/QA, the parser's arc +
relation CE), soft-target CE and KL (xmixup's soft labels and consistency), MSE (xmixup's
representation loss, adjust's regulariser), the alignment loss (adjust, Cao et al. 2020)
and MLM (pretraining and domain adaptation).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F

from xlt.engine.kinds import IGNORE, kind_of
from xlt.errors import XltError
from xlt.registry import get_task


def soft_cross_entropy(logits: torch.Tensor, target_probs: torch.Tensor) -> torch.Tensor:
    """Cross-entropy against a distribution (soft labels), averaged over rows."""
    return -(target_probs * logits.float().log_softmax(-1)).sum(-1).mean()


def kl_divergence(p_logits: torch.Tensor, q_logits: torch.Tensor) -> torch.Tensor:
    """KL(p ‖ q) between the distributions of two sets of logits, averaged over rows."""
    p_log, q_log = p_logits.float().log_softmax(-1), q_logits.float().log_softmax(-1)
    return F.kl_div(q_log, p_log, log_target=True, reduction="batchmean")


def mse(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.mse_loss(a.float(), b.float())


def alignment_loss(src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    """Σ‖f(s) − f(t)‖² over aligned vector pairs (rows), divided by the number of pairs."""
    if src.shape != tgt.shape:
        raise XltError(f"alignment loss: {tuple(src.shape)} vs {tuple(tgt.shape)} aligned vectors")
    return (src.float() - tgt.float()).pow(2).sum(-1).mean()


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


def task_term(task: str, stream: str | None = None, weight: float = 1.0) -> Term:
    """The task's own loss through its head (the main task, or an auxiliary one)."""
    kind = kind_of(get_task(task))
    return Term(task, stream or task, weight, lambda model, batch, step: kind.loss(model(batch, task=task), batch))


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
