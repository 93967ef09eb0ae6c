"""Cross-lingual adjustment (Cao et al. 2020; the adjust paper's Eq. 1) on the one loop: an
encoder is trained so that aligned words of sentence pairs get close vectors, while its English
vectors stay close to those of the frozen original. The result is a Hugging Face encoder
directory, an `{init}` that fine-tuning starts from.

A step draws one batch of the paired stream of aligned pairs (both sentences and their word
links), runs the encoder once over each side, and adds two terms: `align` (‖f(s) − f(t)‖² over
the links) and `anchor` (‖f(e) − f₀(e)‖² over the English words, f₀ the frozen reference).
Settings the paper leaves out are the authors' (../shared/PAPERS.md): Adam(0.9, 0.98, eps 1e-9)
without weight decay or clipping, lr 5e-5, 10% linear warmup then constant, one epoch, batch 32,
the last layer, word vectors averaged over subwords, [CLS] and [SEP] aligned too.

Continual learning (the paper's Eq. 2) is fine-tuning with the two terms beside the task's:
the auxiliary entry of kind "aligned_pairs" (`ContinualPairs`, registered on import with the
engine's fine-tuning: xlt.engine.recipes.extensions).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from xlt.engine.train_config import FAST_PATH
from xlt.engine.fastpath import encode_pair, use_keep_mask_dropout
from xlt.engine.features import ALIGNED_TOKENS, WORD_VECTORS, encode_aligned_pairs
from xlt.engine.loop import Loop
from xlt.engine.model import load_encoder
from xlt.engine.objectives import REPRESENTATIONS, Objective, alignment_term, anchor_term
from xlt.engine.recipes.extensions import FinetuneExtension, FinetuneRun, register
from xlt.engine.reference import FrozenReference
from xlt.engine.runtime import Checkpointer, Dist, build_optimizer, build_scheduler, resolve_precision, seed_everything
from xlt.engine.streams import PairedStream
from xlt.errors import XltError
from xlt.io import atomic_dir, write_json
from xlt.provenance import provenance

ADJUST_META = "xlt_encoder.json"  # beside the weights, as an MLM-built encoder's
ALIGNED_PAIRS = "aligned_pairs"  # the kind (and stream name) of continual learning's auxiliary stream


@dataclass
class AdjustConfig:
    lr: float = 5e-5  # constant after the warmup
    epochs: int = 1  # passes over the aligned pairs
    batch_size: int = 32  # sentence pairs per step
    warmup_ratio: float = 0.1  # share of steps with a linear warmup
    adam_betas: tuple[float, float] = (0.9, 0.98)
    adam_eps: float = 1e-9
    weight_decay: float = 0.0  # the authors' plain Adam
    max_grad_norm: float = 0.0  # no clipping (the authors')
    # subwords per sentence, specials included; words past it are cut. A guard at mBERT's position
    # limit: the authors cut nothing (their pool drops pairs over 64 words, align.pool.max_words)
    max_length: int = 512
    word_vectors: str = "avg"  # a word's vector: its subwords' "avg", the "start" / "end" subword, or
    #                             "subword": the pairs are aligned subwords (the stage's subword branch)
    tokens: str = "all"  # aligned: words, [CLS] and [SEP] ("all"), or "words", "cls", "cls_sep" (ALIGNED_TOKENS)
    align_weight: float = 1.0
    anchor_weight: float = 1.0  # the authors' base_rate
    dropout: float = 0.1  # the adjusted encoder trains with its dropout on; the reference runs without
    seed: int = 1
    checkpoint_minutes: float = 10.0
    checkpoint_every: int | None = None
    device: str = "auto"
    precision: str = "auto"
    fast_path: str = "auto"
    progress: bool = True

    @classmethod
    def from_dict(cls, d: dict, where: str = "adjust") -> "AdjustConfig":
        names = {f.name for f in dataclasses.fields(cls)}
        if unknown := sorted(set(d) - names):
            raise XltError(f"{where}: unknown adjustment option(s) {unknown}; allowed: {sorted(names)}")
        cfg = cls(**{**d, **({"adam_betas": tuple(d["adam_betas"])} if "adam_betas" in d else {})})
        for key, allowed in (("word_vectors", WORD_VECTORS), ("tokens", ALIGNED_TOKENS), ("fast_path", FAST_PATH),
                             ("precision", ("auto", "bf16", "fp32")), ("device", ("auto", "cpu", "cuda"))):
            if getattr(cfg, key) not in allowed:
                raise XltError(f"{where}: {key}={getattr(cfg, key)!r}; allowed: {', '.join(allowed)}")
        return cfg

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "adam_betas": list(self.adam_betas)}


class AdjustModel(nn.Module):
    """The encoder being adjusted behind the engine's batch -> outputs interface: a paired
    batch in, both sides' last hidden states out (one forward per step, so DDP sees one)."""

    def __init__(self, encoder: nn.Module):
        super().__init__()
        self.encoder = use_keep_mask_dropout(encoder)
        self.fast_path = True

    def forward(self, batch: dict, task: str | None = None):
        if task != REPRESENTATIONS:
            raise XltError(f"the adjusted encoder has no head: forward(task={task!r})")
        return encode_pair(self.encoder, batch, self.fast_path)


