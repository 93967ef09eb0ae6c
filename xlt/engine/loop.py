"""The one resumable training loop, shared by every training job: fine-tuning (one task or
several streams), MLM pretraining and domain adaptation, representation adjustment.

A step draws one batch from each named stream, sums the objective's weighted terms, and
takes an optimizer step. The primary stream's epochs drive the job (`epochs`), or a step
budget does (`max_steps`, the primary stream cycling); the other streams cycle on their own.
The loop owns the runtime: device placement, DDP, autocast, checkpoint/resume (weights,
optimizer, schedule, RNG, every stream's cursor), the grace signal, the finite-loss check
and the progress bar. Resumption is exact on CPU: a run killed anywhere (kill -9 included)
and started again ends bit-identical to an uninterrupted one.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Callable

import torch
from torch.profiler import record_function

from xlt.engine.objectives import Objective
from xlt.engine.predict import to_device
from xlt.engine.runtime import Checkpointer, Dist, GraceSignal, Preempted, autocast, clip_grad_norm
from xlt.engine.streams import Stream
from xlt.errors import XltError


class Loop:
    def __init__(
        self,
        *,
        model: torch.nn.Module,
        raw_model: torch.nn.Module,
        optimizer,
        scheduler,
        streams: dict[str, Stream],
        primary: str,
        objective: Objective,
        device: torch.device,
        dist: Dist,
        checkpointer: Checkpointer,
        epochs: int | None = None,
        max_steps: int | None = None,
        max_grad_norm: float = 1.0,
        checkpoint_every: int | None = None,
        checkpoint_minutes: float | None = 10.0,
        on_epoch_end: Callable[[dict, int], None] | None = None,
        desc: str = "train",
        progress: bool = True,
        log_every: int = 50,
        precision: str = "fp32",  # resolved (runtime.resolve_precision): "bf16" autocasts training steps
        stop_after_steps: int | None = None,
        kill_after_steps: int | None = None,
        heartbeat_s: float | None = None,  # a plain progress line on stdout (the console) this often
    ):
        if (epochs is None) == (max_steps is None):
            raise XltError("a training loop needs exactly one of epochs / max_steps")
        missing = objective.streams - set(streams)
        if missing or primary not in streams:
            raise XltError(f"loss terms read streams {sorted(missing | ({primary} - set(streams)))} that the job does not define")
        self.__dict__.update(locals())
        del self.__dict__["self"]
        self.timers = {"evaluating": 0.0, "checkpointing": 0.0}
        self._last_save = time.monotonic()

    def _checkpoint_due(self, state: dict, steps_here: int) -> bool:
        if not steps_here:
            return False
        if self.checkpoint_every and state["global_step"] % self.checkpoint_every == 0:
            return True
        if not self.checkpoint_minutes:
            return False
        late = time.monotonic() - self._last_save >= 60.0 * self.checkpoint_minutes
        # every rank takes part in a save: rank 0's clock decides for all
        return self.dist.any(self.dist.main and late) if self.dist.world > 1 else late

    def total_steps(self) -> int:
        return self.max_steps if self.max_steps is not None else self.epochs * self.streams[self.primary].per_epoch()

    def _done(self, state: dict) -> bool:
        if self.max_steps is not None:
            return state["global_step"] >= self.max_steps
        return self.streams[self.primary].cursor[0] >= self.epochs

    def _save(self, state: dict) -> None:
        t = time.perf_counter()
        state["cursors"] = {n: list(s.cursor) for n, s in self.streams.items()}
        rng_states = self.dist.gather(torch.get_rng_state())
        if self.dist.main:
            self.checkpointer.save(self.raw_model, self.optimizer, self.scheduler, state, rng_states)
        self.dist.barrier()
        self.timers["checkpointing"] += time.perf_counter() - t
        self._last_save = time.monotonic()

    def resume_or_start(self) -> dict:
        state = {"global_step": 0, "cursors": {}, "history": [], "losses": [], "resumed_from": [], "best": None,
                 "best_epoch": None}
        where, saved = self.checkpointer.load()
        if where is not None:
            Checkpointer.restore(where, self.raw_model, self.optimizer, self.scheduler, self.dist)
            state = saved
            for name, cur in state["cursors"].items():
                self.streams[name].cursor = list(cur)
            state["resumed_from"].append(state["global_step"])
            e, b = self.streams[self.primary].cursor
            print(f"resuming from step {state['global_step']} (epoch {e + 1}, batch {b})", file=sys.stderr)
        return state

    def _say(self, line: str, bar, console: bool = False) -> None:
        """One plain line on a line of its own, the progress bar (if any) redrawn below it; on
        stderr (the job's log) or, `console`, on stdout (what Snakemake shows while it runs)."""
        if not self.dist.main:
            return
        if console:
            print(line, file=sys.stdout, flush=True)
        elif bar is not None:
            bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr, flush=True)

    def _epoch_line(self, state: dict, epoch: int, loss_sum: float, n: int, seconds: float) -> str:
        """`<desc>: epoch 2/5, step 128, loss 0.6931, dev accuracy 71.20, 8.4 s`: the dev score is
        the one model selection read (on_epoch_end's history entry of this epoch)."""
        parts = [f"{self.desc}: epoch {epoch + 1}/{self.epochs}", f"step {state['global_step']}"]
        if n:
            parts.append(f"loss {loss_sum / n:.4f}")
        last = state["history"][-1] if state["history"] else {}
        if last.get("epoch") == epoch + 1:
            parts += [f"dev {k} {v:.4g}" for k, v in last.items()
                      if k not in ("epoch", "step") and isinstance(v, (int, float))]
        return ", ".join(parts) + f", {seconds:.1f} s"

    def run(self) -> dict:
        state = self.resume_or_start()
        try:
            return self._run(state)
        finally:
            if self._bar is not None:
                self._bar.close()  # ends the bar's line: what follows (an error included) starts a new one

    _bar = None

    def _run(self, state: dict) -> dict:
        primary = self.streams[self.primary]
        steps_here = 0
        t0 = time.perf_counter()
        bar = None
        if self.progress:
            from tqdm import tqdm

            bar = self._bar = tqdm(total=self.total_steps(), initial=state["global_step"], desc=self.desc, unit="step",
                                   mininterval=1.0 if sys.stderr.isatty() else 30.0, file=sys.stderr)
        epoch_loss, epoch_steps, epoch_t0 = 0.0, 0, time.perf_counter()  # the loss summed on its device: no sync a step
        beat = time.monotonic()
        self.model.train()
        params = list(self.model.parameters())  # once: walking the module tree each step cost ~0.1 ms
        with GraceSignal() as grace:
            while not self._done(state):
                if self.max_steps is not None and primary.epoch_done():
                    primary.next_epoch()  # a step budget: the primary stream cycles too
                epoch, bi = primary.cursor
                idx = {self.primary: primary.next_indices()}
                for name, s in self.streams.items():
                    if name != self.primary:
                        idx[name] = s.next_indices(cycle=True)
                if len(idx[self.primary]) >= self.dist.world:  # else no rank could take a share: all skip it
                    # phases named for torch.profiler (benchmarks/gpu_throughput.py --profile-ours);
                    # a few microseconds a step when no profiler runs
                    with record_function("xlt/collate"):
                        batches = {n: to_device(self.streams[n].collate(self.dist.share(i)), self.device)
                                   for n, i in idx.items()}
                    with record_function("xlt/forward"), autocast(self.device, self.precision):
                        loss, parts = self.objective(self.model, batches, state["global_step"])
                    if not torch.isfinite(loss):
                        raise XltError(
                            f"non-finite loss ({loss.item()}) at step {state['global_step'] + 1} "
                            f"(epoch {epoch + 1}, batch {bi + 1}/{len(primary.batches(epoch))}); "
                            f"terms: {', '.join(f'{k}={v.item():.4g}' for k, v in parts.items())}; "
                            f"lr={self.scheduler.get_last_lr()[0]:.3g}. Nothing was saved for this step; "
                            "lower the learning rate or check the data."
                        )
                    with record_function("xlt/backward"):
                        loss.backward()
                    with record_function("xlt/optimizer"):  # clipping, step, schedule, zeroing
                        if self.max_grad_norm:
                            clip_grad_norm(params, self.max_grad_norm)
                        self.optimizer.step()
                        self.scheduler.step()
                        self.optimizer.zero_grad(set_to_none=True)
                    state["global_step"] += 1
                    steps_here += 1
                    epoch_loss = epoch_loss + loss.detach().float()
                    epoch_steps += 1
                    if self.heartbeat_s and time.monotonic() - beat >= self.heartbeat_s:
                        beat = time.monotonic()
                        total = self.total_steps()
                        self._say(f"{self.desc}: step {state['global_step']}/{total} "
                                  f"({100 * state['global_step'] // max(total, 1)}%), loss {loss.item():.4f}, "
                                  f"{time.perf_counter() - t0:.0f} s", bar, console=True)
                    if state["global_step"] % self.log_every == 0:
                        state["losses"].append([state["global_step"], round(loss.item(), 5)])
                    if bar:
                        bar.update(1)
                        bar.set_postfix({k: f"{v.item():.4f}" for k, v in parts.items()}, refresh=False)
                    if self.kill_after_steps is not None and steps_here >= self.kill_after_steps:
                        os.kill(os.getpid(), signal.SIGKILL)  # testing aid: a node failure, nothing saved
                if self.max_steps is None and primary.epoch_done():
                    if self.on_epoch_end is not None:
                        t = time.perf_counter()
                        self.on_epoch_end(state, epoch)
                        self.timers["evaluating"] += time.perf_counter() - t
                        self.model.train()
                    self._say(self._epoch_line(state, epoch, float(epoch_loss), epoch_steps,
                                               time.perf_counter() - epoch_t0), bar)
                    epoch_loss, epoch_steps, epoch_t0 = 0.0, 0, time.perf_counter()
                    primary.next_epoch()
                    self._save(state)
                    continue
                interrupted = self.dist.any(grace.received is not None) or (
                    self.stop_after_steps is not None and steps_here >= self.stop_after_steps)
                if interrupted or self._checkpoint_due(state, steps_here):
                    self._save(state)
                if interrupted:
                    why = f"signal {grace.received}" if grace.received is not None else f"stop_after_steps={self.stop_after_steps}"
                    raise Preempted(f"stopped by {why} at step {state['global_step']}; checkpoint saved in "
                                    f"{self.checkpointer.dir}, rerun to resume")
        state["steps_this_process"] = steps_here
        state["seconds_this_process"] = round(time.perf_counter() - t0, 3)
        state["seconds_evaluating"] = round(self.timers["evaluating"], 3)
        state["seconds_checkpointing"] = round(self.timers["checkpointing"], 3)
        return state
