"""Do the tiny preset's baseline models learn, in every seed? And which tiny scaling makes them?

`make tables` trains each baseline on one or two seeds; a baseline that did not learn makes
every comparison against it meaningless (issue 52). This trains a baseline family (one
profile, task and training-language set, as the tiny preset resolves it) on many seeds,
optionally with settings changed (`--set key=value`, a trial), and records per seed what the
model's own selection saw on its **training languages' dev sets** (English for every family
whose scaling is chosen here: target-language and test data are never read), the dev set's
majority baseline and the collapse rule's verdict (`collapse:` in the preset: majority share,
gain, exact binomial test against the majority baseline).

It reads a `make tables` (or any) results folder's prepared data and tiny encoder in place and
writes nothing there; runs go to a temporary folder. Rows are merged into the JSON by
(family, trial, seed), so trials add up over several calls:

    python xlt/papers/benchmarks/tiny_baselines.py --family underspec-xnli-en --seeds 1 2 3 4 5 \
        --trial preset --json xlt/papers/benchmarks/tiny_baselines.json
    python xlt/papers/benchmarks/tiny_baselines.py --family underspec-xnli-en --seeds 1 2 3 4 5 \
        --trial beta2-0.999 --set adam_betas=[0.9,0.999] --json xlt/papers/benchmarks/tiny_baselines.json

`--list` prints the families. `make bench-baselines` reruns every trial recorded in the
committed JSON (benchmarks/README.md, "Tiny baselines").
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]

# family -> (dataset folder under results/data, recipe as the tiny DAG names it): the baseline
# rows of the papers' tables (zero-shot θ_src / adjust's Original, dlfa's baseline, crossmulti's
# cross and multi, xmixup's translate-train) and underspec's target and bilingual models.
FAMILIES = {
    "underspec-xnli-en": ("xnli", "en.underspec"),
    "underspec-xnli-ru": ("xnli", "ru.underspec"),
    "underspec-xnli-en+ru": ("xnli", "en+ru.underspec"),
    "underspec-ner-en": ("ner", "en.underspec"),
    "underspec-pos-en": ("pos", "en.underspec"),
    "underspec-parsing-en": ("parsing", "en.underspec"),
    "dlfa-pawsx-en": ("pawsx", "en.dlfa"),
    "crossmulti-pawsx-en": ("pawsx", "en.crossmulti"),
    "crossmulti-marc-en": ("marc", "en.crossmulti"),
    "crossmulti-marc-multi": ("marc", "de+en+es+fr.crossmulti"),
    "crossmulti-ner-en": ("ner", "en.crossmulti"),
    "xmixup-xnli-translate-train": ("xnli.translate_train", "ar+de+en+hi+ru+zh.xmixup"),
    # a method, beside its baseline: X-Mixup (mixup in layer 1, MSE and KL on), as xmixup Table 2 trains it
    "xmixup-xnli-xmixup": ("xnli.translate_train", "ar+de+en+hi+ru+zh.xmixup-xmixup1"),
}


def parse_set(items: list[str]) -> dict:
    """`key=value` pairs, each value read as YAML (numbers, lists, null)."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set {item!r}: expected key=value")
        value = yaml.safe_load(value)
        try:  # YAML 1.1 reads 2e-3 (no dot) as a string
            value = float(value) if isinstance(value, str) else value
        except ValueError:
            pass
        out[key] = value
    return out


def code_version() -> str:
    try:
        return subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def build_encoder(results: Path, cfg: dict, mlm: dict, cache: Path) -> tuple[str, dict]:
    """The tiny encoder built as the preset builds it (workflow_scripts/build_encoder.py's
    calls, on the run's corpus) with `mlm` settings changed; cached by the settings. Returns
    its folder and its pretraining's logged losses [[step, loss], ...]."""
    from xlt.engine.recipes.mlm import EncoderShape, MLMConfig, train_mlm, train_wordpiece
    from xlt.io import iter_lines

    build = cfg["encoders"]["tiny"]["build"]
    settings = {**build["mlm"], **mlm}
    out = cache / "-".join(f"{k}{v}" for k, v in sorted(mlm.items()))
    if not (out / "pretrained" / "config.json").exists():
        corpus = results / "encoders" / "tiny.corpus.txt"
        texts = [line for _, line in iter_lines(corpus)]
        train_wordpiece(texts, build["vocab_size"], out / "tokenizer")
        train_mlm(texts, str(out / "pretrained"), out / "mlm", MLMConfig.from_dict(settings, "--mlm"),
                  tokenizer_dir=out / "tokenizer", shape=EncoderShape(**build["shape"]), text_files=[corpus],
                  resolved_config={**build, "mlm": settings})
    losses = json.loads((out / "pretrained" / "xlt_encoder.json").read_text())["losses"]
    return str(out / "pretrained"), losses


