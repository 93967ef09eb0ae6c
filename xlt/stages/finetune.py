"""From a task's normalised data folder to a fine-tuned model, and from a model to metrics."""

from __future__ import annotations

import os
from pathlib import Path

from xlt.engine.train_config import TrainConfig
from xlt.stages.finetune_job import FinetuneJob
from xlt.errors import XltError
from xlt.io import read_json, write_json, write_jsonl
from xlt.provenance import provenance
from xlt.registry import check_language, get_task
import shutil


def split_file(data_dir: str | Path, lang: str, split: str) -> Path:
    path = Path(data_dir) / lang / f"{split}.jsonl"
    if not path.exists():
        raise XltError(f"{path}: missing; prepared languages in {data_dir}: "
                       f"{', '.join(sorted(p.name for p in Path(data_dir).iterdir() if p.is_dir())) or 'none'}")
    return path


def is_collapsed(meta: dict) -> bool:
    """Whether a saved model (its xlt_model.json) is a collapsed run: its dev predictions were
    nearly all one label, its dev score not above the majority baseline, or its dev labels not
    clearly more often right than the majority label (xlt.metrics.COLLAPSE_RULE; `finetune` records
    the verdict and the rule; older models carry none)."""
    return bool((meta.get("collapse") or {}).get("collapsed", False))


def scored_collapse(kind, task, preds: list, golds: list, meta: dict) -> dict | None:
    """The share test of the model's collapse rule (xlt.metrics.collapse_verdict; the rule its
    xlt_model.json records, else COLLAPSE_RULE) on a set of scored predictions: nearly all one
    label where the gold is not. The baseline test does not apply (no baseline is given): a
    test score below the majority baseline is a transfer result, not a collapse. None: the
    kind has no labels."""
    # deferred: loads numpy, sklearn only when this runs
    from xlt.metrics import COLLAPSE_RULE, collapse_verdict

    measure = kind.collapse_measure(task, preds, golds)
    if measure is None:
        return None
    rule = {**COLLAPSE_RULE, **((meta.get("collapse") or {}).get("rule") or {})}
    return collapse_verdict(measure, rule)


def model_collapse_flag(model_dir: str | Path) -> dict:
    """{"collapsed": bool} of a saved model directory (its xlt_model.json), {} where there is
    none: for the analyses that label their rows with the model they read."""
    meta = Path(model_dir) / "xlt_model.json"
    return {"collapsed": is_collapsed(read_json(meta))} if meta.exists() else {}


# A retried run's seed: far from any configured seed, so that a retry never repeats a model
# another seed of the same table already trained.
RETRY_SEED_STRIDE = 1000


def finetune(job: FinetuneJob, kill_after_steps: int | None = None) -> list[dict]:
    """Fine-tune the job's seeds (a pack's first attempts in one job: xlt.engine.packed; config
    `engine.pack`, xlt.workflow.packs), each model saved to its own `job.outs[k]`; then judge
    whether each selected model collapsed (xlt.metrics.collapse_verdict by `job.collapse_rule`,
    the config's `collapse:` thresholds; default xlt.metrics.COLLAPSE_RULE): its dev predictions
    nearly all one class / tag / relation, or its dev score not above the dev set's majority
    baseline. The verdict, the rule and each attempt go into the model's xlt_model.json under
    `collapse`. A collapsed run is retried, alone, up to `job.collapse_retries` times with seed +
    1000·k; the last attempt is kept either way, flagged, never dropped. Returns each seed's summary.

    `job.aux`: auxiliary streams (xlt.dag.targets.aux_streams): task streams [{"task", "data",
    "weight", "batch_size"?}], each reading the training split of its data folder in the training
    languages; an aligned-pairs stream reads its sample file ("data") as it is; X-Mixup
    tagging's source model {"kind": "soft_labels", "model"} passes as it is.

    `job.oracle_langs[k]`: target-dev ("oracle") selection beside seed k's own, for these
    languages' dev and test sets (xlt.engine.recipes.finetune.train's `oracle`: oracle.json beside
    the model; not part of its training config, so the model and its provenance are as without).

    `kill_after_steps`: testing aid, the process SIGKILLs itself after that many steps."""
    train_files, dev_files = _split_files(job)
    if not job.packed:
        return [_judged(job, 0, train_files, dev_files, kill_after_steps)]
    from xlt.engine.recipes.packed_finetune import train_packed  # torch: only in the job

    runs = [_run_config(job, seed) for seed in job.seeds]
    firsts = train_packed([c for c, _ in runs], train_files, dev_files, job.outs, job.checkpoint_dirs,
                          job.pack_checkpoint_dir, [r for _, r in runs], kill_after_steps=kill_after_steps,
                          oracles=[_oracle_files(job.data, langs) or None for langs in job.oracle_langs])
    return [_judged(job, k, train_files, dev_files, None, trained=first) for k, first in enumerate(firsts)]


