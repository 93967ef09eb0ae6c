"""CoNLL-U (Universal Dependencies) reader and writer.

Reader contract (docs/data.md, pos / parsing records)::

    {"id": str, "tokens": [str], "upos": [str], "head": [int], "deprel": [str]}

- `tokens` are the *syntactic words*: a multiword-token line (`3-4  al`) is not a word; the
  words `3` and `4` that follow it are. With ``surface=True`` each record also carries
  ``"surface"`` (the surface tokens, the multiword form replacing its words) and ``"mwt"``
  (``[[first_id, last_id, form], ...]``, 1-based word ids, inclusive).
- Empty nodes (`5.1`, enhanced-dependency ellipsis) are skipped.
- Deprel subtypes are cut (`nmod:poss` -> `nmod`); UPOS and base deprels must belong to the
  UD v2 sets of `xlt.registry`.
- Sentences whose FORM column is `_` on every word (text-less treebanks such as
  UD_Arabic-NYUAD) are skipped; the number skipped goes into ``stats["skipped_textless"]``
  and a warning is logged.
- A missing blank line at the very end of the file is tolerated.

Anything else that is not valid CoNLL-U raises `DataFormatError(path, line, ...)` with the
1-based line number: wrong column count, non-integer ID or HEAD, ids out of sequence, HEAD
out of range, invalid UTF-8, unknown UPOS / deprel, a multiword range not followed by its
words.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from xlt.errors import DataFormatError
from xlt.io import atomic_path, iter_lines
from xlt.registry import UD_DEPRELS, UPOS

log = logging.getLogger(__name__)

_UPOS = frozenset(UPOS)
_DEPRELS = frozenset(UD_DEPRELS)


def _int(path, lineno, value: str, what: str) -> int:
    if not value.isdigit():  # rejects '', '-1', '1.5', '_'
        raise DataFormatError(path, lineno, f"{what} must be a non-negative integer, got {value!r}")
    return int(value)


class _Sentence:
    __slots__ = ("start", "sent_id", "words", "mwts", "empty", "pending_mwt")

    def __init__(self, start: int):
        self.start = start
        self.sent_id: str | None = None
        self.words: list[tuple[str, str, int, str, int]] = []  # form, upos, head, deprel, line
        self.mwts: list[list] = []
        self.empty = 0
        self.pending_mwt: tuple[int, int, int] | None = None  # (first, last, line)


def read_conllu(
    path: str | Path, *, surface: bool = False, stats: dict | None = None
) -> list[dict]:
    """Read a CoNLL-U file into normalised pos/parsing records (see module docstring).

    `stats`, if given, is updated with counts: ``sentences`` (kept), ``skipped_textless``,
    ``multiword_tokens``, ``empty_nodes``.
    """
    path = Path(path)
    out: list[dict] = []
    counts = {"sentences": 0, "skipped_textless": 0, "multiword_tokens": 0, "empty_nodes": 0}
    sent: _Sentence | None = None
    n_in_file = 0
    sent_id_lines: dict[str, int] = {}

    def finish(s: _Sentence, end_line: int) -> None:
        nonlocal n_in_file
        n_in_file += 1
        if s.pending_mwt is not None:
            first, last, line = s.pending_mwt
            raise DataFormatError(path, line, f"multiword token {first}-{last} is not followed by its words")
        if not s.words:
            # only comments (or only empty nodes): not a sentence
            if s.empty:
                raise DataFormatError(path, s.start, "sentence has empty nodes but no words")
            return
        n = len(s.words)
        for _form, _upos, head, _rel, line in s.words:
            if head > n:
                raise DataFormatError(path, line, f"HEAD {head} out of range (sentence has {n} words)")
        counts["empty_nodes"] += s.empty
        if all(w[0] == "_" for w in s.words):
            counts["skipped_textless"] += 1
            return
        counts["multiword_tokens"] += len(s.mwts)
        rec = {
            "id": s.sent_id if s.sent_id is not None else f"{path.name}:{s.start}",
            "tokens": [w[0] for w in s.words],
            "upos": [w[1] for w in s.words],
            "head": [w[2] for w in s.words],
            "deprel": [w[3] for w in s.words],
        }
        if surface:
            surf: list[str] = []
            i = 1
            mw = {m[0]: m for m in s.mwts}
            while i <= n:
                if i in mw:
                    surf.append(mw[i][2])
                    i = mw[i][1] + 1
                else:
                    surf.append(s.words[i - 1][0])
                    i += 1
            rec["surface"] = surf
            rec["mwt"] = [list(m) for m in s.mwts]
        out.append(rec)
        counts["sentences"] += 1

    lineno = 0
    for lineno, line in iter_lines(path):
        if lineno == 1 and line.startswith("\ufeff"):
            line = line[1:]
        if not line.strip():
            if line:
                raise DataFormatError(path, lineno, "whitespace-only line (expected an empty line)")
            if sent is not None:
                finish(sent, lineno)
                sent = None
            continue
        if sent is None:
            sent = _Sentence(lineno)
        if line.startswith("#"):
            if sent.words or sent.pending_mwt:
                raise DataFormatError(path, lineno, "comment line inside a sentence")
            body = line[1:].strip()
            if body.startswith("sent_id"):
                key, eq, value = body.partition("=")
                if eq and key.strip() == "sent_id":
                    sent.sent_id = value.strip()
                    if sent.sent_id in sent_id_lines:  # UD requires them unique in a treebank
                        raise DataFormatError(path, lineno, f"duplicate sent_id {sent.sent_id!r} "
                                                            f"(first at line {sent_id_lines[sent.sent_id]})")
                    sent_id_lines[sent.sent_id] = lineno
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            raise DataFormatError(path, lineno, f"expected 10 tab-separated columns, got {len(cols)}")
        tid, form, _lemma, upos, _xpos, _feats, head, deprel, _deps, _misc = cols
        if "-" in tid:
            a, _, b = tid.partition("-")
            first = _int(path, lineno, a, "multiword token range start")
            last = _int(path, lineno, b, "multiword token range end")
            if first != len(sent.words) + 1 or last < first or sent.pending_mwt is not None:
                raise DataFormatError(path, lineno, f"multiword token range {tid} out of sequence")
            sent.mwts.append([first, last, form])
            sent.pending_mwt = (first, last, lineno)
            continue
        if "." in tid:
            a, _, b = tid.partition(".")
            anchor = _int(path, lineno, a, "empty node id")
            _int(path, lineno, b, "empty node id")
            if anchor != len(sent.words):
                raise DataFormatError(path, lineno, f"empty node {tid} out of sequence")
            sent.empty += 1
            continue
        i = _int(path, lineno, tid, "ID")
        if i != len(sent.words) + 1:
            raise DataFormatError(path, lineno, f"ID {i} out of sequence (expected {len(sent.words) + 1})")
        h = _int(path, lineno, head, "HEAD")
        if upos not in _UPOS:
            raise DataFormatError(path, lineno, f"unknown UPOS {upos!r}")
        base = deprel.split(":", 1)[0]
        if base not in _DEPRELS:
            raise DataFormatError(path, lineno, f"unknown DEPREL {deprel!r}")
        if (h == 0) != (base == "root"):
            raise DataFormatError(path, lineno, f"HEAD {h} with DEPREL {deprel!r}: only root has HEAD 0")
        if h == i:
            raise DataFormatError(path, lineno, f"word {i} is its own head")
        if not form:
            raise DataFormatError(path, lineno, "empty FORM")
        sent.words.append((form, upos, h, base, lineno))
        if sent.pending_mwt is not None and i == sent.pending_mwt[1]:
            sent.pending_mwt = None
    if sent is not None:  # no blank line at EOF: tolerated
        finish(sent, lineno)
    if stats is not None:
        for k, v in counts.items():
            stats[k] = stats.get(k, 0) + v
    if counts["skipped_textless"]:
        log.warning("%s: skipped %d text-less sentence(s) (FORM is '_')", path, counts["skipped_textless"])
    return out


def format_conllu(sentences: Iterable[dict]) -> str:
    """Render sentences as CoNLL-U text.

    Each sentence is ``{"comments": [str] (without '# '), "rows": [[10 columns]]}``; rows are
    written in the order given (multiword ranges and empty nodes included); columns are
    converted with `str`. Every sentence, the last included, ends with a blank line.
    """
    parts: list[str] = []
    for s in sentences:
        for c in s.get("comments", ()):
            parts.append(f"# {c}\n")
        for row in s["rows"]:
            if len(row) != 10:
                raise ValueError(f"CoNLL-U row needs 10 columns, got {len(row)}: {row!r}")
            parts.append("\t".join(map(str, row)) + "\n")
        parts.append("\n")
    return "".join(parts)


def write_conllu(path: str | Path, sentences: Iterable[dict]) -> int:
    """Write sentences (see `format_conllu`) atomically; return the number written."""
    sentences = list(sentences)
    text = format_conllu(sentences)
    with atomic_path(path) as tmp:
        tmp.write_bytes(text.encode("utf-8"))
    return len(sentences)