def read_aligned_pairs(files: list[str | Path]) -> list[dict]:
    """Aligned sentence pairs, JSON lines {"src": words, "tgt": words, "links": [[i, j], …]}
    (the alignment stage's samples, xlt.align.sample); a bad line is named by file and line."""
    pairs = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                try:
                    rec = json.loads(line)
                    if not (isinstance(rec["src"], list) and isinstance(rec["tgt"], list) and isinstance(rec["links"], list)):
                        raise TypeError("src, tgt and links must be lists")
                except (json.JSONDecodeError, KeyError, TypeError) as e:
                    raise XltError(f"{path}:{n}: not an aligned pair ({e.__class__.__name__}: {e})") from None
                pairs.append(rec)
    if not pairs:
        raise XltError(f"no aligned pairs in {', '.join(map(str, files))}")
    return pairs


def aligned_pairs_stream(name: str, files: list[str | Path], tokenizer, batch_size: int, seed: int, max_length: int,
                         word_vectors: str = "avg", tokens: str = "all") -> PairedStream:
    """The paired stream of the aligned pairs in `files` (English the source side)."""
    enc = encode_aligned_pairs(read_aligned_pairs(files), tokenizer, max_length, word_vectors, tokens)
    return PairedStream(name, enc.features, batch_size, seed, tokenizer.pad_token_id,
                        {"input_ids": None, "word_rows": -1}, pair_pad_values={"links": -1})


def alignment_terms(reference: FrozenReference, stream: str, align_weight: float, anchor_weight: float) -> list:
    """Eq. 1's two sums on a paired stream: aligned words closer, English words kept near f₀."""
    return [alignment_term(stream, align_weight), anchor_term(reference, stream, "source", anchor_weight)]


