"""Masked language modelling on the one loop: pretraining a new encoder (the tiny preset's,
after its WordPiece tokenizer is trained) and domain adaptation of any Hugging Face MLM
encoder (mBERT's WordPiece and XLM-R's SentencePiece alike: the encoder's own tokenizer is
used, never retrained). The result is a Hugging Face directory that `AutoModel` loads."""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from xlt.engine.train_config import FAST_PATH
from xlt.engine.fastpath import encode, use_keep_mask_dropout
from xlt.engine.kinds import IGNORE, kind_of
from xlt.engine.loop import Loop
from xlt.engine.model import require_local
from xlt.engine.objectives import Objective, Term, mask_tokens
from xlt.engine.runtime import Checkpointer, Dist, build_optimizer, build_scheduler, resolve_precision, seed_everything
from xlt.engine.streams import Stream
from xlt.errors import XltError
from xlt.io import atomic_dir, write_json
from xlt.provenance import provenance
from xlt.engine.vocab import word_counts, wordpiece_vocab

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
ENCODER_META = "xlt_encoder.json"


def train_wordpiece(texts: list[str], vocab_size: int, out_dir: str | Path):
    """Learn a cased WordPiece vocabulary (BERT normalisation and pre-tokenisation) from
    `texts`, the same in every process (xlt.engine.vocab), and save it as a fast tokenizer."""
    # deferred: loads tokenizers, transformers only when this runs
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import BertTokenizerFast


    normalizer = normalizers.BertNormalizer(lowercase=False, strip_accents=False, clean_text=True)
    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    counts = word_counts(texts, lambda text: [w for w, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text))])
    vocab = wordpiece_vocab(counts, vocab_size, SPECIALS)
    tok = Tokenizer(models.WordPiece(vocab={t: i for i, t in enumerate(vocab)}, unk_token="[UNK]"))
    tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizer
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
    checkpoint_minutes: float = 10.0  # resumable checkpoints: by wall clock (see TrainConfig)
    checkpoint_every: int | None = None  # and, if set, every N optimizer steps
    max_grad_norm: float = 1.0
    device: str = "auto"
    precision: str = "auto"  # training steps: "auto" (bf16 where the device has bf16 units), "bf16", "fp32"
    fast_path: str = "auto"  # training steps: "auto" (the lean forward where it applies) or "off"

    @classmethod
    def from_dict(cls, d: dict, where: str) -> "MLMConfig":
        try:
            cfg = cls(**d)
        except TypeError as e:
            raise XltError(f"{where}: {e}; allowed: {', '.join(cls.__dataclass_fields__)}") from None
        if cfg.fast_path not in FAST_PATH:
            raise XltError(f"{where}: fast_path={cfg.fast_path!r}; allowed: {', '.join(FAST_PATH)}")
        return cfg


