"""Why the tiny preset's probes learned nothing, and how many steps they need: trials on English
held-out data only.

Each encoder (the pretrained one and any fine-tuned models given) encodes the first
--train EN training examples of each probing task (as the probe job does) and the first
--heldout examples of EN dev, once; every trial then trains the model probe
(xlt.papers.crossmulti.probing.train_probes, the job's code) on the cached features and scores it
on the EN dev rows: the task's metric, token or example accuracy, the majority label's share and
the collapse verdict (probe_verdicts). No target-language or test data is read.

Trials vary what could stop a linear probe from learning: the number of Adam steps (epochs,
batch size), the step size (lr), the zero initialisation (a small random one instead) and the
features' scale (raw, as the probe trained before, or standardised with the training rows' mean
and std, as train_probes does now). Each row says which; features_dim_std beside
features_row_norm shows how little the raw features vary around their mean.

    python xlt/papers/crossmulti/benchmarks/probe_steps.py --results results \\
        --models results/models/tiny/pretrained/pawsx/en.crossmulti/seed1 … --json probe_steps.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from xlt.process.cli import quiet_libraries

# (name, epochs, batch_size, lr, init, features): "raw" is the probe before this benchmark (the
# job's loop on the features as cached), "standardised" the job's train_probes now
TRIALS = [
    ("preset", 10, 256, 1e-2, "zero", "raw"),
    ("lr 1e-1", 10, 256, 1e-1, "zero", "raw"),
    ("lr 1e-3", 10, 256, 1e-3, "zero", "raw"),
    ("random init", 10, 256, 1e-2, "random", "raw"),
    ("epochs 20", 20, 256, 1e-2, "zero", "raw"),
    ("epochs 30", 30, 256, 1e-2, "zero", "raw"),
    ("epochs 50", 50, 256, 1e-2, "zero", "raw"),
    ("epochs 100", 100, 256, 1e-2, "zero", "raw"),
    ("batch 32", 10, 32, 1e-2, "zero", "raw"),
    ("batch 64", 10, 64, 1e-2, "zero", "raw"),
    ("batch 64, epochs 30", 30, 64, 1e-2, "zero", "raw"),
    ("batch 32, epochs 30", 30, 32, 1e-2, "zero", "raw"),
    ("standardised", 10, 256, 1e-2, "zero", "standardised"),
    ("standardised, lr 3e-2", 10, 256, 3e-2, "zero", "standardised"),
    ("standardised, lr 1e-1", 10, 256, 1e-1, "zero", "standardised"),
    ("standardised, epochs 20", 20, 256, 1e-2, "zero", "standardised"),
    ("standardised, epochs 30", 30, 256, 1e-2, "zero", "standardised"),
    ("standardised, epochs 50", 50, 256, 1e-2, "zero", "standardised"),
    ("standardised, epochs 30, lr 3e-2", 30, 256, 3e-2, "zero", "standardised"),
    # added after the four-language test showed the vanilla NER probe unlearned once standardised
    # (per-dimension scaling magnifies directions that barely vary in English): the mean removed
    # and one scale per probe (its mean per-dimension std), which keeps the features' geometry
    ("centred", 10, 256, 1e-2, "zero", "centred"),
    ("centred, one scale", 10, 256, 1e-2, "zero", "centred, one scale"),
]


def train(x, y, num_labels, epochs, batch_size, lr, init, features, seed=1):
    """The job's train_probes ("standardised"), or its loop before, on the raw features, from a
    zero or a small random init (the trials that ask whether the init or the features are the cause),
    or on the features centred (and scaled by one number per probe), the weights folded back."""
    from xlt.papers.crossmulti.probing import ProbeConfig, train_probes

    if features == "standardised":
        return train_probes(x, y, num_labels, ProbeConfig(epochs=epochs, lr=lr, batch_size=batch_size, seed=seed))
    mean, scale = torch.zeros(x.shape[1:]), torch.ones(x.shape[1:])
    if features.startswith("centred"):
        mean = x.mean(0)
    if features == "centred, one scale":
        scale = x.std(0, unbiased=False).mean(-1, keepdim=True).expand_as(mean)
    w, b = _train_raw((x - mean) / scale, y, num_labels, epochs, batch_size, lr, init, seed)
    return w / scale[..., None], b - torch.einsum("pd,pdc->pc", mean / scale, w)


def _train_raw(x, y, num_labels, epochs, batch_size, lr, init, seed):
    import torch.nn.functional as F

    n, p, d = x.shape
    g = torch.Generator().manual_seed(seed)
    w = torch.zeros(p, d, num_labels) if init == "zero" else torch.randn(p, d, num_labels, generator=g) * d ** -0.5
    w.requires_grad_()
    b = torch.zeros(p, num_labels, requires_grad=True)
    opt = torch.optim.Adam([w, b], lr=lr)
    for _ in range(epochs):
        order = torch.randperm(n, generator=g)
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            logits = torch.einsum("npd,pdc->npc", x[idx], w) + b
            loss = F.cross_entropy(logits.reshape(-1, num_labels), y[idx].repeat_interleave(p), reduction="sum") / len(idx)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return w.detach(), b.detach()


def feature_stats(x: torch.Tensor) -> dict:
    """How spread the rows are: the mean row norm and the mean per-dimension std (a feature
    set whose rows all sit near one point has std ≪ norm)."""
    return {"row_norm": round(float(x.norm(dim=-1).mean()), 4), "dim_std": round(float(x.std(0).mean()), 4)}


def main():
    from xlt.engine.evalset import load_records
    from xlt.engine.model import load_encoder
    from xlt.papers.crossmulti.probing import encode_dataset, predict_probes, probe_verdicts, score
    from xlt.registry import get_task

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default="results")
    ap.add_argument("--encoder", default="tiny")
    ap.add_argument("--models", nargs="*", default=[], help="fine-tuned model directories (their encoder/)")
    ap.add_argument("--tasks", nargs="+", default=["ner", "pawsx"])
    ap.add_argument("--data", nargs="*", default=[], help="task=folder where the task's folder is not results/data/<task>")
    ap.add_argument("--train", type=int, default=200, help="EN training examples (the tiny preset's max_train_examples)")
    ap.add_argument("--heldout", type=int, default=200, help="EN dev examples scored")
    ap.add_argument("--max-length", type=int, default=64)
    ap.add_argument("--trials", nargs="*", help="names of TRIALS to run (default: all)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json")
    args = ap.parse_args()
    quiet_libraries()
    torch.set_num_threads(args.threads)
    data = {t: Path(args.results) / "data" / t for t in args.tasks} | {
        k: Path(v) for k, v in (d.split("=", 1) for d in args.data)}
    metric = {"ner": "token_f1_macro", "pos": "f1_macro", "pawsx": "f1_macro", "marc": "f1_macro"}  # config.yaml's
    trials = [t for t in TRIALS if not args.trials or t[0] in args.trials]
    encoders = [("vanilla", str(Path(args.results) / "encoders" / args.encoder / "pretrained"))]
    encoders += [("/".join(Path(m).parts[-3:]), str(Path(m) / "encoder")) for m in args.models]
    rows = []
    for enc_name, path in encoders:
        encoder, tokenizer = load_encoder(path, None, dropout=0.0)
        for t in args.tasks:
            task = get_task(t)
            train_rec = load_records([data[t] / "en" / "train.jsonl"], args.train)
            dev_rec = load_records([data[t] / "en" / "dev.jsonl"], args.heldout)
            tr = encode_dataset(encoder, tokenizer, task, train_rec, args.max_length)
            dv = encode_dataset(encoder, tokenizer, task, dev_rec, args.max_length)
            for name, epochs, bs, lr, init, features in trials:
                started = time.perf_counter()
                w, b = train(tr.last[:, None], tr.labels, len(task.labels), epochs, bs, lr, init, features)
                seconds = time.perf_counter() - started
                pred = predict_probes(dv.last[:, None], w, b)
                v = probe_verdicts(task, dv.labels, pred)[0]
                rows.append({"encoder": enc_name, "task": t, "trial": name, "epochs": epochs, "batch_size": bs,
                             "lr": lr, "init": init, "features": features,
                             "steps": epochs * -(-len(tr.labels) // bs), "train_rows": len(tr.labels),
                             "heldout_rows": len(dv.labels), "metric": metric[t],
                             "score": round(score(task, dev_rec, dv, pred, metric[t])[0], 2),
                             "accuracy": v["dev_score"], "majority": v["majority_baseline"],
                             "predicted_majority_share": v["majority_share"], "chance_p": v.get("chance_p"),
                             "learned": not v["collapsed"], "train_seconds": round(seconds, 3),
                             **{f"features_{k}": val for k, val in feature_stats(tr.last).items()}})
                r = rows[-1]
                print(f"{enc_name:32s} {t:6s} {name:22s} steps {r['steps']:5d}  {r['metric']} {r['score']:6.2f}  "
                      f"acc {r['accuracy']:6.2f} / maj {r['majority']:6.2f}  learned {r['learned']!s:5s} "
                      f"{seconds:.2f}s  norm {r['features_row_norm']} std {r['features_dim_std']}", flush=True)
    summary = summarise(rows)
    for r in summary:
        print(f"{r['trial']:34s} learned {r['learned']:2d}/{r['probes']}  mean gain over majority {r['mean_gain']:6.2f}  "
              f"train {r['train_seconds']:.2f}s")
    if args.json:
        Path(args.json).write_text(report(rows, summary, vars(args)))


ROW = ["encoder", "task", "trial", "steps", "score", "accuracy", "majority", "predicted_majority_share", "chance_p",
       "learned", "train_seconds"]
TRIAL = ["epochs", "batch_size", "lr", "init", "features"]


def report(rows: list[dict], summary: list[dict], args: dict) -> str:
    """The JSON: each trial's settings once, each (encoder, task)'s rows and feature spread once,
    then one line per probe (`ROW`'s columns)."""
    trials = {r["trial"]: {k: r[k] for k in TRIAL} for r in rows}
    data = {(r["encoder"], r["task"]): {k: r[k] for k in r if k.startswith("features_") or k in
                                        ("metric", "train_rows", "heldout_rows")} for r in rows}
    head = json.dumps({
        "what": "model probes of the tiny preset trained on the first --train EN training examples, scored on "
                "the first --heldout EN dev examples (no target-language or test data); trials: TRIALS in "
                "probe_steps.py", "rule": CHOICE, "args": args, "summary": summary, "trials": trials,
        "data": [{"encoder": e, "task": t, **v} for (e, t), v in data.items()], "columns": ROW, "rows": "@ROWS@"}, indent=1)
    lines = ",\n  ".join(json.dumps([r[k] for k in ROW]) for r in rows)
    return head.replace('"@ROWS@"', f"[\n  {lines}\n ]") + "\n"


CHOICE = ("per trial, over every (encoder, probing task): the probes that learned (the collapse rule on EN dev, "
          "xlt.papers.crossmulti.probing.probe_verdicts), then the mean accuracy gain over the majority label; "
          "chosen among the trials with the preset's steps (10 epochs of 256: a probe job's time, make tables')")


def summarise(rows: list[dict]) -> list[dict]:
    """Per trial: how many probes learned, the mean accuracy gain over the majority label, and the
    seconds all its probes trained."""
    out = {}
    for r in rows:
        s = out.setdefault(r["trial"], {"trial": r["trial"], "probes": 0, "learned": 0, "gain": 0.0, "train_seconds": 0.0})
        s["probes"] += 1
        s["learned"] += r["learned"]
        s["gain"] += r["accuracy"] - r["majority"]
        s["train_seconds"] += r["train_seconds"]
    return [{"trial": s["trial"], "probes": s["probes"], "learned": s["learned"],
             "mean_gain": round(s.pop("gain") / s["probes"], 2), "train_seconds": round(s["train_seconds"], 2)}
            for s in out.values()]


if __name__ == "__main__":
    main()
