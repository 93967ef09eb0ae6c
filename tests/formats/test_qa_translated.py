import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xlt.errors import DataFormatError, XltError
from xlt.formats import read_squad, read_squad_parquet, read_tydiqa, read_xtreme_translated
from xlt.formats.hub_parquet import write_squad_parquet
from xlt.stages.prepare import prepare_task


def _row(qid, ctx="Moskva est la capitale.", text="Moskva", start=0, q="Quelle?"):
    return {"id": qid, "title": "T", "context": ctx, "question": q,
            "answers": {"text": [text], "answer_start": [start]}}  # fmt: skip


def test_squad_parquet_mlqa(tmp_path):
    p = tmp_path / "mlqa" / "de" / "test-00000-of-00001.parquet"
    p.parent.mkdir(parents=True)
    assert write_squad_parquet(p, [_row("a1"), _row("a2", text="capitale", start=14)]) == 2
    assert pq.read_schema(p).field("answers").type == pa.struct(
        [("text", pa.list_(pa.string())), ("answer_start", pa.list_(pa.int32()))]
    )
    recs = read_squad_parquet(p)
    assert recs[1] == {"id": "a2", "context": "Moskva est la capitale.", "question": "Quelle?",
                       "answers": {"text": ["capitale"], "answer_start": [14]}}  # fmt: skip
    write_squad_parquet(p, [_row("a1"), _row("a2", text="capitale", start=3)])
    with pytest.raises(DataFormatError, match=r"row 1 \(id 'a2'\): answer 'capitale' does not match"):
        read_squad_parquet(p)
    write_squad_parquet(p, [_row("a1"), _row("a1")])
    with pytest.raises(DataFormatError, match="row 1: duplicate id 'a1'"):
        read_squad_parquet(p)
    pq.write_table(pa.table({"id": ["x"], "context": ["c"], "question": ["q"]}), p)
    with pytest.raises(DataFormatError, match="missing column 'answers'"):
        read_squad_parquet(p)


def test_tydiqa_language_only_from_id_prefix(tmp_path):
    p = tmp_path / "tydiqa" / "validation-00000-of-00001.parquet"
    p.parent.mkdir()
    # titles / contexts say nothing reliable about the language: only the id prefix counts
    write_squad_parquet(p, [_row("russian-1-0"), _row("english-2-0"), _row("telugu-3-0"), _row("russian-4-1")])
    assert [r["id"] for r in read_tydiqa(p, lang="ru")] == ["russian-1-0", "russian-4-1"]
    assert [r["id"] for r in read_tydiqa(p, lang="en")] == ["english-2-0"]
    assert len(read_tydiqa(p)) == 4
    with pytest.raises(XltError, match="no language 'de'"):
        read_tydiqa(p, lang="de")
    write_squad_parquet(p, [_row("russian-1-0"), _row("klingon-9-0")])
    with pytest.raises(DataFormatError, match=r"row 1: id 'klingon-9-0' has unknown language prefix 'klingon'"):
        read_tydiqa(p, lang="ru")


def test_mlqa_zip_json_is_squad(tmp_path):
    p = tmp_path / "mlqa-v1" / "test" / "test-context-de-question-de.json"
    p.parent.mkdir(parents=True)
    doc = {"version": 1.0, "data": [{"title": "T", "paragraphs": [{"context": "Bonn liegt am Rhein.", "qas": [
        {"id": "0a1b", "question": "Wo?", "answers": [{"text": "am Rhein", "answer_start": 11}]}]}]}]}  # fmt: skip
    p.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    assert read_squad(p)[0]["answers"] == {"text": ["am Rhein"], "answer_start": [11]}


