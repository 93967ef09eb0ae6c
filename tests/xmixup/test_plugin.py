"""xmixup's paths and tables: the recipe tag grammar of the X-Mixup extra, which model reads
which data, the config checks, and the tables built from hand-made evaluation and CKA files."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from xlt.workflow.config import load_configs
from xlt.errors import XltError
from xlt.papers import get_table
from xlt.workflow.paper_targets import hparams, table_inputs
from xlt.papers.xmixup import plan as X
from xlt.papers.xmixup import tables as T
from xlt.papers.xmixup.checks import check
from xlt.dag.targets import WILDCARDS, Recipe


@pytest.fixture(scope="module")
def tiny_cfg():
    """The tiny preset with two xmixup seeds (it runs one): means and stds over seeds are tested."""
    cfg = load_configs(["presets/tiny.yaml"])
    cfg["papers"]["xmixup"]["seeds"] = [1, 2]
    return cfg


def test_the_tag_spells_the_mixup_layer_and_the_ablations_with_the_papers_constants():
    extra = X.extra_of("xmixup1")
    assert extra == {"name": "xmixup", "layer": 1, "lambda0": 0.5, "alpha": 0.4, "schedule_k": 1000.0, "mixup": True,
                     "ratio": "learned", "mse": True, "kl": True}
    ablated = X.extra_of("xmixup4-nomix-fixed-nokl")
    assert (ablated["layer"], ablated["mixup"], ablated["ratio"], ablated["mse"], ablated["kl"]) == (4, False, "fixed", True, False)
    assert X.extra_of("dlfa3") is None  # another paper's grammar
    with pytest.raises(XltError, match=re.escape(X.TAG_GRAMMAR)):
        X.extra_of("xmixup1-nomixup")


def test_the_three_models_read_the_task_or_its_translate_train_set(tiny_cfg):
    cfg = tiny_cfg
    assert X.model_of(cfg, "xnli", "zero_shot") == ("xnli", "en.underspec")  # underspec's θ_src (one model)
    assert X.model_of(cfg, "xnli", "trans_train") == ("xnli.translate_train", "ar+de+en+hi+ru+zh.xmixup")
    dataset, recipe = X.model_of(cfg, "xnli", "xmixup")
    assert (dataset, recipe) == ("xnli.translate_train", "ar+de+en+hi+ru+zh.xmixup-xmixup1")
    assert re.fullmatch(WILDCARDS["recipe"], recipe)
    hp = hparams(cfg, recipe, dataset)
    assert hp["extras"] == [X.extra_of("xmixup1")] and hp["dev_languages"] == ["en"]
    assert "extras" not in hparams(cfg, X.model_of(cfg, "xnli", "trans_train")[1], "xnli.translate_train")


def test_xmixup_is_scored_with_its_english_side_where_a_translate_test_set_exists(tiny_cfg):
    cfg = tiny_cfg
    paired = X.scores_file(cfg, "xnli", "xmixup", 1)
    assert paired.endswith("/xnli.translate_train/ar+de+en+hi+ru+zh.xmixup-xmixup1/seed1/on-xnli.translate_test/"
                           "test.xmixup_xnli.json")
    assert X.scores_file(cfg, "xnli", "trans_train", 1).endswith("/ar+de+en+hi+ru+zh.xmixup/seed1/on-xnli/test.xmixup_xnli.json")
    assert X.scores_file(cfg, "xnli", "zero_shot", 2).endswith("/tiny/pretrained/xnli/en.underspec/seed2/test.xmixup_xnli.json")
    files = table_inputs(cfg, "xmixup", "table3")
    assert len(files) == len(set(files)) == 2 * 3  # per seed: three models


def test_tagging_is_refused_for_want_of_public_translate_train_data(tiny_cfg):
    cfg = copy.deepcopy(tiny_cfg)
    cfg["papers"]["xmixup"]["tasks"] = ["ner"]
    with pytest.raises(XltError, match="papers.xmixup.tasks: 'ner': no fetched translate-train data for tagging"):
        check(cfg, cfg["papers"]["xmixup"])


def test_the_task_type_in_the_tag_reads_table10s_constants_and_drops_kl():
    qa, tagging = X.extra_of("xmixup8-qa"), X.extra_of("xmixup4-tagging-nomse")
    assert (qa["layer"], qa["alpha"], qa["schedule_k"], qa["kl"], qa["mse"]) == (8, 0.2, 2000.0, False, True)
    assert (tagging["layer"], tagging["alpha"], tagging["schedule_k"], tagging["kl"], tagging["mse"]) == (4, 0.8, 1000.0, False, False)


def _qa_cfg(tmp_path) -> dict:
    """config.yaml (QA planned: SQuAD / XTREME's translated SQuAD, scored on XQuAD) writing under tmp_path."""
    cfg = load_configs(["config.yaml"])
    cfg["results"] = str(tmp_path)
    return cfg


def test_qa_models_train_on_translated_squad_with_two_epochs_and_score_on_xquad(tmp_path):
    cfg = _qa_cfg(tmp_path)
    dataset, recipe = X.model_of(cfg, "qa", "xmixup")
    assert (dataset, recipe) == ("qa.translate_train", "ar+de+en+es+hi+ru+vi+zh.xmixup_qa-xmixup8-qa")
    hp = hparams(cfg, recipe, dataset)
    assert hp["epochs"] == 2 and hp["extras"] == [X.extra_of("xmixup8-qa")]
    assert X.model_of(cfg, "qa", "zero_shot") == ("qa", "en.xmixup_qa")
    assert X.scores_file(cfg, "qa", "zero_shot", 1).endswith("/qa/en.xmixup_qa/seed1/on-qa.xquad_xtreme/test.xtreme_xquad.json")
    assert X.scores_file(cfg, "qa", "xmixup", 1).endswith("/seed1/on-qa.translate_test/test.xtreme_xquad.json")


def _qa_eval(path: Path, model: str, seed: int, f1: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"task": "qa", "seed": seed, "model": model,
                                "metrics": {x: {"f1": v, "exact_match": v - 10, "n": 10} for x, v in f1.items()}}))


