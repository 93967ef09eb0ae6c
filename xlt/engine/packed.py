"""K fine-tunes of one model shape in one step: every weight stacked along a leading model
dimension, every matrix product a batched one (`torch.baddbmm` / `bmm`).

Why stacked weights with batched products (and not K CUDA graphs on streams, or torch.func's
vmap): a GPU step of ours at batch 32 is host-bound (issue 40: 2-6 % MFU; the host issues
~the same ops whatever their size), and a batched product issues one kernel for K models, so
a packed step costs the host what one model's step does while the device does K models'
work. Streams keep K times the host work; vmap cannot keep each model's own dropout masks
(its randomness is one generator for the batch) and does not see through the engine's
oneDNN linear. Batched products run on a CPU too, so the path is tested there.

What each model keeps, as if it ran alone (`xlt.engine.recipes.finetune.train_packed`):
its batches (its own stream and seed: widths differ, so the pack is padded to the widest,
padding rows and positions masked and ignored by the loss), its dropout masks (on a CPU each
mask is drawn from the model's own generator, at the model's own batch shape and in the
order its own forward draws them: the same bits as alone; on CUDA the native dropout of the
stacked tensor, as a GPU run is not bit-reproducible anyway), its gradient-norm clipping
(each model's norm), its AdamW state (elementwise: a slice of the stacked state), its dev
selection, checkpoint and output directory. What differs is float rounding: a batched
product sums in another order than the engine's oneDNN / cuBLAS call for one model.

Supported: BERT-family encoders of the lean forward (xlt.engine.fastpath.lean_supported),
no extras, one head: tagging, sentence(-pair) classification (every classifier of
xlt.engine.heads.CLASSIFIERS) or span QA.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from xlt.engine.fastpath import attention_weights, key_bias, keep_mask, lean_supported
from xlt.engine.heads import (ClassificationHead, LinearClassificationHead, PooledClassificationHead, SpanQAHead,
                              TaggingHead)
from xlt.engine.kinds import IGNORE
from xlt.errors import XltError
import time
import sys
from xlt.engine.predict import to_device
import os
import signal

PACKABLE_HEADS = (TaggingHead, ClassificationHead, LinearClassificationHead, PooledClassificationHead, SpanQAHead)


def why_not_packable(model) -> str | None:
    """None if `model` (a TaskModel) can train in a pack, else why not."""
    if not lean_supported(model.encoder):
        return f"encoder type {getattr(model.encoder.config, 'model_type', '?')} has no lean forward"
    if len(model.extras):
        return "a model with extras trains alone"
    if len(model.heads) != 1:
        return "a model with auxiliary heads trains alone"
    if not isinstance(model.head, PACKABLE_HEADS):
        return f"head {type(model.head).__name__} is not packable"
    return None


class Dropper:
    """Dropout for one packed step. `generators` (CPU): model k's masks come from its own
    generator at its own batch shape `own[k]` = (rows, width), drawn in its forward's order,
    and are padded with zeros to the pack's shape; None: the native dropout of the stacked
    tensor (CUDA)."""

    def __init__(self, generators: list[torch.Generator] | None, own: list[tuple[int, int]], training: bool):
        self.generators, self.own, self.training = generators, own, training

    def __call__(self, x: torch.Tensor, p: float, width_dims: tuple[int, ...] = ()) -> torch.Tensor:
        """x: [K, rows, ...]; `width_dims`: the dims (of x) that are sequence positions."""
        if not self.training or p == 0.0:
            return x
        if self.generators is None:
            return F.dropout(x, p, True)
        masks = torch.zeros_like(x)
        for k, (g, (rows, width)) in enumerate(zip(self.generators, self.own)):
            shape = [rows, *x.shape[2:]]
            for d in width_dims:
                shape[d - 1] = width
            m = keep_mask(torch.empty(shape, dtype=x.dtype), p, generator=g)
            masks[k][tuple(slice(0, n) for n in shape)] = m
        return x * masks


def _linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
    """x [K, ..., in] times each model's w [K, out, in], plus b [K, out]."""
    k, shape = x.shape[0], x.shape[1:-1]
    flat = x.reshape(k, -1, x.shape[-1])
    y = torch.bmm(flat, w.transpose(1, 2)) if b is None else torch.baddbmm(b.unsqueeze(1), flat, w.transpose(1, 2))
    return y.view(k, *shape, w.shape[1])


