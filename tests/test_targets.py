import pytest

from tests.test_config import base, shipped_configs
from xlt.dag import targets as T
from xlt.errors import XltError
from xlt.workflow import paper_targets as P


def tiny_config():
    return dict(shipped_configs())["tiny.yaml"]


def test_recipe_name_is_canonical_and_round_trips():
    r = T.Recipe(("fr", "en", "de", "es"), "crossmulti")
    assert r.name == "de+en+es+fr.crossmulti"
    assert T.Recipe.parse(r.name) == T.Recipe(("de", "en", "es", "fr"), "crossmulti")
    with pytest.raises(XltError, match="expected"):
        T.Recipe.parse("en")


def test_encoder_sources():
    """A Hub encoder is loaded from its snapshot (a DAG input, fetched by download_encoder),
    never from the Hub; a local path is read as it is."""
    cfg = base()
    assert T.encoder_source(cfg, "mbert") == "resources/raw/encoders/mbert"
    assert T.encoder_inputs(cfg, "mbert") == ["resources/raw/encoders/mbert"]
    cfg["encoders"]["tiny"] = {"build": {}}
    assert T.encoder_inputs(cfg, "tiny") == ["results/encoders/tiny/pretrained"]
    cfg["encoders"]["embert"] = {"path": "/data/embert-hf"}
    assert T.encoder_source(cfg, "embert") == "/data/embert-hf" and T.encoder_inputs(cfg, "embert") == []
    assert T.hub_encoders(cfg) == ["mbert", "xlmr_base", "xlmr_large"] and T.snapshot_revision_arg(cfg, "mbert") == ""
    cfg["encoders"]["mbert"]["revision"] = "a" * 40
    assert T.snapshot_revision_arg(cfg, "mbert") == f"--revision {'a' * 40}"
    assert P.prefetch(cfg)[-3:] == [f"resources/raw/encoders/{e}" for e in ("mbert", "xlmr_base", "xlmr_large")]
    assert P.prefetch(cfg)[:-3] == [T.download_manifest(cfg, s) for s in P.download_plan(cfg)]
    with pytest.raises(XltError, match="unknown encoder 'bert'"):
        T.encoder_source(cfg, "bert")


def test_an_adapted_encoder_is_a_directory_the_dag_makes():
    cfg = base()
    init = "mlm-pawsx-crossmulti"
    assert T.Init.parse(init) == T.Init("mlm", "pawsx", "crossmulti") and T.Init.parse(init).name == init
    assert T.Init.parse("mlm-pos.es_ancora-crossmulti").dataset == "pos.es_ancora"
    assert T.encoder_source(cfg, "mbert", init) == "results/encoders/mbert/mlm-pawsx-crossmulti"
    assert T.encoder_inputs(cfg, "mbert", init) == ["results/encoders/mbert/mlm-pawsx-crossmulti"]
    # it starts from the Hub encoder's snapshot and reads the task's prepared data
    assert T.adapt_inputs(cfg, "mbert", init) == {"encoder": ["resources/raw/encoders/mbert"],
                                                  "data": ["results/data/pawsx"]}
    assert T.adapt_languages(cfg, init) == ["en", "de", "es", "fr"]
    with pytest.raises(XltError, match="unknown language set 'klingon'"):
        T.adapt_inputs(cfg, "mbert", "mlm-pawsx-klingon")
    with pytest.raises(XltError, match="expected 'pretrained', 'mlm-<dataset>-<language set>' or 'adjust-"):
        T.Init.parse("dapt-pawsx", P.init_kinds())


def test_model_selection_uses_the_metric_the_paper_reports():
    cfg = base()
    assert T.hparams(cfg, "en.crossmulti", "pos.es_ancora")["select_metric"] == "f1_macro"
    assert T.hparams(cfg, "en.crossmulti", "ner")["select_metric"] == "token_f1_macro"
    assert T.hparams(cfg, "en.underspec", "ner")["select_metric"] == "span_f1"
    cfg["hparams"]["crossmulti"]["select_metric"] = "accuracy"  # a profile's own choice wins
    assert T.hparams(cfg, "en.crossmulti", "pos")["select_metric"] == "accuracy"


def test_a_task_s_own_settings_override_its_profile_for_that_task_only():
    cfg = base()
    cfg["hparams"]["crossmulti"]["per_task"] = {"pawsx": {"lr": 5e-4, "epochs": 10}, "pos": {"batch_size": 16}}
    pawsx = T.hparams(cfg, "de+en+es+fr.crossmulti", "pawsx")
    assert (pawsx["lr"], pawsx["epochs"], pawsx["batch_size"]) == (5e-4, 10, 32)
    assert T.hparams(cfg, "en.crossmulti", "pos.es_ancora")["batch_size"] == 16  # the task of a UD selection
    ner = T.hparams(cfg, "en.crossmulti", "ner")
    assert (ner["lr"], ner["epochs"]) == (1e-5, 5) and "per_task" not in ner
    assert "per_task" not in T.hparams(cfg, "en.crossmulti")  # never handed to TrainConfig