def _judged(job: FinetuneJob, i: int, train_files: list[Path], dev_files: list[Path], kill_after_steps: int | None,
            trained: dict | None = None) -> dict:
    """Seed i's collapse verdict (`finetune`), its first attempt trained here or, in a pack,
    already (`trained`: its summary), and its retries, alone."""
    from xlt.engine.recipes.finetune import train  # torch: only in the job
    # deferred: loads numpy, sklearn only when this runs
    from xlt.metrics import COLLAPSE_RULE, collapse_verdict

    seed, out, checkpoint_dir = job.seeds[i], job.outs[i], job.checkpoint_dirs[i]
    aux_train = [dict(a) if a.get("kind") == "soft_labels"
                 else {**{k: v for k, v in a.items() if k != "data"}, "files": [a["data"]]} if a.get("kind") == "aligned_pairs"
                 else {"task": a["task"], "weight": a["weight"], "files": [split_file(a["data"], lang, "train") for lang in job.train_langs],
                       **({"batch_size": a["batch_size"]} if "batch_size" in a else {})} for a in job.aux]
    rule = {**COLLAPSE_RULE, **job.collapse_rule}
    oracle = _oracle_files(job.data, job.oracle_langs[i])
    attempts = []
    for attempt in range(job.collapse_retries + 1):
        run_seed = seed + RETRY_SEED_STRIDE * attempt
        cfg, resolved = _run_config(job, run_seed)
        # A retry checkpoints apart: a rerun after a kill replays attempt 0 from scratch (its
        # checkpoint was cleared when it finished) and must not resume the retry's state.
        ckpt_dir = checkpoint_dir if attempt == 0 else f"{checkpoint_dir}.retry{attempt}"
        if attempt == 0 and trained is not None:
            summary = trained
        else:
            summary = train(cfg, train_files, dev_files, out, ckpt_dir, resolved_config=resolved, aux=aux_train,
                            kill_after_steps=kill_after_steps, oracle=oracle or None, tensorboard_dir=job.tensorboard_dir)
        if int(os.environ.get("RANK", "0")) != 0:  # under torchrun the main rank checks and writes
            return summary
        measure = summary["dev_collapse"]  # of the selected epoch's dev predictions, made in training
        # a kind without labels (span QA) has nothing to judge: never flagged
        attempts.append({"seed": run_seed, **(collapse_verdict(measure, rule) if measure else {"collapsed": False, "by": []})})
        if not attempts[-1]["collapsed"] or attempt == job.collapse_retries:
            break
        shutil.rmtree(out)
    collapse = {"collapsed": attempts[-1]["collapsed"], "by": attempts[-1]["by"], "seed": attempts[-1]["seed"],
                "retries": job.collapse_retries, "rule": rule, "attempts": attempts}
    meta_path = Path(out) / "xlt_model.json"
    write_json(meta_path, {**read_json(meta_path), "collapse": collapse})
    return {**summary, "collapse": collapse}


def _split_files(job: FinetuneJob) -> tuple[list[Path], list[Path]]:
    """The training files of the training languages, and the dev files model selection reads."""
    t = get_task(job.task)
    for lang in job.train_langs:
        check_language(t, lang)
    train_files = [split_file(job.data, lang, "train") for lang in job.train_langs]
    # Model selection on the dev sets of the training language(s): no target-language peeking;
    # or of the languages the profile names (`dev_languages`: translate-train data has English dev only).
    dev_files = [split_file(job.data, lang, "dev") for lang in job.hparams.get("dev_languages") or job.train_langs]
    return train_files, dev_files


