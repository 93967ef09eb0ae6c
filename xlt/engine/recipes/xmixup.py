"""X-Mixup (Yang et al. 2022, "Enhancing Cross-lingual Transfer by Manifold Mixup") on the
fine-tuning loop: the paired training stream, scheduled sampling and the loss terms.

Training records are the task's records in the target language (machine translations,
translate-train) with "source": {"text", "text_pair"}, the English original (same label),
and optionally "source_bt": a back-translation of the target into English. A step draws one
batch of the paired stream; the source side (gold, or the back-translation with scheduled
sampling) runs plainly, the target with the source mixed in at the mixup layer
(xlt.engine.extras.XMixup, xlt.engine.model.TaskModel.with_source), one forward per step
whichever terms read it. The loss (§4.2): α·CE_src + (1−α)·CE_tgt + MSE(r_S, r_T) +
KL(p_S ‖ p_T), r the mean of the last layer's states over the real tokens, p the predicted
class distribution. Classification only, for now.
"""

from __future__ import annotations

import hashlib
import math

import torch
import torch.nn.functional as F

from xlt.engine.evalset import load_records, source_side
from xlt.engine.extras import XMixup, xmixup_not_built
from xlt.engine.kinds import Kind
from xlt.engine.model import SOURCE
from xlt.engine.objectives import Term
from xlt.engine.streams import PairedStream
from xlt.errors import XltError
from xlt.registry import Task

SOURCE_BT = "source_bt"  # a training record's back-translation of its target side into English
HAS_BT = "has_bt"  # per pair: 1 where the record has its own back-translation
OUTPUTS = "xmixup_outputs"  # a step's batch caches the one paired forward here


def check_config(extras: list[dict], kind: Kind) -> None:
    """Fail before anything loads when X-Mixup is asked of a kind it does not handle."""
    if any(e.get("name") == "xmixup" for e in extras) and kind.name not in XMixup.KINDS:
        raise XltError(xmixup_not_built(kind.name))


def read_paired_records(task: Task, files, cap: int | None = None) -> tuple[list[dict], int]:
    """The paired training records of `files` and how many carry a back-translation; a record
    without its source side is named by file and line."""
    records = []
    for path in files:
        for n, rec in enumerate(load_records([path], cap), 1):
            if SOURCE not in rec:
                raise XltError(f"{path}: record {n} (id {rec.get('id')!r}) has no 'source' (its English original): "
                               "xmixup trains on paired records {…, 'source': {'text', 'text_pair'}}")
            for key in (SOURCE, SOURCE_BT):
                if key in rec:
                    source_side(task, rec, key, where=f"{path}: record {n}")
            records.append(rec)
    return records, sum(SOURCE_BT in r for r in records)


def paired_stream(name: str, task: Task, kind: Kind, records: list[dict], tokenizer, cfg) -> PairedStream:
    """Each record as {"source": its English side's features, "target": its own, "source_bt":
    its back-translation's (its source where it has none; HAS_BT says which), the last only
    when some record has one}: both sides encoded by the task's kind, the same label."""
    def encoded(recs: list[dict]) -> list[dict]:
        feats = kind.encode(task, recs, tokenizer, cfg, train=True).features
        if len(feats) != len(recs):  # classification: one feature per record, in order
            raise XltError(f"xmixup: {kind.name} gives {len(feats)} features for {len(recs)} records")
        return feats

    target = encoded(records)
    source = encoded([source_side(task, r) for r in records])
    features = [{"source": s, "target": t} for s, t in zip(source, target)]
    sides: tuple = ("source", "target")
    if any(SOURCE_BT in r for r in records):
        bt = encoded([source_side(task, r, SOURCE_BT if SOURCE_BT in r else SOURCE) for r in records])
        for f, b, r in zip(features, bt, records):
            f[SOURCE_BT] = {**b, HAS_BT: int(SOURCE_BT in r)}
        sides += (SOURCE_BT,)
    return PairedStream(name, features, cfg.batch_size, cfg.seed, tokenizer.pad_token_id, kind.pad_values,
                        (*kind.scalars, HAS_BT), sides=sides)