def test_task_languages():
    cfg = base()
    # NER is shared: crossmulti's four, then XTREME's 40 (dlfa), which hold underspec's nine
    ner = T.task_languages(cfg, "ner")
    assert ner[:4] == ["en", "de", "es", "fr"] and len(ner) == 40 and {"ar", "hi", "ru", "vi", "zh"} <= set(ner)
    assert T.task_languages(cfg, "pos.es_ancora") == ["en", "de", "es", "fr"]
    assert T.task_languages(cfg, "pos") == ["en", "ar", "de", "es", "fr", "hi", "ru", "vi", "zh"]
    del cfg["papers"]["underspec"], cfg["papers"]["dlfa"], cfg["papers"]["adjust"], cfg["papers"]["versus"]
    cfg["papers"]["xmixup"]["tasks"].remove("qa")
    assert T.task_languages(cfg, "ner") == ["en", "de", "es", "fr"]
    with pytest.raises(XltError, match="no configured paper uses task 'qa'"):
        T.task_languages(cfg, "qa")


# ---- datasets and downloads --------------------------------------------------------------


def test_datasets_name_the_treebank_selection_of_ud_tasks():
    cfg = base()
    assert T.datasets(cfg).keys() == {"pos.es_ancora", "ner", "pawsx", "marc", "xnli", "pos.xtreme", "pos", "parsing", "qa"}
    assert T.dataset_name(cfg, "crossmulti", "pos") == "pos.es_ancora"
    assert T.dataset_name(cfg, "crossmulti", "ner") == "ner"  # only UD tasks carry a selection
    assert T.dataset_name(cfg, "underspec", "parsing") == "parsing"  # the default selection
    assert (T.task_of("pos.xtreme"), T.treebank_set_of("pos.xtreme"), T.treebank_set_of("ner")) == ("pos", "xtreme", None)
    # a named set lays its version and languages over the default selection
    cm = T.source_cfg(cfg, "pos.es_ancora")["ud"]
    assert cm["version"] == "2.7" and cm["treebanks"]["es"] == ["UD_Spanish-AnCora"] and cm["treebanks"]["en"] == ["UD_English-EWT"]
    assert T.source_cfg(cfg, "pos.xtreme")["ud"] == {"version": "2.5", "treebanks": "all"}
    assert T.source_cfg(cfg, "pos")["ud"]["treebanks"]["es"] == ["UD_Spanish-GSD"]
    assert "sets" not in T.source_cfg(cfg, "pos")["ud"]
    with pytest.raises(XltError, match="unknown treebank set 'ancora'; allowed: es_ancora, xtreme"):
        T.ud_selection(cfg, "ancora")


# The catalog entries the default config reads: the UD releases (2.7 for crossmulti and
# underspec, 2.5 for XTREME), WikiANN, PAWS-X, MARC, XNLI, and MultiNLI for English XNLI train.
NEEDED = {"ud-2.5", "ud-2.7", "wikiann", "paws-x", "marc", "xnli", "mnli",
          # adjust's QA: SQuAD, its test sets (XQuAD, MLQA's zip with its cross-lingual files, TyDiQA),
          # translated SQuAD; MLQA's Hub parquet (a second route whose branch may not exist) is not read
          "squad-json", "xquad-json", "mlqa-zip", "tydiqa", "xtreme-squad-translate-train",
          # xmixup's translate-train / translate-test sets (data.xnli.sets, data.pawsx.sets)
          "xtreme-xnli-translate-train", "xtreme-pawsx-translate-train", "xtreme-xnli-translate-test",
          "xtreme-pawsx-translate-test",
          # xmixup's QA: XQuAD translate-test (data.qa.sets.translate_test), TyDiQA-GoldP's translate-train
          # (data.qa.sets.tydiqa_translate_train: Table 17's models)
          "xtreme-xquad-translate-test", "xtreme-tydiqa-translate-train",
          # adjust's aligned pairs: the alignment stage's WikiMatrix bitext
          "wikimatrix"}


