"""Tab-separated sources: XNLI-MT, WikiMatrix bitext, and Pharaoh word alignments.

- XNLI-MT 1.0 (`multinli.train.<lang>.tsv`): header ``premise<TAB>hypo<TAB>label``; labels
  ``entailment`` / ``neutral`` / ``contradictory`` (read as the registry's ``contradiction``).
  Its `xnli/` folder (translate-test) is read by the same header names, or XNLI 1.0's
  ``sentence1`` / ``sentence2`` / ``gold_label`` (its layout could not be checked offline).
  -> ``{"id", "text", "text_pair", "label"}``.
- XTREME translate-train (XNLI / PAWS-X `en-<lang>-translated.tsv`): no header, 5 columns
  (original pair, translated pair, label); the translated pair is kept, and with
  ``keep_source=True`` the English original too, as ``"source": {"text", "text_pair"}``.
  PAWS-X rows whose label is not ``0`` / ``1`` are skipped and counted (as TFDS does).
- XTREME translate-test (XNLI / PAWS-X `test-<lang>-en-translated.tsv`): no header, 5 columns
  (original pair, English translation, label) or, in the older layout, 3 (English translation,
  label); the English pair and the label are kept, every row strictly (it is joined by row).
- WikiMatrix v1 (`WikiMatrix.en-<xx>.tsv.gz`): no header, ``margin score<TAB>en<TAB>xx``,
  sorted by score. Rows scoring below `threshold` (1.04, as the WikiMatrix paper advises) are
  dropped. -> ``{"id", "src": [tokens], "tgt": [tokens]}`` (English first), tokenised by
  `tokenize`.
- Pharaoh alignments: one line per sentence pair, ``i-j`` pairs (0-based src-tgt token
  indices) separated by spaces; an empty line is a pair with no links.

Ragged rows, a bad score, an unknown label or invalid UTF-8 raise `DataFormatError(path, line)`.
Quotes are not special (the files are not CSV-quoted).
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from xlt.errors import DataFormatError
from xlt.io import atomic_path, iter_lines
from xlt.registry import get_task

WIKIMATRIX_THRESHOLD = 1.04

_TOKEN = re.compile(r"\w+|[^\w\s]")


def tokenize(text: str) -> list[str]:
    """Split into runs of word characters and single punctuation marks (Unicode-aware).

    A deliberately simple tokeniser, the same for every language; it is what the bitext
    records and their gold alignments index into.
    """
    return _TOKEN.findall(text)


_XNLI_MT_LABELS = {"entailment": "entailment", "neutral": "neutral",
                   "contradictory": "contradiction", "contradiction": "contradiction"}  # fmt: skip


# XNLI-MT's columns by header name: its multinli/ files say `premise, hypo, label`; a reader of its
# xnli/ folder (translate-test) that could be checked (MultiFiT's) takes XNLI 1.0's layout
# (`language, gold_label, ..., sentence1, sentence2, ...`). Either is read by name.
_XNLI_MT_HEADERS = (("premise", "hypo", "label"), ("sentence1", "sentence2", "gold_label"))


def read_xnli_mt(path: str | Path, *, id_prefix: str | None = None) -> list[dict]:
    path = Path(path)
    labels = set(get_task("xnli").labels)
    prefix = f"{path.stem}-" if id_prefix is None else id_prefix
    out = []
    where = None  # (premise, hypothesis, label) column indices, from the header
    width = 0
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        cols = line.split("\t")
        if where is None:
            names = [c.strip() for c in cols]
            for header in _XNLI_MT_HEADERS:
                if all(n in names for n in header):
                    where, width = tuple(names.index(n) for n in header), len(cols)
                    break
            else:
                raise DataFormatError(path, lineno, "expected a header naming " + " or ".join(
                    "/".join(h) for h in _XNLI_MT_HEADERS) + f" columns, got {line[:80]!r}")
            continue
        if len(cols) != width:
            raise DataFormatError(path, lineno, f"expected {width} tab-separated columns (as the header), got {len(cols)}")
        premise, hypo, lab = (cols[i] for i in where)
        name = _XNLI_MT_LABELS.get(lab.strip())
        if name is None or name not in labels:
            raise DataFormatError(path, lineno, f"unknown label {lab!r} (expected {', '.join(_XNLI_MT_LABELS)})")
        out.append({"id": f"{prefix}{lineno}", "text": premise, "text_pair": hypo, "label": name})
    if where is None:
        raise DataFormatError(path, None, "empty file (no header)")
    return out


def _xtreme_labels(task: str, what: str) -> tuple[set, dict]:
    """The task's labels and how XTREME's TSVs spell them (XNLI: ``contradictory``)."""
    if task not in ("xnli", "pawsx"):
        raise ValueError(f"XTREME {what} TSV exists for xnli / pawsx, not {task!r}")
    labels = set(get_task(task).labels)
    return labels, _XNLI_MT_LABELS if task == "xnli" else {lab: lab for lab in labels}


def read_xtreme_translated(path: str | Path, task: str, *, id_prefix: str | None = None,
                           keep_source: bool = False, stats: dict | None = None) -> list[dict]:
    """XTREME translate-train TSV (XNLI / PAWS-X ``en-<lang>-translated.tsv``): no header, 5
    columns: original sentence1, original sentence2, translated sentence1, translated
    sentence2, label. The TRANSLATED pair is kept at the top level; `keep_source` adds the
    original (English) pair as ``"source": {"text", "text_pair"}``. `task` is ``xnli`` or
    ``pawsx``.

    PAWS-X's files hold some wrongly populated rows: as TFDS's xtreme_pawsx, a row is kept only
    if its fifth column is ``0`` or ``1``; the others (a short row too) are skipped and counted
    in ``stats["skipped_rows"]``. XNLI's are read strictly (no such rows are known)."""
    path = Path(path)
    labels, spelled = _xtreme_labels(task, "translate-train")
    prefix = f"{path.stem}-" if id_prefix is None else id_prefix
    out = []
    skipped = 0
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        cols = line.split("\t")
        if task == "pawsx" and (len(cols) < 5 or cols[4] not in spelled):
            skipped += 1
            continue
        if len(cols) != 5 and task == "xnli":
            raise DataFormatError(
                path, lineno,
                f"expected 5 tab-separated columns (original pair, translated pair, label), got {len(cols)}",
            )  # fmt: skip
        name = spelled.get(cols[4].strip())
        if name is None or name not in labels:
            raise DataFormatError(path, lineno, f"unknown label {cols[4]!r} (expected {', '.join(spelled)})")
        rec = {"id": f"{prefix}{lineno}", "text": cols[2], "text_pair": cols[3], "label": name}
        if keep_source:
            rec["source"] = {"text": cols[0], "text_pair": cols[1]}
        out.append(rec)
    if stats is not None and task == "pawsx":
        stats["skipped_rows"] = stats.get("skipped_rows", 0) + skipped
    return out


