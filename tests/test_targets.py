import pytest

from tests.test_config import base
from xlt import targets as T
from xlt.errors import XltError


def test_recipe_name_is_canonical_and_round_trips():
    r = T.Recipe(("fr", "en", "de", "es"), "crossmulti")
    assert r.name == "de+en+es+fr.crossmulti"
    assert T.Recipe.parse(r.name) == T.Recipe(("de", "en", "es", "fr"), "crossmulti")
    with pytest.raises(XltError, match="expected"):
        T.Recipe.parse("en")


def test_crossmulti_table2_needs_every_task_setting_seed():
    cfg = base()
    paths = T.crossmulti_table2_inputs(cfg)
    p = cfg["papers"]["crossmulti"]
    assert len(paths) == len(set(paths)) == len(p["tasks"]) * 2 * len(p["seeds"])
    assert "results/eval/mbert/pretrained/pos/en.crossmulti/seed1/test.crossmulti.json" in paths
    assert "results/eval/mbert/pretrained/marc/de+en+es+fr.crossmulti/seed3/test.crossmulti.json" in paths


def test_encoder_sources():
    cfg = base()
    assert T.encoder_source(cfg, "mbert") == "google-bert/bert-base-multilingual-cased"
    assert T.encoder_inputs(cfg, "mbert") == []
    cfg["encoders"]["tiny"] = {"build": {}}
    assert T.encoder_inputs(cfg, "tiny") == ["results/encoders/tiny"]
    with pytest.raises(XltError, match="unknown encoder 'bert'"):
        T.encoder_source(cfg, "bert")


def test_task_languages_and_tables():
    cfg = base()
    assert T.task_languages(cfg, "ner") == ["en", "de", "es", "fr"]
    with pytest.raises(XltError, match="no configured paper uses task 'qa'"):
        T.task_languages(cfg, "qa")
    assert "results/tables/crossmulti/table2.md" in T.all_tables(cfg)
