"""What every training job shares and no objective cares about: device, seeding, DDP,
the grace signal, the optimizer and schedule, and checkpoint files.

Checkpoints are directories written to a temp name and renamed into place; each carries a
manifest with the sha256 of its files, written last. A checkpoint whose manifest is missing
or whose files do not match it (a write cut mid-file, a full disk) is never loaded: the
loader says so and falls back to the previous one, or to a fresh start.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from xlt.errors import XltError
from xlt.process.cpu_isa import amx_allowed

MANIFEST = "manifest.json"


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
        # deferred: loads torch only when this runs
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

    def wrap(self, model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
        if self.world == 1:
            return model
        return torch.nn.parallel.DistributedDataParallel(model, device_ids=[self.local_rank] if device.type == "cuda" else None)

    def close(self) -> None:
        if self.world > 1 and self.dist.is_initialized():
            self.dist.destroy_process_group()


class GraceSignal:
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


PRECISIONS = ("auto", "bf16", "fp32")


def native_bf16(device: torch.device) -> bool:
    """Whether `device` multiplies bf16 matrices faster than fp32: CUDA with bf16 support, or a
    CPU whose AMX tiles oneDNN may use (`xlt.process.cpu_isa`). AVX512-BF16 alone is not enough: with
    AMX capped off, a tiny-model training step took 1.4x the fp32 time in bf16."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if device.type == "cpu":

        return bool(torch.cpu._is_amx_tile_supported()) and amx_allowed()
    return False


def resolve_precision(precision: str, device: torch.device) -> str:
    """The training precision a run uses, "bf16" or "fp32". "auto": bf16 autocast where the
    device has fast bf16 matrix units (on the tiny CPU model with AMX a step took 0.65x the
    fp32 time), fp32 elsewhere. Recorded in every model's metadata: two CPUs that differ here
    give different (each bit-reproducible) runs."""
    if precision not in PRECISIONS:
        raise XltError(f"precision={precision!r}; allowed: {', '.join(PRECISIONS)}")
    if precision == "auto":
        return "bf16" if native_bf16(device) else "fp32"
    return precision


# TF32 for fp32 matrix products and convolutions on CUDA, through torch's fp32_precision API
# only: after the new API has set it (transformers' Trainer does, `torch.backends.fp32_precision`),
# reading or writing the legacy `allow_tf32` flags raises "mix of the legacy and new APIs".
_TF32_KNOBS = (("backends",), ("backends", "cuda", "matmul"), ("backends", "cudnn"), ("backends", "cudnn", "conv"),
               ("backends", "cudnn", "rnn"))


def _tf32_knob(path: tuple):
    obj = torch
    for name in path:
        obj = getattr(obj, name, None)
    return obj if hasattr(obj, "fp32_precision") else None


def tf32_state() -> tuple:
    """Every fp32_precision knob's value (what `set_tf32` / `tf32` restore)."""
    return tuple(k.fp32_precision if (k := _tf32_knob(path)) is not None else None for path in _TF32_KNOBS)


def set_tf32(enabled: bool | tuple) -> None:
    """TF32 on ("tf32") or off ("ieee") for CUDA's fp32 matrix products and cuDNN's
    convolutions, or a `tf32_state()` put back. The global knob and the leaves are set
    alike, so whichever a library set before, the leaves say what runs."""
    values = enabled if isinstance(enabled, tuple) else ("tf32" if enabled else "ieee",) * len(_TF32_KNOBS)
    for path, value in zip(_TF32_KNOBS, values):
        knob = _tf32_knob(path)
        if knob is not None and value is not None:
            knob.fp32_precision = value


@contextlib.contextmanager
def tf32(enabled: bool):
    """Within: TF32 on or off (`set_tf32`); the previous setting comes back after."""
    old = tf32_state()
    set_tf32(enabled)
    try:
        yield
    finally:
        set_tf32(old)


def autocast(device: torch.device, precision: str = "fp32"):
    """bf16 autocast for training steps when `precision` (resolved) is "bf16": weights, their
    gradients and the optimizer stay fp32 (autocast casts per op). Deterministic on a CPU, so
    CPU runs stay bit-identical. Evaluations choose their own precision (xlt.engine.evaluation,
    predict.launch_batches)."""
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def state_copy(module: torch.nn.Module) -> dict:
    """A CPU copy of the state dict with no shared storage (safetensors refuses tied weights)."""
    return {k: v.detach().cpu().clone().contiguous() for k, v in module.state_dict().items()}