def run_family(results: Path, family: str, seeds: list[int], overrides: dict, trial: str,
               mlm: dict | None = None, cache: Path | None = None) -> list[dict]:
    import torch

    from xlt.dag import targets as T
    from xlt.papers import hparams
    from xlt.papers.recipes import load_recipes
    from xlt.stages.finetune import finetune
    from xlt.stages.finetune_job import FinetuneJob
    from xlt.workflow.config import load_configs

    load_recipes()  # a method's fine-tune extension (X-Mixup), as the workflow's job loads it
    torch.set_num_threads(1)
    cfg = load_configs([str(REPO / "presets" / "tiny.yaml")])
    dataset, recipe = FAMILIES[family]
    encoder = str(results.parent / T.encoder_source(cfg, "tiny", "pretrained"))
    mlm_losses = None
    if mlm:
        encoder, mlm_losses = build_encoder(results, cfg, mlm, cache)
    hp = {**hparams(cfg, recipe, dataset), **overrides}
    rule = {k: v for k, v in cfg["collapse"].items() if k != "retries"}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            model = Path(tmp) / f"s{seed}"
            t0 = time.perf_counter()
            [summary] = finetune(FinetuneJob.of_seed(T.task_of(dataset), encoder, results / "data" / dataset,
                                                     T.Recipe.parse(recipe).train_langs, hp, seed, model, Path(tmp) / "ck",
                                                     collapse_rule=rule))
            verdict = summary["collapse"]["attempts"][-1]
            row = {"family": family, "trial": trial, "overrides": overrides, "mlm": mlm or {}, "seed": seed,
                   **({"mlm_last_losses": [l for _, l in mlm_losses[-4:]]} if mlm_losses else {}),
                   "train_seconds": round(time.perf_counter() - t0, 1),
                   "dev_history": [round(v, 2) for h in summary["history"] for k, v in h.items()
                                   if k not in ("epoch", "step", "dev") and isinstance(v, (int, float))],
                   "dev_score": verdict.get("dev_score"), "majority_baseline": verdict.get("majority_baseline"),
                   "majority_share": verdict.get("majority_share"), "chance_p": verdict.get("chance_p"),
                   "collapsed": verdict["collapsed"], "by": verdict["by"]}
            rows.append(row)
            print(json.dumps(row), flush=True)
            shutil.rmtree(model)
    return rows


def summarise(rows: list[dict]) -> list[dict]:
    """One line per (family, trial): mean and min of the selected dev score, seeds not learnt."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["family"], r["trial"]), []).append(r)
    out = []
    for (family, trial), rs in sorted(groups.items()):
        scores = [r["dev_score"] for r in rs]
        out.append({"family": family, "trial": trial, "overrides": rs[0]["overrides"], "seeds": len(rs),
                    "dev_mean": round(statistics.mean(scores), 2),
                    "dev_std": round(statistics.stdev(scores), 2) if len(scores) > 1 else None,
                    "dev_min": min(scores), "majority_baseline": rs[0]["majority_baseline"],
                    "not_learnt": sorted(r["seed"] for r in rs if r["collapsed"])})
    return out


def merge(path: Path | None, rows: list[dict]) -> dict:
    old = json.loads(path.read_text()) if path and path.exists() else {"runs": []}
    key = lambda r: (r["family"], r["trial"], r["seed"])  # noqa: E731
    fresh = {key(r) for r in rows}
    runs = [r for r in old["runs"] if key(r) not in fresh] + rows
    runs.sort(key=key)
    result = {"machine": platform.processor() or platform.machine(), "code_version": code_version(),
              "summary": summarise(runs), "runs": runs}
    if path:
        path.write_text(json.dumps(result, indent=1) + "\n")
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default="results", help="a results folder with the tiny encoder and prepared data")
    ap.add_argument("--family", choices=sorted(FAMILIES), action="append", default=[])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    ap.add_argument("--trial", default="preset", help="this trial's name in the JSON")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a profile setting changed")
    ap.add_argument("--mlm", action="append", default=[], metavar="KEY=VALUE",
                    help="build the tiny encoder with this MLM setting changed (cached in --encoders)")
    ap.add_argument("--encoders", default="/tmp/xlt-tiny-encoders", help="where --mlm's encoders are built")
    ap.add_argument("--rerun", action="store_true", help="rerun every (family, trial) recorded in --json")
    ap.add_argument("--json", default=None, help="merge the runs into this JSON")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--data-targets", action="store_true",
                    help="print the prepared-data folders the families recorded in --json read (Snakemake targets)")
    a = ap.parse_args()
    if a.list:
        for name, (dataset, recipe) in FAMILIES.items():
            print(f"{name:32s} {dataset:24s} {recipe}")
        return
    path = Path(a.json) if a.json else None
    if a.data_targets:
        families = {r["family"] for r in json.loads(path.read_text())["runs"]} | set(a.family)
        print(" ".join(sorted({f"{a.results}/data/{FAMILIES[f][0]}" for f in families})))
        return
    results = Path(a.results).resolve()
    if a.rerun:
        recorded = json.loads(path.read_text())["runs"]
        jobs = {(r["family"], r["trial"]): (r["overrides"], r.get("mlm") or {}) for r in recorded}
        seeds = sorted({r["seed"] for r in recorded})
        for (family, trial), (overrides, mlm) in jobs.items():
            merge(path, run_family(results, family, seeds, overrides, trial, mlm, Path(a.encoders)))
    for family in a.family:
        merge(path, run_family(results, family, a.seeds, parse_set(a.set), a.trial, parse_set(a.mlm),
                               Path(a.encoders)))
    if path:
        for line in json.loads(path.read_text())["summary"]:
            print(json.dumps(line))


if __name__ == "__main__":
    main()
