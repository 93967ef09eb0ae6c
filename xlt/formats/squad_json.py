"""SQuAD v1.1 JSON (SQuAD, XQuAD, MLQA, TyDiQA-GoldP in their original files).

``{"version", "data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question",
"answers": [{"text", "answer_start"}]}]}]}]}`` -> flat records
``{"id", "context", "question", "answers": {"text": [str], "answer_start": [int]}}``.

Every answer is checked against its context (``context[start:start+len(text)] == text``); a
mismatch, a missing key or a wrong type raises `DataFormatError` whose message names the qa
id (JSON has no useful line numbers once parsed). Machine-translated SQuAD (XTREME's
translate-train) places some answers where the translated context does not hold them
(answer_start -1, or another string): with `skipped` (a dict) such an answer is left out and
counted, and a question left without any answer too, as the xmixup authors' reader does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from xlt.errors import DataFormatError
from xlt.io import atomic_path, read_json


def _need(path, where: str, obj, key: str, typ):
    if not isinstance(obj, dict) or key not in obj:
        raise DataFormatError(path, None, f"{where}: missing key {key!r}")
    v = obj[key]
    if not isinstance(v, typ) or isinstance(v, bool):
        raise DataFormatError(path, None, f"{where}: {key!r} has type {type(v).__name__}")
    return v


def read_squad(path: str | Path, *, allow_unanswerable: bool = False, skipped: dict | None = None) -> list[dict]:
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(path, None, "file not found")
    doc = read_json(path)
    data = _need(path, "top level", doc, "data", list)
    out = []
    seen: set[str] = set()
    for a, article in enumerate(data):
        for p, para in enumerate(_need(path, f"data[{a}]", article, "paragraphs", list)):
            where_p = f"data[{a}].paragraphs[{p}]"
            context = _need(path, where_p, para, "context", str)
            for q, qa in enumerate(_need(path, where_p, para, "qas", list)):
                qid = str(_need(path, f"{where_p}.qas[{q}]", qa, "id", (str, int)))
                where = f"qa id {qid!r}"
                if qid in seen:
                    raise DataFormatError(path, None, f"{where}: duplicate id")
                seen.add(qid)
                question = _need(path, where, qa, "question", str)
                # a translate-test file may carry no answers at all (they are the target's)
                answers = qa.get("answers", []) if allow_unanswerable else _need(path, where, qa, "answers", list)
                if not isinstance(answers, list):
                    raise DataFormatError(path, None, f"{where}: 'answers' has type {type(answers).__name__}")
                if not answers and not allow_unanswerable:
                    raise DataFormatError(path, None, f"{where}: no answers")
                texts, starts = [], []
                for ans in answers:
                    text = _need(path, where, ans, "text", str)
                    start = _need(path, where, ans, "answer_start", int)
                    misplaced = start < 0 or context[start : start + len(text)] != text
                    if misplaced and skipped is not None:
                        skipped["answers"] = skipped.get("answers", 0) + 1
                        continue
                    if misplaced:
                        found = context[max(start, 0) : max(start, 0) + len(text)]
                        raise DataFormatError(
                            path, None,
                            f"{where}: answer {text!r} does not match context at answer_start {start} "
                            f"(context has {found!r})",
                        )  # fmt: skip
                    texts.append(text)
                    starts.append(start)
                if answers and not texts and not allow_unanswerable:  # every answer misplaced (skipped)
                    skipped["questions"] = skipped.get("questions", 0) + 1
                    continue
                out.append(
                    {
                        "id": qid,
                        "context": context,
                        "question": question,
                        "answers": {"text": texts, "answer_start": starts},
                    }
                )
    return out


def write_squad(path: str | Path, articles: Iterable[dict], version: str = "1.1") -> int:
    """Write ``{"version", "data": articles}`` atomically (compact, keys in SQuAD order);
    return the number of questions."""
    doc = {"version": version, "data": list(articles)}
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return sum(len(p["qas"]) for a in doc["data"] for p in a["paragraphs"])
