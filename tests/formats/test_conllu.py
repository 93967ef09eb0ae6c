import logging

import pytest

from xlt.errors import DataFormatError
from xlt.formats.conllu import read_conllu, write_conllu

GOOD = """\
# newdoc id = d1
# sent_id = s1
# text = Vamos al mar.
1	Vamos	ir	VERB	_	_	0	root	_	_
2-3	al	_	_	_	_	_	_	_	_
2	a	a	ADP	_	_	4	case	_	_
3	el	el	DET	_	_	4	det	_	_
4	mar	mar	NOUN	_	_	1	obl:arg	_	SpaceAfter=No
5	.	.	PUNCT	_	_	1	punct	_	_

# sent_id = s2
1	Ana	Ana	PROPN	_	_	2	nsubj	_	_
2	come	comer	VERB	_	_	0	root	_	_
2.1	come	comer	VERB	_	_	_	_	0:root	_
3	y	y	CCONJ	_	_	4	cc	_	_
4	Luis	Luis	PROPN	_	_	2	conj	_	_
5	su	su	PRON	_	_	6	nmod:poss	_	_
6	pan	pan	NOUN	_	_	2	obj	_	_

"""


def write(tmp_path, text, name="x.conllu"):
    p = tmp_path / name
    p.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return p


def test_reads_words_mwt_empty_nodes_and_cuts_subtypes(tmp_path):
    stats = {}
    recs = read_conllu(write(tmp_path, GOOD), stats=stats)
    assert recs[0] == {
        "id": "s1",
        "tokens": ["Vamos", "a", "el", "mar", "."],
        "upos": ["VERB", "ADP", "DET", "NOUN", "PUNCT"],
        "head": [0, 4, 4, 1, 1],
        "deprel": ["root", "case", "det", "obl", "punct"],
    }
    assert recs[1]["tokens"] == ["Ana", "come", "y", "Luis", "su", "pan"]  # empty node 2.1 skipped
    assert recs[1]["deprel"][4] == "nmod"
    assert stats == {"sentences": 2, "skipped_textless": 0, "multiword_tokens": 1, "empty_nodes": 1}


def test_surface_forms_optional(tmp_path):
    recs = read_conllu(write(tmp_path, GOOD), surface=True)
    assert recs[0]["surface"] == ["Vamos", "al", "mar", "."]
    assert recs[0]["mwt"] == [[2, 3, "al"]]
    assert recs[1]["surface"] == recs[1]["tokens"]
    assert "surface" not in read_conllu(write(tmp_path, GOOD))[0]


def test_missing_final_blank_line_is_tolerated(tmp_path):
    recs = read_conllu(write(tmp_path, GOOD.rstrip("\n") + "\n"))
    assert len(recs) == 2 and recs[1]["tokens"][-1] == "pan"
    recs = read_conllu(write(tmp_path, GOOD.rstrip("\n")))
    assert len(recs) == 2


def test_textless_sentences_skipped_and_counted(tmp_path, caplog):
    text = GOOD + "# sent_id = s3\n1\t_\t_\tNOUN\t_\t_\t0\troot\t_\t_\n2\t_\t_\tADJ\t_\t_\t1\tamod\t_\t_\n\n"
    stats = {}
    with caplog.at_level(logging.WARNING):
        recs = read_conllu(write(tmp_path, text), stats=stats)
    assert [r["id"] for r in recs] == ["s1", "s2"]
    assert stats["skipped_textless"] == 1
    assert "skipped 1 text-less" in caplog.text


def test_id_without_sent_id_is_file_and_line(tmp_path):
    recs = read_conllu(write(tmp_path, "1\tHi\thi\tINTJ\t_\t_\t0\troot\t_\t_\n"))
    assert recs[0]["id"] == "x.conllu:1"


def _bad_line(tmp_path, lineno, replacement):
    lines = GOOD.split("\n")
    lines[lineno - 1] = replacement
    return write(tmp_path, "\n".join(lines))


