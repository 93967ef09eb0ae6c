"""A model spec: encoder -> extras -> head(s); building, saving and loading it whole.

A saved model is a directory: `encoder/` in Hugging Face format (safetensors + config +
tokenizer; loads with plain `AutoModel.from_pretrained`), `modules.safetensors` with every
other weight (extras, the task head, auxiliary heads), and `xlt_model.json` with the spec,
the labels and the provenance. `load_model` rebuilds exactly the spec that was saved and
refuses a file whose weights do not match it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from xlt.engine.extras import build_extra, check_extras, source_reader_of
from xlt.engine.fastpath import REPRESENTATIONS, encode, encode_pair, use_keep_mask_dropout
from xlt.engine.hooks import LayerHooks
from xlt.engine.kinds import Kind, resolve
from xlt.errors import XltError
from xlt.io import atomic_dir, pickle_only, read_json, verify_weights, weights_digest, write_json
from xlt.registry import Task
from xlt.process.network import HUB_OFFLINE_VARIABLES, hub_offline, offline_variables, offline_words

MODEL_META = "xlt_model.json"
SOURCE = "source"  # a record's / a batch's paired source side (e.g. the English original of a translation)
MODULES = "modules.safetensors"


@dataclass
class ModelSpec:
    task: str  # the task whose head predicts (registry name)
    extras: list[dict] = field(default_factory=list)  # [{"name": ..., **params}], applied in order
    aux_tasks: list[str] = field(default_factory=list)  # one more head each (multi-task streams)
    dropout: float = 0.1  # on what the heads read
    classifier: str = "dense"  # the classification head (xlt.engine.heads.CLASSIFIERS)

    @classmethod
    def from_dict(cls, d: dict) -> "ModelSpec":
        return cls(**d)


def require_local(name_or_path: str) -> None:
    """An encoder that must come from the network where there is none (offline, or a missing
    snapshot directory) is refused in one line naming it and the command that fetches it."""
    if Path(name_or_path).is_dir():
        return
    looks_local = name_or_path.startswith((".", "/", "~")) or name_or_path.count("/") > 1
    if not (looks_local or hub_offline()):
        return
    if looks_local and "/encoders/" not in f"/{name_or_path}":  # a model's or a user's directory: no download makes it
        raise XltError(f"cannot load encoder '{name_or_path}': no such directory (not made yet, or moved)")
    why = ("no such directory" if looks_local else "not a local directory, and the Hub is offline here "
           f"({offline_words(offline_variables(HUB_OFFLINE_VARIABLES))}: jobs read local snapshots only)")
    raise XltError(f"encoder {name_or_path}: {why}; fetch its snapshot first where there is network "
                   "(a login node): `snakemake --cores 1 prefetch` with this run's --configfile")


def load_encoder_weights(name_or_path: str, revision: str | None = None, dropout: float | None = None,
                         pooler: bool = False):
    """An encoder (its base model; its pooler only if asked, for a head to take over) from the
    Hub or a local directory, whose safetensors files are checked first; pickled weights are
    never loaded."""
    # deferred: loads transformers only when this runs
    from transformers import AutoModel

    require_local(name_or_path)
    kwargs = {"revision": revision} if revision else {}
    if Path(name_or_path).is_dir():
        if problem := pickle_only(name_or_path):
            raise XltError(f"encoder {problem}")
        verify_weights(name_or_path, fix=f"a rerun reads the same file: fetch it again (remove {name_or_path}, then `make prefetch`) "
                       "or, for your own encoder, save it there again")
    if dropout is not None:
        kwargs.update(hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    try:
        # safetensors only: a pickled pytorch_model.bin can run code when loaded.
        return AutoModel.from_pretrained(name_or_path, add_pooling_layer=pooler, use_safetensors=True, **kwargs)
    except (OSError, ValueError) as e:
        raise _cannot_load(name_or_path, revision, e) from None


def _cannot_load(name_or_path: str, revision: str | None, e: Exception) -> XltError:
    return XltError(f"cannot load encoder {name_or_path!r}" + (f" at revision {revision}" if revision else "")
                    + f": {e.__class__.__name__}: {str(e).splitlines()[0]}")


def load_tokenizer(name_or_path: str, revision: str | None = None):
    """An encoder's fast tokenizer, from the Hub or a local directory (no weights loaded)."""
    # deferred: loads transformers only when this runs
    from transformers import AutoTokenizer

    require_local(name_or_path)
    try:
        tokenizer = AutoTokenizer.from_pretrained(name_or_path, **({"revision": revision} if revision else {}))
    except (OSError, ValueError) as e:
        raise _cannot_load(name_or_path, revision, e) from None
    if not getattr(tokenizer, "is_fast", False):
        raise XltError(f"encoder {name_or_path!r}: a fast tokenizer is needed (word alignment, offsets)")
    return tokenizer


