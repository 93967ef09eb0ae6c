"""Translations and second packagings of the world's datasets, in the real files' forms.

The world knows every sentence's latent clause, so it can write *exact* translations: the same
clause realised in another language. Real translate-train / translate-test data is machine
translated, so the files at the real paths are "machine" copies with the noise of
`world.translations` (words dropped, neighbouring words swapped); the exact copies sit beside
them under `xtreme_translations/_gold/` and `xnli-mt/_gold/`, so gold and noisy translations
can be compared through the same readers. What each file holds (docs/world.md):

- MultiNLI (`mnli/train-...parquet`): the English XNLI train set with MultiNLI's columns.
- XNLI-MT (`xnli-mt/multinli/multinli.train.<xx>.tsv`): English train translated into xx;
  (`xnli-mt/xnli/xnli.{dev,test}.<xx>.tsv`): xx dev / test translated into English.
- XTREME translate-train: XNLI / PAWS-X `en-<xx>-translated.tsv` (English pair, translated
  pair, label), SQuAD `squad.translate.train.en-<xx>.json`; translate-test: XNLI / PAWS-X
  `test-<xx>-en-translated.tsv` (xx test pair, its English translation, label: XTREME's
  5-column layout; XNLI's English side is the very sentences of XNLI-MT's `xnli.test.<xx>.tsv`,
  one noise stream for both), XQuAD `xquad.translate.test.<xx>-en.json`. In QA only the question is made noisy: the context
  stays exact so that every answer is still a span of it.

Every file's normalised records are keyed ``(task, lang, split, source)``: `source` is the
``<split>_source`` override under which `xlt.stages.prepare` reads that file for `lang`.
"""

from __future__ import annotations

import random
from pathlib import Path

from xlt.formats.hub_parquet import write_parquet
from xlt.formats.squad_json import write_squad
from xlt.formats.tsv import write_tsv
from xlt.registry import get_task
from xlt.world.lexicon import rng_for

GOLD = "_gold"  # folder of the exact translations, inside the source's own folder
XNLI_MT_LABELS = ("entailment", "neutral", "contradictory")  # XNLI-MT's spelling of label ids 0-2


def machine(text: str, rng: random.Random, drop: float, swap: float) -> str:
    """A noisy "machine translation" of one sentence: each word dropped with probability
    `drop` (at least two words stay), neighbouring words swapped with probability `swap`.
    Sentence-final punctuation stays last."""
    words = text.split(" ")
    end = ""
    if words[-1][-1:] in ".?!" and len(words[-1]) > 1:
        words[-1], end = words[-1][:-1], words[-1][-1]
    kept = [w for w in words if rng.random() >= drop]
    if len(kept) < 2:
        kept = words
    i = 0
    while i + 1 < len(kept):
        if rng.random() < swap:
            kept[i], kept[i + 1] = kept[i + 1], kept[i]
            i += 1
        i += 1
    return " ".join(kept) + end


def gold_path(path: str) -> str:
    """`xtreme_translations/XNLI/...` -> `xtreme_translations/_gold/XNLI/...`."""
    top, rest = path.split("/", 1)
    return f"{top}/{GOLD}/{rest}"


class Noise:
    """The machine-translation noise of one file, on its own random stream."""

    def __init__(self, world, *parts):
        cfg = world.cfg["translations"]
        self.rng, self.drop, self.swap = rng_for(world, "mt", *parts), cfg["drop"], cfg["swap"]

    def __call__(self, text: str) -> str:
        return machine(text, self.rng, self.drop, self.swap)


def _pair_tsv(world, unit, task: str, lang: str, path: str, rows, labels) -> list:
    """An XTREME translate-train TSV (and its gold twin): rows of (English pair, translated pair,
    label id). `labels` spells the label ids as the file does; records use the registry's names."""
    names = get_task(task).labels
    noise = Noise(world, task, "translate-train", lang)
    units = []
    for where, mt in ((path, noise), (gold_path(path), None)):
        lines, recs = [], []
        prefix = f"{lang}-train-{Path(where).stem}-"
        for k, ((e1, e2), (t1, t2), lab) in enumerate(rows, 1):
            t1, t2 = (mt(t1), mt(t2)) if mt else (t1, t2)
            lines.append((e1, e2, t1, t2, labels[lab]))
            recs.append({"id": f"{prefix}{k}", "text": t1, "text_pair": t2, "label": names[lab]})
        units.append(unit(where, lambda p, r=lines: write_tsv(p, r), {(task, lang, "train", where): recs}))
    return units


def _translate_test_tsv(unit, task: str, lang: str, path: str, own, english, label_ids, labels) -> object:
    """An XTREME translate-test TSV: rows of (the language's test pair, its English translation,
    label id spelled as `labels`), no header; its records are the English pairs (line numbers from 1)."""
    names = get_task(task).labels
    prefix = f"{lang}-test-{Path(path).stem}-"
    rows = [(o1, o2, e1, e2, labels[lab]) for (o1, o2), (e1, e2), lab in zip(own, english, label_ids, strict=True)]
    recs = [{"id": f"{prefix}{k}", "text": e1, "text_pair": e2, "label": names[lab]}
            for k, ((e1, e2), lab) in enumerate(zip(english, label_ids, strict=True), 1)]  # fmt: skip
    return unit(path, lambda p, r=rows: write_tsv(p, r), {(task, lang, "test", path): recs})


