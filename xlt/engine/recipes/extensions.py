"""What a paper adds to fine-tuning, plugged in by the config block that asks for it.

The fine-tuning recipe (xlt.engine.recipes.finetune) knows the task's own stream and auxiliary
task streams. Anything else is a `FinetuneExtension`, registered here by the module that
defines it (a paper's recipe module, xlt/papers/<slug>/recipe.py) and keyed by what a run's
configuration names: a model extra (`TrainConfig.extras`' "name") that trains only through it,
or kinds of auxiliary entries (`train(..., aux=[{"kind": …}])`). A run composes the extensions
its configuration names; each may give the task's own (e.g. paired) stream and its loss terms,
add streams of its own with their terms, and add a block to the saved model's metadata.

The engine imports no paper: a run that names an extra, an auxiliary kind or an extension
it does not know loads the papers' registrations first (xlt.engine.plugins). An extra that
needs an extension (`Extra.needs_extension`) or an auxiliary kind that none registered then
fails before anything loads, naming what is registered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xlt.engine.extras import extra_class
from xlt.engine.kinds import Kind
from xlt.engine.plugins import load_plugins, loaded_note
from xlt.errors import XltError
from xlt.registry import Task

TASK_STREAM = "task"  # the kind of an auxiliary task stream (the engine's own; also an entry without "kind")


@dataclass
class FinetuneRun:
    """What an extension reads of the run it joins."""
    cfg: Any  # TrainConfig
    task: Task
    kind: Kind
    model: Any  # TaskModel (its extras built)
    tokenizer: Any
    device: Any


class FinetuneExtension:
    """One paper's addition to a fine-tuning run; one instance per run, holding the auxiliary
    entries of its kinds (`entries`, in the order given). Every hook has a do-nothing default."""

    name: str = ""  # its registry key (unique)
    extra: str | None = None  # the model extra it trains (active when cfg.extras names it)
    aux_kinds: tuple[str, ...] = ()  # the auxiliary entries' kinds it reads (active when one is given)
    paired_eval: bool = False  # dev records carrying their "source" are predicted from both sides

    def __init__(self, entries: list[dict]):
        self.entries = entries

    def check(self, cfg, kind: Kind) -> None:
        """Fail before anything loads (a kind it does not handle, a missing or extra entry)."""

    def train_records(self, task: Task, files: list, cap: int | None) -> list[dict] | None:
        """The task's training records, where it reads them itself; None: the engine's reading."""
        return None

    def task_stream(self, run: FinetuneRun, records: list[dict]) -> tuple:
        """(the task's stream, its loss terms) of the records it read (`train_records`)."""
        raise XltError(f"fine-tune extension {self.name}: it reads the task's records, so it gives their stream")

    def streams(self, run: FinetuneRun) -> tuple[dict, list]:
        """Streams of its own ({name: Stream}) and their loss terms, after the task's."""
        return {}, []

    def meta(self) -> dict:
        """Blocks it adds to the saved model's metadata (xlt_model.json), after training."""
        return {}


EXTENSIONS: dict[str, type[FinetuneExtension]] = {}


def register(ext: type[FinetuneExtension]) -> type[FinetuneExtension]:
    """Register an extension (a class decorator); a second one claiming the same name, extra
    or auxiliary kind fails, naming both. Registering the same class again changes nothing."""
    if not ext.name or not (ext.extra or ext.aux_kinds):
        raise XltError(f"{ext.__qualname__}: a fine-tune extension needs a name and an extra or auxiliary kinds")
    if TASK_STREAM in ext.aux_kinds:
        raise XltError(f"{ext.__qualname__}: auxiliary kind {TASK_STREAM!r} is the engine's own (task streams)")
    for other in EXTENSIONS.values():
        if other is ext or (other.__module__, other.__qualname__) == (ext.__module__, ext.__qualname__):
            continue
        clash = ({other.name} & {ext.name}) | ({other.extra} & {ext.extra} - {None}) | (set(other.aux_kinds) & set(ext.aux_kinds))
        if clash:
            raise XltError(f"fine-tune extension {ext.__module__}.{ext.__qualname__} claims {sorted(clash)}, "
                           f"already {other.__module__}.{other.__qualname__}'s")
    EXTENSIONS[ext.name] = ext
    return ext


def aux_kinds() -> list[str]:
    """Every auxiliary kind a run may name: the engine's task streams, then the registered ones."""
    return [TASK_STREAM, *sorted(k for ext in EXTENSIONS.values() for k in ext.aux_kinds)]


def compose(cfg, aux: list[dict]) -> tuple[list[dict], list[FinetuneExtension]]:
    """Split a run's auxiliary entries into the engine's task streams and the extensions the
    run's configuration names (in name order: a run's terms and streams keep one order,
    whatever imported them first). Fails on an auxiliary kind, or an extra that trains only
    through an extension (`Extra.needs_extension`), that no extension registered, after loading
    the papers' registrations (xlt.engine.plugins) where one is missing; an unknown extra."""
    extras = [e.get("name") for e in cfg.extras]
    needed = {e for e in extras if extra_class(e).needs_extension}

    def unknown() -> tuple[list, list]:
        served = {ext.extra for ext in EXTENSIONS.values()}
        return sorted({a.get("kind") for a in aux} - {None, *aux_kinds()}), sorted(needed - served)

    if any(unknown()):
        load_plugins()
    bad, missing = unknown()
    if bad:
        raise XltError(f"auxiliary stream kind(s) {bad}; allowed: {', '.join(aux_kinds())} {loaded_note()}")
    if missing:
        raise XltError(f"extra(s) {missing} train through their paper's fine-tune extension, and none is registered "
                       f"(registered: {', '.join(sorted(EXTENSIONS)) or 'none'}) {loaded_note()}")
    active = []
    for name in sorted(EXTENSIONS):
        ext = EXTENSIONS[name]
        entries = [a for a in aux if a.get("kind") in ext.aux_kinds]
        if entries or (ext.extra is not None and ext.extra in extras):
            active.append(ext(entries))
    return [a for a in aux if a.get("kind", TASK_STREAM) == TASK_STREAM], active
