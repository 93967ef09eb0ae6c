import json

import pytest

from xlt.errors import DataFormatError
from xlt.formats.marc_jsonl import read_marc, write_marc
from xlt.formats.squad_json import read_squad, write_squad


def test_marc_round_trip(tmp_path):
    p = tmp_path / "marc" / "en" / "train.jsonl"
    write_marc(p, [{"id": "en_1", "text": "Great. Works.", "label": 4}, {"id": "en_2", "text": "Bad", "label": 0}])
    assert read_marc(p) == [
        {"id": "en_1", "text": "Great. Works.", "label": "5"},
        {"id": "en_2", "text": "Bad", "label": "1"},
    ]


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"id": "a", "text": "t", "label": 5}', "label 5 out of range 0..4"),
        ('{"id": "a", "text": "t", "label": "3"}', "label '3' out of range"),
        ('{"id": "a", "text": "t"}', "missing key 'label'"),
        ('{"id": "a", "text": "t", "label": 1', "invalid JSON"),
        ('["a"]', "expected a JSON object"),
    ],
)
def test_marc_errors_name_line(tmp_path, line, message):
    p = tmp_path / "m.jsonl"
    p.write_text('{"id": "ok", "text": "fine", "label": 2}\n\n' + line + "\n")
    with pytest.raises(DataFormatError, match=message) as e:
        read_marc(p)
    assert e.value.line == 3


def _squad(context="Paris is in France.", text="France", start=12, qid="q1"):
    return [{"title": "T", "paragraphs": [{"context": context, "qas": [
        {"id": qid, "question": "Where is Paris?", "answers": [{"text": text, "answer_start": start}]}]}]}]  # fmt: skip


def test_squad_round_trip(tmp_path):
    p = tmp_path / "squad" / "dev-v1.1.json"
    assert write_squad(p, _squad()) == 1
    assert json.loads(p.read_text())["version"] == "1.1"
    assert read_squad(p) == [
        {"id": "q1", "context": "Paris is in France.", "question": "Where is Paris?",
         "answers": {"text": ["France"], "answer_start": [12]}}
    ]  # fmt: skip


def test_squad_offset_mismatch_names_qa_id(tmp_path):
    p = tmp_path / "s.json"
    write_squad(p, _squad(start=11, qid="5733be284776f41900661182"))
    with pytest.raises(DataFormatError, match="qa id '5733be284776f41900661182': answer 'France' does not match"):
        read_squad(p)


def test_squad_structure_errors(tmp_path):
    p = tmp_path / "s.json"
    arts = _squad()
    del arts[0]["paragraphs"][0]["qas"][0]["question"]
    write_squad(p, arts)
    with pytest.raises(DataFormatError, match="qa id 'q1': missing key 'question'"):
        read_squad(p)
    p.write_text('{"data": [')
    with pytest.raises(DataFormatError, match="invalid JSON"):
        read_squad(p)
    p.write_text('{"version": "1.1"}')
    with pytest.raises(DataFormatError, match="missing key 'data'"):
        read_squad(p)
    write_squad(p, _squad() + _squad())
    with pytest.raises(DataFormatError, match="duplicate id"):
        read_squad(p)


def test_missing_files(tmp_path):
    from xlt.formats.conllu import read_conllu

    for reader in (read_marc, read_squad, read_conllu):
        with pytest.raises(DataFormatError, match="file not found"):
            reader(tmp_path / "nope")