def load_encoder(name_or_path: str, revision: str | None = None, dropout: float | None = None, pooler: bool = False):
    """Load an encoder and its tokenizer from the Hub or a local directory."""
    tokenizer = load_tokenizer(name_or_path, revision)
    return load_encoder_weights(name_or_path, revision, dropout, pooler), tokenizer


class TaskModel(nn.Module):
    def __init__(self, encoder: nn.Module, spec: ModelSpec, tasks: dict[str, tuple[Task, Kind]] | None = None):
        """`tasks`: the spec's tasks as the job resolved them (kinds.resolve), by name; by
        default resolved here (a model loaded from its directory)."""
        super().__init__()
        self.spec = spec
        tasks = tasks or {name: resolve(name) for name in [spec.task, *spec.aux_tasks]}
        self.task, self.kind = tasks[spec.task]
        self.encoder = encoder
        self.extras = nn.ModuleList([build_extra(e, encoder.config) for e in spec.extras])
        check_extras(self.extras, self.kind.name)
        hidden = encoder.config.hidden_size
        self.heads = nn.ModuleDict({name: kind.build_head(task, hidden, spec.dropout, spec.classifier)
                                    for name, (task, kind) in tasks.items()})
        use_keep_mask_dropout(self)
        self.fast_path = True  # training steps through the lean forward where it applies (engine.fast_path)

    @property
    def source_reader(self):
        """The extra that reads a batch's paired source side (`Extra.reads_source`), if the
        model has one: a batch that carries its source then runs both sides (`with_source`)."""
        return source_reader_of(self.extras)

    @property
    def head(self) -> nn.Module:
        return self.heads[self.task.name]

    def features(self, batch: dict, hooks: LayerHooks | None = None) -> torch.Tensor:
        """The encoder's output after the extras: what every head reads. `hooks` act inside
        the encoder before the extras' own (e.g. a loss term's recorder)."""
        hooks = LayerHooks().extend(hooks) if hooks else LayerHooks()
        for extra in self.extras:
            hooks.extend(extra.hooks(batch))
        states = hooks.record(sorted({i for e in self.extras for i in e.reads}))
        h = encode(self.encoder, batch["input_ids"], batch["attention_mask"], batch.get("token_type_ids"),
                   hooks=hooks, lean=self.fast_path)
        for extra in self.extras:
            h = extra(h, states, batch)
        return h

    def forward(self, batch: dict, task: str | None = None):
        """The head of `task` (default: the main task) on the batch; with task
        REPRESENTATIONS, a paired batch's encoder outputs, both sides (continual learning's
        alignment terms read them; no extra or head acts). A model with an extra that reads the
        source side, given a batch that carries its source (`SOURCE`: the source side's batch),
        runs both sides (`with_source`)."""
        if task == REPRESENTATIONS:
            return encode_pair(self.encoder, batch, self.fast_path)
        if SOURCE in batch and self.source_reader is not None:
            return self.with_source(batch, task)
        return self.heads[task or self.task.name](self.features(batch), batch)

    def with_source(self, batch: dict, task: str | None = None) -> dict:
        """A paired forward, for the extra that reads the source side (`source_reader`): the
        source side runs plainly while the extra's recorder notes what it reads of it
        (`Extra.source_recorder`), then the target side with that in its batch. "logits": the
        extra's prediction from both sides' logits (`Extra.paired_logits`); each side's logits
        and features (the head's input) for the training terms."""
        source = batch[SOURCE]
        recorder, carried = self.source_reader.source_recorder()
        h_s = self.features(source, recorder)
        target = {k: v for k, v in batch.items() if k != SOURCE}
        target.update(carried(source))
        h_t = self.features(target)
        head = self.heads[task or self.task.name]
        ls, lt = head(h_s, source)["logits"], head(h_t, target)["logits"]
        logits = self.source_reader.paired_logits(self.kind.name, ls, lt)
        return {"logits": logits, "source_logits": ls, "target_logits": lt, "source_features": h_s, "target_features": h_t}


