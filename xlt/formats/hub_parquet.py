"""Hugging Face Hub parquet files (WikiANN, PAWS-X, XNLI / MultiNLI) with the Hub's columns.

Readers (pyarrow, only the needed columns) -> normalised records of docs/data.md:

- WikiANN: `tokens` list[str], `ner_tags` list[int] (index into `registry.WIKIANN_TAGS`),
  optional `langs` -> ``{"id", "tokens", "tags"}``. PAN-X style language prefixes on tokens
  (``en:Paris``) are stripped (the prefix must be the token's language: the `langs` entry, or
  the `lang` argument).
- PAWS-X: `id`, `sentence1`, `sentence2`, `label` (0/1) -> ``{"id", "text", "text_pair", "label"}``.
- XNLI / MultiNLI: `premise`, `hypothesis`, `label` (0 entailment, 1 neutral, 2 contradiction).
- QA with SQuAD's columns (MLQA's `refs/convert/parquet`, TyDiQA-GoldP `secondary_task`):
  `id`, `title`, `context`, `question`, `answers{text, answer_start}` -> qa records. TyDiQA's
  language is only in the id prefix (`russian-...` -> ru); an unknown prefix is an error. Its
  answer starts, shifted by the conversion's stripping, are repaired (`read_tydiqa`).

Integer labels become the registry's label names. A missing column, a null, an out-of-range
label or a tokens/tags length mismatch raises `DataFormatError(path, None, "row N: ...")`
(row N is 0-based, as in the parquet table).
"""

from __future__ import annotations

from pathlib import Path

from xlt.errors import DataFormatError, XltError
from xlt.io import atomic_path
from xlt.registry import get_task

_SCHEMAS = {
    "wikiann": ("tokens", "ner_tags"),
    "pawsx": ("id", "sentence1", "sentence2", "label"),
    "xnli": ("premise", "hypothesis", "label"),
}


