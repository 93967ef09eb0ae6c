"""xmixup's paired sets (xlt.stages.prepare `translated`): translate-train (XTREME's TSV, both sides in
one row) and translate-test (XNLI / PAWS-X test joined by row with XTREME's English translation)."""

import json
import shutil

import pytest

from tests.test_config import base
from xlt.dag import targets as T
from xlt.workflow.config import validate
from xlt.errors import DataFormatError, XltError
from xlt.stages.bilingual_sets import attach_source, self_source
from xlt.formats.tsv import read_xtreme_translate_test, read_xtreme_translated, write_tsv
from xlt.stages.prepare import prepare_split, prepare_task

WORLD_XNLI = ["en", "ar", "de", "es", "fr", "hi", "ru", "vi", "zh"]
WORLD_PAWSX = ["en", "de", "es", "fr", "zh"]


def world_cfg():
    cfg = base()
    cfg["language_sets"].update(xtreme_xnli=WORLD_XNLI, xtreme_pawsx=WORLD_PAWSX)  # as presets/tiny.yaml
    return cfg


def test_the_tsv_reader_keeps_both_sides_when_asked(tmp_path):
    path = tmp_path / "en-de-translated.tsv"
    write_tsv(path, [("en p1", "en h1", "de p1", "de h1", "contradictory"), ("en p2", "en h2", "de p2", "de h2", "neutral")])
    plain = read_xtreme_translated(path, "xnli")
    both = read_xtreme_translated(path, "xnli", keep_source=True)
    assert plain[0] == {"id": "en-de-translated-1", "text": "de p1", "text_pair": "de h1", "label": "contradiction"}
    assert both == [{**r, "source": {"text": f"en p{k}", "text_pair": f"en h{k}"}} for k, r in enumerate(plain, 1)]


def test_attach_source_joins_by_row_and_names_the_file_on_a_mismatch():
    de = [{"id": f"de-{k}", "text": f"de p{k}", "text_pair": f"de h{k}", "label": "ab"[k % 2]} for k in range(4)]
    en = [{"id": f"mt-{k}", "text": f"en p{k}", "text_pair": f"en h{k}", "label": "ab"[k % 2]} for k in range(4)]
    out = attach_source(de, en, target_file="de.parquet", translated_file="mt.tsv")
    assert [r["source"] for r in out] == [{"text": f"en p{k}", "text_pair": f"en h{k}"} for k in range(4)]
    assert [{k: v for k, v in r.items() if k != "source"} for r in out] == de
    with pytest.raises(XltError, match=r"mt\.tsv: 3 pairs, not parallel to de\.parquet \(4 pairs\)"):
        attach_source(de, en[:3], target_file="de.parquet", translated_file="mt.tsv")
    swapped = en[:2] + [en[3], en[2]]
    with pytest.raises(XltError, match=r"mt\.tsv: row 2 \(id 'mt-3', label 'b'\) is not the translation of de\.parquet row 2"):
        attach_source(de, swapped, target_file="de.parquet", translated_file="mt.tsv")


