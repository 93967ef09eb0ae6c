"""An encoder (any Hugging Face AutoModel) with a task head; saving and loading.

A saved model is a directory: `encoder/` in Hugging Face format (safetensors + config +
tokenizer), `head.safetensors`, and `xlt_model.json` with the task, the labels and the
provenance. The encoder directory loads with plain `AutoModel.from_pretrained`.
"""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from xlt.engine.heads import build_head
from xlt.errors import XltError
from xlt.io import atomic_dir, read_json, verify_weights, weights_digest, write_json
from xlt.registry import Task, get_task

MODEL_META = "xlt_model.json"


def load_encoder(name_or_path: str, revision: str | None = None, dropout: float | None = None):
    """Load an encoder and its tokenizer from the Hub or a local directory."""
    from transformers import AutoModel, AutoTokenizer

    kwargs = {"revision": revision} if revision else {}
    if Path(name_or_path).is_dir():
        verify_weights(name_or_path)
    if dropout is not None:
        kwargs.update(hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    try:
        tokenizer = AutoTokenizer.from_pretrained(name_or_path, **({"revision": revision} if revision else {}))
        # safetensors only: a pickled pytorch_model.bin can run code when loaded.
        encoder = AutoModel.from_pretrained(name_or_path, add_pooling_layer=False, use_safetensors=True, **kwargs)
    except OSError as e:
        raise XltError(
            f"cannot load encoder {name_or_path!r}"
            + (f" at revision {revision}" if revision else "")
            + f": {e.__class__.__name__}: {str(e).splitlines()[0]}"
        ) from None
    if not getattr(tokenizer, "is_fast", False):
        raise XltError(f"encoder {name_or_path!r}: a fast tokenizer is needed (word alignment, offsets)")
    return encoder, tokenizer


class TaskModel(nn.Module):
    def __init__(self, encoder: nn.Module, head: nn.Module, task: Task):
        super().__init__()
        self.encoder = encoder
        self.head = head
        self.task = task

    def forward(self, batch: dict) -> dict:
        inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
        if "token_type_ids" in batch:
            inputs["token_type_ids"] = batch["token_type_ids"]
        hidden = self.encoder(**inputs).last_hidden_state
        return self.head(hidden, batch)


def build_model(task: Task, encoder: nn.Module, dropout: float) -> TaskModel:
    return TaskModel(encoder, build_head(task, encoder.config.hidden_size, dropout), task)


def save_model(model: TaskModel, tokenizer, out_dir: str | Path, meta: dict) -> None:
    """Write the whole model directory atomically (a temp dir renamed into place)."""
    with atomic_dir(out_dir) as tmp:
        model.encoder.save_pretrained(tmp / "encoder")
        tokenizer.save_pretrained(tmp / "encoder")
        save_file({k: v.contiguous() for k, v in model.head.state_dict().items()}, tmp / "head.safetensors")
        write_json(tmp / MODEL_META, {"task": model.task.name, **meta, "weights_sha256": weights_digest(tmp)})


def load_model(model_dir: str | Path, device: str | torch.device = "cpu") -> tuple[TaskModel, object, dict]:
    model_dir = Path(model_dir)
    meta_path = model_dir / MODEL_META
    if not meta_path.exists():
        raise XltError(f"{model_dir}: not a saved xlt model (no {MODEL_META})")
    meta = read_json(meta_path)
    verify_weights(model_dir, meta.get("weights_sha256"))
    task = get_task(meta["task"])
    encoder, tokenizer = load_encoder(str(model_dir / "encoder"))
    model = build_model(task, encoder, dropout=0.0)
    model.head.load_state_dict(load_file(model_dir / "head.safetensors"))
    return model.to(device).eval(), tokenizer, meta