def _read_columns(path: Path, columns: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict:
    # deferred: loads pyarrow only when this runs
    import pyarrow.parquet as pq

    if not path.is_file():
        raise DataFormatError(path, None, "file not found")
    try:
        pf = pq.ParquetFile(path)
        names = set(pf.schema_arrow.names)
    except Exception as e:  # pyarrow raises several types for a corrupt file
        raise DataFormatError(path, None, f"not a readable parquet file ({e})") from None
    missing = [c for c in columns if c not in names]
    if missing:
        raise DataFormatError(
            path, None, f"missing column {missing[0]!r} (columns present: {', '.join(sorted(names))})"
        )
    want = list(columns) + [c for c in optional if c in names]
    try:
        table = pf.read(columns=want)
    except Exception as e:
        raise DataFormatError(path, None, f"cannot read parquet columns {want} ({e})") from None
    return {c: table.column(c).to_pylist() for c in want}


def _default_prefix(path: Path) -> str:
    # wikiann/<lang>/<split>-00000-of-00001.parquet -> "<lang>-<split>-"
    return f"{path.parent.name}-{path.name.split('-', 1)[0].split('.', 1)[0]}-"


def _label(path: Path, row: int, value, labels: tuple[str, ...]) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        raise DataFormatError(path, None, f"row {row}: label {value!r} is not an integer")
    if not 0 <= value < len(labels):
        raise DataFormatError(
            path, None, f"row {row}: label {value} out of range 0..{len(labels) - 1} ({', '.join(labels)})"
        )
    return labels[value]


def _str(path: Path, row: int, col: str, value) -> str:
    if not isinstance(value, str):
        raise DataFormatError(path, None, f"row {row}: column {col!r} is {value!r}, expected a string")
    return value


def read_wikiann(path: str | Path, *, lang: str | None = None, id_prefix: str | None = None) -> list[dict]:
    path = Path(path)
    labels = get_task("ner").labels
    cols = _read_columns(path, _SCHEMAS["wikiann"], optional=("langs",))
    prefix = _default_prefix(path) if id_prefix is None else id_prefix
    langs_col = cols.get("langs")
    out = []
    for row, (tokens, tags) in enumerate(zip(cols["tokens"], cols["ner_tags"], strict=True)):
        if not isinstance(tokens, list) or not isinstance(tags, list):
            raise DataFormatError(path, None, f"row {row}: tokens / ner_tags must be lists")
        if len(tokens) != len(tags):
            raise DataFormatError(path, None, f"row {row}: {len(tokens)} tokens but {len(tags)} ner_tags")
        langs = langs_col[row] if langs_col is not None else None
        if langs is not None and len(langs) != len(tokens):
            raise DataFormatError(path, None, f"row {row}: {len(tokens)} tokens but {len(langs)} langs")
        toks = []
        for i, t in enumerate(tokens):
            t = _str(path, row, "tokens", t)
            tl = langs[i] if langs else lang
            if tl and t.startswith(tl + ":") and len(t) > len(tl) + 1:
                t = t[len(tl) + 1 :]
            toks.append(t)
        out.append(
            {"id": f"{prefix}{row}", "tokens": toks, "tags": [_label(path, row, v, labels) for v in tags]}
        )
    return out


def read_pawsx(path: str | Path) -> list[dict]:
    path = Path(path)
    labels = get_task("pawsx").labels
    cols = _read_columns(path, _SCHEMAS["pawsx"])
    out = []
    id_rows: dict[str, int] = {}
    for row, (i, s1, s2, lab) in enumerate(
        zip(cols["id"], cols["sentence1"], cols["sentence2"], cols["label"], strict=True)
    ):
        if i is None:
            raise DataFormatError(path, None, f"row {row}: id is null")
        if str(i) in id_rows:
            raise DataFormatError(path, None, f"row {row}: duplicate id {str(i)!r} (first in row {id_rows[str(i)]})")
        id_rows[str(i)] = row
        out.append(
            {
                "id": str(i),
                "text": _str(path, row, "sentence1", s1),
                "text_pair": _str(path, row, "sentence2", s2),
                "label": _label(path, row, lab, labels),
            }
        )
    return out


def read_xnli(path: str | Path, *, id_prefix: str | None = None) -> list[dict]:
    path = Path(path)
    labels = get_task("xnli").labels
    cols = _read_columns(path, _SCHEMAS["xnli"])
    prefix = _default_prefix(path) if id_prefix is None else id_prefix
    return [
        {
            "id": f"{prefix}{row}",
            "text": _str(path, row, "premise", p),
            "text_pair": _str(path, row, "hypothesis", h),
            "label": _label(path, row, lab, labels),
        }
        for row, (p, h, lab) in enumerate(zip(cols["premise"], cols["hypothesis"], cols["label"], strict=True))
    ]


_READERS = {"ner": read_wikiann, "wikiann": read_wikiann, "pawsx": read_pawsx, "xnli": read_xnli}


def read_hub_parquet(path: str | Path, task: str, **kw) -> list[dict]:
    """Dispatch on the task name (``ner`` / ``pawsx`` / ``xnli``)."""
    try:
        reader = _READERS[task]
    except KeyError:
        raise XltError(f"no Hub parquet reader for task {task!r}; known: {', '.join(sorted(_READERS))}") from None
    return reader(path, **kw)


# Arrow types of the Hub's columns (ClassLabel columns are stored as int64).
def _arrow_schema(kind: str):
    # deferred: loads pyarrow only when this runs
    import pyarrow as pa

    if kind == "wikiann":
        return pa.schema(
            [
                ("tokens", pa.list_(pa.string())),
                ("ner_tags", pa.list_(pa.int64())),
                ("langs", pa.list_(pa.string())),
                ("spans", pa.list_(pa.string())),
            ]
        )
    if kind == "pawsx":
        return pa.schema(
            [("id", pa.int32()), ("sentence1", pa.string()), ("sentence2", pa.string()), ("label", pa.int64())]
        )
    if kind == "xnli":
        return pa.schema([("premise", pa.string()), ("hypothesis", pa.string()), ("label", pa.int64())])
    if kind == "mnli":  # nyu-mll/multi_nli (its parse-tree columns left out)
        return pa.schema([("promptID", pa.int32()), ("pairID", pa.string()), ("premise", pa.string()),
                          ("hypothesis", pa.string()), ("genre", pa.string()), ("label", pa.int64())])  # fmt: skip
    raise ValueError(f"unknown parquet kind {kind!r}")


def write_parquet(path: str | Path, kind: str, columns: dict[str, list]) -> int:
    """Write `columns` (column name -> values) with the Hub's schema for `kind`
    (``wikiann`` / ``pawsx`` / ``xnli`` / ``mnli``), atomically. Returns the number of rows."""
    # deferred: loads pyarrow only when this runs
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _arrow_schema(kind)
    table = pa.Table.from_pydict({n: columns[n] for n in schema.names}, schema=schema)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="snappy")
    return table.num_rows