def test_qa_tables_from_hand_made_files_and_the_published_only_tables_say_why(tmp_path):
    cfg = _qa_cfg(tmp_path)
    spec = X.table_spec(cfg)
    langs = spec["langs"]["qa"]
    for seed in (1, 2, 3):
        for model, base in (("zero_shot", 50.0), ("trans_train", 60.0), ("xmixup", 64.0)):
            dataset, recipe = X.model_of(cfg, "qa", model)
            _qa_eval(Path(X.scores_file(cfg, "qa", model, seed)), f"{tmp_path}/models/{dataset}/{recipe}/seed{seed}", seed,
                     {x: base + (10 if x == "en" else 0) for x in langs})
    mlqa_langs = cfg["language_sets"]["xtreme_mlqa"]  # MLQA's seven: Table 16's files, averaged in Table 3
    _qa_test_files(cfg, tmp_path, (("mlqa", X.MODELS),), bases=(40.0, 45.0, 47.0), per_seed=0)
    tydi_langs = cfg["language_sets"]["xtreme_tydiqa"]  # TyDiQA's nine: Table 17's files, averaged in Table 3
    _qa_test_files(cfg, tmp_path, (("tydiqa", X.MODELS),), bases=(30.0, 33.0, 35.0), per_seed=0, english=9)
    qa_files = [f for f in table_inputs(cfg, "xmixup", "table3") if "/qa" in f]
    assert sum("/on-qa.mlqa/" in f for f in qa_files) == sum("/on-qa.tydiqa/" in f for f in qa_files) == 9
    t15, md15, _ = get_table("xmixup", "table15").build(spec, table_inputs(cfg, "xmixup", "table15"))
    cell = t15[(t15["model"] == "xmixup") & (t15["lang"] == "de")].set_index("metric")["ours_mean"]
    assert (cell["f1"], cell["em"]) == (64.0, 54.0) and "XQuAD F1 / EM" in md15
    assert t15[(t15["model"] == "mbert") & (t15["lang"] == "en") & (t15["metric"] == "f1")]["ours_mean"].iloc[0] == 60.0
    t3, md3, _ = get_table("xmixup", "table3").build(spec, qa_files)
    xq = t3[(t3["model"] == "xmixup") & (t3["dataset"] == "xquad") & (t3["encoder"] == "mbert")].set_index("metric")["ours_mean"]
    assert xq["f1"] == pytest.approx(64 + 10 / len(langs)) and xq["em"] == pytest.approx(54 + 10 / len(langs))
    assert "XQuAD F1" in md3 and "XQuAD EM" in md3 and "TyDiQA EM" in md3
    ml = t3[(t3["dataset"] == "mlqa") & (t3["encoder"] == "mbert")].set_index(["model", "metric"])["ours_mean"]
    assert ml[("xmixup", "f1")] == pytest.approx(47 + 1) and ml[("xmixup", "em")] == pytest.approx(37 + 1)
    assert ml[("zero_shot", "f1")] == pytest.approx(41.0)  # beside XTREME's zero-shot (mBERT), as in Table 16
    # TyDiQA: its own models (TyDiQA-GoldP train / translate-train) over its nine languages, Δ beside the paper's
    ty = t3[(t3["dataset"] == "tydiqa") & (t3["encoder"] == "mbert")].set_index(["model", "metric"])
    assert ty.loc[("zero_shot", "f1"), "ours_mean"] == pytest.approx(31.0) and ty.loc[("xmixup", "em"), "ours_mean"] == 26.0
    assert ty.loc[("trans_train", "f1"), "delta"] == pytest.approx(34.0 - ty.loc[("trans_train", "f1"), "paper"])
    assert ty["delta"].notna().all() and len(ty) == 6  # three models, F1 and EM
    spec_six = {**spec, "qa_test_langs": {**spec["qa_test_langs"], "mlqa": mlqa_langs[:-1], "tydiqa": tydi_langs[:-1]}}
    t3_six, _, _ = get_table("xmixup", "table3").build(spec_six, qa_files)  # not all the set's languages: the paper's only
    assert t3_six[t3_six["dataset"].isin(["mlqa", "tydiqa"])]["ours_mean"].isna().all()
    squad_only = copy.deepcopy(cfg)  # TyDiQA scored by the SQuAD models: another setting, not Table 3's column
    del squad_only["papers"]["xmixup"]["qa_tests"]["tydiqa"]["train"]
    squad_only["papers"]["xmixup"]["qa_tests"]["tydiqa"]["models"] = ["zero_shot"]
    assert not any("/on-qa.tydiqa/" in f for f in table_inputs(squad_only, "xmixup", "table3"))
    t3_squad, _, _ = get_table("xmixup", "table3").build(X.table_spec(squad_only), qa_files)
    assert t3_squad[t3_squad["dataset"] == "tydiqa"]["ours_mean"].isna().all()
    t8_files = [f for f in table_inputs(cfg, "xmixup", "table8") if "/qa" in f]
    assert t8_files == [f for f in qa_files if "/on-qa.mlqa/" not in f and "/on-qa.tydiqa/" not in f]  # XQuAD's gap
    t8, _, _ = get_table("xmixup", "table8").build(spec, t8_files)
    assert t8[(t8["model"] == "xmixup") & (t8["dataset"] == "xquad")]["ours_mean"].iloc[0] == pytest.approx(10.0)  # EM gap


# ---- Tables 16 (MLQA) and 17 (TyDiQA-GoldP): the qa models on more test sets --------------------


def _langset_of(path: str) -> str:
    return Path(path).name.split(".")[1]  # test.<langset>.json


