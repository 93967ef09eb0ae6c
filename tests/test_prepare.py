import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xlt.errors import DataFormatError, XltError
from xlt.io import read_jsonl
from xlt.stages.prepare import prepare_split, write_normalised


def test_unknown_task_language_split(tiny_world):
    _world, raw, manifest = tiny_world
    sc = manifest["source_cfg"]
    with pytest.raises(XltError, match="unknown task 'nre'.*Did you mean 'ner'"):
        prepare_split("nre", "en", "train", raw, sc)
    with pytest.raises(XltError, match="unknown language for task pawsx 'ru'"):
        prepare_split("pawsx", "ru", "train", raw, sc)
    with pytest.raises(XltError, match="unknown split 'validation'"):
        prepare_split("ner", "en", "validation", raw, sc)
    with pytest.raises(XltError, match="bitext has only a 'train' split"):
        prepare_split("bitext", "es", "dev", raw, sc)
    with pytest.raises(XltError, match="non-English"):
        prepare_split("bitext", "en", "train", raw, sc)


def test_missing_files_are_named(tiny_world, tmp_path):
    _world, raw, manifest = tiny_world
    with pytest.raises(XltError, match=r"no raw data for task 'ner', language 'en', split 'train'.*wikiann/en/train"
                                       r".*where there is network: `snakemake --cores 1 prefetch`"):  # fmt: skip
        prepare_split("ner", "en", "train", tmp_path)
    with pytest.raises(XltError, match="SQuAD train is English only"):
        prepare_split("qa", "de", "train", raw, manifest["source_cfg"])
    with pytest.raises(XltError, match="source_cfg.ud.treebanks"):
        prepare_split("pos", "en", "train", raw, {})
    with pytest.raises(XltError, match="treebank directory .*UD_English-EWT does not exist"):
        prepare_split("pos", "en", "train", raw, {"ud": {"treebanks": {"en": ["UD_English-EWT"]}}})


def test_ud_concatenates_treebanks_and_reports_textless(tiny_world):
    world, raw, manifest = tiny_world
    sc = manifest["source_cfg"]
    assert sc["ud"]["treebanks"]["ar"] == ["UD_Arabic-Tiny", "UD_Arabic-TinyNoText"]
    stats = {}
    recs = prepare_split("pos", "ar", "train", raw, sc, stats=stats)
    assert stats["skipped_textless"] == 150 and stats["sentences"] == 600
    assert recs == world.records("pos", "ar", "train")
    assert recs[0]["id"] == "UD_Arabic-Tiny/ar_tiny-train-00001"
    # the text-less treebank has no dev split: skipped; no treebank with the split is an error
    assert len(prepare_split("parsing", "ar", "dev", raw, sc)) == 150
    with pytest.raises(XltError, match="has a dev file"):
        prepare_split("pos", "ar", "dev", raw, {"ud": {"treebanks": {"ar": ["UD_Arabic-TinyNoText"]}}})
    with pytest.raises(XltError, match=r"UD_Arabic-TinyNoText/ar_tinynotext-ud-train\.conllu: no records for task .pos., language .ar., split .train."):
        prepare_split("pos", "ar", "train", raw, {"ud": {"treebanks": {"ar": ["UD_Arabic-TinyNoText"]}}})


def test_xnli_train_source_override(tiny_world, tmp_path):
    _world, raw, manifest = tiny_world
    root = tmp_path / "raw"
    shutil.copytree(raw / "xnli", root / "xnli")
    (root / "multi_nli").mkdir()
    for k in range(2):  # MultiNLI has more columns; two shards, concatenated in order
        pq.write_table(pa.table({"promptID": [k], "premise": [f"p{k}"], "hypothesis": ["h"], "label": [2],
                                 "genre": ["fiction"]}), root / "multi_nli" / f"train-0000{k}-of-00002.parquet")  # fmt: skip
    sc = {"xnli": {"train_source": "multi_nli/train-*.parquet"}}
    recs = prepare_split("xnli", "en", "train", root, sc)
    assert [(r["text"], r["label"]) for r in recs] == [("p0", "contradiction"), ("p1", "contradiction")]
    assert len({r["id"] for r in recs}) == 2
    # dev is still XNLI
    assert prepare_split("xnli", "en", "dev", root, sc) == prepare_split("xnli", "en", "dev", raw)
    # XNLI-MT TSV through the same override, with {lang}
    (root / "XNLI-MT-1.0").mkdir()
    (root / "XNLI-MT-1.0" / "multinli.train.de.tsv").write_text("premise\thypo\tlabel\na\tb\tcontradictory\n")
    sc = {"xnli": {"train_source": "XNLI-MT-1.0/multinli.train.{lang}.tsv"}}
    assert prepare_split("xnli", "de", "train", root, sc)[0]["label"] == "contradiction"
    with pytest.raises(XltError, match="matches no file"):
        prepare_split("xnli", "fr", "train", root, sc)


