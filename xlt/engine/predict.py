"""Run a model over encoded features and decode predictions back to examples."""

from __future__ import annotations

import contextlib

import torch

from xlt.engine.batching import collate, sequential_batches
from xlt.engine.features import Encoded


def autocast(device: torch.device):
    """bf16 autocast on CUDA; full precision on CPU (bit-identical CPU runs)."""
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def to_device(batch: dict, device: torch.device) -> dict:
    return {k: v.to(device, non_blocking=True) for k, v in batch.items()}


# What decoding reads from a head's output: nothing else leaves the device.
DECODE_KEYS = {
    "tagging": ("logits",),
    "classification": ("logits",),
    "span_qa": ("logits",),
    "biaffine": ("pred_heads", "pred_rels"),
}


def eval_batches(enc: Encoded, pad_id: int, batch_size: int) -> list[tuple[list[int], dict]]:
    """Collated evaluation batches (length-sorted, gold fields stripped), for `run_batches`."""
    return [
        (idx, _strip_gold(collate([enc.features[i] for i in idx], pad_id)))
        for idx in sequential_batches(enc.lengths, batch_size)
    ]


@torch.no_grad()
def run_batches(model, batches: list[tuple[list[int], dict]], n_features: int, device: torch.device) -> list:
    """Per-feature outputs (CPU tensors, only the keys decoding reads), in feature order.

    `batches` come from `eval_batches`, on any device (moved here when needed).
    """
    model.eval()
    keys = DECODE_KEYS.get(model.task.head) if hasattr(model, "task") else None
    outs: list = [None] * n_features
    for idx, batch in batches:
        batch = to_device(batch, device)
        with autocast(device):
            out = model(batch)
        host = {
            k: v.float().cpu() if v.is_floating_point() else v.cpu()
            for k, v in out.items()
            if isinstance(v, torch.Tensor) and v.dim() > 0 and (keys is None or k in keys)
        }
        for j, i in enumerate(idx):
            outs[i] = {k: v[j] for k, v in host.items()}
    return outs


def _strip_gold(batch: dict) -> dict:
    return {k: v for k, v in batch.items() if k not in ("labels", "label", "start_positions", "end_positions", "word_heads", "word_rels")}


def decode(task, records: list[dict], enc: Encoded, outs: list, max_answer_len: int = 30) -> list:
    """One prediction per record: label names per word, a label name, an answer string,
    or {"head": [...], "deprel": [...]} for parsing."""
    labels = task.labels
    if task.head == "classification":
        preds = [None] * len(records)
        for f, o in zip(enc.features, outs):
            preds[f["example"]] = labels[int(o["logits"].argmax())]
        return preds
    if task.head == "tagging":
        preds = [[None] * len(r["tokens"]) for r in records]
        for f, o in zip(enc.features, outs):
            best = o["logits"].argmax(-1).tolist()
            for pos, w in enumerate(f["word_ids"]):
                if w >= 0:
                    preds[f["example"]][w] = labels[best[pos]]
        return preds
    if task.head == "span_qa":
        return _decode_qa(records, enc, outs, max_answer_len)
    if task.head == "biaffine":
        preds = [{"head": [0] * len(r["tokens"]), "deprel": [labels[0]] * len(r["tokens"])} for r in records]
        for f, o in zip(enc.features, outs):
            n = len(f["word_index"])
            for k, w in enumerate(f["word_index"]):
                preds[f["example"]]["head"][w] = int(o["pred_heads"][k]) if k < n else 0
                preds[f["example"]]["deprel"][w] = labels[int(o["pred_rels"][k])]
        return preds
    raise ValueError(task.head)


def _decode_qa(records, enc, outs, max_answer_len: int, n_best: int = 20) -> list[str]:
    best: list[tuple[float, str]] = [(-float("inf"), "")] * len(records)
    for f, o in zip(enc.features, outs):
        start, end = o["logits"][:, 0], o["logits"][:, 1]
        offs = f["offsets"]
        s_idx = start.topk(min(n_best, len(start))).indices.tolist()
        e_idx = end.topk(min(n_best, len(end))).indices.tolist()
        ctx = records[f["example"]]["context"]
        for s in s_idx:
            for e in e_idx:
                if s >= len(offs) or e >= len(offs) or offs[s] is None or offs[e] is None:
                    continue
                if e < s or e - s + 1 > max_answer_len:
                    continue
                score = float(start[s] + end[e])
                if score > best[f["example"]][0]:
                    best[f["example"]] = (score, ctx[offs[s][0] : offs[e][1]])
    return [text for _, text in best]