def test_mlqa_and_tydiqa_are_scored_on_the_languages_both_the_set_and_the_model_cover(tmp_path):
    from xlt.dag.targets import langset_languages, task_languages

    cfg = _qa_cfg(tmp_path)
    ours = set(cfg["language_sets"]["xtreme_xquad"])  # what the qa models are trained for
    mlqa = table_inputs(cfg, "xmixup", "table16")
    assert len(mlqa) == len(set(mlqa)) == 3 * 3  # three models, three seeds
    assert all("/on-qa.mlqa/" in f for f in mlqa)
    for f in mlqa:  # MLQA's seven languages are all ours: exactly the intersection
        assert set(langset_languages(cfg, _langset_of(f))) == set(task_languages(cfg, "qa.mlqa")) & ours
        assert set(langset_languages(cfg, _langset_of(f))) == {"en", "ar", "de", "es", "hi", "vi", "zh"}
    # the same model files as Table 15's (no model of their own); X-Mixup on the target side alone
    models = {str(Path(f).parent.parent) for f in mlqa}
    assert models == {str(Path(f).parent.parent) for f in table_inputs(cfg, "xmixup", "table15")}
    xm = X.qa_test_file(cfg, "mlqa", "xmixup", 1)
    assert xm.endswith("/qa.translate_train/ar+de+en+es+hi+ru+vi+zh.xmixup_qa-xmixup8-qa/seed1/on-qa.mlqa/test.xtreme_mlqa.json")
    # TyDiQA-GoldP: three models of its own per seed (trained on TyDiQA-GoldP, the paper's setting), every language
    tydi = table_inputs(cfg, "xmixup", "table17")
    assert tydi == [X.qa_test_file(cfg, "tydiqa", m, s) for s in (1, 2, 3) for m in X.MODELS]
    assert [f.split("/pretrained/")[1] for f in tydi[:3]] == [
        "qa.tydiqa_train/en.xmixup_tydiqa/seed1/on-qa.tydiqa/test.xtreme_tydiqa.json",
        f"qa.tydiqa_translate_train/ar+bn+en+fi+id+ko+ru+sw+te.xmixup_tydiqa/seed1/on-qa.tydiqa/test.xtreme_tydiqa.json",
        "qa.tydiqa_translate_train/ar+bn+en+fi+id+ko+ru+sw+te.xmixup_tydiqa-xmixup8-qa/seed1/on-qa.tydiqa/test.xtreme_tydiqa.json"]
    tydi_models = {str(Path(f).parent.parent) for f in tydi}
    assert len(tydi_models) == 9 and not tydi_models & models  # none of Table 15's
    recipe = X.qa_test_model(cfg, "tydiqa", "xmixup")[1]
    hp = hparams(cfg, recipe, "qa.tydiqa_translate_train")  # the set's own profile (4 epochs), mixup at layer 8
    assert hp["epochs"] == 4 and hp["max_length"] == 384 and hp["extras"] == [X.extra_of("xmixup8-qa")]
    no_profile = copy.deepcopy(cfg)
    del no_profile["papers"]["xmixup"]["qa_tests"]["tydiqa"]["train"]["hparams"]
    squad_profile = X.qa_test_model(no_profile, "tydiqa", "zero_shot")[1]
    assert squad_profile == "en.xmixup_qa"  # without its own profile: QA's
    assert langset_languages(cfg, "xtreme_tydiqa") == task_languages(cfg, "qa.tydiqa") == [
        "en", "ar", "bn", "fi", "id", "ko", "ru", "sw", "te"]
    # adjust's evaluations on the same sets keep their own language sets (one MLQA set, read by both)
    assert cfg["papers"]["adjust"]["qa_sets"]["mlqa"] == "adjust_mlqa"


def test_a_translated_model_is_refused_on_a_language_no_translation_reached(tmp_path):
    cfg = _qa_cfg(tmp_path)
    p = copy.deepcopy(cfg["papers"]["xmixup"])
    del p["qa_tests"]["tydiqa"]["train"]  # Table 15's SQuAD models on TyDiQA-GoldP
    with pytest.raises(XltError, match=r"config key papers.xmixup.qa_tests.tydiqa: the translate-train model is trained "
                                       r"for ar, de, en, es, hi, ru, vi, zh \(papers.xmixup.test_languages.qa\), not bn, fi"):
        check(cfg, p)
    p["qa_tests"]["tydiqa"]["models"] = ["zero_shot"]
    check(cfg, p)
    p = copy.deepcopy(cfg["papers"]["xmixup"])
    p["qa_tests"]["tydiqa"]["train"]["hparams"] = "xmixup_tydqa"
    with pytest.raises(XltError, match=r"papers.xmixup.qa_tests.tydiqa.train.hparams: .*'xmixup_tydqa'.*Did you mean 'xmixup_tydiqa'"):
        check(cfg, p)
    p["qa_tests"]["tydiqa"]["train"]["hparams"] = "xmixup_tydiqa"
    p["qa_tests"]["tydiqa"]["train"]["translate_train"] = "qa.tydiqa_translate_trian"
    with pytest.raises(XltError, match=r"papers.xmixup.qa_tests.tydiqa.train.translate_train: .*'qa.tydiqa_translate_trian'"
                                       r".*Did you mean 'qa.tydiqa_translate_train'"):
        check(cfg, p)
    small = copy.deepcopy(cfg)  # translations into fewer languages than the set is scored on
    small["data"]["qa"]["sets"]["tydiqa_translate_train"]["languages"] = ["en", "ar", "ru"]
    with pytest.raises(XltError, match=r"the X-Mixup model is trained for ar, en, ru "
                                       r"\(papers.xmixup.qa_tests.tydiqa.train.translate_train\), not bn, fi"):
        check(small, {**small["papers"]["xmixup"],
                        "qa_tests": {"tydiqa": {**small["papers"]["xmixup"]["qa_tests"]["tydiqa"], "models": ["xmixup"]}}})
    p = copy.deepcopy(cfg["papers"]["xmixup"])
    p["qa_tests"]["mlqa"]["languages"] = "xtreme_tydiqa"  # a language MLQA lacks
    with pytest.raises(XltError, match=r"qa_tests.mlqa: dataset 'qa.mlqa' has no language bn"):
        check(cfg, p)
    p = copy.deepcopy(cfg["papers"]["xmixup"])
    p["qa_tests"] = {"xquad": {"languages": "xtreme_xquad", "models": ["zero_shot"]}}
    with pytest.raises(XltError, match="papers.xmixup.qa_tests"):
        check(cfg, p)