def test_malformed_raw_file_surfaces_as_data_format_error(tmp_path):
    p = tmp_path / "marc" / "en" / "train.jsonl"
    p.parent.mkdir(parents=True)
    p.write_text('{"id": "a", "text": "t", "label": 9}\n')
    with pytest.raises(DataFormatError, match=r"train.jsonl:1: label 9 out of range"):
        prepare_split("marc", "en", "train", tmp_path)


def test_write_normalised_atomic(tiny_world, tmp_path):
    _world, raw, manifest = tiny_world
    recs = prepare_split("bitext", "hi", "train", raw, manifest["source_cfg"])
    out = tmp_path / "data" / "bitext" / "hi" / "train.jsonl"
    assert write_normalised(recs, out) == len(recs)
    assert read_jsonl(out) == recs
    assert [p.name for p in out.parent.iterdir()] == ["train.jsonl"]  # no temporary left behind


def test_qa_test_sets_and_translate_train_through_overrides(tmp_path):
    from xlt.formats.hub_parquet import write_squad_parquet

    row = {"title": "T", "context": "Moskva.", "question": "?", "answers": {"text": ["Moskva"], "answer_start": [0]}}
    (tmp_path / "tydiqa").mkdir()
    write_squad_parquet(tmp_path / "tydiqa" / "validation-00000-of-00001.parquet",
                        [{**row, "id": "russian-1"}, {**row, "id": "arabic-2"}])  # fmt: skip
    (tmp_path / "mlqa" / "de").mkdir(parents=True)
    write_squad_parquet(tmp_path / "mlqa" / "de" / "test-00000-of-00001.parquet", [{**row, "id": "m1"}])
    sc = {"qa": {"test_source": "tydiqa/validation-00000-of-00001.parquet"}}
    assert [r["id"] for r in prepare_split("qa", "ru", "test", tmp_path, sc)] == ["russian-1"]
    assert [r["id"] for r in prepare_split("qa", "ar", "test", tmp_path, sc)] == ["arabic-2"]
    sc = {"qa": {"test_source": "mlqa/{lang}/{hub_split}-00000-of-00001.parquet"}}
    assert [r["id"] for r in prepare_split("qa", "de", "test", tmp_path, sc)] == ["m1"]
    d = tmp_path / "xtreme_translations" / "PAWSX" / "translate-train"
    d.mkdir(parents=True)
    (d / "en-de-translated.tsv").write_text("a\tb\tA\tB\t1\n")
    sc = {"pawsx": {"train_source": {"de": "xtreme_translations/PAWSX/translate-train/en-{lang}-translated.tsv"}}}
    assert prepare_split("pawsx", "de", "train", tmp_path, sc)[0]["text"] == "A"
    (d / "en-de-translated.tsv").write_text("a\tb\tA\tB\t1\na\tb\tA\t1\n")  # a wrongly populated row: skipped (TFDS)
    stats: dict = {}
    assert len(prepare_split("pawsx", "de", "train", tmp_path, sc, stats=stats)) == 1
    assert stats["quirks"] == {"de/train": {"en-de-translated.tsv": {"skipped_rows": 1}}}
    (d / "en-de-translated.tsv").write_text("a\tb\tA\t1\n")  # nothing left: no reference reads an empty file
    with pytest.raises(XltError, match=r"en-de-translated.tsv: no records for task 'pawsx'"):
        prepare_split("pawsx", "de", "train", tmp_path, sc)
