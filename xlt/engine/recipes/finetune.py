"""Fine-tuning: the task's stream (plus optional auxiliary task streams), its loss terms,
dev evaluation after every epoch with model selection, the selected model saved with its
spec and provenance. What a paper adds (a paired task stream, streams of its own, their
terms) comes in through the extensions a run's configuration names
(xlt.engine.recipes.extensions)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import torch

from xlt.engine.train_config import ORACLE_FILE, TrainConfig
from xlt.engine.evalset import EvalSet, load_records, max_positions, record_files
from xlt.engine.heads import PooledClassificationHead
from xlt.engine.kinds import Kind, resolve
from xlt.engine.loop import Loop
from xlt.engine.model import ModelSpec, build_model, load_encoder, save_model
from xlt.engine.objectives import Objective, task_term
from xlt.engine.recipes.extensions import FinetuneRun, compose
from xlt.engine.runtime import Checkpointer, Dist, build_optimizer, build_scheduler, resolve_precision, seed_everything, set_tf32
from xlt.engine.streams import Stream
from xlt.engine.tensorboard import scalar_writer
from xlt.errors import XltError
from xlt.io import write_json
from xlt.provenance import provenance
from xlt.registry import Task


def _seed_of(seed: int, name: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{name}".encode()).digest()[:4], "little")


def build_task_model(cfg: TrainConfig, encoder, aux: list[tuple[Task, Kind]] = (), main: tuple[Task, Kind] | None = None):
    """The model of `cfg` (its task resolved once by the job: `main`, else here): the main
    head's initial weights depend on the seed alone
    (re-seeded after loading the encoder, whatever loading draws), so models of one seed
    start from one initialisation whatever their training data, as models interpolated
    with each other must (e.g. θ_src / θ_tgt / θ_bi of one seed); auxiliary heads draw from their own seeds, so adding one
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
    # deferred: loads transformers only when this runs
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


def _task_stream_owner(extensions: list, task: Task, files: list, cap: int | None) -> tuple | None:
    """(the extension that reads the task's records itself, those records), or None: the engine reads them."""
    owners = [(ext, records) for ext in extensions if (records := ext.train_records(task, files, cap)) is not None]
    if len(owners) > 1:
        raise XltError(f"fine-tune extensions {[ext.name for ext, _ in owners]} each give the task's own stream; at most one may")
    return owners[0] if owners else None


def feature_languages(features: list[dict], files: list, cap: int | None) -> list[int]:
    """Each feature's training language, as the index of the file its record came from (one
    training file per language): what sampler one_language_per_batch groups batches by."""
    of_record = record_files(files, cap)
    return [of_record[f["example"]] for f in features]


def apply_sampler(stream: Stream, cfg: TrainConfig, files: list) -> Stream:
    """`stream` (features read from `files`) drawing its batches by `cfg.sampler`."""
    stream.sampler = cfg.sampler
    if cfg.sampler == "one_language_per_batch":
        stream.groups = feature_languages(stream.features, files, cfg.max_train_examples)
    return stream


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


