"""Model probing (Table 3) and attention-head probing (Table 4, Figures A1–A4) on cached features.

The encoder is frozen, so each probing task's EN training data and its test data (the four
languages concatenated) go through it once; every probe then trains on the cached features:

- the model probe: a linear layer on the last layer's output;
- one probe per attention head on that head's context vector (the head's slice of the input of
  the attention output projection O, i.e. what the head contributes before O mixes heads).

Tagging tasks read the first subword of each word, classification tasks the first token
([CLS]). All probes of one job (one per head, plus the model probe) are trained together as
one batched linear layer (`BatchedProbes`): weights (probes × features × labels), zero
initialised, on standardised features, one minibatch order, Adam on the sum of the probes' losses. Each probe's
gradient is that of its own loss, and Adam's update is per weight, so the result is each
probe trained alone (tested).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from xlt.engine.fastpath import encode
from xlt.engine.hooks import LayerHooks
from xlt.engine.kinds import kind_of
from types import SimpleNamespace
from xlt.engine.batching import collate
from xlt.errors import XltError
import time
import pandas as pd
from xlt.engine.evalset import load_records, record_files
from xlt.stages.finetune import split_file
from xlt.io import write_json
from xlt.metrics import label_collapse
from xlt.provenance import provenance
from xlt.registry import get_task


@dataclass
class ProbeConfig:
    epochs: int = 10
    lr: float = 1e-2
    batch_size: int = 256
    seed: int = 1


@dataclass
class Cached:
    """Features of one dataset: the model probe's (N, hidden), the heads' (N, heads, head_dim),
    the label of each row, and (tagging) the (example, word) each row belongs to."""

    last: torch.Tensor
    heads: torch.Tensor
    labels: torch.Tensor
    where: list[tuple[int, int]]


def train_probes(x: torch.Tensor, y: torch.Tensor, num_labels: int, cfg: ProbeConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """Train P linear probes at once: x (N, P, d), y (N,) -> weights (P, d, C), bias (P, C)."""
    n, p, d = x.shape
    # Adam moves a weight by about lr a step whatever its gradient's scale, so on features that
    # vary little around a large mean (the tiny encoder's [CLS], a PI model's words: per-dimension
    # std 0.14-0.53 for a row norm of 11) a zero-initialised probe needs hundreds of steps to pull
    # its logits apart (benchmarks/probe_steps.json). It trains on the features standardised by
    # the training rows' mean and std, per batch (no second copy of x), and the weights returned
    # fold that in: still a linear layer on the raw features, the same class of probe.
    mean, std = x.mean(0), x.std(0, unbiased=False).clamp_min(1e-6)  # (P, d): each probe its own
    w = torch.zeros(p, d, num_labels, requires_grad=True)
    b = torch.zeros(p, num_labels, requires_grad=True)
    opt = torch.optim.Adam([w, b], lr=cfg.lr)
    g = torch.Generator().manual_seed(cfg.seed)
    for _ in range(cfg.epochs):
        order = torch.randperm(n, generator=g)
        for start in range(0, n, cfg.batch_size):
            idx = order[start:start + cfg.batch_size]
            logits = torch.einsum("npd,pdc->npc", (x[idx] - mean) / std, w) + b  # (batch, P, C)
            # the sum over probes of each probe's mean loss: probe k's gradient is its own loss's
            loss = F.cross_entropy(logits.reshape(-1, num_labels), y[idx].repeat_interleave(p), reduction="sum") / len(idx)
            opt.zero_grad()
            loss.backward()
            opt.step()
    w, b = w.detach(), b.detach()
    return w / std[..., None], b - torch.einsum("pd,pdc->pc", mean / std, w)


def predict_probes(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(N, P) predicted label ids."""
    with torch.no_grad():
        return (torch.einsum("npd,pdc->npc", x, w) + b).argmax(-1)


