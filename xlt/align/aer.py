"""Alignment quality against gold links: precision, recall and alignment error rate (AER).

Och & Ney (2003): with A the predicted links, S the gold's sure links and P its possible ones
(S ⊆ P; gold in Pharaoh format, ``i-j`` sure and ``ipj`` possible),

    precision = |A∩P| / |A|,   recall = |A∩S| / |S|,   AER = 1 - (|A∩S| + |A∩P|) / (|A| + |S|).

The tiny world's gold links (``wikimatrix/gold-alignments/en-<xx>.pharaoh``, one line per
WikiMatrix row) are all sure (S = P), where AER becomes ``1 - 2|A∩S| / (|A| + |S|)``, i.e. 1 - F1.
Counts are pooled over all sentence pairs (micro average), as AER is usually reported. A ratio
of 0/0 (no link predicted, or none in the gold) is undefined: None in the JSON, "n/a" in the
table — never 0.0, which would read as a perfect AER.

Each stage of the links is scored: forward, reverse, intersection (directional backends) or
the backend's symmetrisation (systran-align), and the final 1-to-1 links. The 1-to-1 filter
trades recall for precision by design: the gold links many-to-many where the world's words do.
"""

from __future__ import annotations

from pathlib import Path

from xlt.align.links import Link, one_to_one
from xlt.align.pool import iter_pool
from xlt.align.stage import iter_raw, symmetrise
from xlt.errors import DataFormatError
from xlt.formats.tsv import read_gold_pharaoh
from xlt.align.stage import raw_files
from xlt.io import read_json, sha256_file, write_json

STAGES = ("forward", "reverse", "intersection", "symmetrised", "one_to_one")


def ratio(num: int, den: int) -> float | None:
    """num / den, None where 0/0 leaves it undefined."""
    return num / den if den else None


class Score:
    """Link counts pooled over sentence pairs: |A|, |S|, |A∩S|, |A∩P|."""

    def __init__(self):
        self.predicted = self.gold = self.matched_sure = self.matched_possible = 0

    def add(self, predicted: list[Link], sure: set[Link], possible: set[Link] | None = None) -> None:
        """One sentence pair: its predicted links, the gold's sure links and its possible ones
        (a superset of `sure`; None: all gold links are sure)."""
        a, s = set(predicted), set(sure)
        p = s if possible is None else set(possible) | s
        self.predicted += len(a)
        self.gold += len(s)
        self.matched_sure += len(a & s)
        self.matched_possible += len(a & p)

    def as_dict(self) -> dict:
        aer = ratio(self.matched_sure + self.matched_possible, self.predicted + self.gold)
        return {"precision": ratio(self.matched_possible, self.predicted),
                "recall": ratio(self.matched_sure, self.gold), "aer": None if aer is None else 1 - aer,
                "links": self.predicted, "gold_links": self.gold}  # fmt: skip


def row_number(pair_id: str, pool: str | Path, lineno: int) -> int:
    """The WikiMatrix line of a pool pair (its id is ``en-xx-<line>``)."""
    tail = pair_id.rsplit("-", 1)[-1]
    if not tail.isdigit():
        raise DataFormatError(pool, lineno, f"pair id {pair_id!r} does not end in a WikiMatrix line number")
    return int(tail)


def score_alignment(pool: str | Path, raw: dict[str, Path], gold_path: str | Path) -> dict[str, dict]:
    """Score every stage of one backend's links on one pool against the gold file."""
    gold = read_gold_pharaoh(gold_path)
    scores: dict[str, Score] = {}
    for (lineno, pair_id, _src, _tgt), row in zip(iter_pool(pool), iter_raw(pool, raw), strict=True):
        line = row_number(pair_id, pool, lineno)
        if line > len(gold):
            raise DataFormatError(gold_path, None, f"has {len(gold)} lines; pool pair {pair_id} needs line {line}")
        stages = dict(row)
        sym = symmetrise(row)
        if "symmetrised" not in row:
            stages["intersection"] = sym
        stages["one_to_one"] = one_to_one(sym)
        for stage, links in stages.items():
            scores.setdefault(stage, Score()).add(links, *gold[line - 1])
    return {stage: scores[stage].as_dict() for stage in STAGES if stage in scores}


def aer_job(pair: str, pool: str | Path, raw_dir: str | Path, align_meta: str | Path, gold: str | Path,
            out: str | Path) -> dict:  # fmt: skip
    """Score one backend's alignment of one pair; write the scores with what they score."""

    meta = {"pair": pair, "backend": read_json(align_meta)["backend"],
            "stages": score_alignment(pool, raw_files(raw_dir), gold),
            "pool_sha256": sha256_file(pool), "gold_sha256": sha256_file(gold)}  # fmt: skip
    write_json(out, meta)
    return meta
