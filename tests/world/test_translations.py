"""Translations, MultiNLI / XNLI-MT, MLQA and TyDiQA files of the world, read back by the
real readers (xlt.formats through xlt.stages.prepare) and checked against what they must hold."""

import random
from pathlib import Path

import pytest

from xlt.formats import read_squad, read_squad_parquet, read_tydiqa, read_xnli_mt, read_xtreme_translate_test, read_xtreme_translated
from xlt.stages.prepare import prepare_split
from xlt.world.translations import gold_path, machine

TT = "xtreme_translations/{task}/translate-train/en-{lang}-translated.tsv"


def test_machine_noise_drops_and_swaps_words_only():
    text = "Vo duulo wio ulo bul vo imuk."
    assert machine(text, random.Random(1), 0.0, 0.0) == text
    rng = random.Random(3)
    outs = [machine(text, rng, 0.3, 0.3) for _ in range(50)]
    assert all(o.endswith(".") and set(o[:-1].split()) <= set(text[:-1].split()) for o in outs)
    assert any(len(o.split()) < len(text.split()) for o in outs)  # drops
    assert any(o.split() != [w for w in text.split() if w in o.split()] for o in outs)  # swaps
    assert all(len(o.split()) >= 2 for o in outs)


def test_every_override_file_reads_back(tiny_world):
    world, raw, _ = tiny_world
    sources = {k[3] for k in world.keys() if len(k) == 4}
    for expected in ("mnli/train-00000-of-00001.parquet", "xnli-mt/multinli/multinli.train.de.tsv",
                     "xnli-mt/xnli/xnli.test.hi.tsv", TT.format(task="XNLI", lang="zh"),
                     TT.format(task="PAWSX", lang="fr"),
                     "xtreme_translations/SQuAD/translate-train/squad.translate.train.en-ru.json",
                     "xtreme_translations/XQuAD/translate-test/xquad.translate.test.vi-en.json",
                     "mlqa/hi/test-00000-of-00001.parquet", "mlqa-v1/dev/dev-context-en-question-zh.json",
                     "tydiqa/validation-00000-of-00001.parquet", "tydiqa/train-00000-of-00001.parquet",
                     "xtreme_translations/TyDiQA-GoldP/translate-train/tydiqa.translate.train.en-ar.json",
                     "xtreme_translations/XNLI/translate-test/test-hi-en-translated.tsv",
                     "xtreme_translations/PAWSX/translate-test/test-fr-en-translated.tsv"):  # fmt: skip
        assert expected in sources and (raw / expected).is_file(), expected
        if expected.startswith(("xtreme_translations/", "xnli-mt/")):  # machine copy + exact twin
            assert gold_path(expected) in sources and (raw / gold_path(expected)).is_file(), expected
    assert gold_path(TT.format(task="XNLI", lang="zh")) in sources
    assert "xnli-mt/multinli/multinli.train.en.tsv" not in sources


def test_translate_train_pairs_english_with_the_target_set(tiny_world):
    """XTREME TSV: columns 1-2 are the English train pair, 3-4 its translation; the gold copy
    holds the world's own target-language train set, the machine copy a noisy version of it."""
    world, raw, _ = tiny_world
    en = world.records("xnli", "en", "train")
    de = world.records("xnli", "de", "train")
    gold = read_xtreme_translated(raw / gold_path(TT.format(task="XNLI", lang="de")), "xnli")
    noisy = read_xtreme_translated(raw / TT.format(task="XNLI", lang="de"), "xnli")
    lines = (raw / TT.format(task="XNLI", lang="de")).read_text(encoding="utf-8").splitlines()
    assert [ln.split("\t")[:2] for ln in lines] == [[r["text"], r["text_pair"]] for r in en]
    assert {ln.split("\t")[4] for ln in lines} == {"entailment", "neutral", "contradictory"}
    assert [(r["text"], r["text_pair"], r["label"]) for r in gold] == [(r["text"], r["text_pair"], r["label"]) for r in de]
    assert [r["label"] for r in noisy] == [r["label"] for r in de]
    changed = sum(n["text"] != g["text"] for n, g in zip(noisy, gold, strict=True)) / len(gold)
    assert 0.3 < changed < 0.95  # drop 0.1 and swap 0.1 per word touch most, not all, sentences
    pawsx = read_xtreme_translated(raw / gold_path(TT.format(task="PAWSX", lang="es")), "pawsx")
    assert [r["text"] for r in pawsx] == [r["text"] for r in world.records("pawsx", "es", "train")]