class MLMModel(nn.Module):
    """A Hugging Face *ForMaskedLM model behind the engine's batch -> outputs interface.

    With the batch's masking labels, the prediction head runs on the masked positions only
    (their `logits`, and their labels as `mlm_targets`): the loss reads nothing else, and the
    head's vocabulary projection is most of an MLM step's arithmetic on a small encoder (and
    as large as the encoder itself in mBERT). It needs the model to be its base model and
    one head module (BERT's `cls`, XLM-R's `lm_head`); any other layout runs whole.
    """

    def __init__(self, hf_model: nn.Module):
        super().__init__()
        self.mlm = use_keep_mask_dropout(hf_model)
        base = hf_model.base_model
        heads = [name for name, m in hf_model.named_children() if m is not base]
        self._head_name = heads[0] if len(heads) == 1 else None  # a name: registering it twice would save it twice
        self.fast_path = True  # training steps through the lean forward where it applies (engine.fast_path)

    def forward(self, batch: dict, task: str | None = None) -> dict:
        labels = batch.get("mlm_labels")
        if labels is None or self._head_name is None:
            return {"logits": self.mlm(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits}
        hidden = encode(self.mlm.base_model, batch["input_ids"], batch["attention_mask"], lean=self.fast_path)
        chosen = labels != IGNORE
        return {"logits": getattr(self.mlm, self._head_name)(hidden[chosen]), "mlm_targets": labels[chosen]}


def masking(tokenizer, prob: float):
    """The MLM stream's per-batch transform: BERT masking seeded by the batch's position."""
    special_ids = torch.tensor(sorted(set(tokenizer.all_special_ids)))

    def transform(batch: dict, seed: int) -> dict:
        ids = batch["input_ids"]
        special = torch.isin(ids, special_ids) | (batch["attention_mask"] == 0)
        g = torch.Generator().manual_seed(seed)
        batch["input_ids"], batch["mlm_labels"] = mask_tokens(ids, special, tokenizer.mask_token_id, len(tokenizer), prob, g)
        return batch

    return transform


def train_mlm(
    texts: list[str],
    out_dir: str | Path,
    checkpoint_dir: str | Path,
    cfg: MLMConfig,
    init_from: str | None = None,
    tokenizer_dir: str | Path | None = None,
    shape: EncoderShape | None = None,
    revision: str | None = None,
    text_files=(),
    resolved_config: dict | None = None,
    progress: bool = True,
    kill_after_steps: int | None = None,
    stop_after_steps: int | None = None,
    desc: str = "mlm",
    heartbeat_s: float | None = None,
) -> dict:
    """MLM-train a new BERT of `shape` with the tokenizer in `tokenizer_dir`, or continue the
    MLM encoder `init_from` (Hub id or directory) with its own tokenizer (domain adaptation)."""
    # deferred: loads transformers only when this runs
    from transformers import AutoModelForMaskedLM, AutoTokenizer, BertConfig, BertForMaskedLM

    if (init_from is None) == (tokenizer_dir is None):
        raise XltError("MLM: give either init_from (adapt an encoder) or tokenizer_dir (a new encoder)")
    dist = Dist()
    device = dist.device(cfg.device)
    precision = resolve_precision(cfg.precision, device)
    seed_everything(cfg.seed)
    source = str(init_from or tokenizer_dir)
    kw = {"revision": revision} if revision else {}
    if init_from:
        require_local(str(init_from))
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, **kw)
        if init_from:
            hf = AutoModelForMaskedLM.from_pretrained(init_from, use_safetensors=True, **kw)  # never a pickle
        else:
            shape = shape or EncoderShape()
            hf = BertForMaskedLM(BertConfig(
                vocab_size=len(tokenizer), hidden_size=shape.hidden, num_hidden_layers=shape.layers,
                num_attention_heads=shape.heads, intermediate_size=shape.intermediate,
                max_position_embeddings=shape.max_positions, pad_token_id=tokenizer.pad_token_id))
    except (OSError, ValueError) as e:
        raise XltError(f"MLM: cannot load {source!r}: {e.__class__.__name__}: {str(e).splitlines()[0]}") from None
    if tokenizer.mask_token_id is None:
        raise XltError(f"MLM: tokenizer of {source!r} has no mask token")
    model = MLMModel(hf).to(device)
    model.fast_path = cfg.fast_path != "off"
    kind = kind_of("mlm")
    enc = kind.encode(None, texts, tokenizer, cfg, train=True)
    if not enc.features:
        raise XltError(f"MLM: no text in {', '.join(map(str, text_files)) or 'the corpus'}")
    stream = Stream("mlm", enc.features, cfg.batch_size, cfg.seed, tokenizer.pad_token_id, kind.pad_values,
                    transform=masking(tokenizer, cfg.mask_prob))
    term = Term("mlm", "mlm", 1.0, lambda m, batch, step: kind.loss(m(batch), batch))
    ddp_model = dist.wrap(model, device)
    optimizer = build_optimizer(ddp_model, cfg.lr, cfg.weight_decay, device=device)
    scheduler = build_scheduler(optimizer, cfg.steps, cfg.warmup_ratio)
    ckpt = Checkpointer(checkpoint_dir)
    loop = Loop(model=ddp_model, raw_model=model, optimizer=optimizer, scheduler=scheduler, streams={"mlm": stream},
                primary="mlm", objective=Objective([term]), device=device, dist=dist, checkpointer=ckpt,
                max_steps=cfg.steps, max_grad_norm=cfg.max_grad_norm, checkpoint_every=cfg.checkpoint_every,
                checkpoint_minutes=cfg.checkpoint_minutes, desc=desc, progress=progress, kill_after_steps=kill_after_steps, stop_after_steps=stop_after_steps,
                precision=precision, heartbeat_s=heartbeat_s)
    state = loop.run()
    summary = {"steps": state["global_step"], "losses": state["losses"], "resumed_from": state["resumed_from"],
               "steps_this_process": state["steps_this_process"], "sequences": len(enc.features),
               "shape": asdict(shape) if shape else None, "mlm": asdict(cfg), "init_from": init_from,
               "revision": revision, "seconds_this_process": state["seconds_this_process"], "precision": precision}
    if dist.main:
        with atomic_dir(out_dir) as tmp:
            hf.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
            config = resolved_config or {"shape": summary["shape"], "mlm": asdict(cfg), "init_from": init_from}
            write_json(tmp / ENCODER_META, {**summary, "provenance": provenance(config, cfg.seed, text_files)})
        ckpt.clear()
    dist.barrier()
    dist.close()
    print(f"MLM: {state['global_step']} steps, last loss {state['losses'][-1][1] if state['losses'] else 'n/a'}",
          file=sys.stderr)
    return summary


def task_texts(task, records: list[dict]) -> list[str]:
    """The raw text of a task's records, one string per text field (MLM adaptation data)."""
    out: list[str] = []
    for r in records:
        if task.input == "tokens":
            out.append(" ".join(r["tokens"]))
        elif task.input in ("text", "text_pair"):
            out.extend(r[k] for k in ("text", "text_pair") if r.get(k))
        elif task.input == "qa":
            out.extend([r["question"], r["context"]])
        else:
            raise XltError(f"task {task.name}: no text for input kind {task.input!r}")
    return out
