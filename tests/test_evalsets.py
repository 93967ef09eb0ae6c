"""Two-language data sets: mixed-language XNLI and cross-lingual QA pairs (xlt.stages.bilingual_sets), and
the named sets of config.yaml prepared from the world (xlt.stages.prepare, xlt.dag.targets)."""

import pytest

from tests.test_config import base
from xlt.dag import targets as T
from xlt.errors import XltError
from xlt.stages.bilingual_sets import cross_qa, mix_pairs
from xlt.stages.prepare import prepare_split, prepare_task


def pairs(lang, n=40, labels=("entailment", "neutral", "contradiction")):
    return [{"id": f"{lang}-test-{k}", "text": f"{lang} premise {k}", "text_pair": f"{lang} hypothesis {k}",
             "label": labels[k % 3]} for k in range(n)]


def test_mixed_pairs_replace_exactly_one_side_by_the_english_original():
    es, en = pairs("es"), pairs("en")
    mixed = mix_pairs(es, en, lang="es", seed=1)
    for m, t, e in zip(mixed, es, en, strict=True):
        assert m["id"] == t["id"] and m["label"] == t["label"]  # labels unchanged
        side = m["mixed"]["replaced"]
        assert m["mixed"] == {"seed": 1, "replaced": side, "with": "en", "source_id": e["id"]}
        english = {"premise": m["text"] == e["text"], "hypothesis": m["text_pair"] == e["text_pair"]}
        kept = {"premise": m["text"] == t["text"], "hypothesis": m["text_pair"] == t["text_pair"]}
        assert english == {s: s == side for s in english} and kept == {s: s != side for s in kept}
    assert {m["mixed"]["replaced"] for m in mixed} == {"premise", "hypothesis"}


def test_mixed_pairs_are_seeded():
    es, en = pairs("es"), pairs("en")
    sides = lambda seed, lang="es": [m["mixed"]["replaced"] for m in mix_pairs(es, en, lang=lang, seed=seed)]  # noqa: E731
    assert sides(1) == sides(1)
    assert sides(1) != sides(2)
    assert sides(1) != sides(1, lang="ru")  # each language draws its own sides


def test_a_test_set_not_parallel_to_english_fails_naming_the_file():
    es, en = pairs("es"), pairs("en")
    with pytest.raises(XltError, match=r"xnli/es/test\.parquet: 39 pairs, not parallel to xnli/en/test\.parquet \(40 pairs\)"):
        mix_pairs(es[:-1], en, lang="es", seed=1, target_file="xnli/es/test.parquet", english_file="xnli/en/test.parquet")
    shuffled = [es[1], es[0], *es[2:]]
    with pytest.raises(XltError, match=r"xnli/es/test\.parquet: pair 0 \(id 'es-test-1'.*not parallel"):
        mix_pairs(shuffled, en, lang="es", seed=1, target_file="xnli/es/test.parquet", english_file="xnli/en/test.parquet")
    relabelled = [{**es[0], "label": "neutral"}, *es[1:]]
    with pytest.raises(XltError, match="pair 0 .*label 'neutral'.*label 'entailment'"):
        mix_pairs(relabelled, en, lang="es", seed=1)


def qa(lang, ids):
    return [{"id": i, "context": f"{lang} paragraph of {i}", "question": f"{lang} question {i}",
             "answers": {"text": [lang], "answer_start": [0]}} for i in ids]


def test_cross_lingual_qa_joins_question_and_paragraph_on_the_question_id():
    stats = {}
    out = cross_qa(qa("es", ["a", "b", "c"]), qa("en", ["b", "c", "d"]), stats=stats)
    assert [(r["id"], r["question"], r["context"], r["answers"]["text"]) for r in out] == [
        ("b", "es question b", "en paragraph of b", ["en"]), ("c", "es question c", "en paragraph of c", ["en"])]
    assert stats == {"unmatched": 2}
    with pytest.raises(XltError, match="q.json and c.json: no question id in common"):
        cross_qa(qa("es", ["a"]), qa("en", ["b"]), question_file="q.json", context_file="c.json")


def test_named_sets_of_config_yaml_prepared_from_the_world(tiny_world, tmp_path):
    """Each of adjust's and xmixup's QA and XNLI sets read through the real readers from the
    world's files, in every language of the set that the world has (TyDiQA's bn fi id ko sw te
    are not among its nine)."""
    world, raw, manifest = tiny_world
    cfg = base()
    cfg["data"]["ud"] = manifest["source_cfg"]["ud"]
    prepared = {}
    for dataset in ("qa.xquad", "qa.mlqa", "qa.tydiqa", "qa.mlqa_q_target", "qa.mlqa_q_en", "qa.xquad_q_target",
                    "qa.xquad_q_en", "qa.translated", "xnli.mixed"):
        langs = [c for c in T.task_languages(cfg, dataset) if c in world.languages]
        m = prepare_task(T.task_of(dataset), langs, raw, T.source_cfg(cfg, dataset), tmp_path / dataset)
        assert list(m["counts"]) == langs and all(set(c) == set(T.dataset_splits(cfg, dataset)) for c in m["counts"].values())
        prepared[dataset] = m
    xquad = world.records("qa", "es", "test")
    assert prepare_split("qa", "es", "test", raw, T.source_cfg(cfg, "qa.xquad")) == xquad
    assert list(prepared["qa.tydiqa"]["counts"]) == ["en", "ar", "ru"]
    assert prepared["qa.tydiqa"]["counts"]["ru"]["test"] == len(world.records("qa", "ru", "test", "tydiqa/validation-00000-of-00001.parquet"))
    en = {r["id"]: r for r in world.records("qa", "en", "test")}
    q_target = prepare_split("qa", "es", "test", raw, T.source_cfg(cfg, "qa.xquad_q_target"))
    q_en = prepare_split("qa", "es", "test", raw, T.source_cfg(cfg, "qa.xquad_q_en"))
    es = {r["id"]: r for r in xquad}
    assert all(r["context"] == en[r["id"]]["context"] and r["question"] == es[r["id"]]["question"] for r in q_target)
    assert all(r["context"] == es[r["id"]]["context"] and r["question"] == en[r["id"]]["question"] for r in q_en)
    mlqa = prepare_split("qa", "hi", "test", raw, T.source_cfg(cfg, "qa.mlqa_q_target"))
    assert mlqa == world.records("qa", "en", "test", "mlqa-v1/test/test-context-en-question-hi.json")
    mixed = prepared["xnli.mixed"]
    assert mixed["reader_stats"]["mixed"]["ru/test"] == {"premise": 79, "hypothesis": 71}
    recs = prepare_split("xnli", "ru", "test", raw, T.source_cfg(cfg, "xnli.mixed"))
    assert [r["label"] for r in recs] == [r["label"] for r in world.records("xnli", "ru", "test")]
    assert {r["mixed"]["seed"] for r in recs} == {1}


def test_a_language_whose_test_set_is_not_parallel_fails_naming_the_file(tiny_world, tmp_path):
    import shutil

    import pyarrow.parquet as pq

    _world, raw, _ = tiny_world
    root = tmp_path / "raw"
    shutil.copytree(raw / "xnli", root / "xnli")
    path = root / "xnli" / "vi" / "test-00000-of-00001.parquet"
    pq.write_table(pq.read_table(path).slice(1), path)  # one pair short
    cfg = base()
    with pytest.raises(XltError, match=r"xnli/vi/test-00000-of-00001\.parquet: 149 pairs, not parallel to .*xnli/en/test"):
        prepare_split("xnli", "vi", "test", root, T.source_cfg(cfg, "xnli.mixed"))