def test_pawsx_translate_train_skips_wrongly_populated_rows_as_tfds_and_counts_them(tmp_path):
    # XTREME's PAWSX/translate-train/en-de-translated.tsv: no header, original pair, translated
    # pair, label; some rows are wrongly populated (TFDS's xtreme_pawsx keeps label 0 / 1 only)
    p = tmp_path / "xtreme_translations/PAWSX/translate-train/en-de-translated.tsv"
    p.parent.mkdir(parents=True)
    p.write_text("In 1990 he moved.\tHe moved in 1990.\t1990 zog er um.\tEr zog 1990 um.\t1\n"
                 "A cat.\tA dog.\tEine Katze.\tEin Hund.\t0\n"
                 "Broken row.\tSecond.\tKaputte Zeile.\t0\n"  # a column missing: the label is not the fifth
                 "Shifted.\tPair.\tVerschoben.\tPaar.\tmehr Text\t1\n"  # a tab too many: the fifth is text
                 "Last.\tOne.\tLetzte.\tEine.\tlabel\n", encoding="utf-8")  # fmt: skip
    stats: dict = {}
    recs = read_xtreme_translated(p, "pawsx", keep_source=True, stats=stats)
    assert [(r["id"], r["text"], r["label"], r["source"]["text"]) for r in recs] == [
        ("en-de-translated-1", "1990 zog er um.", "1", "In 1990 he moved."),
        ("en-de-translated-2", "Eine Katze.", "0", "A cat."),
    ]
    assert stats == {"skipped_rows": 3}
    # through the named set: the count reaches the manifest (reader_stats.quirks) and the log
    cfg = {"pawsx": {"translated": {"source": "en", "train": "xtreme_translations/PAWSX/translate-train/en-{lang}-translated.tsv"}}}
    got = prepare_task("pawsx", ["de"], tmp_path, cfg, tmp_path / "out")
    assert got["counts"] == {"de": {"train": 2}} and got["absent"] == {"de": ["dev", "test"]}
    assert got["reader_stats"]["quirks"] == {"de/train": {"en-de-translated.tsv": {"skipped_rows": 3}}}


def test_xtreme_translate_train_tsv(tmp_path):
    p = tmp_path / "en-de-translated.tsv"
    p.write_text("A man.\tA person.\tEin Mann.\tEine Person.\tentailment\n"
                 "x\ty\tX\tY\tcontradictory\n", encoding="utf-8")  # fmt: skip
    recs = read_xtreme_translated(p, "xnli")
    assert recs == [
        {"id": "en-de-translated-1", "text": "Ein Mann.", "text_pair": "Eine Person.", "label": "entailment"},
        {"id": "en-de-translated-2", "text": "X", "text_pair": "Y", "label": "contradiction"},
    ]
    q = tmp_path / "pawsx.tsv"
    q.write_text("a\tb\tA\tB\t1\nc\td\tC\tD\t0\n")
    assert [(r["text"], r["label"]) for r in read_xtreme_translated(q, "pawsx")] == [("A", "1"), ("C", "0")]
    p.write_text("A man.\tA person.\tEin Mann.\tEine Person.\tentailment\nx\ty\tX\tcontradictory\n")
    with pytest.raises(DataFormatError, match=r"en-de-translated.tsv:2: expected 5 tab-separated columns"):
        read_xtreme_translated(p, "xnli")  # XNLI's are read strictly: no such rows are known