# ---- extractive QA with SQuAD's columns (MLQA refs/convert/parquet, TyDiQA-GoldP) -----------

_SQUAD_COLUMNS = ("id", "context", "question", "answers")


def _squad_rows(path: Path, allow_unanswerable: bool, keep=None) -> list[tuple[int, dict]]:
    """(row, qa record) of every row `keep(row, id)` accepts (all by default), types and ids
    checked; answers are not yet checked against their context."""
    cols = _read_columns(path, _SQUAD_COLUMNS)
    out, seen = [], set()
    for row, (qid, ctx, q, ans) in enumerate(zip(*(cols[c] for c in _SQUAD_COLUMNS), strict=True)):
        qid = _str(path, row, "id", qid)
        if qid in seen:
            raise DataFormatError(path, None, f"row {row}: duplicate id {qid!r}")
        seen.add(qid)
        if keep is not None and not keep(row, qid):
            continue
        ctx, q = _str(path, row, "context", ctx), _str(path, row, "question", q)
        if not isinstance(ans, dict) or not isinstance(ans.get("text"), list) or not isinstance(
            ans.get("answer_start"), list
        ):
            raise DataFormatError(path, None, f"row {row}: answers must be {{text: [str], answer_start: [int]}}, got {ans!r}")
        texts, starts = ans["text"], ans["answer_start"]
        if len(texts) != len(starts):
            raise DataFormatError(path, None, f"row {row}: {len(texts)} answer texts but {len(starts)} answer_start")
        if not texts and not allow_unanswerable:
            raise DataFormatError(path, None, f"row {row} (id {qid!r}): no answers")
        for t, s in zip(texts, starts, strict=True):
            _str(path, row, "answers.text", t)
            if isinstance(s, bool) or not isinstance(s, int):
                raise DataFormatError(path, None, f"row {row} (id {qid!r}): answer_start {s!r} is not an integer")
        out.append((row, {"id": qid, "context": ctx, "question": q,
                          "answers": {"text": list(texts), "answer_start": list(starts)}}))  # fmt: skip
    return out


def _at(ctx: str, text: str, start: int) -> bool:
    return start >= 0 and ctx[start : start + len(text)] == text


def read_squad_parquet(path: str | Path, *, allow_unanswerable: bool = False) -> list[dict]:
    """SQuAD-style parquet (`id`, `title`, `context`, `question`, `answers{text, answer_start}`)
    -> qa records; every answer is checked against its context, as in `read_squad`."""
    path = Path(path)
    out = []
    for row, rec in _squad_rows(path, allow_unanswerable):
        ctx = rec["context"]
        for t, s in zip(*rec["answers"].values(), strict=True):
            if not _at(ctx, t, s):
                found = ctx[s : s + len(t)] if s >= 0 else None
                raise DataFormatError(
                    path, None,
                    f"row {row} (id {rec['id']!r}): answer {t!r} does not match context at answer_start {s!r} "
                    f"(context has {found!r})",
                )  # fmt: skip
        out.append(rec)
    return out


