"""What training and evaluation cost: model FLOPs, a GPU's peak, MFU, and the assumed
length (subwords per feature) of each task's examples.

FLOPs of an encoder on one sequence of L real tokens (the accounting of Kaplan et al. 2020
and the PaLM paper's MFU): 2·N·L for the matrix multiplications of a forward pass, N the
non-embedding parameters (an embedding lookup is no matmul; counting mBERT's 92M embedding
parameters would double its MFU), plus 4·layers·hidden·L² for the attention scores and
their weighted sum. Training is forward + backward = 3× the forward. Padding is never
counted: MFU measures useful work, and padded positions are waste.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xlt.errors import XltError
import random

# Dense (no sparsity) bf16 tensor-core peak in TFLOP/s from the vendors' data sheets, matched
# against torch.cuda.get_device_name() (lower-cased), most specific first. V100 has no bf16:
# its fp16 tensor peak is given, as the papers' V100-hours ran in fp16 at best.
PEAK_BF16_TFLOPS: tuple[tuple[str, float], ...] = (
    ("h100 pcie", 756.0),
    ("h100 nvl", 835.0),
    ("h100", 989.0),  # SXM ("NVIDIA H100 80GB HBM3")
    ("h200 nvl", 835.0),
    ("h200", 989.0),
    ("gh200", 989.0),
    ("b200", 2250.0),
    ("a100", 312.0),
    ("l40s", 362.0),
    ("l4", 121.0),
    ("v100", 125.0),
)


def peak_tflops(device_name: str) -> float | None:
    """The bf16 dense peak of a GPU named `device_name`, or None if it is not in the table."""
    name = device_name.lower()
    for key, tflops in PEAK_BF16_TFLOPS:
        if key in name:
            return tflops
    return None


@dataclass(frozen=True)
class EncoderShape:
    """The sizes that decide an encoder's FLOPs (Hugging Face config names in comments)."""

    layers: int  # num_hidden_layers
    hidden: int  # hidden_size
    heads: int  # num_attention_heads
    intermediate: int  # intermediate_size
    vocab: int  # vocab_size
    max_positions: int  # max_position_embeddings

    def non_embedding_params(self) -> int:
        """Parameters of the layers (attention, feed-forward, their LayerNorms)."""
        h, f = self.hidden, self.intermediate
        per_layer = 4 * (h * h + h) + (h * f + f) + (f * h + h) + 2 * 2 * h
        return self.layers * per_layer

    def forward_flops(self, length: int, head_params: int = 0) -> float:
        """Forward FLOPs of one sequence of `length` real tokens."""
        return 2.0 * (self.non_embedding_params() + head_params) * length + 4.0 * self.layers * self.hidden * length**2


# The two shapes the papers fine-tune (published configs of the Hub models).
SHAPES = {
    "mbert": EncoderShape(layers=12, hidden=768, heads=12, intermediate=3072, vocab=119547, max_positions=512),
    "xlmr-large": EncoderShape(layers=24, hidden=1024, heads=16, intermediate=4096, vocab=250002, max_positions=514),
    # the benchmark's --small mode: tiny, CPU, seconds
    "small": EncoderShape(layers=2, hidden=64, heads=2, intermediate=128, vocab=1000, max_positions=128),
}


# The shape of a Hub encoder, by its id (xlm-roberta-base has mBERT's layer sizes; only the
# vocabulary differs, which no FLOP count here reads)
SHAPE_OF_HUB = {"bert-base-multilingual": "mbert", "xlm-roberta-base": "mbert", "xlm-roberta-large": "xlmr-large"}


def shape_of(cfg: dict, encoder: str) -> str:
    spec = cfg["encoders"].get(encoder) or {}
    if "build" in spec:
        return f"built:{encoder}"
    name = spec.get("hub") or spec.get("path") or ""
    for key, shape in SHAPE_OF_HUB.items():
        if key in name:
            return shape
    raise XltError(f"encoder {encoder!r} ({name or 'no hub id'}): no known shape; xlt.dag.throughput.SHAPE_OF_HUB has "
                   f"{', '.join(f'{k} ({v})' for k, v in SHAPE_OF_HUB.items())}")


