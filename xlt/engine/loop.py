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

from xlt.engine.fastpath import compiling
from xlt.engine.objectives import Objective
from xlt.engine.predict import to_device
from xlt.engine.runtime import Checkpointer, Dist, GraceSignal, Preempted, autocast, clip_grad_norm
from xlt.engine.streams import Stream
from xlt.errors import XltError


COMPILE = ("auto", "on", "off", "graphs")  # graphs: "on" plus CUDA graphs (xlt.engine.fastpath.compiling)
CUDA_PAD_MULTIPLE = 16


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
        max_grad_value: float | None = None,  # each gradient value clipped to ±v (before the norm clipping)
        checkpoint_every: int | None = None,
        checkpoint_minutes: float | None = 10.0,
        on_epoch_end: Callable[[dict, int], None] | None = None,
        # dev evaluation every `eval_steps` optimizer steps besides epoch ends (None: none):
        # on_eval_step(state, epoch) selects and says whether the selection changed
        eval_steps: int | None = None,
        on_eval_step: Callable[[dict, int], bool] | None = None,
        desc: str = "train",
        progress: bool = True,
        log_every: int = 50,
        precision: str = "fp32",  # resolved (runtime.resolve_precision): "bf16" autocasts training steps
        stop_after_steps: int | None = None,
        kill_after_steps: int | None = None,
        heartbeat_s: float | None = None,  # a plain progress line on stdout (the console) this often
        compile: str = "auto",  # the lean layer stack through torch.compile: "auto" (= "graphs" on CUDA, else off),
        #                        "on" (each layer compiled, no CUDA graphs), "off", "graphs"
        pad_multiple: int | None = None,  # batch widths rounded up to a multiple (None: 16 on CUDA, else 1)
        defer_finite_check: bool | None = None,  # None: on CUDA (see `run`)
        scalars: Callable[[int, dict], None] | None = None,  # each epoch's line as scalars (xlt.engine.tensorboard)
    ):
        if (epochs is None) == (max_steps is None):
            raise XltError("a training loop needs exactly one of epochs / max_steps")
        missing = objective.streams - set(streams)
        if missing or primary not in streams:
            raise XltError(f"loss terms read streams {sorted(missing | ({primary} - set(streams)))} that the job does not define")
        if compile not in COMPILE:
            raise XltError(f"compile={compile!r}; allowed: {', '.join(COMPILE)}")
        self.__dict__.update(locals())
        del self.__dict__["self"]
        cuda = device.type == "cuda"
        self.compile_on = compile in ("on", "graphs") or (compile == "auto" and cuda)
        # CUDA graphs by default on one GPU: on an H200 at mBERT size they took ours from 0.7-1.0x
        # the Trainer's best flags to 1.6-2.6x (benchmarks/README.md), the step no longer host-bound.
        # Not by default across processes (DDP's gradient hooks beside graph-owned gradients are
        # unmeasured): there each layer is compiled, as before; "graphs" asks for them anyway
        self.compile_graphs = compile == "graphs" or (compile == "auto" and cuda and dist.world == 1)
        self.defer_finite_check = cuda if defer_finite_check is None else defer_finite_check
        for s in streams.values():  # few shapes: cuDNN's attention plans and compiled graphs are reused
            s.pad_multiple = pad_multiple or (CUDA_PAD_MULTIPLE if cuda else 1)
        self.timers = {"evaluating": 0.0, "checkpointing": 0.0}
        self._last_save = time.monotonic()

    @staticmethod
    def _check_finite(pending: list) -> None:
        """Raise for the first non-finite loss among the steps' deferred (loss, parts, where)."""
        if not pending:
            return
        finite = torch.isfinite(torch.stack([p[0] for p in pending])).tolist()
        bad = next((i for i, ok in enumerate(finite) if not ok), None)
        if bad is not None:
            raise _non_finite(*pending[bad])
        pending.clear()

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

    def _eval_due(self, state: dict, primary: Stream, stepped: bool) -> bool:
        """An evaluation after this iteration's step (if it took one): every `eval_steps`
        steps, except at an epoch's end (evaluated there anyway)."""
        return bool(stepped and self.eval_steps and self.on_eval_step is not None
                    and state["global_step"] % self.eval_steps == 0 and not primary.epoch_done())

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

    def _epoch_values(self, state: dict, epoch: int, loss_sum: float, n: int, seconds: float) -> dict:
        """What an epoch's line says, as {"train/loss", "dev/<metric>", "train/seconds"}: the dev
        scores are those model selection read (on_epoch_end's history entry of this epoch)."""
        values = {"train/loss": loss_sum / n} if n else {}
        last = state["history"][-1] if state["history"] else {}
        if last.get("epoch") == epoch + 1:
            values |= {f"dev/{k}": v for k, v in last.items() if k not in ("epoch", "step") and isinstance(v, (int, float))}
        return values | {"train/seconds": seconds}

    def _epoch_line(self, state: dict, epoch: int, values: dict) -> str:
        """`<desc>: epoch 2/5, step 128, loss 0.6931, dev accuracy 71.20, 8.4 s`."""
        parts = [f"{self.desc}: epoch {epoch + 1}/{self.epochs}", f"step {state['global_step']}"]
        if "train/loss" in values:
            parts.append(f"loss {values['train/loss']:.4f}")
        parts += [f"dev {k[4:]} {v:.4g}" for k, v in values.items() if k.startswith("dev/")]
        return ", ".join(parts) + f", {values['train/seconds']:.1f} s"

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
        if self.progress and sys.stderr.isatty():  # a job's log (a file) gets the epoch lines alone, no `\r` redraws
            # deferred: loads tqdm only when this runs
            from tqdm import tqdm

            bar = self._bar = tqdm(total=self.total_steps(), initial=state["global_step"], desc=self.desc, unit="step",
                                   mininterval=1.0, file=sys.stderr)
        epoch_loss, epoch_steps, epoch_t0 = 0.0, 0, time.perf_counter()  # the loss summed on its device: no sync a step
        beat = time.monotonic()
        self.model.train()
        params = list(self.model.parameters())  # once: walking the module tree each step cost ~0.1 ms
        # On CUDA the finite-loss check reads no value per step (a read waits for the device,
        # and a host-bound step then cannot run ahead): each step's loss is kept on the device
        # and all are checked before anything is saved, evaluated or logged, so nothing is
        # ever saved from a non-finite step; the error names the first such step, as on a CPU
        pending: list = []
        with GraceSignal() as grace, compiling(self.compile_on, graphs=self.compile_graphs):
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
                    if self.compile_graphs:  # the last step's graph outputs may be overwritten now
                        torch.compiler.cudagraph_mark_step_begin()
                    with record_function("xlt/forward"), autocast(self.device, self.precision):
                        loss, parts = self.objective(self.model, batches, state["global_step"])
                    where = (state["global_step"], epoch, bi, len(primary.batches(epoch)), self.scheduler.get_last_lr()[0])
                    if self.defer_finite_check:  # checked at the next log, checkpoint or evaluation point
                        pending.append((loss.detach(), parts, where))
                    elif not torch.isfinite(loss):
                        raise _non_finite(loss, parts, where)
                    with record_function("xlt/backward"):
                        loss.backward()
                    with record_function("xlt/optimizer"):  # clipping, step, schedule, zeroing
                        if self.max_grad_value is not None:
                            torch.nn.utils.clip_grad_value_(params, self.max_grad_value)
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
                    logged = state["global_step"] % self.log_every == 0
                    if logged:
                        self._check_finite(pending)
                        state["losses"].append([state["global_step"], round(loss.item(), 5)])
                    if bar:
                        bar.update(1)
                        if logged or not self.defer_finite_check:  # reading a value waits for the device
                            bar.set_postfix({k: f"{v.item():.4f}" for k, v in parts.items()}, refresh=False)
                    if self.kill_after_steps is not None and steps_here >= self.kill_after_steps:
                        os.kill(os.getpid(), signal.SIGKILL)  # testing aid: a node failure, nothing saved
                saved = False
                if self._eval_due(state, primary, len(idx[self.primary]) >= self.dist.world):
                    self._check_finite(pending)
                    t = time.perf_counter()
                    changed = self.on_eval_step(state, epoch)
                    self.timers["evaluating"] += time.perf_counter() - t
                    self.model.train()
                    last = state["history"][-1] if state["history"] else {}
                    self._say(", ".join([f"{self.desc}: epoch {epoch + 1}/{self.epochs}", f"step {state['global_step']}"]
                                        + [f"dev {k} {v:.4g}" for k, v in last.items()
                                           if k not in ("epoch", "step") and isinstance(v, (int, float))]), bar)
                    if self.dist.any(changed):
                        # the selected weights on disk now come from this step: the checkpointed
                        # selection must say so, or a job killed before its next checkpoint would
                        # resume with a best score that the weights on disk do not have
                        self._save(state)
                        saved = True
                if self.max_steps is None and primary.epoch_done():
                    self._check_finite(pending)
                    if self.on_epoch_end is not None:
                        t = time.perf_counter()
                        self.on_epoch_end(state, epoch)
                        self.timers["evaluating"] += time.perf_counter() - t
                        self.model.train()
                    values = self._epoch_values(state, epoch, float(epoch_loss), epoch_steps, time.perf_counter() - epoch_t0)
                    self._say(self._epoch_line(state, epoch, values), bar)
                    if self.scalars is not None and self.dist.main:
                        self.scalars(state["global_step"], values)
                    epoch_loss, epoch_steps, epoch_t0 = 0.0, 0, time.perf_counter()
                    primary.next_epoch()
                    self._save(state)
                    continue
                interrupted = self.dist.any(grace.received is not None) or (
                    self.stop_after_steps is not None and steps_here >= self.stop_after_steps)
                if interrupted or (not saved and self._checkpoint_due(state, steps_here)):
                    self._check_finite(pending)
                    self._save(state)
                if interrupted:
                    why = f"signal {grace.received}" if grace.received is not None else f"stop_after_steps={self.stop_after_steps}"
                    raise Preempted(f"stopped by {why} at step {state['global_step']}; checkpoint saved in "
                                    f"{self.checkpointer.dir}, rerun to resume")
            self._check_finite(pending)
        state["steps_this_process"] = steps_here
        state["seconds_this_process"] = round(time.perf_counter() - t0, 3)
        state["seconds_evaluating"] = round(self.timers["evaluating"], 3)
        state["seconds_checkpointing"] = round(self.timers["checkpointing"], 3)
        return state


def _non_finite(loss: torch.Tensor, parts: dict, where: tuple) -> XltError:
    step, epoch, bi, n_batches, lr = where
    return XltError(
        f"non-finite loss ({loss.item()}) at step {step + 1} "
        f"(epoch {epoch + 1}, batch {bi + 1}/{n_batches}); "
        f"terms: {', '.join(f'{k}={v.item():.4g}' for k, v in parts.items())}; "
        f"lr={lr:.3g}. Nothing was saved for this step; "
        "lower the learning rate or check the data."
    )
