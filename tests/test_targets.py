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
    # crossmulti's languages, then underspec's sources and targets
    assert T.task_languages(cfg, "ner") == ["en", "de", "es", "fr", "ar", "hi", "ru", "vi", "zh"]
    del cfg["papers"]["underspec"]
    assert T.task_languages(cfg, "ner") == ["en", "de", "es", "fr"]
    with pytest.raises(XltError, match="no configured paper uses task 'qa'"):
        T.task_languages(cfg, "qa")
    assert "results/tables/crossmulti/table2.md" in T.all_tables(cfg)


# ---- underspec ------------------------------------------------------------------------------


def test_underspec_recipes_share_theta_src_across_targets():
    cfg = base()
    pairs = T.underspec_pairs(cfg)
    assert len(pairs) == 8 + 7 and ("en", "ar") in pairs and ("ar", "ar") not in pairs
    r = T.underspec_recipes(cfg, "en", "de")
    assert {k: v.name for k, v in r.items()} == {"src": "en.underspec", "tgt": "de.underspec", "bi": "de+en.underspec"}
    models = {d for st in T.underspec_settings(cfg) for d in T.underspec_models(cfg, st).values()}
    # per encoder, task and seed: 9 monolingual models (θ_tgt of EN-AR is θ_src of source AR:
    # one recipe, one model) + 15 θ_bi
    assert len(models) == 2 * 4 * 3 * (9 + 15)
    assert "results/models/xlmr_large/pretrained/parsing/ar+zh.underspec/seed3" in models
    assert T.underspec_grid_inputs(cfg, "mbert", "ner", "en", "ru", "2") == {
        "src": "results/models/mbert/pretrained/ner/en.underspec/seed2",
        "tgt": "results/models/mbert/pretrained/ner/ru.underspec/seed2",
        "bi": "results/models/mbert/pretrained/ner/en+ru.underspec/seed2",
        "data": "results/data/ner",
    }


def test_underspec_grids_and_figures():
    cfg = base()
    grids = T.underspec_grids(cfg)
    assert len(grids) == len(set(grids))
    one_d = [g for g in grids if g.endswith(".1d.csv")]
    two_d = [g for g in grids if g.endswith(".2d.csv")]
    assert len(one_d) == 2 * 4 * 15 * 3 * 2  # encoders × tasks × pairs × seeds × variants
    # 2D grids for the four settings of Figs. 3 and 10, all parameters, every encoder and seed
    assert len(two_d) == 4 * 2 * 3
    assert "results/underspec/grids/xlmr_large/ner/en-ru/seed1/all.2d.csv" in two_d
    assert "results/underspec/grids/mbert/pos/ar-de/seed3/all.2d.csv" in two_d
    names = T.underspec_figure_names(cfg)
    assert names == ["fig2", "fig3", "fig4", "fig5", "fig6", "fig7", "fig8", "fig9", "fig10", "fig2_encoder"]
    figs = T.underspec_figures(cfg)
    assert len(figs) == 3 * len(names) and "results/figures/underspec/fig7.pdf" in figs
    assert set(figs) <= set(T.all_tables(cfg)) and set(T.paper_figures(cfg, "underspec")) == set(figs)
    # a per-task figure exists only when its task runs; the encoder-only figure only with its variant
    cfg["papers"]["underspec"].update(tasks=["ner", "parsing"], variants=["all"])
    assert T.underspec_figure_names(cfg) == ["fig2", "fig3", "fig4", "fig5", "fig6", "fig7", "fig10"]
