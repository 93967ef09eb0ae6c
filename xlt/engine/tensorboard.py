"""Training scalars as TensorBoard event files (tensorboardX: the event format without
TensorFlow or the tensorboard server's dependencies; `tensorboard --logdir results/logs/tensorboard`
reads them)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable


def scalar_writer(log_dir: str | Path | None) -> Callable[[int, dict], None] | None:
    """A function (step, {tag: value}) that appends each value as a scalar at `step` to the
    event file under `log_dir` and flushes it (a killed job keeps what it wrote; a resumed job
    writes a new event file beside it), or None without a `log_dir`."""
    if log_dir is None:
        return None
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(logdir=str(log_dir))

    def write(step: int, values: dict) -> None:
        for tag, value in values.items():
            writer.add_scalar(tag, float(value), step)
        writer.flush()

    return write