def capture(encoder, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """The last hidden states (B, T, H) and every head's context vector (B, T, layers, heads, d),
    read by the engine's layer hooks (each layer's attention context)."""
    cfg = encoder.config
    hooks, contexts = LayerHooks(), {}
    for k in range(cfg.num_hidden_layers):
        hooks.at_context(k, lambda view: contexts.__setitem__(view.index, view.hidden))
    last = encode(encoder, batch["input_ids"], batch["attention_mask"], batch.get("token_type_ids"), hooks=hooks)
    d = cfg.hidden_size // cfg.num_attention_heads
    heads = torch.stack([contexts[k].reshape(*contexts[k].shape[:2], cfg.num_attention_heads, d)
                         for k in range(cfg.num_hidden_layers)], 2)
    return last, heads


def encode_dataset(encoder, tokenizer, task, records: list[dict], max_length: int, batch_size: int = 64) -> Cached:
    """Run the frozen encoder over `records` once; keep the probed positions' features."""


    kind = kind_of(task)
    enc = kind.encode(task, records, tokenizer, SimpleNamespace(max_length=max_length, stride=max_length // 4),
                      train=False)
    tagging = kind.per_word  # a probe per word's first subword, else per sentence ([CLS])
    lasts, heads, labels, where = [], [], [], []
    label_ids = {name: i for i, name in enumerate(task.labels)}
    encoder.eval()
    with torch.no_grad():
        for start in range(0, len(enc.features), batch_size):
            feats = enc.features[start:start + batch_size]
            batch = collate([{k: v for k, v in f.items() if k in ("input_ids", "token_type_ids")} for f in feats],
                            tokenizer.pad_token_id, kind.pad_values)
            last, hd = capture(encoder, batch)
            for i, f in enumerate(feats):
                rec = records[f["example"]]
                if tagging:
                    pos = [p for p, w in enumerate(f["word_ids"]) if w >= 0]
                    lasts.append(last[i, pos])
                    heads.append(hd[i, pos].flatten(1, 2))
                    gold = rec[task.label_field]
                    labels += [label_ids[gold[f["word_ids"][p]]] for p in pos]
                    where += [(f["example"], f["word_ids"][p]) for p in pos]
                else:
                    lasts.append(last[i, :1])
                    heads.append(hd[i, :1].flatten(1, 2))
                    labels.append(label_ids[str(rec["label"])])
                    where.append((f["example"], -1))
    return Cached(torch.cat(lasts).float(), torch.cat(heads).float(), torch.tensor(labels), where)


def score(task, records: list[dict], cached: Cached, pred: torch.Tensor, metric: str) -> list[float]:
    """The metric (×100) of each probe's predictions (N, P) on `records`."""
    kind = kind_of(task)
    names = list(task.labels)
    out = []
    for k in range(pred.shape[1]):
        ids = pred[:, k].tolist()
        if kind.per_word:
            preds = [[None] * len(r["tokens"]) for r in records]
            for (ex, w), i in zip(cached.where, ids):
                preds[ex][w] = names[i]
            golds = [r[task.label_field] for r in records]
            preds = [[p if p is not None else "O" for p in ps] for ps in preds]  # a word past every window
        else:
            golds = [str(r["label"]) for r in records]
            preds = [names[i] for i in ids]
        out.append(kind.metrics(task, golds, preds)[metric])
    return out


def probe_verdicts(task, gold: torch.Tensor, pred: torch.Tensor, rule: dict | None = None) -> list[dict]:
    """Whether each probe learned nothing: the collapse rule (xlt.metrics.collapse_verdict, config
    `collapse:`) on its predictions (N, P) of the test rows' gold labels (N,), against predicting
    the majority gold label everywhere. The rows are what the probe predicts: a word's label for
    tagging - token accuracy, since an all-O tagger's span F1 is 0 whatever it learned - and an
    example's for classification (accuracy). `collapsed` True: the probe learned nothing."""
    golds = gold.tolist()
    out = []
    for k in range(pred.shape[1]):
        preds = pred[:, k].tolist()
        right = sum(g == p for g, p in zip(golds, preds))
        majority = max(np.bincount(golds)) / len(golds)
        v = label_collapse(task.name, preds, golds, 100.0 * right / len(golds), 100.0 * majority, rule)
        out.append({**v, "measure": "token accuracy" if kind_of(task).per_word else "accuracy"})
    return out


def probe_task(encoder, tokenizer, task, train: list[dict], test: list[dict], metric: str, cfg: ProbeConfig,
               max_length: int, rule: dict | None = None, judged: list[int] | None = None) -> dict:
    """Model probe and every head probe of one task: {"model": score, "heads": (layers, heads)
    scores, "model_verdict": its `probe_verdicts`, "head_verdicts": the heads', layer-major}.
    `judged`: the test examples the verdicts read (the probe's training language's: what it
    scores on another language is a transfer result, as a fine-tuned model's test score is);
    None: all of them."""
    tr = encode_dataset(encoder, tokenizer, task, train, max_length)
    te = encode_dataset(encoder, tokenizer, task, test, max_length)
    keep = set(range(len(test)) if judged is None else judged)
    rows = torch.tensor([i for i, (ex, _) in enumerate(te.where) if ex in keep], dtype=torch.long)
    n_heads = tr.heads.shape[1]
    # the model probe (hidden) and the head probes (head_dim) differ in width: two batched layers
    w, b = train_probes(tr.last[:, None], tr.labels, len(task.labels), cfg)
    pred = predict_probes(te.last[:, None], w, b)
    model_score = score(task, test, te, pred, metric)[0]
    model_verdict = probe_verdicts(task, te.labels[rows], pred[rows], rule)[0]
    w, b = train_probes(tr.heads, tr.labels, len(task.labels), cfg)
    pred = predict_probes(te.heads, w, b)
    head_scores = score(task, test, te, pred, metric)
    layers = encoder.config.num_hidden_layers
    return {"model": model_score, "heads": np.array(head_scores).reshape(layers, n_heads // layers),
            "model_verdict": model_verdict, "head_verdicts": probe_verdicts(task, te.labels[rows], pred[rows], rule)}


PROBE_KEYS = {"epochs", "lr", "batch_size", "max_length", "seed", "max_train_examples", "max_test_examples"}


def probe_config(cfg: dict) -> ProbeConfig:
    """papers.crossmulti.analysis.probe, checked: one error naming the key and the allowed ones."""

    where = "config key papers.crossmulti.analysis.probe"
    unknown = sorted(set(cfg) - PROBE_KEYS)
    missing = sorted({"epochs", "lr", "batch_size", "max_length"} - set(cfg))
    if unknown or missing:
        raise XltError(f"{where}: " + (f"unknown {unknown}" if unknown else f"missing {missing}")
                       + f"; allowed: {', '.join(sorted(PROBE_KEYS))}")
    return ProbeConfig(epochs=cfg["epochs"], lr=cfg["lr"], batch_size=cfg["batch_size"], seed=cfg.get("seed", 1))


HEAD_VERDICT_KEYS = ("collapsed", "by", "n_correct", "n", "gold_majority_share", "majority_share", "chance_p")


def run_probe_job(encoder_path: str, revision: str | None, probes: dict, cfg: dict, out: str, provenance_out: str,
                  label: dict, rule: dict | None = None) -> None:
    """Probe one frozen encoder on every probing task. `probes`: task -> {"data", "metric",
    "source", "langs"}; rows: label columns + probe_task, unit (`model` or `head`), layer, head,
    value, probe_collapsed (the probe learned nothing: `probe_verdicts` by the collapse `rule`).
    The JSON beside it keeps each verdict and its numbers (`verdicts`: task -> model, heads)."""


    # deferred: loads safetensors only when this runs
    from xlt.engine.model import load_encoder

    pc = probe_config(cfg)
    torch.manual_seed(pc.seed)
    encoder, tokenizer = load_encoder(encoder_path, revision, dropout=0.0)
    rows, files, verdicts, started = [], [], {}, time.perf_counter()
    for name, p in probes.items():
        task = get_task(name)
        train_file = split_file(p["data"], p["source"], "train")
        test_files = [split_file(p["data"], lang, "test") for lang in p["langs"]]
        files += [train_file, *test_files]
        train = load_records([train_file], cfg.get("max_train_examples"))
        test = load_records(test_files, cfg.get("max_test_examples"))  # the first N of each language
        # verdicts on the training language's test examples (all of them where it is not tested)
        of_file = record_files(test_files, cfg.get("max_test_examples"))
        judged = [i for i, f in enumerate(of_file) if p["langs"][f] == p["source"]] if p["source"] in p["langs"] else None
        res = probe_task(encoder, tokenizer, task, train, test, p["metric"], pc, cfg["max_length"], rule, judged)
        rows.append({**label, "probe_task": name, "unit": "model", "layer": -1, "head": -1, "value": res["model"],
                     "probe_collapsed": res["model_verdict"]["collapsed"]})
        heads = []
        for ((layer, h), v), verdict in zip(np.ndenumerate(res["heads"]), res["head_verdicts"]):
            rows.append({**label, "probe_task": name, "unit": "head", "layer": layer, "head": h, "value": v,
                         "probe_collapsed": verdict["collapsed"]})
            heads.append({"layer": int(layer), "head": int(h), **{k: verdict.get(k) for k in HEAD_VERDICT_KEYS}})
        verdicts[name] = {"model": res["model_verdict"], "heads": heads}
    pd.DataFrame(rows).to_csv(out, index=False)
    write_json(provenance_out, {"seconds": time.perf_counter() - started, "verdicts": verdicts,
                                "provenance": provenance({"encoder": encoder_path, "probes": probes, "probe": cfg},
                                                         pc.seed, files)})