@register
class ContinualPairs(FinetuneExtension):
    """Continual learning (the adjust paper's Eq. 2): an auxiliary entry {"kind":
    "aligned_pairs", "files", "weight", "anchor_weight", "reference", "batch_size"?,
    "max_length"?, "word_vectors"?, "tokens"?} adds a paired stream of aligned pairs and
    Eq. 1's two terms (`alignment_terms`) with `weight` and `anchor_weight`, against the frozen
    encoder `reference`. At most one per run."""

    name = "adjust_continual"
    aux_kinds = (ALIGNED_PAIRS,)

    def check(self, cfg, kind) -> None:
        if len(self.entries) > 1:
            raise XltError(f"at most one auxiliary stream of kind {ALIGNED_PAIRS!r}; got {len(self.entries)}")

    def streams(self, run: FinetuneRun) -> tuple[dict, list]:
        (a,) = self.entries
        cfg = run.cfg
        with torch.random.fork_rng(devices=[]):  # loading f₀ leaves the training RNG as it was
            original, _ = load_encoder(a["reference"])
        stream = aligned_pairs_stream(
            ALIGNED_PAIRS, a["files"], run.tokenizer, int(a.get("batch_size", cfg.batch_size)), cfg.seed,
            int(a.get("max_length", cfg.max_length)), a.get("word_vectors", "avg"), a.get("tokens", "all"))
        terms = alignment_terms(FrozenReference(original.to(run.device), run.model.fast_path), ALIGNED_PAIRS,
                                float(a["weight"]), float(a.get("anchor_weight", 1.0)))
        return {ALIGNED_PAIRS: stream}, terms


def adjust_encoder(cfg: AdjustConfig, encoder: str, pair_files: list[str | Path], out_dir: str | Path,
                   checkpoint_dir: str | Path, revision: str | None = None, resolved_config: dict | None = None,
                   stop_after_steps: int | None = None, kill_after_steps: int | None = None) -> dict:
    """Adjust `encoder` (Hub id or directory) on the aligned pairs of `pair_files`; save the
    adjusted encoder and its tokenizer to `out_dir` with its provenance; return a summary."""
    dist = Dist()
    device = dist.device(cfg.device)
    precision = resolve_precision(cfg.precision, device)
    seed_everything(cfg.seed)
    hf, tokenizer = load_encoder(encoder, revision, dropout=cfg.dropout)
    # f₀: a copy of the encoder as loaded, at every start (a resumed job too), never trained or saved
    reference = FrozenReference(hf.to(device), lean=cfg.fast_path != "off")
    model = AdjustModel(hf).to(device)
    model.fast_path = cfg.fast_path != "off"
    stream = aligned_pairs_stream("pairs", pair_files, tokenizer, cfg.batch_size, cfg.seed, cfg.max_length,
                                  cfg.word_vectors, cfg.tokens)
    objective = Objective(alignment_terms(reference, "pairs", cfg.align_weight, cfg.anchor_weight))
    ddp_model = dist.wrap(model, device)
    optimizer = build_optimizer(ddp_model, cfg.lr, cfg.weight_decay, cfg.adam_betas, cfg.adam_eps, device)
    scheduler = build_scheduler(optimizer, cfg.epochs * stream.per_epoch(), cfg.warmup_ratio, "constant")
    ckpt = Checkpointer(checkpoint_dir)
    loop = Loop(model=ddp_model, raw_model=model, optimizer=optimizer, scheduler=scheduler, streams={"pairs": stream},
                primary="pairs", objective=objective, device=device, dist=dist, checkpointer=ckpt, epochs=cfg.epochs,
                max_grad_norm=cfg.max_grad_norm, checkpoint_every=cfg.checkpoint_every,
                checkpoint_minutes=cfg.checkpoint_minutes, desc=f"adjust seed{cfg.seed}", progress=cfg.progress,
                stop_after_steps=stop_after_steps, kill_after_steps=kill_after_steps, precision=precision)
    state = loop.run()
    summary = {"steps": state["global_step"], "losses": state["losses"], "resumed_from": state["resumed_from"],
               "steps_this_process": state["steps_this_process"], "pairs": len(stream.features),
               "links": sum(len(f["links"]) for f in stream.features), "seconds_this_process": state["seconds_this_process"],
               "precision": precision}
    if dist.main:
        with atomic_dir(out_dir) as tmp:
            model.encoder.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
            config = resolved_config or {"adjust": cfg.to_dict(), "encoder": encoder, "revision": revision}
            write_json(tmp / ADJUST_META, {**summary, "provenance": provenance(config, cfg.seed, pair_files)})
        ckpt.clear()
    dist.barrier()
    dist.close()
    return summary