class CpuFusedAdamW(torch.optim.AdamW):
    """`torch.optim.AdamW(fused=True)` on a CPU, bit for bit and with the same state_dict, in
    fewer ops: every parameter's step counter is a view of one tensor per group, advanced by
    one op. torch advances the counters one tensor at a time on a CPU, which was a third of
    the optimizer step on the tiny model (the update itself is torch's fused kernel)."""

    def __init__(self, params, **kw):
        super().__init__(params, fused=True, **kw)
        self._counters: dict[int, torch.Tensor] = {}

    def load_state_dict(self, state_dict) -> None:
        super().load_state_dict(state_dict)
        self._counters = {}  # the loaded counters are separate tensors: gather them again

    def _group_counters(self, i: int, params: list) -> torch.Tensor:
        counters = self._counters.get(i)
        if counters is None:
            counters = torch.tensor([float(self.state[p]["step"]) if "step" in self.state[p] else 0.0 for p in params])
            for j, p in enumerate(params):
                if "step" in self.state[p]:
                    self.state[p]["step"] = counters[j]
            self._counters[i] = counters
        return counters

    @torch.no_grad()
    def step(self, closure=None):
        if any(g["amsgrad"] or g["maximize"] or g["differentiable"] or g["capturable"] for g in self.param_groups):
            return super().step(closure)
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for i, group in enumerate(self.param_groups):
            params = group["params"]
            live = [j for j, p in enumerate(params) if p.grad is not None]  # AdamW skips the rest
            if not live:
                continue
            counters = self._group_counters(i, params)
            for j in live:
                state = self.state[params[j]]
                if "step" not in state:
                    p = params[j]
                    state.update(step=counters[j], exp_avg=torch.zeros_like(p, memory_format=torch.preserve_format),
                                 exp_avg_sq=torch.zeros_like(p, memory_format=torch.preserve_format))
            if len(live) == len(params):
                counters.add_(1)
            else:
                counters.index_add_(0, torch.tensor(live), torch.ones(len(live)))
            ps = [params[j] for j in live]
            states = [self.state[p] for p in ps]
            beta1, beta2 = group["betas"]
            torch._fused_adamw_(ps, [p.grad for p in ps], [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states],
                                [], [s["step"] for s in states], amsgrad=False, lr=group["lr"], beta1=beta1, beta2=beta2,
                                weight_decay=group["weight_decay"], eps=group["eps"], maximize=False)
        return loss


def build_optimizer(model: torch.nn.Module | None, lr: float, weight_decay: float, betas=(0.9, 0.999), eps: float = 1e-8,
                    device: torch.device | None = None, named: list | None = None) -> torch.optim.Optimizer:
    """AdamW with decoupled decay on matrices only (not on biases and LayerNorm weights).

    The fused kernel (CUDA and CPU alike) updates every parameter in one pass instead of a
    dozen elementwise ops per tensor: on the tiny CPU model it was a quarter of a step.
    It is deterministic, so CPU runs stay bit-identical; it needs floating-point params on
    one of those two devices, else the per-tensor implementation is used. On a CPU it runs
    through `CpuFusedAdamW` (the same update, fewer ops). `named`: (name, parameter, its
    ndim) in the model's place (stacked weights: xlt.engine.packed, the ndim of one model's)."""
    decay, no_decay = [], []
    for name, p, ndim in named or [(n, p, p.ndim) for n, p in model.named_parameters()]:
        if not p.requires_grad:
            continue
        (no_decay if ndim < 2 or "LayerNorm" in name or "layer_norm" in name else decay).append(p)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    params = decay + no_decay
    fused = (device is None or device.type in ("cuda", "cpu")) and all(
        p.is_floating_point() and p.device.type in ("cuda", "cpu") for p in params)
    if fused and params and all(p.device.type == "cpu" for p in params):
        return CpuFusedAdamW(groups, lr=lr, betas=tuple(betas), eps=eps)
    return torch.optim.AdamW(groups, lr=lr, betas=tuple(betas), eps=eps, fused=fused)