def test_translated_sets_of_config_yaml_from_the_world(tiny_world, tmp_path):
    world, raw, _ = tiny_world
    cfg = world_cfg()
    validate(cfg)
    got = {}
    for dataset in ("xnli.translate_train", "xnli.translate_test", "pawsx.translate_train", "pawsx.translate_test"):
        langs = T.task_languages(cfg, dataset)
        got[dataset] = prepare_task(T.task_of(dataset), langs, raw, T.source_cfg(cfg, dataset), tmp_path / dataset)
    train = got["xnli.translate_train"]
    assert train["counts"]["en"] == {"train": 600, "dev": 150}
    assert {lang: c for lang, c in train["counts"].items() if lang != "en"} == dict.fromkeys(WORLD_XNLI[1:], {"train": 600})
    assert train["absent"] == {lang: ["dev"] for lang in WORLD_XNLI[1:]}  # selection on English dev only
    assert "back-translation" in train["reader_stats"]["translated"]["note"]
    assert list(got["pawsx.translate_train"]["counts"]) == WORLD_PAWSX
    # translate-train: the translated pair on top, the English original of the same row in `source`
    de = prepare_split("xnli", "de", "train", raw, T.source_cfg(cfg, "xnli.translate_train"))
    path = "xtreme_translations/XNLI/translate-train/en-de-translated.tsv"
    assert [{k: v for k, v in r.items() if k != "source"} for r in de] == world.records("xnli", "de", "train", path)
    en = world.records("xnli", "en", "train", "mnli/train-00000-of-00001.parquet")
    assert [r["source"] for r in de] == [{"text": r["text"], "text_pair": r["text_pair"]} for r in en]
    # English: its own records, each its own source (X-Mixup mixes English with itself)
    assert prepare_split("xnli", "en", "train", raw, T.source_cfg(cfg, "xnli.translate_train")) == self_source("xnli", en)
    # translate-test: the language's own test pairs (ids, texts, labels), each with XTREME's English
    # translation of its row (the file's columns 3-4) as `source`; en is paired with itself
    for task, lang in (("xnli", "ru"), ("pawsx", "de")):
        test = prepare_split(task, lang, "test", raw, T.source_cfg(cfg, f"{task}.translate_test"))
        folder = {"xnli": "XNLI", "pawsx": "PAWSX"}[task]
        mt = world.records(task, lang, "test", f"xtreme_translations/{folder}/translate-test/test-{lang}-en-translated.tsv")
        own = world.records(task, lang, "test")
        assert [{k: v for k, v in r.items() if k != "source"} for r in test] == own
        assert [r["source"] for r in test] == [{"text": r["text"], "text_pair": r["text_pair"]} for r in mt]
        assert [r["label"] for r in mt] == [r["label"] for r in own]
        assert got[f"{task}.translate_test"]["counts"][lang] == {"test": len(own)} and len(own) == 150
        en = prepare_split(task, "en", "test", raw, T.source_cfg(cfg, f"{task}.translate_test"))
        assert en == self_source(task, world.records(task, "en", "test"))
    assert list(got["pawsx.translate_test"]["counts"]) == WORLD_PAWSX


def test_xtreme_translate_test_gives_the_tiny_world_the_same_rows_as_xnli_mt(tiny_world):
    """The switch from XNLI-MT's file to XTREME's changes no prepared row: the world writes the same
    English sentences into both (one noise stream), so the tiny run's numbers stay."""
    _world, raw, _ = tiny_world
    cfg = world_cfg()
    xtreme = T.source_cfg(cfg, "xnli.translate_test")
    assert xtreme["xnli"]["translated"]["test"] == "xtreme_translations/XNLI/translate-test/test-{lang}-en-translated.tsv"
    before = {**xtreme, "xnli": {**xtreme["xnli"], "translated": {"source": "en", "test": "xnli-mt/xnli/xnli.test.{lang}.tsv"}}}
    for lang in WORLD_XNLI:
        assert prepare_split("xnli", lang, "test", raw, xtreme) == prepare_split("xnli", lang, "test", raw, before), lang


def test_the_translate_test_reader_keeps_the_english_pair_of_either_layout(tmp_path):
    five = tmp_path / "XNLI" / "test-de-en-translated.tsv"
    five.parent.mkdir()
    write_tsv(five, [("de p1", "de h1", "en p1", "en h1", "contradictory"), ("de p2", "de h2", "en p2", "en h2", "neutral")])
    got = read_xtreme_translate_test(five, "xnli")
    assert got == [{"id": "test-de-en-translated-1", "text": "en p1", "text_pair": "en h1", "label": "contradiction"},
                   {"id": "test-de-en-translated-2", "text": "en p2", "text_pair": "en h2", "label": "neutral"}]
    three = tmp_path / "test-ko-en-translated.tsv"  # XTREME's processors' and the X-Mixup authors' layout
    write_tsv(three, [("en p1", "en h1", "1"), ("en p2", "en h2", "0")])
    assert [(r["text"], r["text_pair"], r["label"]) for r in read_xtreme_translate_test(three, "pawsx")] == [
        ("en p1", "en h1", "1"), ("en p2", "en h2", "0")]