def _layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, eps: float) -> torch.Tensor:
    view = (x.shape[0],) + (1,) * (x.dim() - 2) + (x.shape[-1],)
    return torch.addcmul(b.view(view), F.layer_norm(x, x.shape[-1:], None, None, eps), w.view(view))


class PackedModel(nn.Module):
    """K TaskModels of one spec as one module: parameter `name` of model k is
    `self.stacked[i][k]` (i = `self.index[name]`). `unstack_into(k, model)` copies model k's
    weights into a TaskModel (evaluation and saving run there, as for a model alone)."""

    def __init__(self, models: list):
        super().__init__()
        first = models[0]
        for m in models:
            if (why := why_not_packable(m)) is not None:
                raise XltError(f"cannot pack fine-tunes: {why}")
        self.k = len(models)
        self.names = [n for n, _ in first.named_parameters()]
        own = [dict(m.named_parameters()) for m in models]
        if any(list(o) != self.names or any(o[n].shape != own[0][n].shape for n in self.names) for o in own):
            raise XltError("cannot pack fine-tunes: the models' parameters differ in name or shape")
        self.stacked = nn.ParameterList([nn.Parameter(torch.stack([o[n].detach() for o in own]).contiguous())
                                         for n in self.names])
        self.index = {n: i for i, n in enumerate(self.names)}
        self.own_ndim = {n: own[0][n].dim() for n in self.names}
        cfg = first.encoder.config
        self.config, self.kind, self.task = cfg, first.kind, first.task
        self.head_type, self.head_name = type(first.head), f"heads.{first.task.name}"
        self.head_p = first.head.dropout.p if hasattr(first.head, "dropout") else 0.0
        self.act = first.encoder.encoder.layer[0].intermediate.intermediate_act_fn
        self.eps = cfg.layer_norm_eps
        self.pad_id = cfg.pad_token_id if cfg.pad_token_id is not None else 0

    def p(self, name: str) -> torch.Tensor:
        return self.stacked[self.index[name]]

    def optimizer_params(self):
        """(name, stacked parameter, the parameter's own ndim): what AdamW's decay groups read."""
        return [(n, self.stacked[i], self.own_ndim[n]) for i, n in enumerate(self.names)]

    @torch.no_grad()
    def unstack_into(self, k: int, model) -> None:
        for n, p in model.named_parameters():
            p.copy_(self.p(n)[k])

    def model_norms(self) -> torch.Tensor:
        """Each model's gradient norm, [K] (torch.nn.utils.get_total_norm of its own grads)."""
        per = [p.grad.flatten(1).float().norm(dim=1) for p in self.stacked if p.grad is not None]
        return torch.stack(per, 1).norm(dim=1)

    @torch.no_grad()
    def clip_grad_values(self, max_value: float) -> None:
        """Each gradient value clamped to ±max_value: elementwise, so each model's as
        clip_grad_value_ clips it alone."""
        for p in self.stacked:
            if p.grad is not None:
                p.grad.clamp_(-max_value, max_value)

    @torch.no_grad()
    def clip_grad_norms(self, max_norm: float) -> torch.Tensor:
        """Each model's gradients scaled to norm <= max_norm, as clip_grad_norm_ does alone."""
        norms = self.model_norms()
        coef = (max_norm / (norms + 1e-6)).clamp(max=1.0)
        for p in self.stacked:
            if p.grad is not None:
                p.grad.mul_(coef.view(-1, *([1] * (p.dim() - 1))).to(p.grad.dtype))
        return norms

    # ------------------------------------------------------------------ forward
    def _embed(self, ids: torch.Tensor, types: torch.Tensor | None, drop: Dropper) -> torch.Tensor:
        k, b, n = ids.shape
        e = "encoder.embeddings."
        word, pos, typ = self.p(e + "word_embeddings.weight"), self.p(e + "position_embeddings.weight"), \
            self.p(e + "token_type_embeddings.weight")
        offsets = torch.arange(k, device=ids.device).view(k, 1, 1)
        h = F.embedding(ids + offsets * word.shape[1], word.reshape(-1, word.shape[-1]))
        if types is None:
            types = torch.zeros_like(ids)
        h = h + F.embedding(types + offsets * typ.shape[1], typ.reshape(-1, typ.shape[-1]))
        if self.config.model_type == "bert":
            h = h + pos[:, :n].unsqueeze(1)
        else:  # RoBERTa / XLM-R: positions count from the padding id, over real tokens only
            real = ids.ne(self.pad_id).long()
            pid = (real.cumsum(-1) * real + self.pad_id) + offsets * pos.shape[1]
            h = h + F.embedding(pid, pos.reshape(-1, pos.shape[-1]))
        h = _layer_norm(h, self.p(e + "LayerNorm.weight"), self.p(e + "LayerNorm.bias"), self.eps)
        return drop(h, self.config.hidden_dropout_prob, (2,))

    def _attention(self, q, k_, v, keep_key, drop: Dropper) -> torch.Tensor:
        """q, k, v: [K, B, heads, n, d]; keep_key [K, B, 1, 1, n]."""
        K, b, heads, n, d = q.shape
        p = self.config.attention_probs_dropout_prob
        if drop.generators is None:  # the fused kernel, the models' rows side by side
            out = F.scaled_dot_product_attention(q.reshape(K * b, heads, n, d), k_.reshape(K * b, heads, n, d),
                                                 v.reshape(K * b, heads, n, d), attn_mask=keep_key.flatten(0, 1),
                                                 dropout_p=p if drop.training else 0.0)
            return out.view(K, b, heads, n, d)
        scores = torch.bmm(q.reshape(-1, n, d), k_.reshape(-1, n, d).transpose(1, 2)).view(K, b, heads, n, n)
        weights = attention_weights(scores, d ** -0.5, key_bias(keep_key)).to(v.dtype)
        weights = drop(weights, p, (3, 4))
        return torch.bmm(weights.reshape(-1, n, n), v.reshape(-1, n, d)).view(K, b, heads, n, d)

    def _layer(self, i: int, h: torch.Tensor, keep_key, drop: Dropper) -> torch.Tensor:
        K, b, n, hidden = h.shape
        pre = f"encoder.encoder.layer.{i}."
        a = pre + "attention.self."
        heads = self.config.num_attention_heads
        d = hidden // heads
        w = torch.cat([self.p(a + "query.weight"), self.p(a + "key.weight"), self.p(a + "value.weight")], 1)
        bias = torch.cat([self.p(a + "query.bias"), self.p(a + "key.bias"), self.p(a + "value.bias")], 1)
        q, k_, v = _linear(h, w, bias).view(K, b, n, 3, heads, d).permute(3, 0, 1, 4, 2, 5).unbind(0)
        ctx = self._attention(q, k_, v, keep_key, drop).transpose(2, 3).reshape(K, b, n, hidden)
        h = self._add_norm(pre + "attention.output.", ctx, h, drop)
        mid = self.act(_linear(h, self.p(pre + "intermediate.dense.weight"), self.p(pre + "intermediate.dense.bias")))
        return self._add_norm(pre + "output.", mid, h, drop)

    def _add_norm(self, pre: str, x, residual, drop: Dropper) -> torch.Tensor:
        y = drop(_linear(x, self.p(pre + "dense.weight"), self.p(pre + "dense.bias")),
                 self.config.hidden_dropout_prob, (2,)) + residual
        return _layer_norm(y, self.p(pre + "LayerNorm.weight"), self.p(pre + "LayerNorm.bias"), self.eps)

    def _head(self, h: torch.Tensor, mask: torch.Tensor, drop: Dropper) -> torch.Tensor:
        hp, p = self.head_name + ".", self.head_p

        def lin(name, x):
            return _linear(x, self.p(hp + name + ".weight"), self.p(hp + name + ".bias"))

        t = self.head_type
        if t is TaggingHead:
            return lin("out", drop(h, p, (2,)))
        if t is SpanQAHead:
            start, end = lin("out", drop(h, p, (2,))).float().unbind(-1)
            pad = mask == 0
            return torch.stack([start.masked_fill(pad, -1e4), end.masked_fill(pad, -1e4)], -1)
        cls = h[:, :, 0]
        if t is ClassificationHead:
            return lin("out", drop(torch.tanh(lin("dense", drop(cls, p))), p))
        if t is LinearClassificationHead:
            return lin("out", drop(cls, p))
        return lin("out", drop(torch.tanh(lin("pooler", cls)), p))  # PooledClassificationHead

    def forward(self, batch: dict, drop: Dropper) -> torch.Tensor:
        """The K models' logits, [K, B, ...], on a packed batch (`pack_batches`)."""
        ids, mask = batch["input_ids"], batch["attention_mask"]
        h = self._embed(ids, batch.get("token_type_ids"), drop)
        keep_key = mask.bool()[:, :, None, None, :]
        for i in range(self.config.num_hidden_layers):
            h = self._layer(i, h, keep_key, drop)
        return self._head(h, mask, drop)