def test_tables_16_and_17_from_hand_made_files_give_every_published_cell_ours_or_a_reason(tmp_path):
    from xlt.tables import unexplained

    cfg = _qa_cfg(tmp_path)
    spec = X.table_spec(cfg)
    _qa_test_files(cfg, tmp_path, (("mlqa", X.MODELS), ("tydiqa", X.MODELS)))
    t16, md16, _ = get_table("xmixup", "table16").build(spec, table_inputs(cfg, "xmixup", "table16"))
    assert unexplained(t16).empty and t16["paper"].notna().sum() == 105  # every published cell kept
    cell = t16[(t16["model"] == "mbert") & (t16["lang"] == "de")].set_index("metric")  # ours zero-shot beside XTREME's
    assert (cell.loc["f1", "ours_mean"], cell.loc["em", "ours_mean"]) == (52.0, 42.0)
    assert cell.loc["f1", "delta"] == pytest.approx(52.0 - cell.loc["f1", "paper"])
    xm = t16[(t16["model"] == "xmixup") & (t16["metric"] == "f1")].set_index("lang")["ours_mean"]
    assert xm["hi"] == 66.0 and xm["avg"] == pytest.approx(66.0 + 7 / 7)  # over MLQA's seven, as the paper's
    tt = t16[t16["model"] == "trans_train"]
    assert tt["paper"].isna().all() and len(tt) == 2 * 8  # its own row: 7 languages and avg, F1 and EM
    assert "MLQA F1 / EM" in md16 and "not reimplemented here" in md16
    assert t16[t16["model"] == "xtune"]["why"].str.contains("not reimplemented").all()
    # TyDiQA-GoldP: its own models (the paper's setting), each beside the paper's row with Δ
    t17, md17, _ = get_table("xmixup", "table17").build(spec, table_inputs(cfg, "xmixup", "table17"))
    assert unexplained(t17).empty and t17["paper"].notna().sum() == 140
    for row, base in (("mbert", 50.0), ("xmixup", 64.0)):  # ours zero-shot beside XTREME's zero-shot (mBERT)
        ours = t17[(t17["model"] == row) & (t17["metric"] == "f1")].set_index("lang")
        assert ours.loc["sw", "ours_mean"] == base + 2 and ours.loc["avg", "ours_mean"] == pytest.approx(base + 2 + 7 / 9)
        assert ours["delta"].notna().all() and len(ours) == 10  # nine languages and avg, every one with Δ
        assert ours.loc["fi", "delta"] == pytest.approx(base + 2 - ours.loc["fi", "paper"])
    tt = t17[t17["model"] == "trans_train"]  # the paper's Table 17 has no translate-train row
    assert tt["paper"].isna().all() and len(tt) == 2 * 10
    assert "zero_shot_squad" not in set(t17["model"]) and T.ZERO_SHOT_TYDIQA not in set(t17["why"])
    assert "TyDiQA's English train" in md17 and "qa.tydiqa_translate_train" in md17 and "never selected on" in md17


def _qa_test_files(cfg: dict, tmp_path, sets, bases=(50.0, 60.0, 64.0), per_seed=1, english=7) -> None:
    """Hand-made F1 of the qa models on each (set, models) of qa_tests: each model's base, plus
    per_seed × seed, English `english` points more (EM 10 less)."""
    for name, models in sets:
        langs = cfg["language_sets"][cfg["papers"]["xmixup"]["qa_tests"][name]["languages"]]
        for seed in (1, 2, 3):
            for model, base in zip(models, bases):
                dataset, recipe = X.qa_test_model(cfg, name, model)
                _qa_eval(Path(X.qa_test_file(cfg, name, model, seed)), f"{tmp_path}/models/{dataset}/{recipe}/seed{seed}",
                         seed, {x: base + per_seed * seed + (english if x == "en" else 0) for x in langs})


def test_table17_with_the_squad_models_keeps_their_zero_shot_row_and_says_why_for_the_papers(tmp_path):
    from xlt.tables import unexplained

    cfg = _qa_cfg(tmp_path)
    del cfg["papers"]["xmixup"]["qa_tests"]["tydiqa"]["train"]
    cfg["papers"]["xmixup"]["qa_tests"]["tydiqa"]["models"] = ["zero_shot"]
    _qa_test_files(cfg, tmp_path, (("tydiqa", ("zero_shot",)),))
    files = table_inputs(cfg, "xmixup", "table17")
    assert [f.split("/pretrained/")[1] for f in files] == [
        f"qa/en.xmixup_qa/seed{s}/on-qa.tydiqa/test.xtreme_tydiqa.json" for s in (1, 2, 3)]
    t17, md17, _ = get_table("xmixup", "table17").build(X.table_spec(cfg), files)
    assert unexplained(t17).empty and t17["paper"].notna().sum() == 140
    own = t17[(t17["model"] == "zero_shot_squad") & (t17["metric"] == "f1")].set_index("lang")["ours_mean"]
    assert own["sw"] == 52.0 and own["avg"] == pytest.approx(52.0 + 7 / 9) and t17[t17["model"] == "zero_shot_squad"]["paper"].isna().all()
    mbert = t17[t17["model"] == "mbert"]  # XTREME's TyDiQA zero-shot trains on TyDiQA's English: not ours' setting
    assert mbert["ours_mean"].isna().all() and (mbert["why"] == T.ZERO_SHOT_TYDIQA).all()
    assert (t17[t17["model"] == "xmixup"]["why"] == T.NOT_RUN_TYDIQA).all()
    assert "zero-shot (SQuAD v1.1)" in md17 and "qa_tests.tydiqa.train does not name those sets" in md17


def test_tables_16_and_17_without_qa_print_the_paper_and_why(tiny_cfg):
    from xlt.tables import unexplained

    spec = X.table_spec(tiny_cfg)  # the tiny preset: tasks [xnli]
    for table_id in ("table16", "table17"):
        assert table_inputs(tiny_cfg, "xmixup", table_id) == []
        table, md, _ = get_table("xmixup", table_id).build(spec, [])
        assert table["paper"].notna().all() and len(table) > 0 and unexplained(table).empty
        assert "Not run: qa is not in papers.xmixup.tasks" in md


def test_tagging_tables_read_another_papers_zero_shot_models_or_print_the_paper_and_why(tmp_path, tiny_cfg):
    cfg = _qa_cfg(tmp_path)
    spec = X.table_spec(cfg)
    z = cfg["papers"]["xmixup"]["zero_shot_tagging"]
    for path in table_inputs(cfg, "xmixup", "table1"):  # dlfa's baselines' score files: no job of xmixup's own
        task = "pos" if "/pos.xtreme/" in path else "ner"
        langs = cfg["language_sets"][z["languages"][task]]
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps({"task": task, "seed": int(path.split("/seed")[1].split("/")[0]),
                                          "model": path.replace("/eval/", "/models/").rsplit("/", 1)[0],
                                          "metrics": {x: {z["metric"][task]: 80.0 if task == "pos" else 70.0, "n": 9}
                                                      for x in langs}}))
    t13, md13, _ = get_table("xmixup", "table13").build(spec, table_inputs(cfg, "xmixup", "table13"))
    assert t13[(t13["model"] == "mbert") & (t13["lang"] == "de")]["ours_mean"].iloc[0] == 80.0
    assert "no fetched translate-train data" in md13  # the X-Mixup rows: the paper's only, and why
    t1, _, _ = get_table("xmixup", "table1").build(spec, table_inputs(cfg, "xmixup", "table1"))
    assert t1[(t1["task"] == "ner") & (t1["lang"] == "hi")]["ours_mean"].iloc[0] == 70.0
    tiny_spec = X.table_spec(tiny_cfg)  # the tiny preset names no zero-shot tagging models: no job, the reason
    for table_id in ("table1", "table13", "table14"):
        assert table_inputs(tiny_cfg, "xmixup", table_id) == []
        table, md, _ = get_table("xmixup", table_id).build(tiny_spec, [])
        assert "no fetched translate-train data" in md and table["paper"].notna().all() and len(table) > 0


