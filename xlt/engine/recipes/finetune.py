"""Fine-tuning: the task's stream (plus optional auxiliary task streams), its loss terms,
dev evaluation after every epoch with model selection, the selected model saved with its
spec and provenance."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import torch

from xlt.engine.config import ORACLE_FILE, TrainConfig
from xlt.engine.evalset import EvalSet, load_records, max_positions
from xlt.engine.heads import PooledClassificationHead
from xlt.engine.kinds import Kind, resolve
from xlt.engine.loop import Loop
from xlt.engine.model import ModelSpec, build_model, load_encoder, load_model, save_model
from xlt.engine.objectives import Objective, task_term
from xlt.engine.recipes.adjust import aligned_pairs_stream, alignment_terms
from xlt.engine.recipes import xmixup
from xlt.engine.reference import FrozenReference
from xlt.engine.runtime import Checkpointer, Dist, build_optimizer, build_scheduler, resolve_precision, seed_everything, set_tf32
from xlt.engine.streams import Stream
from xlt.engine.tensorboard import scalar_writer
from xlt.errors import XltError
from xlt.io import write_json
from xlt.provenance import provenance
from xlt.registry import Task


ALIGNED_PAIRS = "aligned_pairs"  # the kind (and stream name) of continual learning's auxiliary stream
SOFT_LABELS = "soft_labels"  # X-Mixup tagging: {"kind", "model"}, the source model whose tags the target side learns


def _seed_of(seed: int, name: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{name}".encode()).digest()[:4], "little")


def build_task_model(cfg: TrainConfig, encoder, aux: list[tuple[Task, Kind]] = (), main: tuple[Task, Kind] | None = None):
    """The model of `cfg` (its task resolved once by the job: `main`, else here): the main
    head's initial weights depend on the seed alone
    (re-seeded after loading the encoder, whatever loading draws), so models of one seed
    start from one initialisation whatever their training data, as the underspec paper's
    θ_src / θ_tgt / θ_bi must; auxiliary heads draw from their own seeds, so adding one
    leaves the main head and the training RNG as they were."""
    seed_everything(cfg.seed)
    main = main or resolve(cfg.task)
    dropout = cfg.dropout if cfg.head_dropout is None else cfg.head_dropout
    classifier = spec_classifier(cfg.classifier, encoder.config)
    spec = ModelSpec(task=cfg.task, extras=[dict(e) for e in cfg.extras], aux_tasks=[], dropout=dropout, classifier=classifier)
    model = build_model(spec, encoder, {cfg.task: main})
    adopt_pooler(model.head, encoder)
    for task, kind in aux:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(_seed_of(cfg.seed, task.name))
            model.heads[task.name] = kind.build_head(task, encoder.config.hidden_size, dropout, classifier)
            adopt_pooler(model.heads[task.name], encoder)
    if getattr(encoder, "pooler", None) is not None:
        encoder.pooler = None  # the heads hold copies; the saved encoder stays a base model
    model.spec.aux_tasks = [task.name for task, _ in aux]
    return model


def spec_classifier(classifier: str, encoder_config) -> str:
    """TrainConfig.classifier as a model spec's head (heads.CLASSIFIERS): "hf_sequence_classifier"
    is "pooler" where Hugging Face's sequence classifier for this architecture reads the
    pretrained pooler (BERT), else "dense" (RoBERTa's fresh dense head); asked of transformers
    itself, built on the meta device (no weights)."""
    if classifier != "hf_sequence_classifier":
        return classifier
    from transformers import AutoModelForSequenceClassification

    with torch.device("meta"):
        hf = AutoModelForSequenceClassification.from_config(encoder_config)
    return "pooler" if getattr(hf.base_model, "pooler", None) is not None else "dense"


def adopt_pooler(head: torch.nn.Module, encoder) -> None:
    """A pooled classification head starts from the encoder's pooler (loaded with it:
    `load_encoder(..., pooler=True)`), as Hugging Face's does; other heads are left alone."""
    if not isinstance(head, PooledClassificationHead):
        return
    if getattr(encoder, "pooler", None) is None:
        raise XltError("a pooled classification head needs the encoder loaded with its pooler (load_encoder(..., pooler=True))")
    head.adopt_pooler(encoder.pooler, encoder.config.initializer_range)


