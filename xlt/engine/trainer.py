"""The fine-tuning loop: AdamW, warmup + linear decay, dev evaluation with model selection,
resumable checkpoints, a grace signal, and a loud stop on a non-finite loss.

Resumption is exact on CPU: a checkpoint holds the weights, the optimizer and scheduler
states, the torch RNG state and the position in the epoch; the epoch's batch order is a
pure function of (seed, epoch). A run killed at any point (kill -9 included) and started
again ends with the same weights and metrics as an uninterrupted one.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from xlt.engine.batching import collate, length_grouped_batches
from xlt.engine.config import TrainConfig
from xlt.engine.evalset import EvalSet, gold_of, max_positions  # noqa: F401 (gold_of re-exported)
from xlt.engine.features import Encoded, encode
from xlt.engine.model import build_model, load_encoder, save_model
from xlt.engine.predict import autocast, to_device
from xlt.errors import XltError
from xlt.io import read_jsonl
from xlt.provenance import provenance
from xlt.registry import get_task


class Preempted(XltError):
    """Raised after a grace signal (SIGTERM/SIGUSR1) once the checkpoint is safely written."""


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise XltError("device=cuda but no CUDA device is visible")
    return torch.device(name)


class Dist:
    """The process's place in a torchrun (DDP) job; a single process is rank 0 of 1.

    Under DDP every rank runs the same global batch order and takes its share of each
    batch; gradients are averaged, so a step equals the single-process step up to float
    summation order. Rank 0 writes checkpoints and the model; the others wait.
    """

    def __init__(self):
        import torch.distributed as dist

        self.dist = dist
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        if self.world > 1 and not dist.is_initialized():
            dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
            if torch.cuda.is_available():
                torch.cuda.set_device(self.local_rank)

    @property
    def main(self) -> bool:
        return self.rank == 0

    def device(self, name: str) -> torch.device:
        dev = pick_device(name)
        return torch.device("cuda", self.local_rank) if dev.type == "cuda" and self.world > 1 else dev

    def share(self, idx: list[int]) -> list[int]:
        return idx[self.rank :: self.world] if self.world > 1 else idx

    def barrier(self) -> None:
        if self.world > 1:
            self.dist.barrier()

    def any(self, flag: bool) -> bool:
        """True on every rank if it is true on any (a grace signal reaches one rank)."""
        if self.world == 1:
            return flag
        t = torch.tensor([int(flag)], device="cuda" if torch.cuda.is_available() else "cpu")
        self.dist.all_reduce(t)
        return bool(t.item())

    def gather(self, obj):
        if self.world == 1:
            return [obj]
        out = [None] * self.world
        self.dist.all_gather_object(out, obj)
        return out

    def close(self) -> None:
        if self.world > 1 and self.dist.is_initialized():
            self.dist.destroy_process_group()


def load_records(paths, cap: int | None = None) -> list[dict]:
    records: list[dict] = []
    for p in paths:
        recs = read_jsonl(p)
        records.extend(recs[:cap] if cap else recs)
    if not records:
        raise XltError(f"no examples in {', '.join(map(str, paths))}")
    return records


def evaluate_records(model, tokenizer, task, records, cfg: TrainConfig, device) -> tuple[list, dict]:
    """Encode and score once; to score the same records repeatedly, keep an `EvalSet`."""
    return EvalSet.build(task, records, tokenizer, cfg, max_positions(model, tokenizer)).score(model, device)


class _GraceSignal:
    """Turns SIGTERM / SIGUSR1 (SLURM's warnings before a kill) into a flag the loop checks."""

    def __init__(self):
        self.received: int | None = None
        self._old = {}

    def __enter__(self):
        for sig in (signal.SIGTERM, signal.SIGUSR1):
            try:
                self._old[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread
                pass
        return self

    def _handle(self, signum, frame):
        self.received = signum

    def __exit__(self, *exc):
        for sig, old in self._old.items():
            signal.signal(sig, old)


def _state_copy(model) -> dict:
    """A CPU copy of the state dict with no shared storage (safetensors refuses tied weights)."""
    return {k: v.detach().cpu().clone().contiguous() for k, v in model.state_dict().items()}


class Checkpointer:
    """`<dir>/last/` holds the newest complete checkpoint; written to a temp dir and renamed."""

    def __init__(self, directory: str | Path):
        self.dir = Path(directory)

    def _candidates(self):
        return [self.dir / "last", self.dir / "last.old"]

    def load(self):
        for c in self._candidates():
            if (c / "state.json").exists():
                state = json.loads((c / "state.json").read_text())
                return c, state
        return None, None

    def save(self, model, optimizer, scheduler, state: dict, rng_states: list | None = None) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".ckpt.", dir=self.dir))
        save_file(_state_copy(model), tmp / "model.safetensors")
        torch.save(
            {"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
             "rng": torch.get_rng_state(), "rng_per_rank": rng_states,
             "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None},
            tmp / "optim.pt",
        )
        (tmp / "state.json").write_text(json.dumps(state))  # written last: marks completeness
        last, old = self._candidates()
        if old.exists():
            shutil.rmtree(old)
        if last.exists():
            os.replace(last, old)
        os.replace(tmp, last)
        if old.exists():
            shutil.rmtree(old)

    def save_best(self, model) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.dir / ".best.safetensors.tmp"
        save_file(_state_copy(model), tmp)
        os.replace(tmp, self.dir / "best.safetensors")

    def best_state(self):
        return load_file(self.dir / "best.safetensors")

    def clear(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def _optimizer(model, cfg: TrainConfig, device):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim < 2 or "LayerNorm" in name or "layer_norm" in name else decay).append(p)
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.adam_betas, eps=cfg.adam_eps, fused=device.type == "cuda")