def _eval(path: Path, task: str, model: str, seed: int, scores: dict) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"task": task, "seed": seed, "model": model,
                                "metrics": {lang: {"accuracy": v, "n": 10} for lang, v in scores.items()}}))
    return str(path)


def _models(cfg: dict, tmp_path) -> list[tuple[int, str, float, str]]:
    """(seed, model, its base score, its model directory) of the three models of two seeds."""
    out = []
    for seed in (1, 2):
        for model, base in (("zero_shot", 50.0), ("trans_train", 60.0), ("xmixup", 64.0)):
            dataset, recipe = X.model_of(cfg, "xnli", model)
            out.append((seed, model, base, f"{tmp_path}/models/tiny/pretrained/{dataset}/{recipe}/seed{seed}"))
    return out


def _cka(path: Path, scores: dict) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cka": scores}))
    return str(path)


@pytest.fixture
def in_tmp(tiny_cfg, tmp_path):
    """The tiny config writing under tmp_path, its table spec and XNLI's languages."""
    cfg = copy.deepcopy(tiny_cfg)
    cfg["results"] = str(tmp_path)
    spec = X.table_spec(cfg)
    return cfg, spec, spec["langs"]["xnli"]


def test_tables_from_hand_made_files(in_tmp, tmp_path):
    cfg, spec, langs = in_tmp
    for seed, model, base, model_path in _models(cfg, tmp_path):
        # English 10 points above every target; X-Mixup's targets 2 points better with both sides
        # (accuracy falls with the language's position in the set, as the CKA below does)
        scores = {x: base + (10 if x == "en" else 0) + seed - 0.5 * i for i, x in enumerate(langs)}
        # X-Mixup on translate-test: the targets with both sides, 2 points above the target side alone
        own = {x: v + (2 if model == "xmixup" and x != "en" else 0) for x, v in scores.items()}
        _eval(Path(X.scores_file(cfg, "xnli", model, seed)), "xnli", model_path, seed, own)
        # CKA falls with the language's position in the set; accuracy too: rho = 1
        _cka(Path(X.cka_file(cfg, "xnli", model, seed)), {x: 1.0 - 0.1 * i for i, x in enumerate(langs)})
    t3, md3, _ = get_table("xmixup", "table3").build(spec, table_inputs(cfg, "xmixup", "table3"))
    row = t3[(t3["encoder"] == "mbert") & (t3["model"] == "xmixup") & (t3["dataset"] == "xnli")].iloc[0]
    # English alone (74 + seed), the targets with both sides (66 + seed - 0.5 i)
    expected = (74 + 1.5 + sum(66 + 1.5 - 0.5 * i for i in range(1, len(langs)))) / len(langs)
    assert row["ours_mean"] == pytest.approx(expected)
    t8, _, _ = get_table("xmixup", "table8").build(spec, table_inputs(cfg, "xmixup", "table8"))
    gaps = t8[t8["dataset"] == "xnli"].set_index("model")["ours_mean"]
    mean_i = sum(range(1, len(langs))) / (len(langs) - 1)
    assert gaps["trans_train"] == pytest.approx(10 + 0.5 * mean_i) and gaps["mbert"] == pytest.approx(10 + 0.5 * mean_i)
    assert gaps["xmixup"] == pytest.approx(8 + 0.5 * mean_i)
    t7, md7, _ = get_table("xmixup", "table7").build(spec, table_inputs(cfg, "xmixup", "table7"))
    delta = t7[(t7["metric"] == "accuracy") & (t7["model"] == "delta") & (t7["lang"] == "de")]["ours_mean"].iloc[0]
    assert delta == pytest.approx(6)  # X-Mixup's 64 + 2 against translate-train's 60
    t2, md2, _ = get_table("xmixup", "table2").build(spec, table_inputs(cfg, "xmixup", "table2"))
    rho = t2[t2["task"] == "xnli"].set_index("setting")["ours_mean"]
    assert rho["zero_shot"] == pytest.approx(1.0) and rho["translate_train"] == pytest.approx(1.0)
    assert "PAWS-X: not in papers.xmixup.tasks" in md2


def test_a_seed_whose_accuracy_is_the_same_everywhere_has_no_rho_and_says_so(in_tmp, tmp_path):
    cfg, spec, langs = in_tmp
    for seed in (1, 2):
        for model in ("zero_shot", "trans_train"):
            # seed 2 of zero-shot predicts one class: the same accuracy in every language
            scores = {x: 30.0 if (seed == 2 and model == "zero_shot") else 60.0 - i for i, x in enumerate(langs)}
            dataset, recipe = X.model_of(cfg, "xnli", model)
            _eval(Path(X.scores_file(cfg, "xnli", model, seed)), "xnli", f"{tmp_path}/models/{dataset}/{recipe}/seed{seed}",
                  seed, scores)
            _cka(Path(X.cka_file(cfg, "xnli", model, seed)), {x: 1.0 - 0.1 * i for i, x in enumerate(langs)})
    t2, md2, _ = get_table("xmixup", "table2").build(spec, table_inputs(cfg, "xmixup", "table2"))
    row = t2[(t2["task"] == "xnli") & (t2["setting"] == "zero_shot")].iloc[0]
    assert row["n_seeds"] == 1 and row["ours_mean"] == pytest.approx(1.0)
    assert "zero-shot seed 2: undefined (accuracy is the same in every language), left out" in md2