XTREME_TRANSLATE_TEST_WIDTHS = {5: "original pair, translated pair, label", 3: "translated pair, label"}


def read_xtreme_translate_test(path: str | Path, task: str, *, id_prefix: str | None = None) -> list[dict]:
    """XTREME translate-test TSV (XNLI / PAWS-X ``test-<lang>-en-translated.tsv``): a language's
    test set machine-translated into English, one row per test pair in the test set's order, no
    header. The English (translated) pair is kept with the row's label; the records' ids end in
    the line number. Two layouts are read, one per file (the first row fixes it):

    - 5 columns: original (target-language) pair, translated (English) pair, label -- the layout
      XTREME's README gives for its XNLI / PAWS-X translations since they were republished with
      the original pair (google-research/xtreme issue #37), and the one TensorFlow Models'
      XTREME readers take (columns 3-4 as the English pair);
    - 3 columns: translated pair, label -- what XTREME's own processors
      (third_party/processors/{xnli,pawsx}.py) and X-Mixup's authors' readers take, i.e. the
      files before that republication (and the authors' copies in their Drive folder).

    Any other row (another width than the file's, an unknown label) raises DataFormatError
    naming the file and line: a translate-test file is joined to its test set by row, so no row
    may be skipped. `task` is ``xnli`` (label ``contradictory`` read as ``contradiction``) or
    ``pawsx`` (``0`` / ``1``)."""
    path = Path(path)
    labels, spelled = _xtreme_labels(task, "translate-test")
    prefix = f"{path.stem}-" if id_prefix is None else id_prefix
    out = []
    width = None
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        cols = line.split("\t")
        if width is None:
            if len(cols) not in XTREME_TRANSLATE_TEST_WIDTHS:
                raise DataFormatError(path, lineno, "expected 5 tab-separated columns (original pair, translated pair, "
                                                    f"label) or 3 (translated pair, label), got {len(cols)}")
            width = len(cols)
        elif len(cols) != width:
            raise DataFormatError(path, lineno, f"expected {width} tab-separated columns "
                                                f"({XTREME_TRANSLATE_TEST_WIDTHS[width]}, as the first row), got {len(cols)}")
        text, text_pair, lab = cols[-3], cols[-2], cols[-1].strip()
        name = spelled.get(lab)
        if name is None or name not in labels:
            raise DataFormatError(path, lineno, f"unknown label {lab!r} (expected {', '.join(spelled)})")
        out.append({"id": f"{prefix}{lineno}", "text": text, "text_pair": text_pair, "label": name})
    return out


def _pair_code(path: Path) -> str:
    # WikiMatrix.en-es.tsv.gz -> "en-es"
    name = path.name
    for suffix in (".gz", ".tsv"):
        name = name.removesuffix(suffix)
    return name.split(".", 1)[1] if "." in name else name