def test_translate_test_tsvs_hold_the_test_pair_and_its_english_translation(tiny_world):
    """XTREME translate-test TSV (XNLI / PAWS-X), XTREME's 5-column layout: columns 1-2 the
    language's test pair as written, 3-4 its English translation, 5 the label; XNLI's English
    side is XNLI-MT's translation of the same rows, word for word (one noise stream)."""
    world, raw, _ = tiny_world
    tt = "xtreme_translations/{task}/translate-test/test-{lang}-en-translated.tsv"
    for task, folder, lang in (("xnli", "XNLI", "ru"), ("pawsx", "PAWSX", "es")):
        own = world.records(task, lang, "test")
        for path in (tt.format(task=folder, lang=lang), gold_path(tt.format(task=folder, lang=lang))):
            rows = [ln.split("\t") for ln in (raw / path).read_text(encoding="utf-8").splitlines()]
            assert len(rows) == len(own) and {len(r) for r in rows} == {5}
            assert [r[4] for r in rows] == [("contradictory" if task == "xnli" and o["label"] == "contradiction" else o["label"])
                                            for o in own]  # fmt: skip
            prefix = f"{lang}-test-{Path(path).stem}-"  # as prepare names a file read through an override
            assert read_xtreme_translate_test(raw / path, task, id_prefix=prefix) == world.records(task, lang, "test", path)
        en = world.records(task, "en", "test")
        gold = read_xtreme_translate_test(raw / gold_path(tt.format(task=folder, lang=lang)), task)
        assert [(r["text"], r["text_pair"]) for r in gold] == [(r["text"], r["text_pair"]) for r in en]
    xnli = world.records("xnli", "ru", "test", tt.format(task="XNLI", lang="ru"))
    mt = world.records("xnli", "ru", "test", "xnli-mt/xnli/xnli.test.ru.tsv")
    assert [(r["text"], r["text_pair"], r["label"]) for r in xnli] == [(r["text"], r["text_pair"], r["label"]) for r in mt]


def test_multinli_and_xnli_mt(tiny_world):
    world, raw, _ = tiny_world
    mnli = prepare_split("xnli", "en", "train", raw, {"xnli": {"train_source": {"en": "mnli/train-00000-of-00001.parquet"}}})
    assert [(r["text"], r["label"]) for r in mnli] == [(r["text"], r["label"]) for r in world.records("xnli", "en", "train")]
    mt = read_xnli_mt(raw / "xnli-mt/_gold/xnli/xnli.test.ru.tsv")  # ru test, translated into English
    en_test = world.records("xnli", "en", "test")
    assert [(r["text"], r["label"]) for r in mt] == [(r["text"], r["label"]) for r in en_test]
    assert [r["label"] for r in world.records("xnli", "ru", "test")] == [r["label"] for r in mt]
    assert len(read_xnli_mt(raw / "xnli-mt/multinli/multinli.train.vi.tsv")) == len(en_test) * 4  # 600 vs 150


def test_qa_translations_keep_answers_in_context(tiny_world):
    world, raw, _ = tiny_world
    tt = read_squad(raw / "xtreme_translations/SQuAD/translate-train/squad.translate.train.en-hi.json")
    en_ids = {r["id"] for r in world.records("qa", "en", "train")}
    assert {r["id"] for r in tt} <= en_ids and len(tt) > 0.9 * len(en_ids)  # reader checked every span
    test = read_squad(raw / "xtreme_translations/_gold/XQuAD/translate-test/xquad.translate.test.de-en.json")
    assert [r["id"] for r in test] == [r["id"] for r in world.records("qa", "de", "test")]
    assert [r["context"] for r in test] == [r["context"] for r in world.records("qa", "en", "test")]