@pytest.mark.parametrize("rows,line,message", [
    ([("a", "b", "c", "d", "0"), ("a", "b", "c", "0")], 2, r"expected 5 tab-separated columns \(original pair, translated pair, label, as the first row\), got 4"),
    ([("a", "b", "0"), ("a", "b", "c", "d", "1")], 2, r"expected 3 tab-separated columns"),
    ([("a", "b", "c", "d")], 1, r"expected 5 tab-separated columns .* or 3 .*, got 4"),
    ([("a", "b", "c", "d", "1"), ("a", "b", "c", "d", "2")], 2, r"unknown label '2'"),
])  # fmt: skip
def test_a_malformed_translate_test_line_fails_naming_file_and_line(tmp_path, rows, line, message):
    path = tmp_path / "test-de-en-translated.tsv"
    write_tsv(path, rows)
    with pytest.raises(DataFormatError, match=message) as err:
        read_xtreme_translate_test(path, "pawsx")
    assert str(path) in str(err.value) and err.value.line == line


def test_a_translation_file_not_parallel_to_the_test_set_fails_naming_it(tiny_world, tmp_path):
    _world, raw, _ = tiny_world
    root = tmp_path / "raw"
    shutil.copytree(raw / "xnli", root / "xnli")
    rel = "xtreme_translations/XNLI/translate-test/test-vi-en-translated.tsv"
    (root / rel).parent.mkdir(parents=True)
    src = (raw / rel).read_text(encoding="utf-8").splitlines(keepends=True)
    (root / rel).write_text("".join(src[:-1]), encoding="utf-8")  # one row short
    cfg = world_cfg()
    with pytest.raises(XltError, match=r"test-vi-en-translated\.tsv: 149 pairs, not parallel to .*xnli/vi/test"):
        prepare_split("xnli", "vi", "test", root, T.source_cfg(cfg, "xnli.translate_test"))


def test_a_set_language_list_may_name_a_language_set():
    cfg = world_cfg()
    assert T.task_languages(cfg, "xnli.translate_test") == WORLD_XNLI
    cfg["data"]["xnli"]["sets"]["translate_test"]["languages"] = "xtreme_xnlii"
    with pytest.raises(XltError, match=r"data\.xnli\.sets\.translate_test\.languages: unknown language set 'xtreme_xnlii'"):
        T.task_languages(cfg, "xnli.translate_test")


def _squad(path, qas: list[tuple[str, str, str, str, int]]):
    """A SQuAD JSON of (id, question, context, answer, answer_start) rows, one paragraph each."""
    from xlt.formats.squad_json import write_squad

    path.parent.mkdir(parents=True, exist_ok=True)
    write_squad(path, [{"title": "t", "paragraphs": [{"context": c, "qas": [
        {"id": i, "question": q, "answers": [{"text": a, "answer_start": s}]}]}]} for i, q, c, a, s in qas])