def encoder_shape(cfg: dict, shape: str) -> EncoderShape:
    if shape.startswith("built:"):
        b = cfg["encoders"][shape.split(":", 1)[1]]["build"]
        s = b["shape"]
        return EncoderShape(layers=s["layers"], hidden=s["hidden"], heads=s["heads"], intermediate=s["intermediate"],
                            vocab=b["vocab_size"], max_positions=s.get("max_positions", 512))  # fmt: skip
    return SHAPES[shape]


def encoder_depth(cfg: dict, encoder: str) -> int | None:
    """The number of layers of config encoder `encoder` where known (a built encoder's shape, a
    Hub id in SHAPE_OF_HUB), else None: config checks use it before any weights exist."""
    try:
        return encoder_shape(cfg, shape_of(cfg, encoder)).layers
    except XltError:
        return None


def train_flops(shape: EncoderShape, lengths, head_params: int = 0) -> float:
    """Model FLOPs of training (forward + backward) on sequences of these real lengths."""
    return sum(3.0 * shape.forward_flops(n, head_params) for n in lengths)


def eval_flops(shape: EncoderShape, lengths, head_params: int = 0) -> float:
    return sum(shape.forward_flops(n, head_params) for n in lengths)


def mfu(flops: float, seconds: float, peak: float | None) -> float | None:
    """Model FLOP utilisation (0..1) against `peak` TFLOP/s, None when the peak is unknown."""
    if peak is None or seconds <= 0:
        return None
    return flops / seconds / (peak * 1e12)


@dataclass(frozen=True)
class LengthProfile:
    """Subwords per feature (special tokens included) of a task's examples: a log-normal
    around `median`, clipped to [lo, hi] (hi = the papers' max_length, 128).

    ESTIMATES, not measured on the real data (no multilingual tokenizer or dataset can be
    loaded offline): typical sentence lengths of each source under a WordPiece / SentencePiece
    vocabulary of ~1.5 subwords per word. They shape the benchmark's synthetic batches and
    turn example counts into token counts in the full-scale bill; replace them with measured
    histograms once the real data is at hand.
    """

    median: float
    sigma: float
    lo: int = 4
    hi: int = 128

    def sample(self, n: int, seed: int) -> list[int]:

        rng = random.Random(seed)
        return [min(self.hi, max(self.lo, round(rng.lognormvariate(math.log(self.median), self.sigma)))) for _ in range(n)]

    def mean(self) -> float:
        """The clipped log-normal's mean (fixed-seed sample: deterministic, ±0.2%)."""
        s = self.sample(50_000, seed=0)
        return sum(s) / len(s)


LENGTHS: dict[str, LengthProfile] = {
    "ner": LengthProfile(median=16, sigma=0.45),  # WikiANN: short Wikipedia sentence fragments
    "pos": LengthProfile(median=30, sigma=0.55),  # UD treebanks: ~20 words a sentence
    "parsing": LengthProfile(median=30, sigma=0.55),  # the same UD sentences
    "xnli": LengthProfile(median=48, sigma=0.4, lo=10),  # premise + hypothesis
    "pawsx": LengthProfile(median=62, sigma=0.3, lo=16),  # two ~20-word sentences
    "marc": LengthProfile(median=70, sigma=0.55, lo=10),  # review title + body, truncated
    "qa": LengthProfile(median=128, sigma=0.1, lo=64),  # question + context windows, mostly full
}


def length_profile(task: str) -> LengthProfile:
    try:
        return LENGTHS[task]
    except KeyError:
        raise XltError(f"no length profile for task {task!r}; known: {', '.join(LENGTHS)}") from None