def test_each_ablation_row_is_an_xmixup_variant_or_the_model_on_the_target_side_alone(tiny_cfg):
    cfg = copy.deepcopy(tiny_cfg)
    cfg["papers"]["xmixup"]["ablations"] = {"tasks": ["xnli"], "rows": list(X.ABLATION_FLAGS) + ["wo_mixup_inference"]}
    files = {row: X.ablation_file(cfg, "xnli", row, 1) for row in (*X.ABLATION_FLAGS, "wo_mixup_inference", "xmixup")}
    assert files["wo_mixup"].endswith("/ar+de+en+hi+ru+zh.xmixup-xmixup1-nomix/seed1/on-xnli.translate_test/test.xmixup_xnli.json")
    assert files["wo_mixup_inference"].endswith("/ar+de+en+hi+ru+zh.xmixup-xmixup1/seed1/on-xnli/test.xmixup_xnli.json")
    assert files["wo_both"] == files["wo_consistency_loss"]  # one model
    assert {row: T._ablation_row(f) for row, f in files.items() if row != "wo_both"} == {
        row: row for row in files if row != "wo_both"}
    for row, f in files.items():  # every variant's recipe is a valid path with its extra
        recipe = f.split("/")[-4]
        if "-xmixup" in recipe:
            extra = hparams(cfg, recipe, "xnli.translate_train")["extras"][0]
            assert extra["mixup"] == (row != "wo_mixup") and extra["kl"] == (row not in ("wo_kl", "wo_both",
                                                                                           "wo_consistency_loss"))
    assert table_inputs(cfg, "xmixup", "table9") == [
        X.ablation_file(cfg, "xnli", r, s) for r in ("xmixup", "wo_mse", "wo_kl", "wo_both") for s in (1, 2)]


def test_tiny_table5_and_per_language_table_from_hand_made_files(in_tmp, tmp_path):
    cfg, spec, langs = in_tmp
    for seed, model, base, model_path in _models(cfg, tmp_path):
        _eval(Path(X.scores_file(cfg, "xnli", model, seed)), "xnli", model_path, seed, {x: base + seed for x in langs})
        if model == "xmixup":
            _eval(Path(X.ablation_file(cfg, "xnli", "wo_mixup_inference", seed)), "xnli", model_path, seed,
                  {x: 61.0 + seed for x in langs})
    t5, md5, _ = get_table("xmixup", "table5").build(spec, table_inputs(cfg, "xmixup", "table5"))
    ours = t5[(t5["encoder"] == "mbert") & (t5["dataset"] == "xnli")].set_index("model")["ours_mean"]
    assert ours["xmixup"] == pytest.approx(65.5) and ours["wo_mixup_inference"] == pytest.approx(62.5)
    assert "w/o scheduled sampling: not distinguishable here" in md5
    assert "w/o mixup, w/o consistency loss, λ = λ0: not run" in md5
    t11, md11, _ = get_table("xmixup", "table11").build(spec, table_inputs(cfg, "xmixup", "table11"))
    cell = t11.set_index(["model", "lang"])["ours_mean"]
    # ours translate-train beside the paper's mBERT row (XTREME's translate-train), X-Mixup beside X-Mixup
    assert cell[("mbert", "de")] == pytest.approx(61.5) and cell[("xmixup", "avg")] == pytest.approx(65.5)
    assert cell[("zero_shot", "en")] == pytest.approx(51.5)
    _, md12, _ = get_table("xmixup", "table12").build(spec, table_inputs(cfg, "xmixup", "table12"))
    assert "Not run: pawsx is not in papers.xmixup.tasks" in md12


def test_table12_pairs_ours_zero_shot_with_the_papers_zero_shot_rows(in_tmp, tmp_path):
    """Table 12's mBERT / XLM-R rows are XTREME's zero-shot (their averages are Table 3's zero-shot
    PAWS-X cells): ours zero-shot stands beside them, translate-train on a row of its own; Table
    11's are translate-train (Table 3's mBERT trans-train XNLI), so there it is the other way."""
    from xlt.paperkit.published import load_published

    cfg, _, _ = in_tmp
    cfg["papers"]["xmixup"]["tasks"] = ["xnli", "pawsx"]
    spec = X.table_spec(cfg)
    t3 = load_published("xmixup", "table3").set_index(["encoder", "model", "dataset"])["value"]
    for table_id, dataset, paired in (("table11", "xnli", "trans_train"), ("table12", "pawsx", "zero_shot")):
        paper = load_published("xmixup", table_id).set_index(["model", "lang"])["value"]
        assert paper[("mbert", "avg")] == t3[("mbert", paired, dataset)]
        for seed in (1, 2):
            for model, base in (("zero_shot", 50.0), ("trans_train", 60.0), ("xmixup", 64.0)):
                data, recipe = X.model_of(cfg, dataset, model)
                _eval(Path(X.scores_file(cfg, dataset, model, seed)), dataset,
                      f"{tmp_path}/models/tiny/pretrained/{data}/{recipe}/seed{seed}", seed,
                      {x: base + seed for x in spec["langs"][dataset]})
        table, md, _ = get_table("xmixup", table_id).build(spec, table_inputs(cfg, "xmixup", table_id))
        cell = table.set_index(["model", "lang"])
        alone = "trans_train" if paired == "zero_shot" else "zero_shot"
        assert cell.loc[("mbert", "avg"), "ours_mean"] == pytest.approx({"zero_shot": 51.5, "trans_train": 61.5}[paired])
        assert cell.loc[("mbert", "avg"), "paper"] == paper[("mbert", "avg")]
        assert cell.loc[(alone, "avg"), "ours_mean"] == pytest.approx({"zero_shot": 51.5, "trans_train": 61.5}[alone])
        assert pd.isna(cell.loc[(alone, "avg"), "paper"]) and cell.loc[("xmixup", "avg"), "ours_mean"] == pytest.approx(65.5)
        assert f"ours {X.LABELS[paired]} beside the paper's mBERT row" in md
        assert f"ours {X.LABELS[alone]} on a row of its own" in md


