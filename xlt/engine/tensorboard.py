"""Training scalars as TensorBoard event files (tensorboardX: the event format without
TensorFlow or the tensorboard server's dependencies; `tensorboard --logdir results/logs/tensorboard`
reads them)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable


def scalar_writer(log_dir: str | Path | None) -> Callable[[int, dict], None] | None:
    """A function (step, {tag: value}) that appends each value as a scalar at `step` to the
    event file under `log_dir` and flushes it (a killed job keeps what it wrote; a resumed job
    writes a new event file beside it), or None without a `log_dir`. It writes in the calling
    thread: SummaryWriter's queue and thread would leave `flush` racing its worker (and forked
    jobs with a multiprocessing queue)."""
    if log_dir is None:
        return None
    # deferred: loads tensorboardX only when this runs
    from tensorboardX.event_file_writer import EventsWriter
    from tensorboardX.proto.event_pb2 import Event
    from tensorboardX.summary import scalar

    Path(log_dir).mkdir(parents=True, exist_ok=True)
    events = EventsWriter(str(Path(log_dir) / "events"))

    def write(step: int, values: dict) -> None:
        for tag, value in values.items():
            events.write_event(Event(wall_time=time.time(), step=step, summary=scalar(tag, float(value))))
        events.flush()

    return write
