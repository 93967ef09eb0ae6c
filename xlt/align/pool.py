"""The pool: the first `size` WikiMatrix pairs that pass the filters, tokenised, streamed.

WikiMatrix files are sorted by margin score, so the pool is the best-scored `size` pairs
(250K in the adjust paper) that pass. The input is read line by line and the pool written
line by line: memory does not grow with the bitext (en-es is 3.4M lines).

Tokeniser: `xlt.formats.tsv.tokenize` (word-character runs and single punctuation marks,
the same for every language). Its tokens are the *words* of everything downstream: the
aligners align them, and the encoder analyses feed them to the subword tokenizer as
pre-split words (`is_split_into_words`), so a word's subwords average back onto exactly the
token a link names.

Pool file: ``<id>\\t<en tokens>\\t<xx tokens>`` with tokens joined by single spaces (tokens
never hold whitespace); the id is WikiMatrix's ``en-xx-<line>`` (the gold-alignment line).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from xlt.errors import DataFormatError, XltError
from xlt.formats.tsv import WIKIMATRIX_THRESHOLD, iter_wikimatrix, tokenize, wikimatrix_id
from xlt.io import atomic_path, iter_lines


@dataclass(frozen=True)
class PoolConfig:
    size: int = 250_000  # pairs kept (adjust: "a set of 250K parallel sentences")
    max_words: int = 64  # a pair with a longer side is dropped (adjust, after Cao et al.)
    threshold: float = WIKIMATRIX_THRESHOLD  # margin score; WikiMatrix's advised 1.04


def build_pool(bitext: str | Path, out: str | Path, cfg: PoolConfig) -> dict:
    """Write the pool of `bitext` to `out`; return what was read, dropped and kept."""
    counts = {"read": 0, "below_threshold": 0, "empty": 0, "identical": 0, "too_long": 0, "kept": 0}
    with atomic_path(out) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for lineno, score, en, xx in iter_wikimatrix(bitext):
            counts["read"] += 1
            if score < cfg.threshold:
                counts["below_threshold"] += 1
                continue
            if en.strip() == xx.strip():  # untranslated copies (names, numbers, code) teach nothing
                counts["identical"] += 1
                continue
            src, tgt = tokenize(en), tokenize(xx)
            if not src or not tgt:
                counts["empty"] += 1
                continue
            if len(src) > cfg.max_words or len(tgt) > cfg.max_words:
                counts["too_long"] += 1
                continue
            f.write(f"{wikimatrix_id(bitext, lineno)}\t{' '.join(src)}\t{' '.join(tgt)}\n")
            counts["kept"] += 1
            if counts["kept"] >= cfg.size:
                break
    if counts["kept"] == 0:
        raise XltError(f"{bitext}: no sentence pair passes the pool's filters ({counts})")
    return {"config": asdict(cfg), "counts": counts, "complete": counts["kept"] >= cfg.size}


def iter_pool(path: str | Path) -> Iterator[tuple[int, str, list[str], list[str]]]:
    """(line number, id, en tokens, xx tokens) of a pool file."""
    for lineno, line in iter_lines(path):
        cols = line.split("\t")
        if len(cols) != 3 or not cols[1] or not cols[2]:
            raise DataFormatError(path, lineno, "expected 3 tab-separated columns (id, en tokens, xx tokens)")
        yield lineno, cols[0], cols[1].split(" "), cols[2].split(" ")
