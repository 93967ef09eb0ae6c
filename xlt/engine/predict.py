"""Run a model over encoded features (fp32 unless asked for bf16) and decode outputs back to examples."""

from __future__ import annotations

import torch

from xlt.engine.batching import collate, sequential_batches, token_budget_batches
from xlt.engine.features import Encoded


def to_device(batch: dict, device: torch.device) -> dict:
    """A batch's tensors on `device`; a paired batch's sides too. To CUDA through pinned
    memory: a copy from pageable memory waits for the device to finish its queue, so a
    host-bound step could not run ahead of the device."""
    pin = torch.device(device).type == "cuda"  # a name ("cpu") or a device
    return {k: to_device(v, device) if isinstance(v, dict) else
            (v.pin_memory() if pin and v.device.type == "cpu" else v).to(device, non_blocking=True)
            for k, v in batch.items()}


def eval_batches(enc: Encoded, kind, pad_id: int, batch_size: int, max_tokens: int | None = None,
                 pad_multiple: int = 1) -> list[tuple[list[int], dict]]:
    """Collated evaluation batches (length-sorted, gold fields left out), for `run_batches`:
    `batch_size` features each, or with `max_tokens` as many as fit in that many padded
    positions (`token_budget_batches`; widths rounded up to `pad_multiple`). Features that
    carry their source side ("source": e.g. a translate-test input's English side) are batched apart
    from those that do not, each batch with its sources' batch under "source"."""

    def collated(features: list[dict]) -> dict:
        batch = collate(features, pad_id, kind.pad_values, kind.scalars, pad_multiple)
        return {k: v for k, v in batch.items() if k not in kind.gold_fields}

    out = []
    for group in ([i for i, f in enumerate(enc.features) if "source" not in f],
                  [i for i, f in enumerate(enc.features) if "source" in f]):
        lengths = [enc.lengths[i] for i in group]
        shares = (sequential_batches(lengths, batch_size) if max_tokens is None else
                  token_budget_batches(lengths, max_tokens, pad_multiple))
        for share in shares:
            idx = [group[j] for j in share]
            batch = collated([enc.features[i] for i in idx])
            if "source" in enc.features[idx[0]]:
                batch["source"] = collated([enc.features[i]["source"] for i in idx])
            out.append((idx, batch))
    return out


@torch.no_grad()
def launch_batches(model, batches: list[tuple[list[int], dict]], device: torch.device, keys: tuple | None = None,
                   precision: str = "fp32") -> list[tuple[list[int], dict]]:
    """Queue every batch's forward pass and its outputs' copy to the host (only `keys`);
    `collect_outputs` waits for them. On a GPU no batch waits for the one before (one wait
    per evaluation, not one per batch), and a caller may queue more work before collecting
    (an interpolation grid writes the next point's weights meanwhile: the device runs them in
    order). On a CPU each forward runs at once, as before.

    Full precision by default: bf16 rounds each weight by ~0.4%, coarser than the steps of an
    interpolation grid near its ends. `precision="bf16"`: the products under bf16 autocast
    (weights stay fp32; what a GPU evaluates fastest), for evaluations whose scores were
    checked to move by less than 0.1 point (tests/engine/test_eval_precision.py;
    xlt.engine.evaluation picks it).
    """
    model.eval()
    dtype = torch.bfloat16 if precision == "bf16" else None
    pending = []
    for idx, batch in batches:
        with torch.autocast(torch.device(device).type, dtype=dtype, enabled=dtype is not None):  # even inside a caller's autocast
            out = model(to_device(batch, device))
        pending.append((idx, {
            k: (v.float() if v.is_floating_point() else v).to("cpu", non_blocking=True)
            for k, v in out.items()
            if isinstance(v, torch.Tensor) and v.dim() > 0 and (keys is None or k in keys)
        }))
    return pending


def collect_outputs(pending: list[tuple[list[int], dict]], n_features: int, device: torch.device) -> list:
    """Per-feature outputs (CPU tensors) of `launch_batches`, in feature order (batches are
    length-sorted: each batch's indices put its rows back)."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)  # the non-blocking copies have landed
    outs: list = [None] * n_features
    for idx, host in pending:
        for j, i in enumerate(idx):
            outs[i] = {k: v[j] for k, v in host.items()}
    return outs


def run_batches(model, batches: list[tuple[list[int], dict]], n_features: int, device: torch.device,
                keys: tuple | None = None, precision: str = "fp32") -> list:
    """Per-feature outputs (CPU tensors, only `keys`), in feature order; `precision`: see
    `launch_batches`."""
    return collect_outputs(launch_batches(model, batches, device, keys, precision), n_features, device)


def decode_classification(task, records: list[dict], enc: Encoded, outs: list) -> list[str]:
    preds = [None] * len(records)
    for f, o in zip(enc.features, outs):
        preds[f["example"]] = task.labels[int(o["logits"].argmax())]
    return preds


def decode_tagging(task, records: list[dict], enc: Encoded, outs: list) -> list[list[str]]:
    preds = [[None] * len(r["tokens"]) for r in records]
    for f, o in zip(enc.features, outs):
        best = o["logits"].argmax(-1).tolist()
        for pos, w in enumerate(f["word_ids"]):
            if w >= 0:
                preds[f["example"]][w] = task.labels[best[pos]]
    return preds


# Head of a word the parser never saw (past the test-time word limit): no gold head is -1,
# so the word counts as an error for UAS and LAS alike, whatever its gold head.
UNPARSED_HEAD = -1


def decode_parsing(task, records: list[dict], enc: Encoded, outs: list) -> list[dict]:
    labels = task.labels
    preds = [{"head": [UNPARSED_HEAD] * len(r["tokens"]), "deprel": [labels[0]] * len(r["tokens"])} for r in records]
    for f, o in zip(enc.features, outs):
        for k, w in enumerate(f["word_index"]):
            preds[f["example"]]["head"][w] = int(o["pred_heads"][k])
            preds[f["example"]]["deprel"][w] = labels[int(o["pred_rels"][k])]
    return preds


def decode_qa(records, enc, outs, max_answer_len: int = 30, n_best: int = 20) -> list[str]:
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
