"""Label name <-> id maps derived from the task registry."""

from __future__ import annotations

from xlt.errors import XltError
from xlt.registry import Task


def label_index(task: Task) -> "LabelIndex":
    return LabelIndex(task)


class LabelIndex(dict):
    """A dict from label name to id whose KeyError names the task and the allowed labels."""

    def __init__(self, task: Task):
        super().__init__({name: i for i, name in enumerate(task.labels or ())})
        self.task = task

    def __missing__(self, key):
        allowed = ", ".join(self.task.labels or ())
        raise XltError(f"task {self.task.name}: unknown label {key!r}; allowed: {allowed}")
