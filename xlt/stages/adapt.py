"""Encoder adaptation before fine-tuning: MLM on a task's training text (domain adaptation,
e.g. a paper's +DA). A paper's own adaptation method is an init kind it registers
(xlt.dag.targets.InitKind), made by its own rule."""

from __future__ import annotations

from pathlib import Path

from xlt.engine.evalset import load_records
from xlt.stages.finetune import split_file
from xlt.registry import check_language, get_task


def adapt_mlm(encoder: str, revision: str | None, data_dir: str, dataset_task: str, langs: list[str], mlm: dict,
              out: str | Path, checkpoint_dir: str | Path, kill_after_steps: int | None = None) -> dict:
    """Continue MLM training of `encoder` (Hub id or directory, its own tokenizer) on the
    training text of `dataset_task` in `langs`; save a Hugging Face encoder to `out`."""
    from xlt.engine.recipes.mlm import MLMConfig, task_texts, train_mlm  # torch: only in the job

    task = get_task(dataset_task)
    cfg = MLMConfig.from_dict(mlm, "config key adapt.mlm")
    files, texts = [], []
    for lang in langs:
        check_language(task, lang)
        path = split_file(data_dir, lang, "train")
        files.append(path)
        texts.extend(task_texts(task, load_records([path])))
    resolved = {"method": "mlm", "encoder": encoder, "revision": revision, "task": task.name, "langs": langs,
                "data_dir": str(data_dir), "mlm": mlm}
    return train_mlm(texts, out, checkpoint_dir, cfg, init_from=encoder, revision=revision, text_files=files,
                     resolved_config=resolved, kill_after_steps=kill_after_steps)