# TyDiQA's ids start with the language's English name: "russian-1234567890-0".
TYDIQA_LANGUAGES = {"arabic": "ar", "bengali": "bn", "english": "en", "finnish": "fi", "indonesian": "id",
                    "korean": "ko", "russian": "ru", "swahili": "sw", "telugu": "te"}  # fmt: skip


def tydiqa_language(path: str | Path, row: int, qid: str) -> str:
    prefix = qid.split("-", 1)[0]
    try:
        return TYDIQA_LANGUAGES[prefix]
    except KeyError:
        raise DataFormatError(
            path, None,
            f"row {row}: id {qid!r} has unknown language prefix {prefix!r} (known: {', '.join(TYDIQA_LANGUAGES)})",
        ) from None  # fmt: skip


def _nearest(ctx: str, text: str, start: int) -> int | None:
    """The start of the occurrence of `text` in `ctx` nearest to `start` (the earlier on a tie)."""
    best, i = None, ctx.find(text)
    while i >= 0:
        if best is None or abs(i - start) < abs(best - start):
            best = i
        i = ctx.find(text, i + 1)
    return best


def read_tydiqa(path: str | Path, lang: str | None = None, *, stats: dict | None = None) -> list[dict]:
    """TyDiQA-GoldP (`secondary_task`): all languages in one file; the language is only in
    the id prefix. `lang` keeps one language's records; only those are checked.

    The Hub's conversion (its former loading script) strips each context and answer text but
    keeps the original `answer_start`, so a start is off by the whitespace stripped (TFDS's
    tydi_qa 3.0.0 fixed the same bug, ~25 % of train and dev, by not stripping). Such a start
    is repaired to the occurrence of the answer nearest to it (`stats["answer_start_repaired"]`);
    an answer its context does not hold at all is left out (`stats["answers_not_in_context"]`,
    as XTREME's SQuAD reader drops an answer it cannot find), and a question left without one
    (`stats["questions_without_answer"]`)."""
    path = Path(path)
    if lang is not None and lang not in TYDIQA_LANGUAGES.values():
        raise XltError(f"TyDiQA-GoldP has no language {lang!r} (has {', '.join(TYDIQA_LANGUAGES.values())})")
    counts = dict.fromkeys(("answer_start_repaired", "answers_not_in_context", "questions_without_answer"), 0)
    out = []
    keep = None if lang is None else (lambda row, qid: tydiqa_language(path, row, qid) == lang)
    for _row, rec in _squad_rows(path, False, keep=keep):
        ctx, texts, starts = rec["context"], [], []
        for t, s in zip(*rec["answers"].values(), strict=True):
            if not _at(ctx, t, s):
                s = _nearest(ctx, t, s)
                if s is None:
                    counts["answers_not_in_context"] += 1
                    continue
                counts["answer_start_repaired"] += 1
            texts.append(t)
            starts.append(s)
        if not texts:
            counts["questions_without_answer"] += 1
            continue
        out.append({**rec, "answers": {"text": texts, "answer_start": starts}})
    if stats is not None:
        for k, v in counts.items():
            stats[k] = stats.get(k, 0) + v
    return out


def write_squad_parquet(path: str | Path, rows: list[dict]) -> int:
    """Write SQuAD-column rows (`id`, `title`, `context`, `question`, `answers`) with the Hub's
    types (answers: struct of list<string>, list<int32>), atomically."""
    # deferred: loads pyarrow only when this runs
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("id", pa.string()), ("title", pa.string()), ("context", pa.string()),
                        ("question", pa.string()),
                        ("answers", pa.struct([("text", pa.list_(pa.string())),
                                               ("answer_start", pa.list_(pa.int32()))]))])  # fmt: skip
    table = pa.Table.from_pylist(rows, schema=schema)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
    return table.num_rows
