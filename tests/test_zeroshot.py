"""The zero_shot target (xlt.zeroshot): its question, its encoder, its paths, its table."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.test_config import REPO, base
from xlt.workflow import paper_targets as P
from xlt import zeroshot as Z
from xlt.workflow.config import deep_merge, load_configs, validate
from xlt.errors import XltError


@pytest.fixture(scope="module")
def tiny_cfg():
    return load_configs([REPO / "presets" / "tiny.yaml"])


def ask(cfg: dict, **keys) -> dict:
    return {**cfg, **keys, "encoders": dict(cfg["encoders"])}


def test_the_zero_shot_of_a_paper_recipe_is_that_papers_models_and_evaluations(tiny_cfg):
    """On the tiny preset zero_shot's recipe (underspec's profile, on EN) is underspec's θ_src,
    which adjust scores on its language set: the same models and the same evaluation files.
    (dlfa's PAWS-X baselines have a profile of their own: XTREME's head and no warm-up.)"""
    cfg = ask(tiny_cfg, encoder="tiny", task="ner", langs="adjust")
    q = Z.question(cfg)
    seeds = cfg["zero_shot"]["seeds"]
    assert Z.models(cfg, q.encoder, q.task) == [f"results/models/tiny/pretrained/ner/en.underspec/seed{s}" for s in seeds]
    adjust = {f for t in P.get_paper("adjust").tables for f in P.table_inputs(tiny_cfg, "adjust", t.id)}
    assert set(Z.table_inputs(cfg, q.encoder, q.task, q.langset)) <= adjust
    assert Z.table_files(cfg) == [f"results/tables/zero_shot/tiny.ner.adjust.{x}" for x in ("csv", "md", "tex", "html")]


def test_the_zero_shot_keys_leave_every_paper_target_as_it_is(tiny_cfg):
    cfg = ask(tiny_cfg, encoder="google-bert/bert-base-uncased", task="ner", langs="xtreme_ner")
    cfg["encoders"].update(Z.declared_encoders(cfg))
    assert P.all_tables(cfg) == P.all_tables(tiny_cfg)


@pytest.mark.parametrize("given,name,declared", [
    ("tiny", "tiny", None),
    ("google-bert/bert-base-multilingual-cased", "mbert", None),  # config.yaml's mbert: its models
    ("distilbert/distilbert-base-multilingual-cased", "distilbert_distilbert_base_multilingual_cased",
     {"hub": "distilbert/distilbert-base-multilingual-cased", "revision": None}),
])
def test_an_encoder_is_a_configured_name_or_a_hub_id(tiny_cfg, given, name, declared):
    assert Z.resolve_encoder(tiny_cfg, given) == (name, declared)


def test_a_hub_id_never_takes_the_name_of_another_configured_encoder(tiny_cfg):
    cfg = {**tiny_cfg, "encoders": {**tiny_cfg["encoders"], "org_enc": {"hub": "org/other"}}}
    name, spec = Z.resolve_encoder(cfg, "org/enc")
    assert name.startswith("org_enc_") and spec == {"hub": "org/enc", "revision": None}


def test_a_local_directory_is_declared_under_its_name_and_a_hash_of_its_path(tiny_cfg, tmp_path):
    a, b = tmp_path / "a" / "my-enc", tmp_path / "b" / "my-enc"
    for d in (a, b):
        d.mkdir(parents=True)
        (d / "config.json").write_text("{}")
    name_a, spec_a = Z.resolve_encoder(tiny_cfg, str(a))
    name_b, _ = Z.resolve_encoder(tiny_cfg, str(b))
    assert name_a.startswith("my_enc_") and name_a != name_b  # two directories never share a model
    assert spec_a == {"path": str(a.resolve())}
    cfg = ask(tiny_cfg, encoder=str(a), task="ner", langs="xtreme_ner")
    assert Z.declared_encoders(cfg) == {name_a: spec_a}
    assert Z.declared_encoders(tiny_cfg) == {}
    configured = {**tiny_cfg, "encoders": {**tiny_cfg["encoders"], "mine": {"path": str(a)}}}
    assert Z.resolve_encoder(configured, str(a)) == ("mine", None)


@pytest.mark.parametrize("keys,message", [
    ({"encoder": "tinyy", "task": "ner", "langs": "xtreme_ner"},
     r"config key encoder: unknown encoder 'tinyy'; allowed: .*Did you mean 'tiny'\? Or a local Hugging Face directory"),
    ({"encoder": "tiny", "task": "nerr", "langs": "xtreme_ner"}, r"config key task: unknown task 'nerr'; allowed: .*Did you mean 'ner'\?"),
    ({"encoder": "tiny", "task": "qa.mlq", "langs": "xtreme_ner"}, r"config key task: dataset 'qa\.mlq': unknown set 'mlq'"),
    ({"encoder": "tiny", "task": "ner", "langs": "de"},
     r"config key langs: unknown language set 'de'; .* 'de' is a language: languages go through named language sets"),
    ({"encoder": "tiny", "task": "ner", "langs": ["en", "de"]},
     r"config key langs: \['en', 'de'\] is not a language set's name: languages go through named language sets"),
    ({"encoder": "tiny", "task": "ner"}, r"config key langs: missing; the zero_shot target needs all three: snakemake zero_shot"),
    ({"encoder": "tiny", "task": "marc", "langs": "xtreme_ner"},
     r"config key langs: 'xtreme_ner' has ar, hi, ru, vi, zh, which results/data/marc does not hold; it holds en, de, es, fr "
     r"\(.*zero_shot\.languages\.marc"),
    ({"encoder": "tiny", "task": "ner", "langs": "xtreme_ner", "zero_shot": {"hparams": "tiny", "seeds": [1], "source": "en"}},
     r"config key zero_shot\.hparams: unknown hparams profile 'tiny'"),
])
def test_a_wrong_zero_shot_key_is_one_line_naming_it(tiny_cfg, keys, message):
    with pytest.raises(XltError, match=message):
        validate(ask(tiny_cfg, **keys))


def test_a_local_directory_without_a_model_is_refused(tiny_cfg, tmp_path):
    with pytest.raises(XltError, match=f"config key encoder: {tmp_path} is not a Hugging Face model directory"):
        Z.question(ask(tiny_cfg, encoder=str(tmp_path), task="ner", langs="xtreme_ner"))


def test_the_target_without_its_keys_says_how_to_ask(tiny_cfg):
    with pytest.raises(XltError, match=r"needs --config keys encoder, task and langs: snakemake zero_shot --config encoder="):
        Z.table_files(tiny_cfg)


def test_zero_shot_languages_adds_a_language_set_to_a_tasks_data():
    from xlt.dag import targets as T

    cfg = base()
    assert "ja" not in T.task_languages(cfg, "marc")
    cfg["language_sets"]["my_marc"] = ["en", "ja", "zh"]
    cfg["zero_shot"]["languages"] = {"marc": "my_marc"}
    validate(cfg)
    assert T.task_languages(cfg, "marc")[-2:] == ["ja", "zh"]
    Z.question(ask(cfg, encoder="mbert", task="marc", langs="my_marc"))
    cfg["language_sets"]["my_marc"].append("ru")
    with pytest.raises(XltError, match=r"config key zero_shot\.languages\.marc: task marc has no data for \['ru'\]"):
        validate(cfg)
    cfg["zero_shot"]["languages"] = {"marc": ["en", "ja"]}
    with pytest.raises(XltError, match=r"config key zero_shot\.languages\.marc: \['en', 'ja'\] is not a language set's name"):
        validate(cfg)


@pytest.mark.parametrize("config,message", [
    ({"language_sets": {"mine": "de"}}, r"config key language_sets\.mine: 'de' should be a list of language codes"),
    ({"papers": {"crossmulti": {"languages": ["en", "de"]}}},
     r"config key papers\.crossmulti\.languages: \['en', 'de'\] is not a language set's name: languages go through named"),
    ({"papers": {"dlfa": {"languages": {"xnli": ["en", "de"]}}}},
     r"config key papers\.dlfa\.languages\.xnli: \['en', 'de'\] is not a language set's name"),
    ({"papers": {"crossmulti": {"languages": "de"}}}, r"unknown language set 'de'; .* 'de' is a language: languages go through"),
])
def test_languages_where_a_language_set_belongs_say_so(config, message):
    with pytest.raises(XltError, match=message):
        validate(deep_merge(base(), config))


def _eval(path, seed, scores, collapsed=False):
    path.write_text(json.dumps({"task": "pawsx", "seed": seed, "collapsed": collapsed,
                                "metrics": {lang: {"accuracy": a, "f1_macro": a - 1, "n": 10} for lang, a in scores.items()}}))
    return str(path)


def test_the_table_has_every_language_and_metric_and_the_averages_over_seeds(tmp_path):
    spec = {"encoder": "tiny", "loaded_from": "results/encoders/tiny/pretrained", "task": "pawsx", "langset": "mine",
            "languages": ["en", "de", "zh"], "source": "en", "recipe": "en.underspec", "hparams": "underspec", "seeds": [1, 2]}
    inputs = [_eval(tmp_path / "1.json", 1, {"en": 90, "de": 70, "zh": 60, "fr": 1}),
              _eval(tmp_path / "2.json", 2, {"en": 92, "de": 74, "zh": 50, "fr": 1}, collapsed=True)]
    table, md, tex = Z.build_table(spec, inputs)
    cell = table.set_index(["lang", "metric"])
    assert list(dict.fromkeys(table["lang"])) == ["en", "de", "zh", "avg", "avg_targets"]  # fr: not in the set
    assert cell.loc[("de", "accuracy"), "ours_mean"] == 72 and cell.loc[("de", "f1_macro"), "ours_mean"] == 71
    assert cell.loc[("avg", "accuracy"), "ours_mean"] == pytest.approx((220 / 3 + 216 / 3) / 2)
    assert cell.loc[("avg_targets", "accuracy"), "ours_mean"] == pytest.approx(63.5)
    assert (cell["n_seeds"] == 2).all() and (cell["n_collapsed"] == 1).all()
    assert "paper" not in table and (table["recipe"] == "en.underspec").all()
    assert "| de | 72.00 ± 2.83 †1 | 71.00 ± 2.83 †1 |" in md and "72.00 $\\pm$ 2.83" in tex
    Z.make_table(spec, inputs, str(tmp_path / "out"))
    assert len(pd.read_csv(tmp_path / "out.csv")) == len(table)
    assert (tmp_path / "out.md").read_text() == md


def test_an_evaluation_without_a_language_of_the_set_is_refused(tmp_path):
    spec = {"languages": ["en", "de"], "source": "en"}
    with pytest.raises(XltError, match=r"1\.json: no scores for language 'de'; has en"):
        Z.scores(spec, [_eval(tmp_path / "1.json", 1, {"en": 90})])
    (tmp_path / "2.json").write_text(json.dumps({"task": "pawsx", "seed": 1, "metrics": {"en": {"accuracy": 1}, "de": {"accuracy": 1}}}))
    with pytest.raises(XltError, match=r"2\.json: no metric 'f1_macro' for language 'en'; has accuracy"):
        Z.scores(spec, [str(tmp_path / "2.json")])


def test_a_language_set_reference_has_the_one_name_pattern():
    import yaml

    from xlt.workflow.config import NAME_PATTERN

    schema = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text())
    assert schema["$defs"]["langset_name"]["pattern"] == NAME_PATTERN