def build_model(spec: ModelSpec, encoder: nn.Module, tasks: dict[str, tuple[Task, Kind]] | None = None) -> TaskModel:
    return TaskModel(encoder, spec, tasks)


def _module_state(model: TaskModel) -> dict:
    return {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items() if not k.startswith("encoder.")}


def save_model(model: TaskModel, tokenizer, out_dir: str | Path, meta: dict) -> None:
    """Write the whole model directory atomically (a temp dir renamed into place)."""
    with atomic_dir(out_dir) as tmp:
        model.encoder.save_pretrained(tmp / "encoder")
        tokenizer.save_pretrained(tmp / "encoder")
        save_file(_module_state(model), tmp / MODULES)
        write_json(tmp / MODEL_META, {"task": model.task.name, "spec": asdict(model.spec), **meta,
                                      "weights_sha256": weights_digest(tmp)})


def load_weights(path: str | Path) -> dict:
    """A safetensors file, or one clear error naming it (truncated, corrupted, missing)."""
    try:
        return load_file(path)
    except FileNotFoundError:
        raise XltError(f"{path}: missing") from None
    except Exception as e:  # safetensors raises its own SafetensorError for bad headers
        raise XltError(f"{path}: not a readable safetensors file ({e.__class__.__name__}: {e})") from None


def load_model(model_dir: str | Path, device: str | torch.device = "cpu") -> tuple[TaskModel, object, dict]:
    model_dir = Path(model_dir)
    meta_path = model_dir / MODEL_META
    if not meta_path.exists():
        raise XltError(f"{model_dir}: not a saved xlt model (no {MODEL_META})")
    meta = read_json(meta_path)
    verify_weights(model_dir, meta.get("weights_sha256"),
                   fix=f"a rerun keeps it: rebuild the model with `rm -r {model_dir}` and the same command again "
                       f"(or `--forcerun {model_dir}` on a snakemake command)")
    try:
        spec = ModelSpec.from_dict({**meta["spec"], "dropout": 0.0})
    except (KeyError, TypeError) as e:
        raise XltError(f"{meta_path}: not a valid model description ({e.__class__.__name__}: {e})") from None
    encoder, tokenizer = load_encoder(str(model_dir / "encoder"))
    model = build_model(spec, encoder)
    state = load_weights(model_dir / MODULES)
    expected = set(_module_state(model))
    if set(state) != expected:
        missing, unexpected = sorted(expected - set(state)), sorted(set(state) - expected)
        raise XltError(f"{model_dir / MODULES}: weights do not match the model spec in {MODEL_META} "
                       f"(missing: {missing[:5]}, unexpected: {unexpected[:5]})")
    model.load_state_dict(state, strict=False)
    # a model trained with engine.fast_path off is evaluated through the Hugging Face forward too
    model.fast_path = (meta.get("train_config") or {}).get("fast_path", "auto") != "off"
    return model.to(device).eval(), tokenizer, meta