def sampling_probability(step: int, k: float) -> float:
    """Scheduled sampling's p = k / (k + exp(step / k)) (inverse sigmoid decay, Bengio et al.
    2015): the chance that step `step` feeds the gold source. As σ(ln k − step/k), which
    never overflows."""
    return 1.0 / (1.0 + math.exp(min(step / k - math.log(k), 700.0)))


def _coin_seed(seed: int, step: int) -> int:
    return int.from_bytes(hashlib.sha256(f"xmixup:{seed}:{step}".encode()).digest()[:8], "little") >> 1


def scheduled_source(batch: dict, step: int, seed: int, k: float, pad_id: int) -> dict:
    """The source side of step `step`'s batch: per pair the gold source with probability
    `sampling_probability(step, k)`, else its back-translation where it has one. The coins
    come from a generator seeded by (seed, step), so a resumed run draws the same."""
    gold = batch["source"]
    if SOURCE_BT not in batch:
        return gold  # no back-translations in the data: always the gold source
    bt = batch[SOURCE_BT]
    coins = torch.rand(len(bt[HAS_BT]), generator=torch.Generator().manual_seed(_coin_seed(seed, step)))
    use_bt = (coins.to(bt[HAS_BT].device) > sampling_probability(step, k)) & bt[HAS_BT].bool()
    if not bool(use_bt.any()):
        return gold
    width = max(gold["input_ids"].shape[1], bt["input_ids"].shape[1])
    out = {}
    for key, a in gold.items():
        b = bt[key]
        if a.dim() == 2:  # token fields: both padded to one width (the pad id, else 0: masked)
            fill = pad_id if key == "input_ids" else 0
            a, b = (F.pad(x, (0, width - x.shape[1]), value=fill) for x in (a, b))
        out[key] = torch.where(use_bt.view(-1, *[1] * (a.dim() - 1)), b, a)
    return out


def _mean_over_tokens(h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    m = mask.unsqueeze(-1).to(h.dtype)
    return (h * m).sum(1) / m.sum(1).clamp(min=1)


def xmixup_terms(extra: XMixup, stream: str, seed: int, pad_id: int) -> list[Term]:
    """§4.2's four terms over the paired stream `stream`, weighted by the extra's settings:
    α·CE_src, (1−α)·CE_tgt, MSE of the mean-pooled last layer (`mse`), KL(p_S ‖ p_T) (`kl`).
    A zero-weighted term costs nothing (Objective skips it)."""

    def outputs(model, batch: dict, step: int) -> dict:
        if OUTPUTS not in batch:
            source = scheduled_source(batch, step, seed, extra.schedule_k, pad_id)
            batch[OUTPUTS] = {**model({**batch["target"], SOURCE: source}), "source_mask": source["attention_mask"]}
        return batch[OUTPUTS]

    def ce(side: str):
        return lambda model, batch, step: F.cross_entropy(
            outputs(model, batch, step)[f"{side}_logits"].float(), batch["target"]["label"])

    def mse(model, batch, step):
        out = outputs(model, batch, step)
        return F.mse_loss(_mean_over_tokens(out["source_features"].float(), out["source_mask"]),
                          _mean_over_tokens(out["target_features"].float(), batch["target"]["attention_mask"]))

    def kl(model, batch, step):
        out = outputs(model, batch, step)
        log_s, log_t = (out[f"{side}_logits"].float().log_softmax(-1) for side in ("source", "target"))
        return F.kl_div(log_t, log_s, log_target=True, reduction="batchmean")  # Σ p_S (log p_S − log p_T)

    return [Term("src", stream, extra.alpha, ce("source")), Term("tgt", stream, 1.0 - extra.alpha, ce("target")),
            Term("mse", stream, 1.0 if extra.mse else 0.0, mse), Term("kl", stream, 1.0 if extra.kl else 0.0, kl)]
