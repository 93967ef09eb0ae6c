"""X-Mixup on the tiny world over several seeds: does it learn, and what makes it collapse?

`make tables` runs xmixup on one seed (the budget). This reruns the tiny preset's XNLI models
on more seeds, each variant with the preset's own profile (`hparams.xmixup` and the X-Mixup
extra its recipe tag gives), from the results of a finished `make tables` (its prepared data
and tiny encoder, read in place; nothing there is written):
- translate-train (English and the five targets, no extra);
- X-Mixup (English with itself and the five targets, mixup inside layer 1, MSE and KL on);
- X-Mixup without MSE (`-nomse`), without MSE and KL (`-nomse-nokl`), without the mixup
  (`-nomix`), i.e. Table 5 and 9's variants.
Each model is scored as the tables score it (X-Mixup on the translate-test set: targets with
their English side, English with itself; translate-train on the plain test set) and checked
for a collapse on that path (`xlt.stages.finetune.scored_collapse`). Written: accuracy per language
and averaged, the share of the most predicted class, the collapse verdict and, per model, the
spread of its last layer's [CLS] states across the English dev examples (a collapsed encoder
gives every input nearly the same state).

    python xlt/papers/xmixup/benchmarks/tiny_seeds.py [--results results] [--seeds 1 2 3] [--json xlt/papers/xmixup/benchmarks/tiny_seeds.json]
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
VARIANTS = {"translate_train": None, "xmixup": "", "wo_mse": "-nomse", "wo_mse_kl": "-nomse-nokl", "wo_mixup": "-nomix"}
LANGS = ["en", "ar", "de", "hi", "ru", "zh"]


def cls_spread(model_dir: Path, dev_file: Path) -> float:
    """The mean over hidden units of the std across examples of the last layer's [CLS] state
    on up to 128 English dev pairs (plain forward)."""
    import torch

    from xlt.engine.train_config import TrainConfig
    from xlt.engine.evalset import EvalSet, load_records
    from xlt.engine.model import load_model

    model, tok, meta = load_model(model_dir)
    recs = [{k: v for k, v in r.items() if k != "source"} for r in load_records([dev_file])[:128]]
    ev = EvalSet.build(model.task, recs, tok, TrainConfig.from_dict(meta["train_config"]), kind=model.kind)
    states = []
    with torch.no_grad():
        for _, batch in ev.batches:
            states.append(model.features(batch)[:, 0])
    return float(torch.cat(states).std(0).mean())


def run(results: Path, seeds: list[int], out: Path | None) -> dict:
    import torch

    from xlt.dag import targets as T
    from xlt.workflow.config import load_configs
    from xlt.stages.finetune import evaluate_model, finetune
    from xlt.stages.finetune_job import FinetuneJob
    from xlt.papers import hparams
    from xlt.papers.recipes import load_recipes

    load_recipes()  # X-Mixup's fine-tune extension, as the workflow's job loads it

    torch.set_num_threads(1)
    cfg = load_configs([str(REPO / "presets" / "tiny.yaml")])
    encoder = str(results.parent / T.encoder_source(cfg, "tiny", "pretrained"))
    data = results / "data"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            for variant, flags in VARIANTS.items():
                tag = "" if flags is None else f"-xmixup1{flags}"
                recipe = f"{'+'.join(sorted(LANGS))}.xmixup{tag}"
                hp = hparams(cfg, recipe, "xnli.translate_train")
                model = Path(tmp) / f"{variant}-s{seed}"
                t0 = time.perf_counter()
                [summary] = finetune(FinetuneJob.of_seed("xnli", encoder, data / "xnli.translate_train", LANGS, hp, seed, model,
                                                         Path(tmp) / "ck"))
                seconds = time.perf_counter() - t0
                testset = "xnli.translate_test" if flags is not None else "xnli"
                report = evaluate_model(str(model), str(data / testset), "test", LANGS, str(Path(tmp) / "e.json"),
                                        str(Path(tmp) / "p.jsonl"), device="cpu")
                scored = report.get("scored_collapse") or {}
                row = {"variant": variant, "seed": seed, "train_seconds": round(seconds, 1),
                       "accuracy": {lang: round(m["accuracy"], 2) for lang, m in report["metrics"].items()},
                       "average": round(report["average"]["accuracy"], 2),
                       "dev_history": [round(h["accuracy"], 2) for h in summary["history"]],
                       "majority_share": scored.get("majority_share"), "collapsed": report["collapsed"],
                       "cls_spread": round(cls_spread(model, data / "xnli.translate_train" / "en" / "dev.jsonl"), 4)}
                rows.append(row)
                print(json.dumps(row), flush=True)
                shutil.rmtree(model)
    result = {"machine": platform.processor() or platform.machine(), "seeds": seeds, "runs": rows}
    if out:
        out.write_text(json.dumps(result, indent=1) + "\n")
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default="results", help="a finished `make tables` results folder")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--json", default=None, help="write the runs here (JSON)")
    a = ap.parse_args()
    run(Path(a.results).resolve(), a.seeds, Path(a.json) if a.json else None)


if __name__ == "__main__":
    main()