def oracle_step(state: dict, epoch: int, dev: dict[str, dict], test_of, metric: str) -> None:
    """One epoch of oracle selection: record each language's dev `metric`; where it beats the
    language's best so far (ties keep the earlier epoch), score its test set (`test_of(lang)`)
    and keep it. `state["oracle"]` (checkpointed with the loop's state): {"best": {lang:
    {"epoch", "dev", "test"}}, "history": [{"epoch", "dev": {lang: score}}]}."""
    book = state.setdefault("oracle", {"best": {}, "history": []})
    book["history"].append({"epoch": epoch + 1, "dev": {lang: m[metric] for lang, m in dev.items()}})
    for lang, m in dev.items():
        best = book["best"].get(lang)
        if best is None or m[metric] > best["dev"]:
            book["best"][lang] = {"epoch": epoch + 1, "dev": m[metric], "test": test_of(lang)}


def train(
    cfg: TrainConfig,
    train_files: list[str],
    dev_files: list[str],
    out_dir: str | Path,
    checkpoint_dir: str | Path,
    resolved_config: dict | None = None,
    aux: list[dict] | None = None,
    stop_after_steps: int | None = None,
    kill_after_steps: int | None = None,
    oracle: dict[str, dict[str, str]] | None = None,
    tensorboard_dir: str | Path | None = None,
) -> dict:
    """Fine-tune and save the selected model to `out_dir`; return its summary.

    `oracle`: target-dev ("oracle") selection beside the model's own, {lang: {"dev": file,
    "test": file}}: after every epoch each language's dev set is scored, and where it beats that
    language's best so far its test set too; `ORACLE_FILE` beside the model keeps, per language,
    the test scores of the epoch its own dev liked best (`oracle_step`). It reads no RNG and
    leaves the weights, the selection and the model's provenance as they are.

    `aux`: auxiliary streams; a batch of each is drawn every step and its loss added with its
    weight. A task stream {"task", "files", "weight", "batch_size"?} adds that task's loss
    (multi-task learning); an aligned-pairs stream {"kind": "aligned_pairs", "files",
    "weight", "anchor_weight", "reference", "batch_size"?, "max_length"?, "word_vectors"?,
    "tokens"?} adds the adjustment's two terms (xlt.engine.recipes.adjust) with `weight` and
    `anchor_weight`, against the frozen encoder `reference` (continual learning, the adjust
    paper's Eq. 2). {"kind": "soft_labels", "model": <dir>} is no stream: X-Mixup tagging's
    source model (a saved English-trained tagger), whose tag distributions on the target
    side are that side's labels (xlt.engine.recipes.xmixup.soft_labels).
    With the xmixup extra in `cfg.extras`, the training records are paired (each with its
    English "source"; xlt.engine.recipes.xmixup) and so is the task's stream; dev records
    that carry a "source" are predicted from both sides, those without from their own.
    Testing aids: `stop_after_steps` stops like a grace signal would (checkpoint, then
    Preempted); `kill_after_steps` SIGKILLs this process after that many steps.
    """
    task, kind = resolve(cfg.task)  # the one lookup: the task and its kind travel from here
    aux = aux or []
    if bad := sorted({a.get("kind") for a in aux} - {None, "task", ALIGNED_PAIRS, SOFT_LABELS}):
        raise XltError(f"auxiliary stream kind(s) {bad}; allowed: task, {ALIGNED_PAIRS}, {SOFT_LABELS}")
    teachers = [a["model"] for a in aux if a.get("kind") == SOFT_LABELS]
    if len(teachers) > 1 or (teachers and not any(e.get("name") == "xmixup" for e in cfg.extras)):
        raise XltError(f"an auxiliary {SOFT_LABELS!r} entry is X-Mixup's source model: at most one, "
                       f"with the xmixup extra; got {len(teachers)}")
    pair_aux = [a for a in aux if a.get("kind") == ALIGNED_PAIRS]
    if len(pair_aux) > 1:
        raise XltError(f"at most one auxiliary stream of kind {ALIGNED_PAIRS!r}; got {len(pair_aux)}")
    aux = [a for a in aux if a.get("kind", "task") == "task"]
    aux_tasks = [resolve(a["task"]) for a in aux]
    xmixup.check_config(cfg.extras, kind, bool(teachers))
    dist = Dist()
    device = dist.device(cfg.device)
    metric = cfg.select_metric or task.metrics[0]
    if metric not in task.metrics:
        raise XltError(f"select_metric={metric!r} is not a metric of task {task.name}; allowed: {', '.join(task.metrics)}")
    if device.type == "cuda":
        set_tf32(True)
    precision = resolve_precision(cfg.precision, device)

    seed_everything(cfg.seed)
    encoder, tokenizer = load_encoder(cfg.encoder, cfg.encoder_revision, dropout=cfg.dropout,
                                      pooler=cfg.classifier == "hf_sequence_classifier")
    model = build_task_model(cfg, encoder, aux_tasks, (task, kind)).to(device)
    model.fast_path = cfg.fast_path != "off"
    if dist.world > 1:
        torch.manual_seed(cfg.seed + 1000 * dist.rank)  # same init everywhere, own dropout per rank

    mixup = model.xmixup
    if mixup is not None:
        train_records, back_translated = xmixup.read_paired_records(task, train_files, cfg.max_train_examples)
    else:
        train_records = load_records(train_files, cfg.max_train_examples)
    positions = max_positions(model, tokenizer)
    dev_sets = {str(p): EvalSet.build(task, load_records([p]), tokenizer, cfg, positions, name=str(p), kind=kind,
                                      with_source=mixup is not None)
                for p in dev_files}
    if mixup is not None:
        streams = {task.name: xmixup.paired_stream(task.name, task, kind, train_records, tokenizer, cfg)}
        soft = None
        if kind.name == "tagging" and teachers:
            with torch.random.fork_rng(devices=[]):  # loading it leaves the training RNG as it was
                teacher, teacher_tok, _ = load_model(teachers[0], device)
            xmixup.check_teacher(teacher, task, tokenizer, teacher_tok, teachers[0])
            soft = xmixup.soft_labels(teacher, streams[task.name], cfg.eval_batch_size, device)
            del teacher
        terms = xmixup.xmixup_terms(mixup, task.name, cfg.seed, tokenizer.pad_token_id, kind, soft)
    else:
        enc = kind.encode(task, train_records, tokenizer, cfg, train=True)
        streams = {task.name: Stream(task.name, enc.features, cfg.batch_size, cfg.seed, tokenizer.pad_token_id,
                                     kind.pad_values, kind.scalars)}
        terms = [task_term(task, kind)]
    for a, (at, akind) in zip(aux, aux_tasks):
        if at.name in streams:
            raise XltError(f"auxiliary task {at.name} is already a stream of this job")
        aenc = akind.encode(at, load_records(a["files"], cfg.max_train_examples), tokenizer, cfg, train=True)
        streams[at.name] = Stream(at.name, aenc.features, a.get("batch_size", cfg.batch_size), cfg.seed,
                                  tokenizer.pad_token_id, akind.pad_values, akind.scalars)
        terms.append(task_term(at, akind, weight=float(a["weight"])))
    for a in pair_aux:
        with torch.random.fork_rng(devices=[]):  # loading f₀ leaves the training RNG as it was
            original, _ = load_encoder(a["reference"])
        streams[ALIGNED_PAIRS] = aligned_pairs_stream(
            ALIGNED_PAIRS, a["files"], tokenizer, int(a.get("batch_size", cfg.batch_size)), cfg.seed,
            int(a.get("max_length", cfg.max_length)), a.get("word_vectors", "avg"), a.get("tokens", "all"))
        terms += alignment_terms(FrozenReference(original.to(device), model.fast_path), ALIGNED_PAIRS, float(a["weight"]),
                                 float(a.get("anchor_weight", 1.0)))
    total = cfg.epochs * streams[task.name].per_epoch()
    ddp_model = dist.wrap(model, device)
    optimizer = build_optimizer(ddp_model, cfg.lr, cfg.weight_decay, cfg.adam_betas, cfg.adam_eps, device)
    scheduler = build_scheduler(optimizer, total, cfg.warmup_ratio, cfg.schedule)
    ckpt = Checkpointer(checkpoint_dir)

    # what a collapse verdict compares the dev score with: the majority baseline of the same
    # dev sets, averaged as the score is (None where the kind has none: QA, parsing)
    baselines = [kind.majority_baseline(task, ev.golds) for ev in dev_sets.values()]
    baseline = None if None in baselines else float(np.mean([b[metric] for b in baselines]))
    dev_golds = [g for ev in dev_sets.values() for g in ev.golds]
    oracle_sets = {lang: {split: dev_sets.get(str(f)) or EvalSet.build(task, load_records([f]), tokenizer, cfg, positions,
                                                                       name=str(f), kind=kind, with_source=mixup is not None)
                          for split, f in files.items()} for lang, files in (oracle or {}).items()}

    def select(state: dict, epoch: int) -> None:
        scored = {p: ev.score(model, device) for p, ev in dev_sets.items()}
        dev_metrics = {p: m for p, (_, m) in scored.items()}
        if oracle_sets:
            oracle_step(state, epoch, {lang: (scored.get(sets["dev"].name) or sets["dev"].score(model, device))[1]
                                       for lang, sets in oracle_sets.items()},
                        lambda lang: oracle_sets[lang]["test"].score(model, device)[1], metric)
        score = float(np.mean([m[metric] for m in dev_metrics.values()]))
        state["history"].append({"epoch": epoch + 1, "step": state["global_step"], "dev": dev_metrics, metric: score})
        if cfg.select == "last" or state["best"] is None or score > state["best"]:
            state["best"], state["best_epoch"] = score, epoch + 1
            # the selected model's dev predictions, all dev sets together: what tells whether it
            # collapsed (xlt.finetune judges it by the config's rule)
            state["dev_collapse"] = kind.collapse_measure(task, [x for preds, _ in scored.values() for x in preds],
                                                          dev_golds, score, baseline)
            if dist.main:
                ckpt.save_best(model)

    loop = Loop(model=ddp_model, raw_model=model, optimizer=optimizer, scheduler=scheduler, streams=streams,
                primary=task.name, objective=Objective(terms), device=device, dist=dist, checkpointer=ckpt,
                epochs=cfg.epochs, max_grad_norm=cfg.max_grad_norm, checkpoint_every=cfg.checkpoint_every,
                checkpoint_minutes=cfg.checkpoint_minutes, on_epoch_end=select, desc=f"{task.name} seed{cfg.seed}", progress=cfg.progress,
                stop_after_steps=stop_after_steps, kill_after_steps=kill_after_steps, precision=precision,
                scalars=scalar_writer(tensorboard_dir) if dist.main else None)
    state = loop.run()

    dist.barrier()
    model.load_state_dict(ckpt.best_state())
    # rank 0 clears the checkpoint directory below: no rank may still be reading best.safetensors
    # (a rank descheduled here on a busy machine once found it gone)
    dist.barrier()
    summary = {
        "select_metric": metric,
        "selected_epoch": state["best_epoch"],
        "selected_dev_score": state["best"],
        "dev_collapse": state.get("dev_collapse"),
        "global_steps": state["global_step"],
        "steps_this_process": state["steps_this_process"],
        "resumed_from": state["resumed_from"],
        "history": state["history"],
        "losses": state["losses"],
        "train_examples": len(train_records),
        "train_features": len(streams[task.name].features),
        "streams": {n: {"features": len(s.features), "batch_size": s.batch_size} for n, s in streams.items()},
        "seconds_this_process": state["seconds_this_process"],
        "seconds_evaluating": state["seconds_evaluating"],
        "seconds_checkpointing": state["seconds_checkpointing"],
        "world_size": dist.world,
        "precision": precision,
    }
    aux_files = [f for a in [*aux, *pair_aux] for f in a["files"]]
    meta = {
        "labels": list(task.labels) if task.labels else None,
        "train": summary,
        "provenance": provenance(resolved_config or cfg.to_dict(), cfg.seed, [*train_files, *dev_files, *aux_files]),
        "train_config": cfg.to_dict(),
    }
    if mixup is not None:
        meta["xmixup"] = {
            "back_translated": back_translated,
            "scheduled_sampling": ("gold source or back-translation, p = k / (k + exp(step / k))" if back_translated
                                   else "gold source always: no back-translations in the training data"),
            **({"soft_labels": {"model": str(teachers[0]), "words": int(soft.shape[0])}} if soft is not None else {}),
        }
    if dist.main:
        save_model(model, tokenizer, out_dir, meta)
        if oracle:
            write_json(Path(out_dir) / ORACLE_FILE, {
                "task": task.name, "seed": cfg.seed, "select_metric": metric, "selected_epoch": state["best_epoch"],
                "languages": state["oracle"]["best"], "history": state["oracle"]["history"],
                "provenance": provenance({"oracle": oracle}, cfg.seed, [f for files in oracle.values() for f in files.values()]),
            })
        ckpt.clear()
    dist.barrier()
    dist.close()
    return summary
