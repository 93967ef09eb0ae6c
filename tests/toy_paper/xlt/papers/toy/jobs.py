"""The toy paper's job, run by `paper_job.py toy count` (xlt.papers.job_cli reads its options
from its signature)."""

from __future__ import annotations

from pathlib import Path

from xlt.errors import XltError
from xlt.io import iter_jsonl, read_json, write_json


def count(data: list[Path], split: str, out: Path) -> None:
    """The records of `split` in every language of each prepared data folder (its manifest names
    the task and the languages; a folder shared with other papers may hold more than Table 1's)."""
    rows = []
    for folder in data:
        manifest = read_json(folder / "manifest.json")
        for lang in manifest["counts"]:
            path = folder / lang / f"{split}.jsonl"
            if not path.is_file():
                raise XltError(f"{path}: no {split} split of {manifest['task']} in {lang}")
            rows.append({"task": manifest["task"], "lang": lang, "split": split, "value": sum(1 for _ in iter_jsonl(path))})
    write_json(out, {"counts": rows})


JOBS = {"count": count}  # rule toy_count