@pytest.mark.parametrize(
    "lineno, replacement, message",
    [
        (4, "1\tVamos\tir\tVERB\t_\t_\t0\troot\t_", "expected 10 tab-separated columns, got 9"),
        (4, "1 Vamos ir VERB _ _ 0 root _ _", "expected 10 tab-separated columns, got 1"),
        (7, "x\tel\tel\tDET\t_\t_\t4\tdet\t_\t_", "ID must be a non-negative integer"),
        (7, "3\tel\tel\tDET\t_\t_\tfour\tdet\t_\t_", "HEAD must be a non-negative integer"),
        (7, "3\tel\tel\tDET\t_\t_\t_\tdet\t_\t_", "HEAD must be a non-negative integer"),
        (7, "3\tel\tel\tDET\t_\t_\t9\tdet\t_\t_", "HEAD 9 out of range"),
        (7, "4\tel\tel\tDET\t_\t_\t4\tdet\t_\t_", "out of sequence"),
        (7, "3\tel\tel\tDETERMINER\t_\t_\t4\tdet\t_\t_", "unknown UPOS"),
        (7, "3\tel\tel\tDET\t_\t_\t4\tdeterminer\t_\t_", "unknown DEPREL"),
        (7, "3\tel\tel\tDET\t_\t_\t0\tdet\t_\t_", "only root has HEAD 0"),
        (5, "2-x\tal\t_\t_\t_\t_\t_\t_\t_\t_", "multiword token range end"),
        (14, "2.x\tcome\tcomer\tVERB\t_\t_\t_\t_\t0:root\t_", "empty node id"),
        (10, "   ", "whitespace-only line"),
    ],
)
def test_malformed_lines_name_file_and_line(tmp_path, lineno, replacement, message):
    path = _bad_line(tmp_path, lineno, replacement)
    with pytest.raises(DataFormatError, match=message) as e:
        read_conllu(path)
    assert e.value.line == lineno
    assert e.value.path == str(path)
    assert str(e.value).startswith(f"{path}:{lineno}: ")


def test_invalid_utf8_names_line(tmp_path):
    data = GOOD.encode("utf-8").replace(b"mar\tmar", b"m\xffr\tmar")
    with pytest.raises(DataFormatError, match="invalid UTF-8") as e:
        read_conllu(write(tmp_path, data))
    assert e.value.line == 8


def test_multiword_range_without_its_words(tmp_path):
    text = "# sent_id = a\n1\tx\tx\tNOUN\t_\t_\t0\troot\t_\t_\n2-3\tyz\t_\t_\t_\t_\t_\t_\t_\t_\n\n"
    with pytest.raises(DataFormatError, match="not followed by its words") as e:
        read_conllu(write(tmp_path, text))
    assert e.value.line == 3


def test_comment_inside_sentence(tmp_path):
    lines = GOOD.split("\n")
    lines.insert(4, "# late comment")
    with pytest.raises(DataFormatError, match="comment line inside") as e:
        read_conllu(write(tmp_path, "\n".join(lines)))
    assert e.value.line == 5


def test_write_read_round_trip(tmp_path):
    sents = [
        {"comments": ["sent_id = a", "text = al mar"],
         "rows": [["1-2", "al", *"_" * 8], [1, "a", "a", "ADP", "_", "_", 3, "case", "_", "_"],
                  [2, "el", "el", "DET", "_", "_", 3, "det", "_", "_"],
                  [3, "mar", "mar", "NOUN", "_", "_", 0, "root", "_", "_"]]},
    ]  # fmt: skip
    p = tmp_path / "sub" / "out.conllu"
    assert write_conllu(p, sents) == 1
    assert p.read_text().endswith("\n\n")
    assert read_conllu(p, surface=True) == [
        {"id": "a", "tokens": ["a", "el", "mar"], "upos": ["ADP", "DET", "NOUN"], "head": [3, 3, 0],
         "deprel": ["case", "det", "root"], "surface": ["al", "mar"], "mwt": [[1, 2, "al"]]}
    ]  # fmt: skip
    with pytest.raises(ValueError):
        write_conllu(tmp_path / "bad.conllu", [{"rows": [[1, 2, 3]]}])
    assert not (tmp_path / "bad.conllu").exists()