def xnli_files(world, unit, split: str, texts: dict[str, list[tuple[str, str]]], label_ids: list[int]) -> list:
    """MultiNLI, XNLI-MT (translate-train and translate-test), XTREME's XNLI translate-train and
    translate-test, from one split of the world's parallel XNLI (`texts[lang]` = [(premise,
    hypothesis)] as written)."""
    names = get_task("xnli").labels
    if "en" not in texts:
        return []
    units = []
    en = texts["en"]
    if split == "train":
        path = "mnli/train-00000-of-00001.parquet"
        cols = {"promptID": [], "pairID": [], "premise": [], "hypothesis": [], "genre": [], "label": []}
        for k, ((p, h), lab) in enumerate(zip(en, label_ids, strict=True)):
            for col, v in zip(cols, (k // 3, f"{k // 3}{'enc'[k % 3]}", p, h, "fiction", lab), strict=True):
                cols[col].append(v)
        prefix = f"en-train-{Path(path).stem}-"
        recs = [{"id": f"{prefix}{k}", "text": p, "text_pair": h, "label": names[lab]}
                for k, ((p, h), lab) in enumerate(zip(en, label_ids, strict=True))]  # fmt: skip
        units.append(unit(path, lambda p, c=cols: write_parquet(p, "mnli", c), {("xnli", "en", "train", path): recs}))
    for lang, pairs in texts.items():
        if lang == "en":
            continue
        if split == "train":
            rows = list(zip(en, pairs, label_ids, strict=True))
            units += _pair_tsv(world, unit, "xnli", lang, f"xtreme_translations/XNLI/translate-train/en-{lang}-translated.tsv",
                               rows, XNLI_MT_LABELS)  # fmt: skip
            path, source = f"xnli-mt/multinli/multinli.train.{lang}.tsv", pairs  # English into xx
        else:
            path, source = f"xnli-mt/xnli/xnli.{split}.{lang}.tsv", en  # xx into English
        xtreme = f"xtreme_translations/XNLI/translate-test/test-{lang}-en-translated.tsv"
        for where, mt in ((path, Noise(world, "xnli-mt", split, lang)), (gold_path(path), None)):
            prefix = f"{lang}-{split}-{Path(where).stem}-"
            lines, recs, out = [], [], []
            for k, ((p, h), lab) in enumerate(zip(source, label_ids, strict=True), 2):  # line 1: header
                p, h = (mt(p), mt(h)) if mt else (p, h)
                out.append((p, h))
                lines.append((p, h, XNLI_MT_LABELS[lab]))
                recs.append({"id": f"{prefix}{k}", "text": p, "text_pair": h, "label": names[lab]})
            units.append(unit(where, lambda p, r=lines: write_tsv(p, r, header=("premise", "hypo", "label")),
                              {("xnli", lang, split, where): recs}))  # fmt: skip
            if split == "test":  # XTREME's translate-test: the same English sentences, in its layout
                units.append(_translate_test_tsv(unit, "xnli", lang, xtreme if mt else gold_path(xtreme), pairs, out,
                                                 label_ids, XNLI_MT_LABELS))  # fmt: skip
    return units


def pawsx_files(world, unit, split: str, texts: dict[str, list[tuple[str, str]]], label_ids: list[int]) -> list:
    """XTREME's PAWS-X translate-train TSV from the world's parallel PAWS-X train set, and its
    translate-test TSV from the test set (`texts[lang]` = [(sentence1, sentence2)] as written)."""
    if split not in ("train", "test") or "en" not in texts:
        return []
    units = []
    for lang, pairs in texts.items():
        if lang == "en":
            continue
        if split == "train":
            rows = list(zip(texts["en"], pairs, label_ids, strict=True))
            units += _pair_tsv(world, unit, "pawsx", lang, f"xtreme_translations/PAWSX/translate-train/en-{lang}-translated.tsv",
                               rows, ("0", "1"))  # fmt: skip
            continue
        path = f"xtreme_translations/PAWSX/translate-test/test-{lang}-en-translated.tsv"
        noise = Noise(world, "pawsx", "translate-test", lang)
        for where, mt in ((path, noise), (gold_path(path), None)):
            english = [(mt(a), mt(b)) if mt else (a, b) for a, b in texts["en"]]
            units.append(_translate_test_tsv(unit, "pawsx", lang, where, pairs, english, label_ids, ("0", "1")))
    return units


def squad_file(unit, path: str, lang: str, split: str, articles: list[dict], noise=None) -> object:
    """A SQuAD JSON file; `noise` (if given) rewrites every question (contexts stay exact)."""
    if noise is not None:
        articles = [{**a, "paragraphs": [{**p, "qas": [{**q, "question": noise(q["question"])} for q in p["qas"]]}
                                         for p in a["paragraphs"]]} for a in articles]  # fmt: skip
    recs = [{"id": q["id"], "context": p["context"], "question": q["question"],
             "answers": {"text": [a["text"] for a in q["answers"]], "answer_start": [a["answer_start"] for a in q["answers"]]}}
            for a in articles for p in a["paragraphs"] for q in p["qas"]]  # fmt: skip
    return unit(path, lambda p, a=articles: write_squad(p, a), {("qa", lang, split, path): recs})