def pack_batches(batches: list[dict], kind, pad_id: int) -> tuple[dict, list[tuple[int, int]]]:
    """K collated batches as one [K, rows, width] batch (the widest width, the most rows) and
    each batch's own (rows, width). Padding positions are masked; padding rows (a model whose
    batch is shorter: an epoch's last) are one masked-in pad token with ignored gold, so that
    no attention row is empty."""
    own = [(b["input_ids"].shape[0], b["input_ids"].shape[1]) for b in batches]
    rows, width = max(r for r, _ in own), max(w for _, w in own)
    fill = {"input_ids": pad_id, "attention_mask": 0, **{k: (pad_id if v is None else v) for k, v in kind.pad_values.items()}}
    out = {}
    for key in batches[0]:
        parts = []
        for b in batches:
            t = b[key]
            if t.dim() == 2:
                t = F.pad(t, (0, width - t.shape[1]), value=fill.get(key, 0))
            extra = rows - t.shape[0]
            if extra:
                gold = key in kind.gold_fields
                t = torch.cat([t, torch.full((extra, *t.shape[1:]), IGNORE if gold else fill.get(key, 0), dtype=t.dtype)])
                if key == "attention_mask":
                    t[-extra:, 0] = 1
            parts.append(t)
        out[key] = torch.stack(parts)
    return out, own