def clip_grad_norm(parameters, max_norm: float) -> torch.Tensor:
    """`torch.nn.utils.clip_grad_norm_`, bit for bit, without its multiply by exactly 1.0
    when the norm is under `max_norm` on a CPU (there reading the norm costs nothing, and the
    per-tensor multiply was 1.5% of a tiny-model step). Returns the total norm."""
    grads = [p.grad for p in parameters if p.grad is not None]
    total = torch.nn.utils.get_total_norm(grads)
    if grads and grads[0].device.type == "cpu":
        coef = max_norm / (total + 1e-6)  # the factor clip_grads_with_norm_ clamps to <= 1
        if coef.item() < 1.0:
            torch._foreach_mul_(grads, coef)
    else:
        torch.nn.utils.clip_grads_with_norm_(grads, max_norm, total)
    return total


def warmup_factor(step: int, total: int, warmup: int, schedule: str) -> float:
    """The lr multiplier before optimizer step `step` (0-based): linear warmup from 0, then
    linear decay to 0 ("linear") or flat ("constant") — the Hugging Face schedules."""
    if step < warmup:
        return step / warmup
    if schedule == "constant":
        return 1.0
    return max(0.0, (total - step) / max(1, total - warmup))


def build_scheduler(optimizer, total: int, warmup_ratio: float, schedule: str = "linear"):
    warmup = int(warmup_ratio * total)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: warmup_factor(s, total, warmup, schedule))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class Checkpointer:
    """`<dir>/last/` holds the newest complete checkpoint, `<dir>/last.old/` the one before
    while a new one is being put in place. A checkpoint is the model's weights
    (safetensors), the optimizer / scheduler / RNG states (`torch.load(weights_only=True)`),
    the loop's state (JSON) and a manifest of checksums written last."""

    def __init__(self, directory: str | Path, log=None):
        self.dir = Path(directory)
        self.log = log or (lambda msg: print(msg, file=sys.stderr))

    def _candidates(self):
        return [self.dir / "last", self.dir / "last.old"]

    def _verify(self, c: Path) -> str | None:
        """None if `c` is complete and intact, else why not."""
        man = c / MANIFEST
        if not man.exists():
            return "no manifest (the write was cut short)"
        try:
            files = json.loads(man.read_text())["sha256"]
        except (ValueError, KeyError) as e:
            return f"unreadable manifest ({e})"
        for name, digest in files.items():
            p = c / name
            if not p.exists():
                return f"{name} is missing"
            if _sha256(p) != digest:
                return f"{name} does not match its checksum"
        return None

    def load(self):
        """(directory, state) of the newest intact checkpoint, or (None, None)."""
        for c in self._candidates():
            if not c.exists():
                continue
            why = self._verify(c)
            if why is None:
                return c, json.loads((c / "state.json").read_text())
            self.log(f"checkpoint {c} is not usable: {why}; falling back to an older one")
        return None, None

    def save(self, model, optimizer, scheduler, state: dict, rng_states: list | None = None) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".ckpt.", dir=self.dir))
        try:
            save_file(state_copy(model), tmp / "model.safetensors")
            torch.save(
                {"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                 "rng": torch.get_rng_state(), "rng_per_rank": rng_states,
                 "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None},
                tmp / "optim.pt",
            )
            (tmp / "state.json").write_text(json.dumps(state))
            digests = {p.name: _sha256(p) for p in sorted(tmp.iterdir())}
            (tmp / MANIFEST).write_text(json.dumps({"sha256": digests}))  # written last: marks completeness
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)  # a full disk leaves no half checkpoint behind
            raise
        last, old = self._candidates()
        if old.exists():
            shutil.rmtree(old)
        if last.exists():
            os.replace(last, old)
        os.replace(tmp, last)
        if old.exists():
            shutil.rmtree(old)

    @staticmethod
    def restore(where: Path, model, optimizer, scheduler, dist: Dist | None = None) -> None:
        model.load_state_dict(load_file(where / "model.safetensors"))
        blob = torch.load(where / "optim.pt", weights_only=True)
        optimizer.load_state_dict(blob["optimizer"])
        scheduler.load_state_dict(blob["scheduler"])
        per_rank = blob.get("rng_per_rank")
        torch.set_rng_state(per_rank[dist.rank] if per_rank and dist is not None and dist.world > 1 else blob["rng"])
        if blob.get("cuda_rng") is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(blob["cuda_rng"])

    def save_best(self, model) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.dir / ".best.safetensors.tmp"
        save_file(state_copy(model), tmp)
        os.replace(tmp, self.dir / "best.safetensors")

    def best_state(self):
        return load_file(self.dir / "best.safetensors")

    def clear(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
