"""Data sets made of two languages' records of one split (named sets of `data.<task>.sets`,
built by `xlt.stages.prepare` from the records of the set's language and of a partner language):

- `mix_pairs` (`mix: {with: en, seed: N}`, XNLI): the adjust paper's mixed-language XNLI
  (its Section 4.2). XNLI's test sets are parallel: the k-th pair of every language's file
  is the translation of the k-th English pair (the Hub's parquet keeps the order of
  `xnli.test.tsv`, where each pairID appears once per language); the normalised ids end in
  that row number. In each target pair, premise or hypothesis (one side, drawn with the seed)
  is replaced by the English original of the same row.
- `attach_source` (`translated: {source: en, test: <file>}`, XNLI / PAWS-X translate-test):
  each record of a language's split with its machine translation into the source language,
  read from another file of the same rows (XTREME's `test-<xx>-en-translated.tsv` translates
  the `xx` test set pair by pair, in order, as XNLI-MT's `xnli.test.<xx>.tsv` does), under
  `"source": {"text", "text_pair"}`.
- `self_source` (the source language's split of a `translated` set): each record its own
  source, as X-Mixup's authors pair English with itself (en -> en training pairs; English test
  records mixed with themselves at inference).
- `cross_qa` (`cross: {question: en}` or `cross: {context: en}`, QA): cross-lingual QA pairs
  from two parallel QA files (XQuAD: the same question ids in every language): the question of
  one language with the paragraph and answers of the other, joined on the question id.
"""

from __future__ import annotations

import random
from pathlib import Path

from xlt.errors import XltError

SIDES = ("premise", "hypothesis")  # XNLI's names of a record's `text` and `text_pair`
FIELD = {"premise": "text", "hypothesis": "text_pair"}


def row_number(rid: str) -> str:
    """The row number a normalised id ends in (`es-test-41` -> `41`)."""
    return str(rid).rsplit("-", 1)[-1]


def mix_pairs(target: list[dict], english: list[dict], *, lang: str, seed: int, partner: str = "en",
              target_file: str | Path = "?", english_file: str | Path = "?") -> list[dict]:
    """Each target pair with one side (premise or hypothesis, drawn from `seed` and `lang`)
    replaced by the same side of the parallel `english` pair; the label stays. Each record
    carries `mixed: {seed, replaced, with, source_id}`. Raises XltError naming the file when the
    two are not parallel: another count, another row number or another label in a row."""
    if len(target) != len(english):
        raise XltError(f"{target_file}: {len(target)} pairs, not parallel to {english_file} ({len(english)} pairs); "
                       f"a mixed-language set needs the same examples in the same order")
    rng = random.Random(f"mix:{seed}:{lang}:{partner}")  # str seeds are hashed stably (sha512)
    out = []
    for k, (t, e) in enumerate(zip(target, english, strict=True)):
        if row_number(t["id"]) != row_number(e["id"]) or t["label"] != e["label"]:
            raise XltError(f"{target_file}: pair {k} (id {t['id']!r}, label {t['label']!r}) is not parallel to "
                           f"{english_file} (id {e['id']!r}, label {e['label']!r})")
        side = SIDES[rng.random() < 0.5]
        out.append({**t, FIELD[side]: e[FIELD[side]],
                    "mixed": {"seed": seed, "replaced": side, "with": partner, "source_id": e["id"]}})
    return out


def attach_source(target: list[dict], translated: list[dict], *, target_file: str | Path = "?",
                  translated_file: str | Path = "?") -> list[dict]:
    """Each `target` record with `"source": {"text", "text_pair"}` = the pair of the same row of
    `translated` (its translation into the source language). Raises XltError naming both files
    when the two are not parallel: another count, or another label in a row."""
    if len(target) != len(translated):
        raise XltError(f"{translated_file}: {len(translated)} pairs, not parallel to {target_file} ({len(target)} pairs); "
                       f"a translate-test set needs one translation per pair, in the same order")
    out = []
    for k, (t, s) in enumerate(zip(target, translated, strict=True)):
        if t["label"] != s["label"]:
            raise XltError(f"{translated_file}: row {k} (id {s['id']!r}, label {s['label']!r}) is not the translation "
                           f"of {target_file} row {k} (id {t['id']!r}, label {t['label']!r})")
        out.append({**t, "source": {"text": s["text"], "text_pair": s["text_pair"]}})
    return out


SELF_SOURCE_FIELDS = {"qa": ("question", "context", "answers")}  # else a pair's ("text", "text_pair")


def self_source(task: str, records: list[dict]) -> list[dict]:
    """Each record with `"source"`: its own input fields (and a QA record's answers: the source
    side's own span), so that a paired recipe mixes it with itself."""
    fields = SELF_SOURCE_FIELDS.get(task, ("text", "text_pair"))
    return [{**r, "source": {f: r[f] for f in fields}} for r in records]


UNMATCHED = ("drop", "keep", "self")  # what attach_source_by_id does with a target id the source lacks


def attach_source_by_id(target: list[dict], source: list[dict], fields: tuple[str, ...], *, stats: dict | None = None,
                        unmatched: str = "drop", target_file: str | Path = "?",
                        source_file: str | Path = "?") -> list[dict]:
    """Each `target` record whose id `source` holds, with `"source"`: that record's `fields`
    (QA: a translated SQuAD question and its English original share the question id). Target
    ids the source lacks are counted in `stats["unmatched"]` and, by `unmatched`, left out
    (``drop``), kept as they are (``keep``: a test set) or paired with their own `fields`
    (``self``: the xmixup authors' code pairs a translated question it finds no English
    original for with itself). No id in common raises, except with ``self``."""
    if unmatched not in UNMATCHED:
        raise ValueError(f"unmatched={unmatched!r}; allowed: {', '.join(UNMATCHED)}")
    by_id = {r["id"]: r for r in source}
    matched = sum(t["id"] in by_id for t in target)
    if not matched and unmatched != "self":  # e.g. a translation whose ids are not its original's: say what each side holds
        first = {side: repr(records[0]["id"]) if records else "none" for side, records in (("t", target), ("s", source))}
        raise XltError(f"{target_file} ({len(target)} records, first id {first['t']}) and {source_file} ({len(source)} "
                       f"records, first id {first['s']}): no id in common; a translated set is joined to its original "
                       "by question id")
    if stats is not None:
        stats["unmatched"] = stats.get("unmatched", 0) + len(target) - matched
    out = []
    for t in target:
        partner = by_id.get(t["id"], t if unmatched == "self" else None)
        if partner is not None:
            out.append({**t, "source": {f: partner[f] for f in fields}})
        elif unmatched == "keep":
            out.append(t)
    return out


def cross_qa(questions: list[dict], contexts: list[dict], *, stats: dict | None = None,
             question_file: str | Path = "?", context_file: str | Path = "?") -> list[dict]:
    """Records with the question of `questions` and the context and answers of `contexts`, for
    every question id both hold (in the order of `contexts`). Ids only one side holds are
    counted in `stats["unmatched"]` (the world drops a question whose answer a contraction hides
    in one language; the real XQuAD holds every id in every language). None in common raises."""
    asked = {r["id"]: r["question"] for r in questions}
    out = [{**c, "question": asked[c["id"]]} for c in contexts if c["id"] in asked]
    if not out:
        raise XltError(f"{question_file} and {context_file}: no question id in common; "
                       "a cross-lingual QA set needs parallel files (the same question ids)")
    if stats is not None:
        stats["unmatched"] = stats.get("unmatched", 0) + len(questions) + len(contexts) - 2 * len(out)
    return out