def iter_wikimatrix(path: str | Path) -> Iterator[tuple[int, float, str, str]]:
    """Stream a WikiMatrix TSV(.gz): ``(line number, margin score, en, xx)`` for every row,
    in file order (constant memory: en-es alone is 3.4M rows)."""
    path = Path(path)
    for lineno, line in iter_lines(path):
        cols = line.split("\t")
        if len(cols) != 3:
            raise DataFormatError(path, lineno, f"expected 3 tab-separated columns (score, en, xx), got {len(cols)}")
        try:
            score = float(cols[0])
        except ValueError:
            raise DataFormatError(path, lineno, f"margin score {cols[0]!r} is not a number") from None
        if score != score:
            raise DataFormatError(path, lineno, "margin score is NaN")
        yield lineno, score, cols[1], cols[2]


def wikimatrix_id(path: str | Path, lineno: int) -> str:
    """``<pair>-<line number>``: the id of a WikiMatrix row, which indexes its gold-alignment line."""
    return f"{_pair_code(Path(path))}-{lineno}"


def read_wikimatrix(
    path: str | Path,
    *,
    threshold: float = WIKIMATRIX_THRESHOLD,
    max_pairs: int | None = None,
    id_prefix: str | None = None,
) -> list[dict]:
    """Read a WikiMatrix TSV(.gz); keep rows with score >= threshold (at most `max_pairs`).
    The id is ``<pair>-<line number>`` so that it indexes the matching gold-alignment line."""
    path = Path(path)
    prefix = f"{_pair_code(path)}-" if id_prefix is None else id_prefix
    out = []
    for lineno, score, en, xx in iter_wikimatrix(path):
        if score < threshold:
            continue
        out.append({"id": f"{prefix}{lineno}", "src": tokenize(en), "tgt": tokenize(xx)})
        if max_pairs is not None and len(out) >= max_pairs:
            break
    return out


def write_wikimatrix(path: str | Path, rows: Iterable[tuple[float, str, str]]) -> int:
    """Write ``(score, en, xx)`` rows as gzip'd TSV (byte-deterministic: no name, mtime 0)."""
    n = 0
    with atomic_path(path) as tmp, open(tmp, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
            for score, en, xx in rows:
                for s in (en, xx):
                    if "\t" in s or "\n" in s:
                        raise ValueError(f"sentence contains a tab or newline: {s!r}")
                gz.write(f"{score:.8f}\t{en}\t{xx}\n".encode())
                n += 1
    return n


_LINK = re.compile(r"([0-9]+)([-p])([0-9]+)")


def _parse_links(line: str, path: str | Path, lineno: int, kinds: str) -> list[tuple[int, int, str]]:
    """(src, tgt, kind) of each link of one Pharaoh line; `kinds`: the separators allowed
    ("-" a sure link, "p" a possible one)."""
    links = []
    for item in line.split():
        m = _LINK.fullmatch(item)
        if m is None or m[2] not in kinds:
            expected = " or ".join(f"i{k}j" for k in kinds)
            raise DataFormatError(path, lineno, f"bad alignment link {item!r} (expected {expected})")
        links.append((int(m[1]), int(m[3]), m[2]))
    return links


def parse_pharaoh(line: str, path: str | Path, lineno: int) -> list[tuple[int, int]]:
    """The (src, tgt) links of one Pharaoh line (``i-j`` pairs, 0-based): an aligner's output."""
    return [(a, b) for a, b, _ in _parse_links(line, path, lineno, "-")]


def iter_pharaoh(path: str | Path) -> Iterator[list[tuple[int, int]]]:
    """Stream a Pharaoh file: one list of (src, tgt) links per line."""
    for lineno, line in iter_lines(path):
        yield parse_pharaoh(line, path, lineno)


def write_tsv(path: str | Path, rows: Iterable[Iterable[str]], header: Iterable[str] | None = None) -> int:
    """Write tab-separated rows (an optional header line first) as UTF-8; return the number of
    data rows. A field holding a tab or newline is refused: these files are not quoted."""
    n = 0
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for k, row in enumerate(([list(header)] if header is not None else []) + [list(r) for r in rows]):
            for field in row:
                if "\t" in field or "\n" in field:
                    raise ValueError(f"field contains a tab or newline: {field!r}")
            f.write("\t".join(row) + "\n")
            n += k > 0 or header is None
    return n


def read_pharaoh(path: str | Path) -> list[list[tuple[int, int]]]:
    """One list of (src, tgt) links per line."""
    return list(iter_pharaoh(path))


def read_gold_pharaoh(path: str | Path) -> list[tuple[set[tuple[int, int]], set[tuple[int, int]]]]:
    """Gold links, one (sure, possible) pair of sets per line: ``i-j`` is a sure link, ``ipj`` a
    possible one (Och & Ney 2003; the format of the Hansards and Europarl gold sets). Every sure
    link is possible too (S ⊆ P)."""
    out = []
    for lineno, line in iter_lines(path):
        links = _parse_links(line, path, lineno, "-p")
        sure = {(a, b) for a, b, kind in links if kind == "-"}
        out.append((sure, sure | {(a, b) for a, b, _ in links}))
    return out


def write_pharaoh(path: str | Path, alignments: Iterable[Iterable[tuple[int, int]]]) -> int:
    n = 0
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for links in alignments:
            f.write(" ".join(f"{i}-{j}" for i, j in links) + "\n")
            n += 1
    return n