def test_mlqa_is_parallel_and_cross_lingual(tiny_world):
    _world, raw, _ = tiny_world
    hi = read_squad_parquet(raw / "mlqa/hi/validation-00000-of-00001.parquet")
    en = read_squad_parquet(raw / "mlqa/en/validation-00000-of-00001.parquet")
    assert [r["id"] for r in hi] == [r["id"] for r in en] and hi[0]["context"] != en[0]["context"]
    cross = read_squad(raw / "mlqa-v1/dev/dev-context-hi-question-en.json")
    assert [r["context"] for r in cross] == [r["context"] for r in hi]  # Hindi contexts ...
    assert [r["answers"] for r in cross] == [r["answers"] for r in hi]
    assert [r["question"] for r in cross][:20] != [r["question"] for r in hi][:20]  # ... English questions
    assert not (raw / "mlqa/ru").exists()  # MLQA has no Russian


def test_tydiqa_language_is_in_the_id_prefix(tiny_world):
    world, raw, _ = tiny_world
    path = raw / "tydiqa/validation-00000-of-00001.parquet"
    allrows = read_squad_parquet(path)
    assert {r["id"].split("-")[0] for r in allrows} == {"english", "arabic", "russian"}
    ru = read_tydiqa(path, "ru")
    assert ru and all(r["id"].startswith("russian-") for r in ru)
    assert ru == prepare_split("qa", "ru", "test", raw, world.source_cfg(("qa", "ru", "test", "tydiqa/validation-00000-of-00001.parquet")))


def test_tagging_translate_train_keeps_the_english_meaning(tiny_world):
    """UD / WikiANN translate-train: the English train sentences in another language, with exact
    tags: the same entities (names are shared) and the same content words in each sentence."""
    world, raw, _ = tiny_world
    ner_path = "translate-train/wikiann/en-ru.parquet"
    ru = prepare_split("ner", "ru", "train", raw, {"ner": {"train_source": {"ru": ner_path}}})
    en = world.records("ner", "en", "train")
    assert len(ru) == len(en)

    def entities(r):
        return sorted(t[2:] for t in r["tags"] if t.startswith("B-"))

    assert all(entities(a) == entities(b) for a, b in zip(en, ru, strict=True))
    assert [r["tokens"] for r in ru] != [r["tokens"] for r in world.records("ner", "ru", "train")]
    ud_path = "translate-train/ud/en-hi.conllu"
    hi = prepare_split("pos", "hi", "train", raw, {"pos": {"train_source": {"hi": ud_path}}})
    en = world.records("pos", "en", "train")

    def content(r):
        return sorted(u for u in r["upos"] if u in ("NOUN", "VERB", "PROPN", "NUM"))

    assert all(content(a) == content(b) for a, b in zip(en, hi, strict=True))
    assert hi == prepare_split("parsing", "hi", "train", raw, {"parsing": {"train_source": {"hi": ud_path}}})


def test_noise_free_machine_translations_equal_the_gold_ones(tmp_path):
    from xlt.errors import XltError
    from xlt.world import World
    from xlt.world.schema import default_config

    sizes = {"train": 30, "dev": 8, "test": 8}
    exact = World(default_config(seed=3, sizes=sizes, tasks=["xnli"], translations={"drop": 0, "swap": 0}))
    exact.write(tmp_path)
    path = TT.format(task="XNLI", lang="ar")
    assert (tmp_path / path).read_bytes() == (tmp_path / gold_path(path)).read_bytes()
    noisy = World(default_config(seed=3, sizes=sizes, tasks=["xnli"]))
    assert noisy.records("xnli", "ar", "train", path) != exact.records("xnli", "ar", "train", path)
    with pytest.raises(XltError, match=r"world\.translations\.drop"):
        World(default_config(seed=3, translations={"drop": 1.5}))
    with pytest.raises(XltError, match=r"world\.translations\.shuffle: unknown key"):
        World(default_config(seed=3, translations={"shuffle": 0.1}))
