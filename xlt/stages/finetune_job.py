"""One fine-tune job, whole: what the `finetune` rule hands its script (one JSON argument) and
the script hands `xlt.stages.finetune.run`. Built once where the job is planned
(`xlt.workflow.packs.finetune_job`); a pack is the same job with several seeds. No torch here:
the DAG build imports it.

A new training option is a `TrainConfig` field (`hparams` carries it untouched from the
config's profile to the run); a new option of the job itself is a field here, which the rule
fills in `finetune_job` and the stage reads: no argument list to extend in between."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

from xlt.engine.train_config import TrainConfig
from xlt.errors import XltError


@dataclass(frozen=True)
class FinetuneJob:
    task: str  # registry task name (xlt.registry.TASKS)
    encoder: str  # Hub id or local directory of the initial encoder
    data: str  # the task's normalised data folder: <data>/<lang>/<split>.jsonl
    train_langs: list[str]  # the recipe's training languages
    # the recipe's hparams profile, resolved (xlt.workflow.paper_targets.hparams): TrainConfig fields but task,
    # encoder, its revision and seed, which the job sets
    hparams: dict
    seeds: list[int]  # several: a pack (xlt.engine.packed), one model per seed
    outs: list[str]  # one model directory per seed
    checkpoint_dirs: list[str]  # one per seed: its loop checkpoint, or in a pack its selected weights
    encoder_revision: str | None = None  # Hub revision (commit) of the encoder
    # auxiliary streams (xlt.dag.targets.aux_streams): [{"task", "data", "weight", "batch_size"?}]
    # or a registered kind's entries [{"kind", ...}]; one seed only
    aux: list[dict] = field(default_factory=list)
    # per seed: the target languages also selected on their own dev sets (oracle.json beside the model)
    oracle_langs: list[list[str]] = field(default_factory=list)
    pack_checkpoint_dir: str | None = None  # a pack's loop checkpoint (every model at one step)
    tensorboard_dir: str | None = None  # each epoch's scalars as TensorBoard events here (one seed only)
    collapse_retries: int = 0  # retrain a collapsed run with the next seeds, up to N times
    collapse_rule: dict = field(default_factory=dict)  # what calls a run collapsed (config collapse:, less retries)
    threads: int | None = None  # intra-op threads of the job's process (set before torch is imported)

    def __post_init__(self):
        # paths as strings, so that the job serialises whole (a test may build one from Paths)
        for name in ("data", "pack_checkpoint_dir", "tensorboard_dir"):
            if (value := getattr(self, name)) is not None:
                object.__setattr__(self, name, str(value))
        for name in ("outs", "checkpoint_dirs"):
            object.__setattr__(self, name, [str(v) for v in getattr(self, name)])
        if not self.seeds:
            raise XltError("a fine-tune job needs at least one seed")
        oracle = self.oracle_langs or [[] for _ in self.seeds]
        object.__setattr__(self, "oracle_langs", oracle)
        if not len(self.seeds) == len(self.outs) == len(self.checkpoint_dirs) == len(oracle):
            raise XltError(f"a fine-tune job of {len(self.seeds)} seed(s) needs as many outputs, checkpoint directories "
                           f"and oracle language lists; got {len(self.outs)}, {len(self.checkpoint_dirs)}, {len(oracle)}")
        if self.packed and (self.aux or self.pack_checkpoint_dir is None or self.tensorboard_dir is not None):
            raise XltError("a pack (several seeds) needs pack_checkpoint_dir and takes no aux and no tensorboard_dir")

    @classmethod
    def of_seed(cls, task: str, encoder: str, data, train_langs: list[str], hparams: dict, seed: int, out,
                checkpoint_dir, oracle_langs: list[str] = (), **fields) -> FinetuneJob:
        """The job of one seed (its model `out`, its checkpoint `checkpoint_dir`); `fields`: the others."""
        return cls(task=task, encoder=encoder, data=data, train_langs=list(train_langs), hparams=hparams, seeds=[seed],
                   outs=[out], checkpoint_dirs=[checkpoint_dir], oracle_langs=[list(oracle_langs)], **fields)

    @property
    def packed(self) -> bool:
        """Several seeds in one job (xlt.engine.recipes.packed_finetune)."""
        return len(self.seeds) > 1

    def train_config(self, seed: int) -> TrainConfig:
        """The run of `seed`: the profile with the job's task, encoder and seed."""
        return TrainConfig.from_dict({**self.hparams, "task": self.task, "encoder": self.encoder,
                                      "encoder_revision": self.encoder_revision, "seed": seed}, where="hparams")

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict, where: str = "job") -> FinetuneJob:
        names = {f.name for f in dataclasses.fields(cls)}
        if unknown := sorted(set(d) - names):
            raise XltError(f"{where}: unknown fine-tune job field(s) {unknown}; allowed: {sorted(names)}")
        if missing := sorted(f.name for f in dataclasses.fields(cls) if f.name not in d
                             and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING):
            raise XltError(f"{where}: missing fine-tune job field(s) {missing}")
        return cls(**d)