def test_table6_fills_the_cells_where_our_models_saw_the_language_as_the_paper_did(in_tmp, tmp_path):
    """The tiny models train on every language they are scored on: en, ru, zh are seen as in the
    paper (ours); ar, de, hi are unseen in the paper but seen by ours, and the rest are not run
    (the paper's values, each with its reason); no model of the table's own."""
    from xlt.workflow.paper_outputs import published_cells
    from xlt.tables import check_accounted, unexplained

    cfg, spec, langs = in_tmp
    inputs = table_inputs(cfg, "xmixup", "table6")
    assert inputs == [f for f in table_inputs(cfg, "xmixup", "table11") if "/en.underspec/" not in f]
    for seed, model, base, model_path in _models(cfg, tmp_path):
        if model != "zero_shot":
            _eval(Path(X.scores_file(cfg, "xnli", model, seed)), "xnli", model_path, seed,
                  {x: base + seed - i for i, x in enumerate(langs)})
    table, md, _ = get_table("xmixup", "table6").build(spec, inputs)
    check_accounted(table, published_cells("xmixup", "table6"), "xmixup table6")
    assert unexplained(table).empty and len(table) == 48  # every published cell, nothing of ours beside them
    cell = table.set_index(["model", "group", "lang"])
    assert cell.loc[("trans_train", "seen", "en"), "ours_mean"] == pytest.approx(61.5)
    assert cell.loc[("xmixup", "seen", "ru"), "ours_mean"] == pytest.approx(65.5 - langs.index("ru"))
    assert cell.loc[("delta", "seen", "zh"), "ours_mean"] == pytest.approx(4.0)
    assert cell.loc[("delta", "seen", "zh"), "ours_std"] == pytest.approx(0.0)
    assert cell.loc[("trans_train", "unseen", "ar"), "why"].startswith("ar, de, hi: unseen in the paper, seen by our models")
    assert "not in our XNLI language set" in cell.loc[("xmixup", "seen", "bg"), "why"]
    assert cell.loc[("delta", "all", "avg"), "why"].startswith("Avg.: the paper's over its 15 languages")
    assert "| | en (seen) | bg (seen)" in md and "ar (unseen)" in md


def test_table6_with_models_trained_on_the_papers_seen_languages_fills_every_cell(in_tmp, tmp_path):
    """Score files of models trained on the paper's 8 seen languages, scored on its 15: every
    cell is ours, the unseen languages included, and the average over the 15."""
    cfg, _, _ = in_tmp
    cfg = copy.deepcopy(cfg)
    cfg["language_sets"]["table6_paper"] = ["en", "bg", "el", "fr", "ru", "th", "ur", "zh", "ar", "de", "es", "hi", "sw",
                                            "tr", "vi"]  # the paper's 15 (the tiny xtreme_xnli holds 9)
    cfg["papers"]["xmixup"]["languages"] = {"xnli": "table6_paper"}
    spec = X.table_spec(cfg)
    langs = spec["langs"]["xnli"]
    seen = ["en", "bg", "el", "fr", "ru", "th", "ur", "zh"]
    inputs = []
    for seed in (1, 2):
        for model, recipe, on in (("trans_train", Recipe(tuple(seen), "xmixup").name, "on-xnli"),
                                  ("xmixup", Recipe(tuple(seen), "xmixup-xmixup1").name,
                                   "on-xnli.translate_test")):
            run = f"{tmp_path}/eval/tiny/pretrained/xnli.translate_train/{recipe}/seed{seed}"
            base = 70.0 if model == "trans_train" else 72.0
            inputs.append(_eval(Path(f"{run}/{on}/test.table6_paper.json"), "xnli", run.replace("/eval/", "/models/"), seed,
                                {x: base + (0 if x in seen else -5) + seed for x in langs}))
    table, _, _ = get_table("xmixup", "table6").build(spec, inputs)
    assert len(table) == 48 and table["ours_mean"].notna().all() and (table["why"] == "").all()
    cell = table.set_index(["model", "group", "lang"])["ours_mean"]
    assert cell[("trans_train", "unseen", "sw")] == pytest.approx(66.5) and cell[("xmixup", "seen", "el")] == pytest.approx(73.5)
    assert cell[("delta", "unseen", "vi")] == pytest.approx(2.0)
    assert cell[("trans_train", "all", "avg")] == pytest.approx(71.5 - 5 * 7 / 15)


def test_table4_is_ours_only_on_xlmr_base_and_says_why_for_every_other_cell(in_tmp, tmp_path):
    from xlt.tables import unexplained

    cfg, spec, langs = in_tmp
    assert table_inputs(cfg, "xmixup", "table4") == []  # the tiny encoder: not Table 4's setting
    table, md, _ = get_table("xmixup", "table4").build(spec, [])
    assert unexplained(table).empty and table["ours_mean"].isna().all() and len(table) == 9
    assert "Table 4's encoder is XLM-R base; papers.xmixup.encoder is tiny" in md and "xTune (Zheng et al." in md
    cfg = copy.deepcopy(cfg)
    cfg["papers"]["xmixup"]["encoder"] = "xlmr_base"
    spec = X.table_spec(cfg)
    inputs = table_inputs(cfg, "xmixup", "table4")
    assert inputs == [X.scores_file(cfg, "xnli", "xmixup", s) for s in (1, 2)] and "/xlmr_base/" in inputs[0]
    for seed in (1, 2):
        dataset, recipe = X.model_of(cfg, "xnli", "xmixup")
        _eval(Path(X.scores_file(cfg, "xnli", "xmixup", seed)), "xnli", f"{tmp_path}/models/xlmr_base/pretrained/{dataset}/"
              f"{recipe}/seed{seed}", seed, {x: 78.0 + seed for x in langs})
    table, _, _ = get_table("xmixup", "table4").build(spec, inputs)
    ours = table[table["ours_mean"].notna()]
    assert len(ours) == 1 and (ours["model"].iloc[0], ours["dataset"].iloc[0]) == ("xmixup", "xnli")
    assert ours["ours_mean"].iloc[0] == pytest.approx(79.5) and ours["delta"].iloc[0] == pytest.approx(-0.9)
    assert unexplained(table).empty
    # the other tables put XLM-R base beside the paper's XLM-R large rows, and say so
    size = "xlmr_base is not the rows' XLM-R large: Δ compares encoders of different sizes"
    assert size in T._notes(spec, [])[0] and spec["encoder_label"] == "xlmr_large"
    assert size not in T._notes(X.table_spec(in_tmp[0]), [])[0]  # the tiny stand-in for mBERT


