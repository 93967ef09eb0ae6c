import gzip

import pytest

from xlt.errors import DataFormatError
from xlt.formats.tsv import read_pharaoh, read_wikimatrix, read_xnli_mt, tokenize, write_pharaoh, write_wikimatrix


def test_tokenize():
    assert tokenize("Maria, sees 3 дом. 北京 x?") == ["Maria", ",", "sees", "3", "дом", ".", "北京", "x", "?"]


def test_xnli_mt_translate_test_folder_read_by_header_names(tmp_path):
    # XNLI-MT-1.0/xnli/xnli.test.<lang>.tsv: its header could not be checked offline; the one
    # public reader of it found (MultiFiT) takes XNLI 1.0's layout. Both are read by name.
    p = tmp_path / "xnli.test.ru.tsv"
    head = ["language", "gold_label", "sentence1_binary_parse", "sentence2_binary_parse", "sentence1_parse",
            "sentence2_parse", "sentence1", "sentence2", "promptID", "pairID", "genre"]
    p.write_text("\t".join(head) + "\n" + "\t".join(["ru", "contradiction", "(", "(", "(", "(", "He sleeps.", "He runs.",
                                                       "1", "1", "fiction"]) + "\n", encoding="utf-8")  # fmt: skip
    assert read_xnli_mt(p) == [{"id": "xnli.test.ru-2", "text": "He sleeps.", "text_pair": "He runs.", "label": "contradiction"}]
    p.write_text("premise\thypo\tlabel\nHe sleeps.\tHe runs.\tcontradictory\n", encoding="utf-8")
    assert read_xnli_mt(p)[0]["text_pair"] == "He runs."


def test_xnli_mt_labels_and_errors(tmp_path):
    p = tmp_path / "multinli.train.de.tsv"
    p.write_text('premise\thypo\tlabel\nA "b\tC\tcontradictory\nD\tE\tentailment\n\nF\tG\tneutral\n')
    recs = read_xnli_mt(p)
    assert [r["label"] for r in recs] == ["contradiction", "entailment", "neutral"]
    assert recs[0] == {"id": "multinli.train.de-2", "text": 'A "b', "text_pair": "C", "label": "contradiction"}
    p.write_text("premise\thypo\tlabel\nA\tB\tneutral\nA\tB\tC\tneutral\n")
    with pytest.raises(DataFormatError, match=r"expected 3 tab-separated columns \(as the header\), got 4") as e:
        read_xnli_mt(p)
    assert e.value.line == 3 and str(e.value).startswith(f"{p}:3:")
    p.write_text("premise\thypo\tlabel\nA\tB\tmaybe\n")
    with pytest.raises(DataFormatError, match="unknown label 'maybe'"):
        read_xnli_mt(p)
    p.write_text("sentence1\tsentence2\tlabel\n")
    with pytest.raises(DataFormatError, match="expected a header naming premise/hypo/label or "
                                              "sentence1/sentence2/gold_label columns") as e:
        read_xnli_mt(p)
    assert e.value.line == 1


def test_wikimatrix_threshold_and_round_trip(tmp_path):
    p = tmp_path / "WikiMatrix.en-es.tsv.gz"
    rows = [(1.2, "The house.", "La casa."), (1.04, "Yes", "Sí"), (1.0399, "no", "nada")]
    assert write_wikimatrix(p, rows) == 3
    recs = read_wikimatrix(p)
    assert recs == [
        {"id": "en-es-1", "src": ["The", "house", "."], "tgt": ["La", "casa", "."]},
        {"id": "en-es-2", "src": ["Yes"], "tgt": ["Sí"]},
    ]
    assert len(read_wikimatrix(p, threshold=0)) == 3
    assert len(read_wikimatrix(p, threshold=0, max_pairs=1)) == 1
    # byte-deterministic gzip (no timestamp, no name)
    q = tmp_path / "again.tsv.gz"
    write_wikimatrix(q, rows)
    assert p.read_bytes() == q.read_bytes()


def _gz(path, data: bytes):
    with gzip.GzipFile(path, "wb", mtime=0) as f:
        f.write(data)
    return path


def test_wikimatrix_errors(tmp_path):
    p = _gz(tmp_path / "WikiMatrix.en-ru.tsv.gz", b"1.1\ta\tb\n1.1\tragged\n")
    with pytest.raises(DataFormatError, match="expected 3 tab-separated columns") as e:
        read_wikimatrix(p)
    assert e.value.line == 2
    p = _gz(p, b"1.1\ta\tb\nhigh\ta\tb\n")
    with pytest.raises(DataFormatError, match="margin score 'high' is not a number") as e:
        read_wikimatrix(p)
    assert e.value.line == 2
    p = _gz(p, b"1.1\ta\tb\n1.1\ta\t\xff\n")
    with pytest.raises(DataFormatError, match="invalid UTF-8") as e:
        read_wikimatrix(p)
    assert e.value.line == 2
    bad = tmp_path / "WikiMatrix.en-hi.tsv.gz"
    bad.write_bytes(b"not gzip at all")
    with pytest.raises(DataFormatError, match="cannot read file"):
        read_wikimatrix(bad)


def test_pharaoh(tmp_path):
    p = tmp_path / "a.pharaoh"
    assert write_pharaoh(p, [[(0, 0), (1, 2)], [], [(3, 1)]]) == 3
    assert read_pharaoh(p) == [[(0, 0), (1, 2)], [], [(3, 1)]]
    p.write_text("0-0 1-1\n0-0 1:2\n")
    with pytest.raises(DataFormatError, match="bad alignment link '1:2'") as e:
        read_pharaoh(p)
    assert e.value.line == 2