def _scheduler(optimizer, cfg: TrainConfig, total: int):
    warmup = int(cfg.warmup_ratio * total)

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / (warmup + 1)
        if cfg.schedule == "constant":
            return 1.0
        return max(0.0, (total - step) / max(1, total - warmup))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _select_score(metrics_by_file: dict[str, dict], metric: str) -> float:
    return float(np.mean([m[metric] for m in metrics_by_file.values()]))


def train(
    cfg: TrainConfig,
    train_files: list[str],
    dev_files: list[str],
    out_dir: str | Path,
    checkpoint_dir: str | Path,
    resolved_config: dict | None = None,
    stop_after_steps: int | None = None,
    kill_after_steps: int | None = None,
) -> dict:
    """Fine-tune and save the selected model to `out_dir`; return its summary.

    Testing aids: `stop_after_steps` stops like a grace signal would (checkpoint, then
    Preempted); `kill_after_steps` SIGKILLs this process after that many steps, with no
    chance to save anything, exactly like `kill -9` or a node failure.
    """
    task = get_task(cfg.task)
    ddp = Dist()
    device = ddp.device(cfg.device)
    metric = cfg.select_metric or task.metrics[0]
    if metric not in task.metrics:
        raise XltError(f"select_metric={metric!r} is not a metric of task {task.name}; allowed: {', '.join(task.metrics)}")
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True

    seed_everything(cfg.seed)
    encoder, tokenizer = load_encoder(cfg.encoder, cfg.encoder_revision, dropout=cfg.dropout)
    # The head's initial weights depend on the seed alone (re-seeded after loading the encoder,
    # whatever loading draws): models of one seed start from one initialisation whatever
    # their training data, as the underspec paper's θ_src / θ_tgt / θ_bi must.
    seed_everything(cfg.seed)
    model = build_model(task, encoder, cfg.dropout).to(device)
    if ddp.world > 1:
        torch.manual_seed(cfg.seed + 1000 * ddp.rank)  # same init everywhere, own dropout per rank

    train_records = load_records(train_files, cfg.max_train_examples)
    positions = max_positions(model, tokenizer)
    dev_sets = {str(p): EvalSet.build(task, load_records([p]), tokenizer, cfg, positions, name=str(p)) for p in dev_files}
    enc: Encoded = encode(task, train_records, tokenizer, cfg.max_length, cfg.stride, train=True)
    steps_per_epoch = len(length_grouped_batches(enc.lengths, cfg.batch_size, cfg.seed, 0))
    total = steps_per_epoch * cfg.epochs
    raw_model = model
    if ddp.world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[ddp.local_rank] if device.type == "cuda" else None)
    optimizer = _optimizer(model, cfg, device)
    scheduler = _scheduler(optimizer, cfg, total)

    ckpt = Checkpointer(checkpoint_dir)
    state = {"epoch": 0, "step_in_epoch": 0, "global_step": 0, "best": None, "best_epoch": None, "history": [], "resumed_from": []}
    where, saved = ckpt.load()
    if where is not None:
        raw_model.load_state_dict(load_file(where / "model.safetensors"))
        blob = torch.load(where / "optim.pt", weights_only=True)
        optimizer.load_state_dict(blob["optimizer"])
        scheduler.load_state_dict(blob["scheduler"])
        torch.set_rng_state(blob["rng_per_rank"][ddp.rank] if blob.get("rng_per_rank") and ddp.world > 1 else blob["rng"])
        if blob.get("cuda_rng") is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(blob["cuda_rng"])
        state = saved
        state["resumed_from"].append(state["global_step"])
        print(f"resuming from step {state['global_step']} (epoch {state['epoch']}, batch {state['step_in_epoch']})", file=sys.stderr)

    timers = {"evaluating": 0.0, "checkpointing": 0.0}

    def save_checkpoint():
        t = time.perf_counter()
        rng_states = ddp.gather(torch.get_rng_state())
        if ddp.main:
            ckpt.save(raw_model, optimizer, scheduler, state, rng_states)
        ddp.barrier()
        timers["checkpointing"] += time.perf_counter() - t

    steps_this_process = 0
    t0 = time.perf_counter()
    bar = None
    if cfg.progress:
        from tqdm import tqdm

        bar = tqdm(total=total, initial=state["global_step"], desc=f"{task.name} seed{cfg.seed}", unit="step",
                   mininterval=1.0 if sys.stderr.isatty() else 30.0, file=sys.stderr)
    with _GraceSignal() as grace:
        while state["epoch"] < cfg.epochs:
            epoch = state["epoch"]
            batches = length_grouped_batches(enc.lengths, cfg.batch_size, cfg.seed, epoch)
            model.train()
            for bi in range(state["step_in_epoch"], len(batches)):
                if len(batches[bi]) < ddp.world:
                    continue  # a last batch too small to give every rank a share: all ranks skip it
                share = ddp.share(batches[bi])
                batch = to_device(collate([enc.features[i] for i in share], tokenizer.pad_token_id), device)
                with autocast(device):
                    loss = model(batch)["loss"]
                if not torch.isfinite(loss):
                    raise XltError(
                        f"non-finite loss ({loss.item()}) at step {state['global_step'] + 1} "
                        f"(epoch {epoch + 1}, batch {bi + 1}/{len(batches)}); lr={scheduler.get_last_lr()[0]:.3g}. "
                        "Nothing was saved for this step; lower the learning rate or check the data."
                    )
                loss.backward()
                if cfg.max_grad_norm:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                state["global_step"] += 1
                state["step_in_epoch"] = bi + 1
                steps_this_process += 1
                if kill_after_steps is not None and steps_this_process >= kill_after_steps:
                    os.kill(os.getpid(), signal.SIGKILL)
                if bar:
                    bar.update(1)
                    bar.set_postfix(loss=f"{loss.item():.4f}", refresh=False)
                interrupted = ddp.any(grace.received is not None) or (stop_after_steps is not None and steps_this_process >= stop_after_steps)
                if interrupted or state["global_step"] % cfg.checkpoint_every == 0:
                    save_checkpoint()
                if interrupted:
                    why = f"signal {grace.received}" if grace.received is not None else f"stop_after_steps={stop_after_steps}"
                    raise Preempted(f"stopped by {why} at step {state['global_step']}; checkpoint saved in {ckpt.dir}, rerun to resume")
            # End of epoch: evaluate on dev, keep the best, checkpoint the new position.
            t_eval = time.perf_counter()
            dev_metrics = {p: ev.score(raw_model, device)[1] for p, ev in dev_sets.items()}
            timers["evaluating"] += time.perf_counter() - t_eval
            score = _select_score(dev_metrics, metric)
            state["history"].append({"epoch": epoch + 1, "step": state["global_step"], "dev": dev_metrics, metric: score})
            if cfg.select == "last" or state["best"] is None or score > state["best"]:
                state["best"], state["best_epoch"] = score, epoch + 1
                if ddp.main:
                    ckpt.save_best(raw_model)
            state["epoch"], state["step_in_epoch"] = epoch + 1, 0
            save_checkpoint()
            model.train()
    if bar:
        bar.close()

    ddp.barrier()
    raw_model.load_state_dict(ckpt.best_state())
    model = raw_model
    elapsed = time.perf_counter() - t0
    summary = {
        "select_metric": metric,
        "selected_epoch": state["best_epoch"],
        "selected_dev_score": state["best"],
        "global_steps": state["global_step"],
        "steps_this_process": steps_this_process,
        "resumed_from": state["resumed_from"],
        "history": state["history"],
        "train_examples": len(train_records),
        "train_features": len(enc.features),
        "seconds_this_process": round(elapsed, 3),
        "seconds_evaluating": round(timers["evaluating"], 3),
        "seconds_checkpointing": round(timers["checkpointing"], 3),
        "world_size": ddp.world,
    }
    meta = {
        "labels": list(task.labels) if task.labels else None,
        "train": summary,
        "provenance": provenance(resolved_config or cfg.to_dict(), cfg.seed, [*train_files, *dev_files]),
        "train_config": cfg.to_dict(),
    }
    if ddp.main:
        save_model(model, tokenizer, out_dir, meta)
        ckpt.clear()
    ddp.barrier()
    ddp.close()
    return summary
