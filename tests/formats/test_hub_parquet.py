import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xlt.errors import DataFormatError, XltError
from xlt.formats.hub_parquet import read_hub_parquet, read_pawsx, read_wikiann, read_xnli, write_parquet


def _file(tmp_path, lang="en", split="train"):
    p = tmp_path / "wikiann" / lang / f"{split}-00000-of-00001.parquet"
    p.parent.mkdir(parents=True, exist_ok=True)
    return p


def test_wikiann_round_trip_and_ids(tmp_path):
    p = _file(tmp_path, "de", "validation")
    cols = {"tokens": [["Anna", "lebt", "in", "Berlin"], ["Hallo"]], "ner_tags": [[1, 0, 0, 5], [0]],
            "langs": [["de"] * 4, ["de"]], "spans": [["PER: Anna", "LOC: Berlin"], []]}  # fmt: skip
    assert write_parquet(p, "wikiann", cols) == 2
    recs = read_wikiann(p)
    assert recs == [
        {"id": "de-validation-0", "tokens": ["Anna", "lebt", "in", "Berlin"], "tags": ["B-PER", "O", "O", "B-LOC"]},
        {"id": "de-validation-1", "tokens": ["Hallo"], "tags": ["O"]},
    ]
    assert read_wikiann(p, id_prefix="x")[1]["id"] == "x1"
    assert read_hub_parquet(p, "ner") == recs
    # the Hub's column types
    schema = pq.read_schema(p)
    assert schema.field("ner_tags").type == pa.list_(pa.int64())


def test_panx_language_prefixes_are_stripped(tmp_path):
    p = _file(tmp_path)
    pq.write_table(pa.table({"tokens": [["en:Paris", "en:is", "fr:chic", "en:"]], "ner_tags": [[5, 0, 0, 0]],
                             "langs": [["en", "en", "en", "en"]]}), p)  # fmt: skip
    # only the token's own language is a prefix; a bare "en:" is a token
    assert read_wikiann(p)[0]["tokens"] == ["Paris", "is", "fr:chic", "en:"]
    q = tmp_path / "nolangs.parquet"
    pq.write_table(pa.table({"tokens": [["es:Madrid"]], "ner_tags": [[5]]}), q)
    assert read_wikiann(q, lang="es")[0]["tokens"] == ["Madrid"]
    assert read_wikiann(q)[0]["tokens"] == ["es:Madrid"]


def test_out_of_range_label_names_file_and_row(tmp_path):
    p = _file(tmp_path)
    pq.write_table(pa.table({"tokens": [["a"], ["b", "c"]], "ner_tags": [[0], [0, 7]]}), p)
    with pytest.raises(DataFormatError, match=r"row 1: label 7 out of range 0\.\.6") as e:
        read_wikiann(p)
    assert e.value.path == str(p)


def test_length_mismatch(tmp_path):
    p = _file(tmp_path)
    pq.write_table(pa.table({"tokens": [["a", "b"]], "ner_tags": [[0]]}), p)
    with pytest.raises(DataFormatError, match="row 0: 2 tokens but 1 ner_tags"):
        read_wikiann(p)


def test_missing_column_names_column_and_file(tmp_path):
    p = tmp_path / "paws-x" / "en" / "train-00000-of-00001.parquet"
    p.parent.mkdir(parents=True)
    pq.write_table(pa.table({"id": [1], "sentence1": ["a"], "sentence2": ["b"]}), p)
    with pytest.raises(DataFormatError, match="missing column 'label'") as e:
        read_pawsx(p)
    assert str(p) in str(e.value)


def test_pawsx_and_xnli(tmp_path):
    p = tmp_path / "p.parquet"
    write_parquet(p, "pawsx", {"id": [7, 8], "sentence1": ["a", "b"], "sentence2": ["c", "d"], "label": [1, 0]})
    assert read_pawsx(p) == [
        {"id": "7", "text": "a", "text_pair": "c", "label": "1"},
        {"id": "8", "text": "b", "text_pair": "d", "label": "0"},
    ]
    x = tmp_path / "xnli" / "fr" / "test-00000-of-00001.parquet"
    write_parquet(x, "xnli", {"premise": ["p"] * 3, "hypothesis": ["h"] * 3, "label": [0, 1, 2]})
    recs = read_xnli(x)
    assert [r["label"] for r in recs] == ["entailment", "neutral", "contradiction"]
    assert recs[2]["id"] == "fr-test-2"
    y = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"premise": ["p"], "hypothesis": ["h"], "label": [-1]}), y)
    with pytest.raises(DataFormatError, match="row 0: label -1 out of range"):
        read_xnli(y)
    z = tmp_path / "null.parquet"
    pq.write_table(pa.table({"premise": [None], "hypothesis": ["h"], "label": [0]}), z)
    with pytest.raises(DataFormatError, match="row 0: column 'premise' is None"):
        read_xnli(z)


def test_not_parquet_and_unknown_task(tmp_path):
    p = tmp_path / "x.parquet"
    p.write_text("not parquet")
    with pytest.raises(DataFormatError, match="not a readable parquet file"):
        read_xnli(p)
    with pytest.raises(DataFormatError, match="file not found"):
        read_xnli(tmp_path / "nope.parquet")
    with pytest.raises(XltError, match="no Hub parquet reader"):
        read_hub_parquet(p, "marc")