def test_download_plan_of_the_default_config():
    cfg = base()
    plan = P.download_plan(cfg)
    assert set(plan) == NEEDED
    assert plan["wikimatrix"] == cfg["align"]["pairs"]  # the alignment stage's bitext: prefetched too
    no_adjust = {**cfg, "papers": {k: v for k, v in cfg["papers"].items() if k not in ("adjust", "versus")}}
    assert "wikimatrix" not in P.download_plan(no_adjust)  # no configured paper reads aligned pairs
    assert plan["ud-2.7"] == ["en", "de", "es", "fr", "ar", "hi", "ru", "vi", "zh"]  # extracted languages
    assert len(plan["ud-2.5"]) == 33 and len(plan["wikiann"]) == 40 and len(plan["xnli"]) == 15
    assert plan["mnli"] == []  # one file, English only: no language selection
    assert P.download_langs(cfg, "squad") == []  # a source no paper reads: every language of the entry
    # data_all: every real source once (second routes to the same data left out), and the data
    everything = {"ud-2.5", "ud-2.7", "wikiann", "paws-x", "marc", "xnli", "mnli", "xnli-mt", "squad-json",
                  "xquad-json", "mlqa-zip", "tydiqa", "wikimatrix", "xtreme-xnli-translate-train",
                  "xtreme-pawsx-translate-train", "xtreme-squad-translate-train", "xtreme-xquad-translate-test",
                  "xtreme-tydiqa-translate-train", "xtreme-xnli-translate-test", "xtreme-pawsx-translate-test"}
    manifests = [f"resources/raw/manifests/{s}.json" for s in sorted(everything)]
    assert P.data_all(cfg)[: len(everything)] == manifests
    assert P.data_all(cfg)[len(everything):] == [f"results/data/{d}" for d in T.datasets(cfg)]


@pytest.mark.parametrize(
    "dataset,sources",
    [
        ("pos.es_ancora", ["ud-2.7"]),
        ("pos", ["ud-2.7"]),
        ("parsing", ["ud-2.7"]),
        ("pos.xtreme", ["ud-2.5"]),
        ("ner", ["wikiann"]),
        ("pawsx", ["paws-x"]),
        ("marc", ["marc"]),
        ("xnli", ["mnli", "xnli"]),  # English train from MultiNLI; dev / test and the rest XNLI
    ],
)
def test_raw_inputs_per_dataset(dataset, sources):
    cfg = base()
    assert T.raw_inputs(cfg, dataset) == [f"resources/raw/manifests/{s}.json" for s in sources]
    tiny = tiny_config()
    assert T.raw_inputs(tiny, dataset) == ["results/world/manifest.json"]  # the world replaces downloads


def test_raw_sources_of_tasks_no_paper_uses_yet():
    cfg = base()
    cfg["papers"]["adjust"] = {"tasks": ["qa"], "languages": "en_only"}  # not validated: targets only
    cfg["language_sets"]["en_only"] = ["en"]
    assert T.raw_sources(cfg, "qa") == {"squad-json": [], "xquad-json": ["en"]}  # SQuAD JSON, XQuAD test
    # an override the catalog does not deliver fails when the DAG is built, naming the path
    cfg["data"]["xnli"] = {"train_source": {"en": "multinli_1.0/train.parquet"}}
    with pytest.raises(XltError, match="no catalog source delivers multinli_1.0/train.parquet"):
        T.raw_sources(cfg, "xnli")
    cfg["data"]["xnli"] = {"train_source": "/data/my_mnli.parquet"}  # absolute: the user's own file
    assert T.raw_sources(cfg, "xnli") == {"xnli": T.task_languages(cfg, "xnli")}


def test_tiny_preset_downloads_nothing():
    tiny = tiny_config()
    assert P.download_plan(tiny) == {}
    assert P.data_all(tiny) == [f"results/data/{d}" for d in T.datasets(tiny)]
    world = set(tiny["world"]["languages"])
    for paper, spec in tiny["papers"].items():  # every language a paper asks for is in the world
        for task in spec["tasks"]:
            assert set(T.paper_languages(tiny, paper, task)) <= world, (paper, task)


def test_fine_tunes_are_prioritised_by_expected_cost():
    from xlt.dag.targets import finetune_priority

    multi = finetune_priority({"epochs": 5}, "de+en+es+fr.crossmulti")
    assert multi == 20 > finetune_priority({"epochs": 4}, "en+ru.underspec") > finetune_priority({"epochs": 5}, "en.crossmulti")
    assert finetune_priority({}, "en.p") == 3  # TrainConfig's default epochs


# ---- named sets of any task, and evaluation on another dataset of a model's task ---------