def test_translated_qa_sets_join_by_question_id_and_skip_misplaced_answers(tmp_path):
    _squad(tmp_path / "squad/train-v1.1.json", [("q1", "who?", "Anna sleeps", "Anna", 0),
                                                 ("q2", "where?", "in Berlin", "Berlin", 3),
                                                 ("q3", "what?", "a cat", "cat", 2)])
    _squad(tmp_path / "tt/train.de.json", [("q2", "wo?", "in Berlin", "Berlin", 3), ("q1", "wer?", "Anna schläft", "Anna", 0),
                                           ("q3", "was?", "eine Katze", "cat", -1), ("q9", "?", "x", "x", 0)])
    _squad(tmp_path / "xquad/xquad.de.json", [("x1", "wer?", "Anna schläft", "Anna", 0), ("x2", "wo?", "in Rom", "Rom", 3)])
    _squad(tmp_path / "tt/test.de-en.json", [("x2", "where?", "in Rome", "Rome", 3)])
    cfg = {"qa": {"translated": {"source": "en", "train": "tt/train.{lang}.json", "test": "tt/test.{lang}-en.json"}}}
    stats: dict = {}
    train = prepare_split("qa", "de", "train", tmp_path, cfg, stats=stats)
    assert [(r["id"], r["question"], r["source"]["question"], r["source"]["answers"]["text"]) for r in train] == \
        [("q2", "wo?", "where?", ["Berlin"]), ("q1", "wer?", "who?", ["Anna"]),  # the translation's order
         ("q9", "?", "?", ["x"])]  # no English original: paired with itself, as the xmixup authors' code
    assert stats["translated_qa"]["de/train"] == {"skipped_answers": 1, "skipped_questions": 1, "unmatched": 1}
    test = prepare_split("qa", "de", "test", tmp_path, cfg)
    assert [(r["id"], r["answers"]["text"], r.get("source")) for r in test] == \
        [("x1", ["Anna"], None), ("x2", ["Rom"], {"question": "where?", "context": "in Rome"})]  # x1: no translation, kept
    own = {"id": "q1", "context": "Anna sleeps", "question": "who?", "answers": {"text": ["Anna"], "answer_start": [0]}}
    assert prepare_split("qa", "en", "train", tmp_path, cfg)[0] == {**own, "source": {k: own[k] for k in ("question", "context", "answers")}}
    shutil.rmtree(tmp_path / "squad")
    with pytest.raises(XltError, match="squad"):
        prepare_split("qa", "de", "train", tmp_path, cfg)


def test_the_join_by_question_id_counts_the_unmatched_and_refuses_none_in_common_naming_both_files_unless_self_paired():
    from xlt.stages.bilingual_sets import attach_source_by_id

    en = [{"id": f"english-{k}-0", "question": f"q{k}", "context": f"c{k}", "answers": {"text": ["a"], "answer_start": [0]}}
          for k in range(3)]
    ar = [{**r, "question": f"ar {r['question']}"} for r in en[1:]] + [{**en[0], "id": "english-9-0"}]
    stats: dict = {}
    out = attach_source_by_id(ar, en, ("question",), stats=stats, target_file="tt.ar.json", source_file="train.parquet")
    assert [(r["id"], r["source"]) for r in out] == [("english-1-0", {"question": "q1"}), ("english-2-0", {"question": "q2"})]
    assert stats == {"unmatched": 1}  # english-9-0 has no original: left out, counted
    kept = attach_source_by_id(ar, en, ("question",), unmatched="keep")
    assert [r["id"] for r in kept] == ["english-1-0", "english-2-0", "english-9-0"] and "source" not in kept[2]
    own = attach_source_by_id(ar, en, ("question",), unmatched="self")
    assert [r["source"] for r in own] == [{"question": "q1"}, {"question": "q2"}, {"question": "q0"}]  # en[0] renamed: its own
    with pytest.raises(ValueError, match="unmatched='skip'; allowed: drop, keep, self"):
        attach_source_by_id(ar, en, ("question",), unmatched="skip")
    renamed = [{**r, "id": f"arabic-{k}"} for k, r in enumerate(ar)]  # a translation with ids of its own
    with pytest.raises(XltError, match=r"tt\.ar\.json \(3 records, first id 'arabic-0'\) and train\.parquet \(3 records, "
                                       r"first id 'english-0-0'\): no id in common"):
        attach_source_by_id(renamed, en, ("question",), target_file="tt.ar.json", source_file="train.parquet")
    stats = {}
    alone = attach_source_by_id(renamed, en, ("question",), stats=stats, unmatched="self")
    assert [r["source"]["question"] for r in alone] == [r["question"] for r in renamed] and stats == {"unmatched": 3}


TYDIQA_WORLD = ["en", "ar", "ru"]  # the world's TyDiQA-GoldP languages


