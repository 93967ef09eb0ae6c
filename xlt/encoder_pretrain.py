"""Build an encoder from scratch: a WordPiece tokenizer and a small BERT pretrained by MLM.

This is how the tiny preset gets its encoder; the result is a Hugging Face directory, so
everything downstream loads it with the same `AutoModel`/`AutoTokenizer` code that loads
mBERT or XLM-R from the Hub. The MLM loop checkpoints and resumes like the fine-tuning
engine (same Checkpointer), and MLM domain adaptation of a Hub encoder reuses it.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from xlt.engine.trainer import Checkpointer, Preempted, _GraceSignal, pick_device, seed_everything
from xlt.errors import XltError
from xlt.io import atomic_dir, write_json
from xlt.provenance import provenance

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def train_wordpiece(texts: list[str], vocab_size: int, out_dir: str | Path):
    """Train a cased WordPiece tokenizer (BERT pre-tokenisation) and save it as a fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False, strip_accents=False, clean_text=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, min_frequency=2, show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    # The trainer numbers the tokens it learnt in hash-map order, which changes from run to
    # run (same set, other ids): number them in a fixed order, so that the same corpus gives
    # the same tokenizer and the same embedding rows.
    learnt = tok.get_vocab()
    ordered = SPECIALS + sorted(t for t in learnt if t not in SPECIALS)
    tok.model = models.WordPiece(vocab={t: i for i, t in enumerate(ordered)}, unk_token="[UNK]")
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    tok.decoder = decoders.WordPiece()
    fast = BertTokenizerFast(tokenizer_object=tok, do_lower_case=False, model_max_length=512)
    fast.save_pretrained(out_dir)
    return fast


@dataclass
class EncoderShape:
    layers: int = 4  # transformer layers
    hidden: int = 128  # hidden size
    heads: int = 4  # attention heads
    intermediate: int = 512  # feed-forward size
    max_positions: int = 512  # position embeddings (windows are at most max_length)


@dataclass
class MLMConfig:
    steps: int = 2000  # optimizer steps
    batch_size: int = 64
    lr: float = 5e-4
    warmup_ratio: float = 0.06
    weight_decay: float = 0.01
    max_length: int = 64
    mask_prob: float = 0.15  # of tokens chosen; of those 80% [MASK], 10% random, 10% kept
    seed: int = 1
    checkpoint_every: int = 200
    device: str = "auto"


def mask_tokens(input_ids: torch.Tensor, tokenizer, prob: float, generator: torch.Generator):
    """BERT's masking: choose `prob` of the non-special tokens; 80/10/10 mask/random/keep."""
    labels = input_ids.clone()
    special = torch.zeros_like(input_ids, dtype=torch.bool)
    for sid in tokenizer.all_special_ids:
        special |= input_ids == sid
    chosen = (torch.rand(input_ids.shape, generator=generator) < prob) & ~special
    labels[~chosen] = -100
    r = torch.rand(input_ids.shape, generator=generator)
    ids = input_ids.clone()
    ids[chosen & (r < 0.8)] = tokenizer.mask_token_id
    rand_pos = chosen & (r >= 0.8) & (r < 0.9)
    ids[rand_pos] = torch.randint(len(tokenizer), input_ids.shape, generator=generator)[rand_pos]
    return ids, labels


