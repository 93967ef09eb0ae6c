import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xlt.errors import DataFormatError, XltError
from xlt.formats import read_squad, read_squad_parquet, read_tydiqa, read_xtreme_translated
from xlt.formats.hub_parquet import write_squad_parquet


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
    q.write_text("a\tb\tA\tB\t1\nc\td\tC\t0\n")
    with pytest.raises(DataFormatError, match=r"pawsx.tsv:2: expected 5 tab-separated columns"):
        read_xtreme_translated(q, "pawsx")
    q.write_text("a\tb\tA\tB\tentailment\n")
    with pytest.raises(DataFormatError, match=r"pawsx.tsv:1: unknown label 'entailment'"):
        read_xtreme_translated(q, "pawsx")