def test_a_model_is_scored_on_another_dataset_of_its_task_under_on_testset():
    cfg = base()
    cfg["language_sets"]["adjust"] = ["es", "vi", "hi"]
    own = T.eval_file(cfg, "mbert", "pretrained", "qa", "en.underspec", 1, "test", "adjust")
    assert own == "results/eval/mbert/pretrained/qa/en.underspec/seed1/test.adjust.json"  # unchanged
    assert T.eval_file(cfg, "mbert", "pretrained", "qa", "en.underspec", 1, "test", "adjust", testset="qa.mlqa") == (
        "results/eval/mbert/pretrained/qa/en.underspec/seed1/on-qa.mlqa/test.adjust.json")
    assert T.check_testset(cfg, "qa.translated", "qa.mlqa", "test", "adjust") == "results/data/qa.mlqa"
    with pytest.raises(XltError, match="trained on 'qa' \\(task 'qa'\\) is scored on datasets of its own task only, not of task 'xnli'"):
        T.eval_file(cfg, "mbert", "pretrained", "qa", "en.underspec", 1, "test", "adjust", testset="xnli.mixed")
    with pytest.raises(XltError, match="that is the model's own dataset"):
        T.check_testset(cfg, "qa", "qa", "test", "adjust")
    cfg["language_sets"]["adjust"] = ["es", "ru", "vi", "hi"]
    with pytest.raises(XltError, match=r"dataset 'qa.mlqa' has no language ru; config key data.qa.sets.mlqa.languages: en, ar, de, es, hi, vi, zh"):
        T.eval_file(cfg, "mbert", "pretrained", "qa", "en.underspec", 1, "test", "adjust", testset="qa.mlqa")
    with pytest.raises(XltError, match=r"dataset 'qa.xquad' has no dev split; config key data.qa.sets.xquad.splits: test"):
        T.check_testset(cfg, "qa", "qa.xquad", "dev", "adjust")
    with pytest.raises(XltError, match=r"unknown set 'mlq' of task 'qa' \(config key data.qa.sets\); allowed: mlqa, mlqa_q_en"):
        T.check_testset(cfg, "qa", "qa.mlq", "test", "adjust")
    with pytest.raises(XltError, match="unknown treebank set 'ancora'"):  # UD's message, as before
        T.check_testset(cfg, "pos", "pos.ancora", "test", "crossmulti")


def test_a_named_set_declares_its_languages_splits_and_sources():
    cfg = base()
    assert T.task_languages(cfg, "qa.mlqa") == ["en", "ar", "de", "es", "hi", "vi", "zh"]  # a language set's name (xtreme_mlqa)
    assert T.dataset_splits(cfg, "qa.translated") == ("train", "dev") and T.dataset_splits(cfg, "qa") == ("train", "dev", "test")
    sc = T.source_cfg(cfg, "qa.xquad_q_en")
    assert sc["qa"] == {"splits": ["test"], "cross": {"question": "en"}} and "sets" not in sc["xnli"]
    assert sc["ud"] == T.source_cfg(cfg, "qa")["ud"]  # the default UD selection
    assert T.source_cfg(cfg, "xnli.mixed")["xnli"]["train_source"] == {"en": "mnli/train-00000-of-00001.parquet"}  # laid over
    # the files of the partner language come from the catalog too
    assert T.raw_sources(cfg, "qa.xquad_q_target") == {"xquad-json": ["es", "en", "ru", "vi", "hi"]}
    assert T.raw_sources(cfg, "qa.mlqa_q_target") == {"mlqa-zip": ["es", "vi", "hi"]}
    assert T.raw_sources(cfg, "xnli.mixed") == {"xnli": ["es", "en", "ru", "vi", "hi"]}
    assert T.raw_sources(cfg, "qa.translated") == {"xtreme-squad-translate-train": ["es", "ru", "vi", "hi"]}
    # fetched with the rest once a paper reads the task; prepared only when a job reads them
    cfg["papers"]["adjust"] = {"tasks": ["qa"], "languages": "en_only"}
    cfg["language_sets"]["en_only"] = ["en"]
    assert {"mlqa-zip", "tydiqa", "xtreme-squad-translate-train"} <= set(P.download_plan(cfg))
    assert T.raw_sources(cfg, "qa.mlqa") == {"mlqa-zip": ["en", "ar", "de", "es", "hi", "vi", "zh"]}  # the zip by default
    assert "results/data/qa.mlqa" not in P.data_all(cfg)


def test_one_language_code_stands_for_itself_as_an_evaluations_language_set():
    from xlt.workflow.config import load_configs
    from xlt.dag.targets import langset_languages

    cfg = load_configs(["presets/tiny.yaml"])
    assert langset_languages(cfg, "xtreme_xnli") == cfg["language_sets"]["xtreme_xnli"]
    assert langset_languages(cfg, "hi") == ["hi"]
    with pytest.raises(XltError, match="unknown language set 'adjust_typo'; allowed: .*or one language code"):
        langset_languages(cfg, "adjust_typo")
