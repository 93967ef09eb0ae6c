"""MARC (Multilingual Amazon Reviews), mteb mirror: `{lang}/{split}.jsonl`.

Each line is ``{"id": str, "text": str, "label": int 0-4, ...}`` (the mirror's text is title and
body joined; extra keys such as `label_text` are ignored). The reader returns
``{"id", "text", "label": "1".."5"}`` (stars, the registry's label names).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from xlt.errors import DataFormatError
from xlt.io import atomic_path, iter_jsonl
from xlt.registry import get_task


def read_marc(path: str | Path) -> list[dict]:
    path = Path(path)
    labels = get_task("marc").labels
    out = []
    id_lines: dict[str, int] = {}
    for lineno, obj in iter_jsonl(path):
        for key in ("id", "text", "label"):
            if key not in obj:
                raise DataFormatError(path, lineno, f"missing key {key!r}")
        rid = str(obj["id"])
        if rid in id_lines:
            raise DataFormatError(path, lineno, f"duplicate id {rid!r} (first at line {id_lines[rid]})")
        id_lines[rid] = lineno
        lab, text = obj["label"], obj["text"]
        if isinstance(lab, bool) or not isinstance(lab, int) or not 0 <= lab < len(labels):
            raise DataFormatError(path, lineno, f"label {lab!r} out of range 0..{len(labels) - 1}")
        if not isinstance(text, str):
            raise DataFormatError(path, lineno, "text must be a string")
        out.append({"id": rid, "text": text, "label": labels[lab]})
    return out


def write_marc(path: str | Path, rows: Iterable[dict]) -> int:
    """Write mirror rows ``{"id", "text", "label": int}`` (plus `label_text`) atomically."""
    n = 0
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for r in rows:
            obj = {"id": r["id"], "text": r["text"], "label": int(r["label"]), "label_text": str(r["label"])}
            f.write(json.dumps(obj, ensure_ascii=False) + "\n")
            n += 1
    return n