def _oracle_files(data_dir: str, oracle_langs: list[str]) -> dict:
    return {lang: {split: str(split_file(data_dir, lang, split)) for split in ("dev", "test")} for lang in oracle_langs}


def _run_config(job: FinetuneJob, seed: int) -> tuple[TrainConfig, dict]:
    """One run's TrainConfig and the resolved config its provenance records."""
    cfg = job.train_config(seed)
    return cfg, {"task": job.task, "train_langs": job.train_langs, "data_dir": job.data, **cfg.to_dict(),
                 **({"aux": job.aux} if job.aux else {})}


def evaluate_model(model_dir: str, data_dir: str, split: str, langs: list[str], out: str, predictions: str,
                   device: str = "auto", evaluation: dict | None = None,
                   answer_languages: dict[str, str] | None = None) -> dict:
    """Metrics per language (and their average) on one split; predictions beside them.

    "collapsed": the model's own verdict (its dev predictions, `finetune`), or these scored
    predictions, all languages together, nearly all one label (the share test of the model's
    recorded rule): a model whose scored path differs from its dev path (X-Mixup's
    translate-test side) is judged on what the table shows too (`scored_collapse`).
    `evaluation`: the config's block (precision, batch_tokens; xlt.engine.evaluation).
    `answer_languages`: QA only, a set declaring MLQA's answer normalisation (config
    data.qa.sets.<set>.answer_normalisation; xlt.dag.targets.answer_languages): each language ->
    the answer language the MLQA script scores it with; None: SQuAD v1.1's for every language.
    The report records it (xlt.stats rescoring reads it back)."""

    # torch: only in the job
    from xlt.engine.evalset import evaluate_records, load_records
    # deferred: loads numpy, safetensors, torch only when this runs
    from xlt.engine.evaluation import eval_mode
    from xlt.engine.model import load_model
    from xlt.engine.runtime import pick_device

    if answer_languages is not None and sorted(answer_languages) != sorted(langs):
        raise XltError(f"evaluation of {data_dir}: answer languages given for {', '.join(sorted(answer_languages))}, "
                       f"but the languages scored are {', '.join(langs)}")
    dev = pick_device(device)
    mode = eval_mode(evaluation, dev)
    model, tokenizer, meta = load_model(model_dir, dev)
    task = get_task(meta["task"])
    cfg = TrainConfig.from_dict(meta["train_config"])
    results, rows, files = {}, [], []
    all_preds, all_golds = [], []
    for lang in langs:
        path = split_file(data_dir, lang, split)
        files.append(path)
        records = load_records([path])
        preds, metrics = evaluate_records(model, tokenizer, task, records, cfg, dev, mode,
                                          answer_lang=(answer_languages or {}).get(lang))
        results[lang] = {**metrics, "n": len(records)}
        rows.extend({"lang": lang, "id": r.get("id"), "prediction": p} for r, p in zip(records, preds))
        all_preds += preds
        all_golds += [model.kind.gold(task, r) for r in records]
    avg = {m: sum(results[lang][m] for lang in langs) / len(langs) for m in task.metrics}
    scored = scored_collapse(model.kind, task, all_preds, all_golds, meta)
    report = {
        "task": task.name,
        "split": split,
        "model": str(model_dir),
        "seed": meta["provenance"]["seed"],
        "evaluation": mode.describe(),
        # MLQA's answer normalisation per language (absent: SQuAD v1.1's)
        **({"answer_languages": dict(answer_languages)} if answer_languages is not None else {}),
        "metrics": results,
        "average": avg,
        "model_provenance": {"code": meta["provenance"]["code"], "data_sha256": meta["provenance"]["data_sha256"]},
        # the model collapsed (xlt.metrics.collapse_verdict; tables mark and count it), on its
        # dev path or on these predictions
        "collapsed": is_collapsed(meta) or bool(scored and scored["collapsed"]),
        **({"scored_collapse": scored} if scored else {}),
        "provenance": provenance({"model": str(model_dir), "split": split, "langs": langs}, meta["provenance"]["seed"], files),
    }
    write_jsonl(predictions, rows)
    write_json(out, report)
    return report
