"""Named batch streams, each deterministic in (seed, epoch, cursor).

A stream is a list of features and a batch size; a paired stream's features are pairs (a
sentence and its translation, an aligned sentence pair with its word links), drawn together.
Its batches for epoch e are a pure
function of (seed, e) (length-grouped by default; `sampler`, see `batching.epoch_batches`); its cursor
is (epoch, index of the next batch). A job draws from one or several streams every step;
every cursor goes into the checkpoint, so a resumed job regenerates each stream's epoch
and continues exactly where it stopped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch

from xlt.engine.batching import collate, epoch_batches
from xlt.errors import XltError


@dataclass
class Stream:
    name: str
    features: list[dict]
    batch_size: int
    seed: int
    pad_id: int
    pad_values: dict = field(default_factory=dict)  # the kind's padding per list field
    scalars: tuple = ()  # the kind's per-feature integer fields
    # per-batch transform (batch, seed of this batch) -> batch, e.g. MLM masking; the seed
    # is a function of (stream seed, epoch, index), so a resumed job transforms identically
    transform: Callable[[dict, int], dict] | None = None
    cursor: list[int] = field(default_factory=lambda: [0, 0])  # [epoch, next batch]
    _epoch_batches: tuple[int, list] | None = field(default=None, repr=False)
    pad_multiple: int = 1  # batch widths rounded up to a multiple of this (set by the loop on CUDA)
    sampler: str = "length_grouped"  # how an epoch's batches are drawn (TrainConfig.sampler)
    groups: list[int] | None = None  # each feature's training language (index), for sampler one_language_per_batch

    def __post_init__(self):
        if not self.features:
            raise XltError(f"stream {self.name!r}: no examples")
        # each stream its own seed, so two streams over one dataset do not march in step
        self._seed = self.seed * 7919 + sum(map(ord, self.name))

    @property
    def lengths(self) -> list[int]:
        return [len(f["input_ids"]) for f in self.features]

    def batches(self, epoch: int) -> list[list[int]]:
        if self._epoch_batches is None or self._epoch_batches[0] != epoch:
            self._epoch_batches = (epoch, epoch_batches(self.sampler, self.lengths, self.batch_size, self._seed, epoch,
                                                       self.groups))
        return self._epoch_batches[1]

    def per_epoch(self) -> int:
        return len(self.batches(0))

    def epoch_done(self) -> bool:
        return self.cursor[1] >= len(self.batches(self.cursor[0]))

    def next_epoch(self) -> None:
        self.cursor = [self.cursor[0] + 1, 0]

    def next_indices(self, cycle: bool = False) -> list[int]:
        """The next batch's feature indices; a cycling (auxiliary) stream rolls over into
        its next epoch by itself."""
        if cycle and self.epoch_done():
            self.next_epoch()
        epoch, i = self.cursor
        idx = self.batches(epoch)[i]
        self.cursor = [epoch, i + 1]
        self.last_position = (epoch, i)
        return idx

    def collate(self, idx: list[int]) -> dict[str, torch.Tensor]:
        """The batch of `idx` (a share of the batch last drawn), transformed if the stream says."""
        return self._transformed(collate([self.features[i] for i in idx], self.pad_id, self.pad_values, self.scalars,
                                         self.pad_multiple))

    def _transformed(self, batch: dict) -> dict:
        if self.transform is None:
            return batch
        epoch, i = self.last_position
        return self.transform(batch, (self._seed * 1_000_003 + epoch) * 100_003 + i)


def _pad_rows(rows: list[list[list[int]]], fill: int) -> torch.Tensor:
    """(batch, longest, width) from per-example lists of equal-width rows, padded with `fill`."""
    width = max((len(r[0]) for r in rows if r), default=2)
    longest = max(1, max(len(r) for r in rows))
    return torch.tensor([r + [[fill] * width] * (longest - len(r)) for r in rows], dtype=torch.long).view(len(rows), longest, width)


@dataclass
class PairedStream(Stream):
    """A stream of pairs: each feature is {"source": {...}, "target": {...}, **pair fields}.
    One batch of indices serves both sides (one cursor, so a resumed job continues both in
    step); each side is padded on its own (`pad_values`, `scalars` apply to both), and pair
    fields made of rows, e.g. word links [[i, j], …], are padded with `pair_pad_values`. The
    step's batch is {"source": side batch, "target": side batch, **pair fields}."""

    pair_pad_values: dict = field(default_factory=dict)  # pair field -> padding value of its rows
    sides: tuple = ("source", "target")  # more sides where a pair has them (e.g. a back-translation of the target)

    @property
    def lengths(self) -> list[int]:
        # batches grouped by the pair's longest side: the padding of all stays small
        return [max(len(f[side]["input_ids"]) for side in self.sides) for f in self.features]

    def collate(self, idx: list[int]) -> dict:
        pairs = [self.features[i] for i in idx]
        batch = {side: collate([p[side] for p in pairs], self.pad_id, self.pad_values, self.scalars, self.pad_multiple)
                 for side in self.sides}
        for key, fill in self.pair_pad_values.items():
            batch[key] = _pad_rows([p[key] for p in pairs], fill)
        return self._transformed(batch)