def test_tydiqa_hub_parquet_repairs_the_starts_its_stripping_shifted_and_checks_only_the_language_read(tmp_path, caplog):
    # The Hub's secondary_task: context and answer text stripped, answer_start the original's
    # (TFDS tydi_qa 3.0.0 fixed the same bug by not stripping; ~25 % of train and dev)
    original = "  Moskva est la capitale de la Russie."
    ctx = original.strip()  # two leading spaces gone: every start is 2 too far
    p = tmp_path / "tydiqa" / "validation-00000-of-00001.parquet"
    p.parent.mkdir()
    write_squad_parquet(p, [
        _row("russian-1-0", ctx=ctx, text="Moskva", start=2),  # shifted by the stripped context
        _row("russian-2-0", ctx=ctx, text="la Russie", start=original.index(" la Russie")),  # the answer stripped too
        _row("russian-3-0", ctx=ctx, text="capitale", start=ctx.index("capitale")),  # aligned
        _row("russian-4-0", ctx=ctx, text="Paris", start=0),  # not in its context: left out, as XTREME's reader
        _row("english-5-0", ctx="x", text="nowhere", start=7),  # another language's row: never checked for ru
    ])  # fmt: skip
    stats: dict = {}
    recs = read_tydiqa(p, lang="ru", stats=stats)
    assert [(r["id"], r["answers"]) for r in recs] == [
        ("russian-1-0", {"text": ["Moskva"], "answer_start": [0]}),
        ("russian-2-0", {"text": ["la Russie"], "answer_start": [ctx.index("la Russie")]}),
        ("russian-3-0", {"text": ["capitale"], "answer_start": [ctx.index("capitale")]}),
    ]
    assert all(r["context"][s : s + len(t)] == t for r in recs for t, s in zip(*r["answers"].values()))
    assert stats == {"answer_start_repaired": 2, "answers_not_in_context": 1, "questions_without_answer": 1}
    # the nearest occurrence wins where the text occurs twice
    write_squad_parquet(p, [_row("arabic-1-0", ctx="ab ab ab", text="ab", start=5)])
    assert read_tydiqa(p, lang="ar")[0]["answers"]["answer_start"] == [6]
    # through prepare (qa.tydiqa's test_source): counts in the manifest and the log
    write_squad_parquet(p, [_row("russian-1-0", ctx=ctx, text="Moskva", start=2), _row("english-5-0", ctx="x", text="y")])
    got = prepare_task("qa", ["ru"], tmp_path, {"qa": {"test_source": "tydiqa/validation-00000-of-00001.parquet",
                                                       "splits": ["test"]}}, tmp_path / "out")  # fmt: skip
    assert got["counts"] == {"ru": {"test": 1}}
    assert got["reader_stats"]["quirks"] == {"ru/test": {p.name: {"answer_start_repaired": 1}}}
    assert "answer_start_repaired 1" in caplog.text


def test_xtreme_translated_squad_read_as_a_training_set_skips_answers_at_minus_one_with_a_count(tmp_path):
    # adjust's Table 8 (qa.translated): XTREME's squad.translate.train.en-<lang>.json through
    # train_source; answers the translation could not place carry answer_start -1
    p = tmp_path / "xtreme_translations/SQuAD/translate-train/squad.translate.train.en-es.json"
    p.parent.mkdir(parents=True)
    doc = {"version": "1.1", "data": [{"title": "T", "paragraphs": [{"context": "Madrid es la capital.", "qas": [
        {"id": "5733be284776f41900661182", "question": "¿Cuál?", "answers": [{"text": "Madrid", "answer_start": 0}]},
        {"id": "5733be284776f4190066117f", "question": "¿Qué?", "answers": [{"text": "la capitale", "answer_start": -1}]},
    ]}]}]}  # fmt: skip
    p.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    cfg = {"qa": {"train_source": "xtreme_translations/SQuAD/translate-train/squad.translate.train.en-{lang}.json",
                  "splits": ["train"]}}
    got = prepare_task("qa", ["es"], tmp_path, cfg, tmp_path / "out")
    assert got["counts"] == {"es": {"train": 1}}
    assert got["reader_stats"]["quirks"] == {"es/train": {p.name: {"answers_misplaced": 1, "questions_without_answer": 1}}}
    # SQuAD JSON from anywhere else stays strict: a misplaced answer there is an error
    q = tmp_path / "squad/train-v1.1.json"
    q.parent.mkdir()
    q.write_text(p.read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(DataFormatError, match="does not match context at answer_start -1"):
        prepare_task("qa", ["en"], tmp_path, {"qa": {"splits": ["train"]}}, tmp_path / "out2")