def test_tydiqa_sets_of_config_yaml_from_the_world_join_each_translation_to_its_english_original(tiny_world, tmp_path):
    world, raw, _ = tiny_world
    cfg = world_cfg()
    cfg["language_sets"]["xtreme_tydiqa"] = TYDIQA_WORLD
    validate(cfg)
    parquet = "tydiqa/train-00000-of-00001.parquet"
    en = world.records("qa", "en", "train", parquet)
    assert en and all(r["id"].startswith("english-") for r in en)
    plain = prepare_task("qa", ["en"], raw, T.source_cfg(cfg, "qa.tydiqa_train"), tmp_path / "plain")
    dev = len(world.records("qa", "en", "dev"))  # SQuAD v1.1's English dev: selection, never TyDiQA's test
    assert plain["counts"] == {"en": {"train": len(en), "dev": dev}}
    source = T.source_cfg(cfg, "qa.tydiqa_translate_train")
    # the English originals (the Hub parquet's English rows), each its own source
    assert prepare_split("qa", "en", "train", raw, source) == self_source("qa", en)
    got = prepare_task("qa", TYDIQA_WORLD, raw, source, tmp_path / "translate")
    assert got["absent"] == {lang: ["dev"] for lang in TYDIQA_WORLD[1:]}  # no translate-dev: English dev only
    by_id = {r["id"]: r for r in en}
    for lang in TYDIQA_WORLD[1:]:
        path = f"xtreme_translations/TyDiQA-GoldP/translate-train/tydiqa.translate.train.en-{lang}.json"
        translated = world.records("qa", lang, "train", path)
        stats: dict = {}
        pairs = prepare_split("qa", lang, "train", raw, source, stats=stats)
        assert pairs and stats["translated_qa"][f"{lang}/train"]["unmatched"] == 0
        assert len(pairs) + stats["translated_qa"][f"{lang}/train"]["skipped_questions"] == len(translated)
        assert {r["id"] for r in pairs} <= set(by_id)
        for r in pairs:
            assert r["source"] == {k: by_id[r["id"]][k] for k in ("question", "context", "answers")}
    # the catalog delivers every file: the Hub parquet (all languages in one) and XTREME's translations
    assert T.raw_sources(cfg, "qa.tydiqa_translate_train") == {"tydiqa": [], "xtreme-tydiqa-translate-train": ["ar", "ru"],
                                                               "squad-json": []}  # SQuAD v1.1 dev


def test_a_tydiqa_translation_whose_ids_are_not_the_english_trains_pairs_each_question_with_itself_and_says_so(
        tmp_path, caplog):
    from xlt.formats.hub_parquet import write_squad_parquet

    (tmp_path / "tydiqa").mkdir()
    answers = {"text": ["Anna"], "answer_start": [0]}
    write_squad_parquet(tmp_path / "tydiqa/train-00000-of-00001.parquet",
                        [{"id": f"{name}-{k}-0", "title": "t", "context": "Anna sleeps", "question": "who?", "answers": answers}
                         for name in ("english", "russian") for k in range(2)])  # fmt: skip
    # XTREME's file: ids of its own (public processors never join it to TyDiQA's English ids)
    _squad(tmp_path / "tt/tydiqa.translate.train.en-ru.json", [("0", "кто?", "Anna spit", "Anna", 0),
                                                              ("1", "где?", "Anna spit", "Anna", -1)])
    cfg = world_cfg()
    cfg["language_sets"]["xtreme_tydiqa"] = TYDIQA_WORLD
    cfg["data"]["qa"]["sets"]["tydiqa_translate_train"]["translated"]["train"] = "tt/tydiqa.translate.train.en-{lang}.json"
    source = T.source_cfg(cfg, "qa.tydiqa_translate_train")
    assert [r["id"] for r in prepare_split("qa", "en", "train", tmp_path, source)] == ["english-0-0", "english-1-0"]
    got = prepare_task("qa", ["ru"], tmp_path, source, tmp_path / "out")
    rows = [json.loads(x) for x in (tmp_path / "out/ru/train.jsonl").read_text().splitlines()]
    assert [(r["id"], r["source"]["question"], r["source"]["context"]) for r in rows] == [("0", "кто?", "Anna spit")]
    assert got["reader_stats"]["translated_qa"] == {"ru/train": {"skipped_answers": 1, "skipped_questions": 1, "unmatched": 1}}
    assert "each of the 1 is paired with itself" in caplog.text and "skipped_answers 1" in caplog.text