class PackedLoop:
    """The training loop of a pack: one step draws each model's batch from its own stream,
    runs the K models at once, and updates each with its own loss, clipping and AdamW state.
    Checkpoint/resume as `xlt.engine.loop.Loop` (the pack is one checkpoint: stacked weights,
    optimizer, schedule, every model's generator, stream cursor and loop state; written whole
    or not at all), so a pack killed anywhere (kill -9 included) resumes every model.

    `on_epoch_end(k, state_k, epoch)`: model k's dev selection, called after its weights were
    copied into its own TaskModel (`models[k]`), at each epoch's end and every `eval_steps`
    steps; it returns whether model k's selection changed. `generators`: each model's dropout generator
    (CPU), seeded as its job alone would have left torch's global one."""

    def __init__(self, *, packed: PackedModel, models: list, streams: list, optimizer, scheduler, device: torch.device,
                 checkpointer, generators: list[torch.Generator] | None, epochs: int | None = None,
                 max_steps: int | None = None, max_grad_norm: float = 1.0, max_grad_value: float | None = None,
                 checkpoint_every: int | None = None, eval_steps: int | None = None,
                 checkpoint_minutes: float | None = 10.0, on_epoch_end=None, precision: str = "fp32",
                 stop_after_steps: int | None = None, kill_after_steps: int | None = None, log_every: int = 50,
                 desc: str = "pack", pad_multiple: int | None = None, on_step_begin=None):
        if (epochs is None) == (max_steps is None):
            raise XltError("a packed loop needs exactly one of epochs / max_steps")
        per = {s.per_epoch() for s in streams}
        if len(per) != 1:
            raise XltError(f"packed models must have as many batches per epoch; got {sorted(per)}")
        self.__dict__.update(locals())
        del self.__dict__["self"]
        # deferred: loads numpy, safetensors only when this runs
        from xlt.engine.loop import CUDA_PAD_MULTIPLE

        for s in streams:
            s.pad_multiple = pad_multiple or (CUDA_PAD_MULTIPLE if device.type == "cuda" else 1)
        self.kind, self.pad_id = packed.kind, streams[0].pad_id
        self.timers = {"evaluating": 0.0, "checkpointing": 0.0}

    def _fresh(self) -> dict:
        return {"global_step": 0, "cursors": [], "models": [
            {"global_step": 0, "history": [], "losses": [], "resumed_from": [], "best": None, "best_epoch": None}
            for _ in self.streams]}

    def _save(self, state: dict) -> None:

        t = time.perf_counter()
        state["cursors"] = [list(s.cursor) for s in self.streams]
        gens = [g.get_state() for g in self.generators] if self.generators else None
        self.checkpointer.save(self.packed, self.optimizer, self.scheduler, state, gens)
        self.timers["checkpointing"] += time.perf_counter() - t

    def resume_or_start(self) -> dict:
        # deferred: loads safetensors only when this runs
        from safetensors.torch import load_file

        where, saved = self.checkpointer.load()
        if where is None:
            return self._fresh()
        self.packed.load_state_dict(load_file(where / "model.safetensors"))
        blob = torch.load(where / "optim.pt", weights_only=True)
        self.optimizer.load_state_dict(blob["optimizer"])
        self.scheduler.load_state_dict(blob["scheduler"])
        if self.generators:
            for g, s in zip(self.generators, blob["rng_per_rank"]):
                g.set_state(s)
        if blob.get("cuda_rng") is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(blob["cuda_rng"])
        for s, cur in zip(self.streams, saved["cursors"]):
            s.cursor = list(cur)
        for m in saved["models"]:
            m["resumed_from"].append(saved["global_step"])

        print(f"resuming the pack of {len(self.streams)} from step {saved['global_step']}", file=sys.stderr)
        return saved

    def _done(self, state: dict) -> bool:
        if self.max_steps is not None:
            return state["global_step"] >= self.max_steps
        return self.streams[0].cursor[0] >= self.epochs

    def step(self, batches: list[dict], step: int) -> torch.Tensor:
        """One optimizer step of every model; each model's loss, [K] (on the device)."""
        # deferred: loads numpy, safetensors only when this runs
        from xlt.engine.runtime import autocast

        batch, own = pack_batches(batches, self.kind, self.pad_id)
        batch = to_device(batch, self.device)
        if self.on_step_begin is not None:
            self.on_step_begin(step)
        with autocast(self.device, self.precision):
            logits = self.packed(batch, Dropper(self.generators, own, True))
        gold = {k: batch[k] for k in self.kind.gold_fields}
        losses = torch.stack([self.kind.loss({"logits": logits[k]}, {f: g[k] for f, g in gold.items()})
                              for k in range(self.packed.k)])
        losses.sum().backward()
        if self.max_grad_value is not None:
            self.packed.clip_grad_values(self.max_grad_value)
        if self.max_grad_norm:
            self.packed.clip_grad_norms(self.max_grad_norm)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return losses.detach()

    def _evaluate(self, state: dict, epoch: int) -> list:
        """Every model's dev selection (`on_epoch_end`) on its own weights; what each returned."""
        t = time.perf_counter()
        changed = []
        for k, model in enumerate(self.models):
            self.packed.unstack_into(k, model)
            changed.append(self.on_epoch_end(k, state["models"][k], epoch))
        self.timers["evaluating"] += time.perf_counter() - t
        self.packed.train()
        return changed

    def run(self) -> dict:

        # deferred: loads numpy, safetensors only when this runs
        from xlt.engine.runtime import GraceSignal, Preempted

        state = self.resume_or_start()
        steps_here, t0, last_save = 0, time.perf_counter(), time.monotonic()
        self.packed.train()
        lead = self.streams[0]
        with GraceSignal() as grace:
            while not self._done(state):
                if self.max_steps is not None and lead.epoch_done():
                    for s in self.streams:
                        s.next_epoch()
                epoch = lead.cursor[0]
                idx = [s.next_indices() for s in self.streams]
                losses = self.step([s.collate(i) for s, i in zip(self.streams, idx)], state["global_step"])
                state["global_step"] += 1
                steps_here += 1
                if state["global_step"] % self.log_every == 0 or self.device.type == "cpu":
                    values = losses.tolist()
                    if not all(torch.isfinite(torch.tensor(values))):
                        bad = [k for k, v in enumerate(values) if v != v or abs(v) == float("inf")]
                        raise XltError(f"{self.desc}: non-finite loss of model(s) {bad} at step {state['global_step']}"
                                       f" (epoch {epoch + 1}); nothing was saved for this step; lower the learning rate")
                    if state["global_step"] % self.log_every == 0:
                        for m, v in zip(state["models"], values):
                            m["losses"].append([state["global_step"], round(v, 5)])
                for m in state["models"]:
                    m["global_step"] = state["global_step"]
                if self.kill_after_steps is not None and steps_here >= self.kill_after_steps:
                    os.kill(os.getpid(), signal.SIGKILL)  # testing aid: a node failure, nothing saved
                saved = False
                if (self.eval_steps and self.on_epoch_end is not None and state["global_step"] % self.eval_steps == 0
                        and not lead.epoch_done()):  # an epoch's end evaluates anyway
                    if any(self._evaluate(state, epoch)):
                        self._save(state)  # the selection that the selected weights on disk come from (as Loop)
                        last_save, saved = time.monotonic(), True
                if self.max_steps is None and lead.epoch_done():
                    if self.on_epoch_end is not None:
                        self._evaluate(state, epoch)
                    for s in self.streams:
                        s.next_epoch()
                    self._save(state)
                    last_save = time.monotonic()
                    continue
                interrupted = grace.received is not None or (
                    self.stop_after_steps is not None and steps_here >= self.stop_after_steps)
                due = (self.checkpoint_every and state["global_step"] % self.checkpoint_every == 0) or (
                    self.checkpoint_minutes and time.monotonic() - last_save >= 60.0 * self.checkpoint_minutes)
                if interrupted or (due and not saved):
                    self._save(state)
                    last_save = time.monotonic()
                if interrupted:
                    raise Preempted(f"{self.desc}: stopped at step {state['global_step']}; checkpoint saved in "
                                    f"{self.checkpointer.dir}, rerun to resume")
        seconds = round(time.perf_counter() - t0, 3)
        for m in state["models"]:
            m.update(steps_this_process=steps_here, seconds_this_process=seconds,
                     seconds_evaluating=round(self.timers["evaluating"], 3),
                     seconds_checkpointing=round(self.timers["checkpointing"], 3))
        return state