@pytest.mark.parametrize("config,mutate,message", [
    # the tiny encoder has 4 layers: the paper's numbering, 1-4 (the mixup inside that layer)
    ("presets/tiny.yaml", lambda p: p["mixup_layer"].update(xnli=5),
     r"papers.xmixup.mixup_layer.xnli: 5 is out of range for encoder 'tiny' \(4 layers\); allowed: 1 … 4"),
    ("presets/tiny.yaml", lambda p: p.update(figure5={"task": "xnli", "layers": [1, 0]}),
     r"papers.xmixup.figure5.layers\[1\]: 0 is out of range for encoder 'tiny'"),
    # mBERT's 12, known from its Hub id before any weights are downloaded
    ("config.yaml", lambda p: p["figure5"].update(layers=[1, 13]),
     r"papers.xmixup.figure5.layers\[1\]: 13 is out of range for encoder 'mbert' \(12 layers\); allowed: 1 … 12"),
])
def test_a_mixup_layer_beyond_the_encoder_is_refused_when_the_config_loads(config, mutate, message):
    cfg = load_configs([config])
    p = copy.deepcopy(cfg["papers"]["xmixup"])
    check(cfg, p)  # the shipped config passes
    mutate(p)
    with pytest.raises(XltError, match=message):
        check(cfg, p)


def test_an_encoder_of_unknown_depth_is_left_to_the_engine():
    cfg = load_configs(["config.yaml"])
    cfg["encoders"]["other"] = {"hub": "someone/some-encoder", "revision": None}
    p = copy.deepcopy(cfg["papers"]["xmixup"])
    p["encoder"] = "other"
    p["mixup_layer"]["xnli"] = 40
    check(cfg, p)  # no shape known here: the engine's own check refuses it when training starts


def test_the_notes_name_each_task_s_own_profile():
    cfg = load_configs(["config.yaml"])
    note = T._notes(X.table_spec(cfg), [])[0]
    assert "profile xmixup, qa: xmixup_qa" in note  # QA trains 2 epochs on its own profile (config.yaml)
    tiny = load_configs(["presets/tiny.yaml"])
    assert "qa:" not in T._notes(X.table_spec(tiny), [])[0]  # no QA on the tiny preset


def test_an_xmixup_models_cka_reads_the_translate_test_set_the_others_their_tasks(tiny_cfg):
    """The CKA of X-Mixup is taken on the states it predicts from: its translate-test set's
    targets with their English side (xlt.papers.xmixup.cka); the other models' on the plain test set."""
    for model, expected in (("xmixup", "xnli.translate_test"), ("trans_train", "xnli"), ("zero_shot", "xnli")):
        dataset, recipe = X.model_of(tiny_cfg, "xnli", model)
        assert X.cka_dataset(tiny_cfg, dataset, recipe) == expected


def test_the_note_says_where_the_zero_shot_models_settings_differ(tiny_cfg):
    cfg = copy.deepcopy(tiny_cfg)
    note = T._notes(X.table_spec(cfg), [])[0]
    hp = cfg["hparams"]
    differs = [k for k in X.SETTINGS if hp["underspec"].get(k) != hp["xmixup"].get(k)]
    assert differs and all(f"{k} {T._shown(hp['underspec'].get(k))} vs {T._shown(hp['xmixup'].get(k))}" in note
                           for k in differs)
    assert "classifier linear vs the engine's default" in note  # the authors' head beside the engine's default one
    cfg["hparams"]["underspec"] = {**hp["underspec"], **{k: hp["xmixup"].get(k) for k in X.SETTINGS}}
    assert "another paper's, the same settings" in T._notes(X.table_spec(cfg), [])[0]


def test_a_collapsed_xmixup_model_gets_the_measured_cause_in_the_notes(in_tmp, tmp_path):
    cfg, spec, langs = in_tmp
    for collapsed in (False, True):
        for seed, model, base, model_path in _models(cfg, tmp_path):
            path = Path(X.scores_file(cfg, "xnli", model, seed))
            _eval(path, "xnli", model_path, seed, {x: base for x in langs})
            report = json.loads(path.read_text())
            path.write_text(json.dumps({**report, "collapsed": collapsed and model == "xmixup" and seed == 2}))
        _, md3, _ = get_table("xmixup", "table3").build(spec, table_inputs(cfg, "xmixup", "table3"))
        _, md8, _ = get_table("xmixup", "table8").build(spec, table_inputs(cfg, "xmixup", "table8"))
        assert (T.MIXUP_COLLAPSE in md3) is collapsed and (T.MIXUP_COLLAPSE in md8) is collapsed


def test_a_collapsed_zero_shot_model_with_a_linear_head_gets_the_measured_cause(in_tmp, tmp_path):
    cfg, spec, langs = in_tmp
    assert spec["zero_shot_classifier"] == "linear"  # the tiny zero-shot row reads underspec's model
    for collapsed_model in (None, "zero_shot", "trans_train"):
        for seed, model, base, model_path in _models(cfg, tmp_path):
            path = Path(X.scores_file(cfg, "xnli", model, seed))
            _eval(path, "xnli", model_path, seed, {x: base for x in langs})
            report = json.loads(path.read_text())
            path.write_text(json.dumps({**report, "collapsed": model == collapsed_model and seed == 2}))
        _, md3, _ = get_table("xmixup", "table3").build(spec, table_inputs(cfg, "xmixup", "table3"))
        assert (T.ZERO_SHOT_LINEAR_HEAD in md3) is (collapsed_model == "zero_shot")
    _, md3, _ = get_table("xmixup", "table3").build({**spec, "zero_shot_classifier": "dense"},
                                                    table_inputs(cfg, "xmixup", "table3"))
    assert T.ZERO_SHOT_LINEAR_HEAD not in md3  # another head: the cause is not this one


def test_table10_reads_the_alpha_and_p_k_each_xmixup_model_trained_with(in_tmp):
    cfg, spec, _ = in_tmp
    paths = table_inputs(cfg, "xmixup", "table10")
    assert len(paths) == len(cfg["papers"]["xmixup"]["seeds"]) and all("xmixup-xmixup1" in p for p in paths)
    for i, path in enumerate(paths):
        Path(path).mkdir(parents=True)
        extra = {**X.extra_of("xmixup1"), "alpha": 0.4 + 0.1 * i}  # the second seed trained with another α
        (Path(path) / "xlt_model.json").write_text(json.dumps({"train_config": {"extras": [{"name": "dlfa"}, extra]}}))
    table, md, _ = get_table("xmixup", "table10").build(spec, paths)
    cell = table.set_index(["param", "task_type"])
    assert cell.loc[("alpha", "classification"), "ours_mean"] == pytest.approx(0.45)
    assert cell.loc[("p_k", "classification"), "ours_mean"] == 1000 and cell.loc[("p_k", "classification"), "delta"] == 0
    assert cell.loc[("alpha", "qa"), "why"].startswith("qa: no task of this type in papers.xmixup.tasks (xnli)")
    assert "xmixup Table 10" in md