def pretrain_mlm(
    texts: list[str],
    tokenizer_dir: str | Path,
    out_dir: str | Path,
    checkpoint_dir: str | Path,
    shape: EncoderShape | None = None,
    cfg: MLMConfig | None = None,
    init_from: str | None = None,
    text_files=(),
    progress: bool = True,
) -> dict:
    """MLM-train a new BERT of `shape` (or continue `init_from`, for domain adaptation)."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer, BertConfig, BertForMaskedLM

    shape, cfg = shape or EncoderShape(), cfg or MLMConfig()
    device = pick_device(cfg.device)
    seed_everything(cfg.seed)
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    if init_from:
        model = AutoModelForMaskedLM.from_pretrained(init_from, use_safetensors=True)
    else:
        model = BertForMaskedLM(
            BertConfig(
                vocab_size=len(tokenizer), hidden_size=shape.hidden, num_hidden_layers=shape.layers,
                num_attention_heads=shape.heads, intermediate_size=shape.intermediate,
                max_position_embeddings=shape.max_positions, pad_token_id=tokenizer.pad_token_id,
            )
        )
    model.to(device)
    enc = tokenizer(texts, truncation=True, max_length=cfg.max_length)["input_ids"]
    if not enc:
        raise XltError("MLM pretraining: no text")
    from xlt.engine.batching import collate, length_grouped_batches
    from xlt.engine.trainer import _optimizer, _scheduler

    features = [{"input_ids": ids} for ids in enc]
    lengths = [len(ids) for ids in enc]
    from xlt.engine.config import TrainConfig

    tcfg = TrainConfig(task="pos", encoder="", lr=cfg.lr, weight_decay=cfg.weight_decay, warmup_ratio=cfg.warmup_ratio)
    optimizer = _optimizer(model, tcfg, device)
    scheduler = _scheduler(optimizer, tcfg, cfg.steps)
    ckpt = Checkpointer(checkpoint_dir)
    state = {"step": 0, "resumed_from": [], "losses": []}
    where, saved = ckpt.load()
    if where is not None:
        from safetensors.torch import load_file

        model.load_state_dict(load_file(where / "model.safetensors"), strict=False)
        blob = torch.load(where / "optim.pt", weights_only=True)
        optimizer.load_state_dict(blob["optimizer"])
        scheduler.load_state_dict(blob["scheduler"])
        torch.set_rng_state(blob["rng"])
        state = saved
        state["resumed_from"].append(state["step"])
    masker = torch.Generator().manual_seed(cfg.seed)
    # The masking generator's position is a function of the step: replay it on resume.
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=cfg.steps, initial=state["step"], desc="mlm", unit="step", file=sys.stderr,
                   mininterval=1.0 if sys.stderr.isatty() else 30.0)
    model.train()
    with _GraceSignal() as grace:
        while state["step"] < cfg.steps:
            epoch, within = divmod(state["step"], max(1, len(length_grouped_batches(lengths, cfg.batch_size, cfg.seed, 0))))
            batches = length_grouped_batches(lengths, cfg.batch_size, cfg.seed, epoch)
            for bi in range(within, len(batches)):
                if state["step"] >= cfg.steps:
                    break
                batch = collate([features[i] for i in batches[bi]], tokenizer.pad_token_id)
                masker.manual_seed(cfg.seed * 1_000_003 + state["step"])
                ids, labels = mask_tokens(batch["input_ids"], tokenizer, cfg.mask_prob, masker)
                labels[batch["attention_mask"] == 0] = -100
                out = model(input_ids=ids.to(device), attention_mask=batch["attention_mask"].to(device), labels=labels.to(device))
                if not torch.isfinite(out.loss):
                    raise XltError(f"MLM: non-finite loss ({out.loss.item()}) at step {state['step'] + 1}")
                out.loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                state["step"] += 1
                if state["step"] % 50 == 0 or state["step"] == cfg.steps:
                    state["losses"].append([state["step"], round(out.loss.item(), 5)])
                if bar:
                    bar.update(1)
                    bar.set_postfix(loss=f"{out.loss.item():.3f}", refresh=False)
                if grace.received is not None or state["step"] % cfg.checkpoint_every == 0:
                    ckpt.save(model, optimizer, scheduler, state)
                if grace.received is not None:
                    raise Preempted(f"MLM stopped by signal {grace.received} at step {state['step']}; rerun to resume")
    if bar:
        bar.close()
    summary = {"steps": state["step"], "losses": state["losses"], "resumed_from": state["resumed_from"],
               "shape": asdict(shape), "mlm": asdict(cfg), "init_from": init_from}
    with atomic_dir(out_dir) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        meta = {**summary, "provenance": provenance({"shape": asdict(shape), "mlm": asdict(cfg)}, cfg.seed, text_files)}
        write_json(tmp / "xlt_encoder.json", meta)
    ckpt.clear()
    return summary
