"""The English XNLI model of underspec's tiny profile over seeds: which setting keeps a seed at chance?

underspec trains with its authors' settings (shijie-wu/crosslingual-nlp): one linear layer on
[CLS], dropout 0.2 on what it reads, Adam's β2 0.99. On the tiny world seed 1 of the English
XNLI model (θ_src; xmixup's zero-shot row reads it too) ends at chance while other seeds learn.
This retrains that model from the results of a finished `make tables` (its prepared data and
tiny encoder, read in place; nothing there is written) with the preset's own profile, and with
one setting changed at a time:
- `as_is`: the profile (`hparams.underspec`, the tiny preset's scaling);
- `beta2_0999`: Adam's β2 0.999 (PyTorch's default) instead of 0.99;
- `head_dropout_encoder`: the head reads its features with the encoder's dropout (0.1), not 0.2;
- `dense_head`: a fresh dense + tanh layer, then the linear one (RoBERTa's head; ours before);
- `pooler_head`: the encoder's pooler, then the linear one (Hugging Face's BERT classifier).
Written per (variant, seed): the selected model's English dev accuracy, the share of its most
predicted class and the collapse verdict (`xlt.stages.finetune`, the config's `collapse:` rule).

    python xlt/papers/underspec/benchmarks/tiny_head.py [--results results] [--seeds 1 2 3] [--json xlt/papers/underspec/benchmarks/tiny_head.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]
VARIANTS = {
    "as_is": {},
    "beta2_0999": {"adam_betas": [0.9, 0.999]},
    "head_dropout_encoder": {"head_dropout": None},
    "dense_head": {"classifier": "dense"},
    "pooler_head": {"classifier": "hf_sequence_classifier"},
}


def run(results: Path, seeds: list[int], variants: list[str], out: Path | None) -> dict:
    import torch

    from xlt.dag import targets as T
    from xlt.workflow.config import load_configs
    from xlt.stages.finetune import finetune
    from xlt.stages.finetune_job import FinetuneJob

    cfg = load_configs([REPO / "presets/tiny.yaml"])
    profile = T.hparams(cfg, "en.underspec", "xnli")  # no extra tag: the path grammar's own
    encoder, data = results / "encoders/tiny/pretrained", results / "data/xnli"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in variants:
            for seed in seeds:
                model = Path(tmp) / f"{name}-seed{seed}"
                start = time.perf_counter()
                finetune(FinetuneJob.of_seed("xnli", str(encoder), data, ["en"], {**profile, **VARIANTS[name]}, seed, model,
                                             Path(tmp) / f"{name}-seed{seed}-checkpoints",
                                             collapse_rule={k: v for k, v in cfg["collapse"].items() if k != "retries"}))
                verdict = json.loads((model / "xlt_model.json").read_text())["collapse"]
                first = verdict["attempts"][0]
                rows.append({"variant": name, "seed": seed, "dev_accuracy": round(first["dev_score"], 2),
                             "majority_share": first["majority_share"], "collapsed": verdict["collapsed"],
                             "seconds": round(time.perf_counter() - start, 1)})
                print(json.dumps(rows[-1]), flush=True)
                shutil.rmtree(model)
    report = {"what": __doc__.splitlines()[0], "profile": profile, "changed": {k: VARIANTS[k] for k in variants},
              "machine": {"cpu": platform.processor() or platform.machine(), "torch": torch.__version__,
                          "threads": torch.get_num_threads()},
              "rows": rows}
    if out:
        out.write_text(json.dumps(report, indent=1) + "\n")
    return report


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", type=Path, default=REPO / "results", help="a finished `make tables` run's results folder")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--json", type=Path, default=REPO / "xlt/papers/underspec/benchmarks/tiny_head.json")
    a = ap.parse_args()
    run(a.results, a.seeds, a.variants, a.json)


if __name__ == "__main__":
    main()
