"""K fine-tunes of one recipe (its seeds) in one job: `train_packed` does for each model what
`xlt.engine.recipes.finetune.train` does alone — its seed's initialisation, data order and
dropout masks, its own AdamW state, dev selection, best weights, checkpointed selection and
output directory — while one step trains all of them (xlt.engine.packed.PackedLoop).

Checkpoints: the pack's loop state is one checkpoint (`pack_checkpoint_dir`: stacked weights,
optimizer, every model's generator and stream cursor, written whole or not at all), so a pack
killed anywhere resumes every model at one step; each model's selected weights live in its own
checkpoint directory, as alone. A pack that cannot stack (xlt.engine.packed.why_not_packable:
an architecture without the lean forward, say) trains its models one after another with
`train`: the same outputs, one job.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from xlt.engine.train_config import ORACLE_FILE, TrainConfig
from xlt.engine.evalset import EvalSet, load_records, max_positions
from xlt.engine.kinds import resolve
from xlt.engine.model import load_encoder, save_model
from xlt.engine.packed import PackedLoop, PackedModel, why_not_packable
from xlt.engine.recipes.finetune import DevSelection, apply_sampler, build_task_model, train
from xlt.engine.runtime import Checkpointer, Dist, build_optimizer, build_scheduler, resolve_precision, seed_everything, set_tf32
from xlt.engine.streams import Stream
from xlt.errors import XltError
from xlt.io import write_json
from xlt.provenance import provenance

# what may differ between the models of a pack: everything else is one recipe
PER_MODEL = ("seed",)


def train_packed(cfgs: list[TrainConfig], train_files: list[str], dev_files: list[str], out_dirs: list, checkpoint_dirs: list,
                 pack_checkpoint_dir: str | Path, resolved_configs: list[dict], kill_after_steps: int | None = None,
                 stop_after_steps: int | None = None, oracles: list[dict | None] | None = None) -> list[dict]:
    """Fine-tune `cfgs` (one recipe, one seed each) in one job; each model saved to its
    `out_dirs[k]` as `train` saves it alone (its summary says `pack`: the seeds trained with
    it). Returns each model's summary. `oracles[k]`: model k's oracle selection (`train`)."""
    oracles = oracles or [None] * len(cfgs)
    base = {k: v for k, v in cfgs[0].to_dict().items() if k not in PER_MODEL}
    for c in cfgs:
        if {k: v for k, v in c.to_dict().items() if k not in PER_MODEL} != base:
            raise XltError("a pack trains the seeds of one recipe: its models' settings differ beyond the seed")
    if len({len(x) for x in (cfgs, out_dirs, checkpoint_dirs, resolved_configs, oracles)}) != 1:
        raise XltError("a pack needs one output, checkpoint directory, resolved config and oracle per seed")
    cfg0 = cfgs[0]
    task, kind = resolve(cfg0.task)
    dist = Dist()
    if dist.world > 1:
        raise XltError("a pack runs in one process (engine.pack with DDP is not supported): run with 1 GPU per job")
    device = dist.device(cfg0.device)
    metric = cfg0.select_metric or task.metrics[0]
    if metric not in task.metrics:
        raise XltError(f"select_metric={metric!r} is not a metric of task {task.name}; allowed: {', '.join(task.metrics)}")
    if device.type == "cuda":
        set_tf32(True)
    precision = resolve_precision(cfg0.precision, device)

    # each model as `train` builds it alone, and the global RNG its steps would then draw from
    models, streams, generators, tokenizer = [], [], [], None
    for cfg in cfgs:
        seed_everything(cfg.seed)
        encoder, tokenizer = load_encoder(cfg.encoder, cfg.encoder_revision, dropout=cfg.dropout,
                                          pooler=cfg.classifier == "hf_sequence_classifier")
        model = build_task_model(cfg, encoder, (), (task, kind)).to(device)
        model.fast_path = cfg.fast_path != "off"
        models.append(model)
        generators.append(torch.Generator().set_state(torch.get_rng_state()))
    why = why_not_packable(models[0]) or ("fast_path off: the Hugging Face forward" if cfg0.fast_path == "off" else None)
    if why is not None or len(cfgs) == 1:
        if why:
            print(f"the pack of seeds {[c.seed for c in cfgs]} trains one model after another: {why}", file=sys.stderr)
        return [train(c, train_files, dev_files, o, ck, resolved_config=r, kill_after_steps=kill_after_steps,
                      stop_after_steps=stop_after_steps, oracle=orc)
                for c, o, ck, r, orc in zip(cfgs, out_dirs, checkpoint_dirs, resolved_configs, oracles)]

    train_records = load_records(train_files, cfg0.max_train_examples)
    enc = kind.encode(task, train_records, tokenizer, cfg0, train=True)
    streams = [apply_sampler(Stream(task.name, enc.features, c.batch_size, c.seed, tokenizer.pad_token_id, kind.pad_values,
                                    kind.scalars), c, train_files)
               for c in cfgs]
    positions = max_positions(models[0], tokenizer)
    dev_sets = {str(p): EvalSet.build(task, load_records([p]), tokenizer, cfg0, positions, name=str(p), kind=kind)
                for p in dev_files}
    oracle_sets = [{lang: {split: dev_sets.get(str(f)) or EvalSet.build(task, load_records([f]), tokenizer, cfg0, positions,
                                                                        name=str(f), kind=kind)
                           for split, f in files.items()} for lang, files in (o or {}).items()} for o in oracles]
    own = [Checkpointer(d) for d in checkpoint_dirs]
    selections = [DevSelection(task, kind, cfg0, metric, dev_sets, sets, device) for sets in oracle_sets]

    def select(k: int, state: dict, epoch: int) -> bool:
        """Model k's dev selection, as `train`'s alone: True if this evaluation became its selected model."""
        return selections[k](models[k], state, epoch, lambda: own[k].save_best(models[k]))

    packed = PackedModel(models).to(device)
    total = cfg0.epochs * streams[0].per_epoch()
    eval_steps = cfg0.steps_between_evals(streams[0].per_epoch())  # as `train` derives it alone
    optimizer = build_optimizer(None, cfg0.lr, cfg0.weight_decay, cfg0.adam_betas, cfg0.adam_eps, device,
                                named=packed.optimizer_params())
    scheduler = build_scheduler(optimizer, total, cfg0.warmup_ratio, cfg0.schedule)
    pack_ckpt = Checkpointer(pack_checkpoint_dir)
    loop = PackedLoop(packed=packed, models=models, streams=streams, optimizer=optimizer, scheduler=scheduler,
                      device=device, checkpointer=pack_ckpt, generators=generators if device.type == "cpu" else None,
                      epochs=cfg0.epochs, max_grad_norm=cfg0.max_grad_norm, max_grad_value=cfg0.max_grad_value,
                      eval_steps=eval_steps, checkpoint_every=cfg0.checkpoint_every,
                      checkpoint_minutes=cfg0.checkpoint_minutes, on_epoch_end=select, precision=precision,
                      stop_after_steps=stop_after_steps, kill_after_steps=kill_after_steps,
                      desc=f"{task.name} seeds {'/'.join(str(c.seed) for c in cfgs)}")
    if device.type != "cpu":
        torch.manual_seed(cfg0.seed)  # CUDA: the stacked tensor's native dropout (not bit-reproducible anyway)
    state = loop.run()

    summaries = []
    seeds = [c.seed for c in cfgs]
    for k, (cfg, model, st) in enumerate(zip(cfgs, models, state["models"])):
        model.load_state_dict(own[k].best_state())
        summary = {
            "select_metric": metric, "selected_epoch": st["best_epoch"], "selected_dev_score": st["best"],
            "dev_collapse": st.get("dev_collapse"), "global_steps": st["global_step"],
            **({"selected_step": st["best_step"]} if eval_steps else {}),
            "steps_this_process": st["steps_this_process"], "resumed_from": st["resumed_from"], "history": st["history"],
            "losses": st["losses"], "train_examples": len(train_records), "train_features": len(streams[k].features),
            "streams": {task.name: {"features": len(streams[k].features), "batch_size": streams[k].batch_size}},
            "seconds_this_process": st["seconds_this_process"], "seconds_evaluating": st["seconds_evaluating"],
            "seconds_checkpointing": st["seconds_checkpointing"], "world_size": 1, "precision": precision,
            "pack": seeds,  # trained in one job with these seeds (xlt.engine.packed)
        }
        meta = {"labels": list(task.labels) if task.labels else None, "train": summary,
                "provenance": provenance(resolved_configs[k], cfg.seed, [*train_files, *dev_files]),
                "train_config": cfg.to_dict()}
        save_model(model, tokenizer, out_dirs[k], meta)
        if oracles[k]:
            write_json(Path(out_dirs[k]) / ORACLE_FILE, {
                "task": task.name, "seed": cfg.seed, "select_metric": metric, "selected_epoch": st["best_epoch"],
                "languages": st["oracle"]["best"], "history": st["oracle"]["history"],
                "provenance": provenance({"oracle": oracles[k]}, cfg.seed,
                                         [f for files in oracles[k].values() for f in files.values()]),
            })
        summaries.append(summary)
    for c in own:
        c.clear()
    pack_ckpt.clear()
    return summaries