class DevSelection:
    """Dev evaluation and model selection of one model, at each epoch's end and every
    `eval_steps` steps (TrainConfig.steps_between_evals): the one selection step of `train` and
    of each model of a pack (xlt.engine.recipes.packed_finetune)."""

    def __init__(self, task: Task, kind: Kind, cfg: TrainConfig, metric: str, dev_sets: dict, oracle_sets: dict, device):
        self.task, self.kind, self.cfg, self.metric, self.device = task, kind, cfg, metric, device
        self.dev_sets, self.oracle_sets = dev_sets, oracle_sets
        # what a collapse verdict compares the dev score with: the majority baseline of the same
        # dev sets, averaged as the score is (None where the kind has none: QA, parsing)
        baselines = [kind.majority_baseline(task, ev.golds) for ev in dev_sets.values()]
        self.baseline = None if None in baselines else float(np.mean([b[metric] for b in baselines]))
        self.dev_golds = [g for ev in dev_sets.values() for g in ev.golds]

    def __call__(self, model, state: dict, epoch: int, save_best) -> bool:
        """Score `model` on the dev sets (and its oracle languages'), record the evaluation in
        `state`; True if it became the selected model (then `save_best()` keeps its weights)."""
        metric, device, oracle_sets = self.metric, self.device, self.oracle_sets
        scored = {p: ev.score(model, device) for p, ev in self.dev_sets.items()}
        dev_metrics = {p: m for p, (_, m) in scored.items()}
        if oracle_sets:
            oracle_step(state, epoch, {lang: (scored.get(sets["dev"].name) or sets["dev"].score(model, device))[1]
                                       for lang, sets in oracle_sets.items()},
                        lambda lang: oracle_sets[lang]["test"].score(model, device)[1], metric)
        score = float(np.mean([m[metric] for m in dev_metrics.values()]))
        state["history"].append({"epoch": epoch + 1, "step": state["global_step"], "dev": dev_metrics, metric: score})
        if self.cfg.select == "last" or state["best"] is None or score > state["best"]:
            state["best"], state["best_epoch"], state["best_step"] = score, epoch + 1, state["global_step"]
            # the selected model's dev predictions, all dev sets together: what tells whether it
            # collapsed (xlt.stages.finetune judges it by the config's rule)
            state["dev_collapse"] = self.kind.collapse_measure(self.task, [x for preds, _ in scored.values() for x in preds],
                                                               self.dev_golds, score, self.baseline)
            save_best()
            return True
        return False


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
    (multi-task learning). An entry of another kind {"kind", …} goes to the extension
    registered for that kind (xlt.engine.recipes.extensions), as does an extra of `cfg.extras`
    that trains through one: it may read the task's records and give its stream and terms
    (e.g. paired with their English sources), add streams and terms of its own, have dev
    records with a "source" predicted from both sides, and add to the model's metadata; an
    entry's "files" count in the model's provenance.
    Testing aids: `stop_after_steps` stops like a grace signal would (checkpoint, then
    Preempted); `kill_after_steps` SIGKILLs this process after that many steps.
    """
    task, kind = resolve(cfg.task)  # the one lookup: the task and its kind travel from here
    aux, extensions = compose(cfg, aux or [])
    for ext in extensions:
        ext.check(cfg, kind)
    aux_tasks = [resolve(a["task"]) for a in aux]
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

    run = FinetuneRun(cfg=cfg, task=task, kind=kind, model=model, tokenizer=tokenizer, device=device)
    # the task's records and stream: the extension's that gives them (at most one), else the engine's
    owner = _task_stream_owner(extensions, task, train_files, cfg.max_train_examples)
    train_records = owner[1] if owner else load_records(train_files, cfg.max_train_examples)
    with_source = any(ext.paired_eval for ext in extensions)
    positions = max_positions(model, tokenizer)
    dev_sets = {str(p): EvalSet.build(task, load_records([p]), tokenizer, cfg, positions, name=str(p), kind=kind,
                                      with_source=with_source)
                for p in dev_files}
    if owner:
        stream, terms = owner[0].task_stream(run, train_records)
        if cfg.sampler == "one_language_per_batch":
            raise XltError(f"sampler one_language_per_batch: fine-tune extension {owner[0].name} builds the task's "
                           "stream, whose examples carry no training language")
        stream.sampler = cfg.sampler
        streams, terms = {task.name: stream}, list(terms)
    else:
        enc = kind.encode(task, train_records, tokenizer, cfg, train=True)
        streams = {task.name: apply_sampler(Stream(task.name, enc.features, cfg.batch_size, cfg.seed, tokenizer.pad_token_id,
                                                   kind.pad_values, kind.scalars), cfg, train_files)}
        terms = [task_term(task, kind)]
    for a, (at, akind) in zip(aux, aux_tasks):
        if at.name in streams:
            raise XltError(f"auxiliary task {at.name} is already a stream of this job")
        aenc = akind.encode(at, load_records(a["files"], cfg.max_train_examples), tokenizer, cfg, train=True)
        streams[at.name] = apply_sampler(Stream(at.name, aenc.features, a.get("batch_size", cfg.batch_size), cfg.seed,
                                                tokenizer.pad_token_id, akind.pad_values, akind.scalars), cfg, a["files"])
        terms.append(task_term(at, akind, weight=float(a["weight"])))
    for ext in extensions:
        more, more_terms = ext.streams(run)
        if taken := sorted(set(more) & set(streams)):
            raise XltError(f"fine-tune extension {ext.name}: stream(s) {taken} are already streams of this job")
        streams.update(more)
        terms += more_terms
    total = cfg.epochs * streams[task.name].per_epoch()
    eval_steps = cfg.steps_between_evals(streams[task.name].per_epoch())  # cfg.eval_steps, or evals_per_epoch's
    ddp_model = dist.wrap(model, device)
    optimizer = build_optimizer(ddp_model, cfg.lr, cfg.weight_decay, cfg.adam_betas, cfg.adam_eps, device)
    scheduler = build_scheduler(optimizer, total, cfg.warmup_ratio, cfg.schedule)
    ckpt = Checkpointer(checkpoint_dir)

    oracle_sets = {lang: {split: dev_sets.get(str(f)) or EvalSet.build(task, load_records([f]), tokenizer, cfg, positions,
                                                                       name=str(f), kind=kind, with_source=with_source)
                          for split, f in files.items()} for lang, files in (oracle or {}).items()}
    selection = DevSelection(task, kind, cfg, metric, dev_sets, oracle_sets, device)

    def select(state: dict, epoch: int) -> bool:
        return selection(model, state, epoch, (lambda: ckpt.save_best(model)) if dist.main else lambda: None)

    loop = Loop(model=ddp_model, raw_model=model, optimizer=optimizer, scheduler=scheduler, streams=streams,
                primary=task.name, objective=Objective(terms), device=device, dist=dist, checkpointer=ckpt,
                epochs=cfg.epochs, max_grad_norm=cfg.max_grad_norm, max_grad_value=cfg.max_grad_value,
                eval_steps=eval_steps, on_eval_step=select, checkpoint_every=cfg.checkpoint_every,
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
        **({"selected_step": state["best_step"]} if eval_steps else {}),  # several evaluations an epoch
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
    aux_files = [f for a in [*aux, *(e for ext in extensions for e in ext.entries)] for f in a.get("files", [])]
    meta = {
        "labels": list(task.labels) if task.labels else None,
        "train": summary,
        "provenance": provenance(resolved_config or cfg.to_dict(), cfg.seed, [*train_files, *dev_files, *aux_files]),
        "train_config": cfg.to_dict(),
    }
    for ext in extensions:
        meta.update(ext.meta())
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
