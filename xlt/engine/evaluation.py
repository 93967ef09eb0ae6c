"""How evaluation forwards run: the config's `evaluation` block, resolved on the job's device.

    precision     auto | fp32 | bf16   auto: bf16 autocast on a CUDA GPU with bf16, fp32 elsewhere
    batch_tokens  auto | null | N      padded positions per batch, length-sorted (token budget);
                                       auto: CUDA_BATCH_TOKENS on a CUDA GPU, none on a CPU;
                                       none: the profile's eval_batch_size sentences per batch

A CPU keeps fp32 and sentence-count batches under `auto` (even with AMX, where training's
`auto` is bf16): the tiny preset's tables stay byte-identical, and its evaluations cost
little. bf16 moves scores by less than 0.1 point (tests/engine/test_eval_precision.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from xlt.errors import XltError

PRECISIONS = ("auto", "fp32", "bf16")
# padded positions per evaluation batch on a GPU: 256 sentences of 64 subwords, 32 of 512
# (benchmarks/gpu_throughput.py's bf16_budget variant measures the same budget)
CUDA_BATCH_TOKENS = 16384


@dataclass(frozen=True)
class EvalMode:
    """An evaluation's resolved settings: "fp32" or "bf16", the token budget of a batch (None:
    `eval_batch_size` sentences) and the multiple padded widths are rounded up to."""

    precision: str = "fp32"
    max_tokens: int | None = None
    pad_multiple: int = 1

    def describe(self) -> dict:
        """What a job's report records (a bf16 score may differ from fp32 in its last digits)."""
        return {"precision": self.precision, "batch_tokens": self.max_tokens}


def eval_mode(evaluation: dict | None, device: torch.device) -> EvalMode:
    """The `evaluation` block ({precision, batch_tokens}; missing keys: auto) on `device`."""
    evaluation = evaluation or {}
    unknown = set(evaluation) - {"precision", "batch_tokens"}
    if unknown:
        raise XltError(f"config key evaluation: unknown {', '.join(sorted(unknown))}; allowed: precision, batch_tokens")
    precision = evaluation.get("precision", "auto")
    if precision not in PRECISIONS:
        raise XltError(f"config key evaluation.precision={precision!r}; allowed: {', '.join(PRECISIONS)}")
    budget = evaluation.get("batch_tokens", "auto")
    if budget != "auto" and budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
        raise XltError(f"config key evaluation.batch_tokens={budget!r}; allowed: auto, null or a positive integer")
    cuda = torch.device(device).type == "cuda"
    if precision == "auto":
        precision = "bf16" if cuda and torch.cuda.is_bf16_supported() else "fp32"
    if budget == "auto":
        budget = CUDA_BATCH_TOKENS if cuda else None
    # deferred: loads numpy, safetensors only when this runs
    from xlt.engine.loop import CUDA_PAD_MULTIPLE

    return EvalMode(precision, budget, CUDA_PAD_MULTIPLE if cuda else 1)
