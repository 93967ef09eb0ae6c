"""The hyperparameters of one fine-tuning run: one small dataclass, a comment per field."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from xlt.errors import XltError


FAST_PATH = ("auto", "off")
# TrainConfig.sampler: how each epoch's training batches are drawn (xlt.engine.batching.epoch_batches)
SAMPLERS = ("length_grouped", "random", "one_language_per_batch")
CLASSIFIERS = ("dense", "linear", "hf_sequence_classifier")  # TrainConfig.classifier
ORACLE_FILE = "oracle.json"  # beside a model fine-tuned with oracle selection (per target language, its own dev)  # the lean training forward where it applies, or never


@dataclass
class TrainConfig:
    task: str  # registry name (xlt.registry.TASKS)
    encoder: str  # Hub id or local directory of the initial encoder
    encoder_revision: str | None = None  # Hub revision (commit) of the encoder
    seed: int = 1  # seeds data order, dropout and head initialisation
    lr: float = 2e-5  # peak learning rate of AdamW
    epochs: int = 3
    batch_size: int = 32  # training batch size (examples, or windows for long inputs)
    eval_batch_size: int = 64
    warmup_ratio: float = 0.1  # share of steps with a linear warmup; then linear decay to 0
    schedule: str = "linear"  # "linear" (warmup + decay) or "constant" (warmup + constant)
    weight_decay: float = 0.01  # AdamW decoupled decay (not on biases and LayerNorm)
    adam_betas: tuple[float, float] = (0.9, 0.999)
    adam_eps: float = 1e-8
    max_grad_norm: float = 1.0  # gradient clipping; 0 turns it off
    max_grad_value: float | None = None  # each gradient value clipped to ±v before the norm clipping; None: off
    # the training batches: "length_grouped" (shuffled, sorted by length within mega-batches:
    # less padding), "random" (a uniform shuffle, as the references' PyTorch samplers draw),
    # "one_language_per_batch" (each batch from one training language, languages interleaved)
    sampler: str = "length_grouped"
    max_length: int = 128  # subwords per window, specials included
    stride: int = 32  # tagging: window step; QA: doc-stride overlap (below max_length/2)
    parse_max_words: int = 128  # parsing at test time: the first N words, whatever their subwords
    dropout: float = 0.1  # the encoder's (hidden and attention) and, unless head_dropout says otherwise, the heads'
    head_dropout: float | None = None  # on what the heads read; None: `dropout`
    # the classification head on [CLS]: "dense" (a fresh dense + tanh layer, then a linear one:
    # RoBERTa's), "linear" (one linear layer), "hf_sequence_classifier" (Hugging Face's
    # AutoModelForSequenceClassification for the encoder: BERT's pretrained pooler + a linear layer,
    # RoBERTa's fresh dense head); other kinds have one head
    classifier: str = "dense"
    select: str = "best"  # "best" dev epoch, or "last" epoch (a paper that keeps the last, e.g. Cao-style adjustment's)
    # the languages whose dev sets model selection averages; None: the training languages' (no
    # target-language peeking). A list, e.g. [en]: translate-train data has English dev only
    dev_languages: list | None = None
    select_metric: str | None = None  # default: the task's first metric; averaged over dev sets
    eval_steps: int | None = None  # also evaluate dev (and select) every N optimizer steps; None: epoch ends only
    # or that k times an epoch (Lightning's val_check_interval 1/k): eval_steps derived as
    # max(1, steps_per_epoch // k) (`steps_between_evals`); None: off. Not both
    evals_per_epoch: int | None = None
    # resumable checkpoints: at each epoch's end, on a grace signal, every `checkpoint_minutes`
    # of wall clock (bounds the work a node failure loses, whatever a step costs: a 100-step
    # cadence wrote mBERT's 2 GB of state every few seconds on a GPU) and, if set, every
    # `checkpoint_every` optimizer steps
    checkpoint_minutes: float = 10.0
    checkpoint_every: int | None = None
    max_train_examples: int | None = None  # cap on training examples per file (None = all)
    device: str = "auto"  # "auto" (CUDA when present), "cpu", "cuda"
    precision: str = "auto"  # training steps: "auto" (bf16 where the device has fast bf16 units), "bf16", "fp32"
    fast_path: str = "auto"  # training steps: "auto" (the lean forward, xlt.engine.fastpath, where it applies) or "off" (Hugging Face's)
    progress: bool = True  # tqdm bar with rate and ETA, where stderr is a terminal (a job log gets the epoch lines)
    extras: list = field(default_factory=list)  # modules between encoder and head: [{"name", **params}]

    @classmethod
    def from_dict(cls, d: dict, where: str = "config") -> "TrainConfig":
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise XltError(f"{where}: unknown training option(s) {unknown}; allowed: {sorted(names)}")
        d = dict(d)
        if "adam_betas" in d:
            d["adam_betas"] = tuple(d["adam_betas"])
        cfg = cls(**d)
        for key, allowed in (("select", ("best", "last")), ("schedule", ("linear", "constant")), ("device", ("auto", "cpu", "cuda")),
                             ("precision", ("auto", "bf16", "fp32")), ("fast_path", FAST_PATH),
                             ("classifier", CLASSIFIERS), ("sampler", SAMPLERS)):
            if getattr(cfg, key) not in allowed:
                raise XltError(f"{where}: {key}={getattr(cfg, key)!r}; allowed: {', '.join(allowed)}")
        if not 0 < cfg.stride < cfg.max_length // 2:
            raise XltError(f"{where}: stride={cfg.stride} must be positive and below max_length/2 (max_length={cfg.max_length})")
        if cfg.max_grad_value is not None and not cfg.max_grad_value > 0:
            raise XltError(f"{where}: max_grad_value={cfg.max_grad_value} must be positive (or null: off)")
        if cfg.eval_steps is not None and cfg.eval_steps < 1:
            raise XltError(f"{where}: eval_steps={cfg.eval_steps} must be at least 1 (or null: epoch ends only)")
        if cfg.evals_per_epoch is not None and cfg.evals_per_epoch < 1:
            raise XltError(f"{where}: evals_per_epoch={cfg.evals_per_epoch} must be at least 1 (or null: off)")
        if cfg.eval_steps is not None and cfg.evals_per_epoch is not None:
            raise XltError(f"{where}: eval_steps={cfg.eval_steps} and evals_per_epoch={cfg.evals_per_epoch} both set; "
                           "set one (evals_per_epoch derives eval_steps from the steps of an epoch)")
        return cfg

    def steps_between_evals(self, steps_per_epoch: int) -> int | None:
        """The steps between dev evaluations the loops take (their `eval_steps`): `eval_steps`,
        or derived from `evals_per_epoch` k as max(1, steps_per_epoch // k), counted over the
        run (not reset each epoch); None: epoch ends only."""
        if self.evals_per_epoch is None:
            return self.eval_steps
        return max(1, steps_per_epoch // self.evals_per_epoch)

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["adam_betas"] = list(d["adam_betas"])
        return d
