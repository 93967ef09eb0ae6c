"""xmixup's plan: its models, the X-Mixup recipe tag, where each model's numbers are, what each table
reads, and the data sizes the bill counts (no pandas: the workflow reads it when it builds the DAG)."""

from __future__ import annotations

import functools
import re

from xlt.errors import XltError
from xlt.paperkit.base import DataSize
from xlt.paperkit.published import load_published
from xlt.dag.targets import Recipe, eval_file, model_dir, paper_language_set, task_languages
from xlt.dag.targets import task_of
from xlt.registry import get_task

SLUG = "xmixup"
MODELS = ("zero_shot", "trans_train", "xmixup")
CLASSIFICATION = ("xnli", "pawsx")
BUILT = (*CLASSIFICATION, "qa")  # the tasks whose three models run (tagging: no public translate-train data)
# Table 10's task types, and the recipe tag's flag of each (classification: none, as before)
TASK_TYPE = {"xnli": "classification", "pawsx": "classification", "pos": "structured_prediction",
             "ner": "structured_prediction", "qa": "qa"}
TYPE_FLAGS = {"classification": "", "structured_prediction": "-tagging", "qa": "-qa"}
QA_DATASET = "xquad"  # the qa task's test set (XQuAD); MLQA and TyDiQA-GoldP: qa_tests (Tables 16, 17)
QA_METRICS = {"f1": "f1", "em": "exact_match"}  # a table's metric key -> the evaluation's
LABELS = {"zero_shot": "zero-shot", "trans_train": "translate-train", "xmixup": "X-Mixup", "xnli": "XNLI",
          "pawsx": "PAWS-X", "pos": "POS", "ner": "NER", "xquad": "XQuAD", "mlqa": "MLQA", "tydiqa": "TyDiQA",
          "avg": "Avg.", "mbert": "mBERT", "xlmr_large": "XLM-R large", "xlmr": "XLM-R", "joint_align": "Joint-Align",
          "filter": "FILTER", "xtune": "xTune", "cka": "CKA", "accuracy": "accuracy", "delta": "Δ",
          "translate_train": "translate-train", "xlm": "XLM", "mmte": "MMTE",
          "zero_shot_squad": "zero-shot (SQuAD v1.1)"}
LABELS.update({f"{d}_{m}": f"{LABELS[d]} {m.upper()}" for d in ("xquad", "mlqa", "tydiqa") for m in ("f1", "em")})
LABELS.update({"xlmr_base": "XLM-R base", "xtune_r1": "xTune R1", "xtune_r2": "xTune R2"})
NOT_BUILT = ("no fetched translate-train data for tagging (XTREME ships none; the authors' Google translations and "
             "soft labels are only in the Google Drive folder their README links, which this workflow does not fetch), so X-Mixup for POS / NER (built in the engine) is not run: "
             "the paper's values only.")
# Tables 16 (MLQA) and 17 (TyDiQA-GoldP): the qa named set each scores (papers.xmixup.qa_tests.<set>)
# and the row ours zero-shot takes: XTREME's zero-shot row (the paper's mBERT / XLM-R rows) where
# it trains on SQuAD v1.1 as ours does (MLQA); a row of its own where it does not (TyDiQA: XTREME
# trains on TyDiQA-GoldP's 3.7k English questions).
QA_TESTS = {"table16": {"set": "mlqa", "title": "xmixup Table 16: MLQA F1 / EM per language", "zero_shot_row": None},
            "table17": {"set": "tydiqa", "title": "xmixup Table 17: TyDiQA-GoldP F1 / EM per language",
                        "zero_shot_row": "zero_shot_squad"}}


# ---- the X-Mixup extra, spelt in a recipe -----------------------------------------------------

# The paper's constants (its Table 10 and §4): λ0 = 0.5; α and the scheduled-sampling decay k
# per task type, read from the published Table 10 (classification: α 0.4, k 1000).
LAMBDA0 = 0.5
TAG = re.compile(r"xmixup(\d+)(-tagging|-qa)?((?:-(?:nomix|fixed|nomse|nokl))*)")
TAG_GRAMMAR = "xmixup<layer>[-tagging|-qa][-nomix][-fixed][-nomse][-nokl]"
ABLATIONS = {"nomix": ("mixup", False), "fixed": ("ratio", "fixed"), "nomse": ("mse", False), "nokl": ("kl", False)}


@functools.lru_cache(maxsize=None)  # read once: every X-Mixup recipe's hparams ask for it when the DAG is built
def table10(param: str, task_type: str = "classification") -> float:
    pub = load_published(SLUG, "table10")
    return float(pub[(pub["param"] == param) & (pub["task_type"] == task_type)]["value"].iloc[0])


def extra_of(tag: str) -> dict | None:
    """The X-Mixup extra a recipe tag names: `xmixup1` (mixup inside layer 1, the first), the task type
    (none: classification; `-tagging`, `-qa`: Table 10's α and k of that type, no KL term),
    ablations appended (`-nomix`: no cross-attention, the losses kept; `-fixed`: λ = λ0;
    `-nomse`, `-nokl`: without that consistency loss). None: not this paper's tag."""
    if not tag.startswith("xmixup"):
        return None
    m = TAG.fullmatch(tag)
    if not m:
        raise XltError(f"extra tag {tag!r}: expected {TAG_GRAMMAR}")
    kind = {"-tagging": "structured_prediction", "-qa": "qa"}.get(m.group(2), "classification")
    extra = {"name": "xmixup", "layer": int(m.group(1)), "lambda0": LAMBDA0, "alpha": table10("alpha", kind),
             "schedule_k": table10("p_k", kind), "mixup": True, "ratio": "learned", "mse": True,
             "kl": kind == "classification"}
    for flag in filter(None, m.group(3).split("-")):
        key, value = ABLATIONS[flag]
        extra[key] = value
    return extra


# ---- what each model is and where its numbers are ---------------------------------------------


def _langset(p: dict, task: str) -> str:
    """The language set a task's models are scored on: `test_languages` (QA: its training data
    is English SQuAD, its test sets hold more languages), else the task's language set."""
    return (p.get("test_languages") or {}).get(task) or paper_language_set(p, task)


def _testset(p: dict, task: str) -> str:
    """The dataset a task's plain test split comes from: `test_sets` (QA: XQuAD in every
    language, a named set), else the task's own."""
    return (p.get("test_sets") or {}).get(task, task)


def _langs(cfg: dict, task: str) -> list[str]:
    return list(cfg["language_sets"][_langset(cfg["papers"][SLUG], task)])


def targets(cfg: dict, task: str) -> list[str]:
    source = cfg["papers"][SLUG]["source"]
    return [x for x in _langs(cfg, task) if x != source]


def mixup_layer(p: dict, task: str) -> int:
    """The layer X-Mixup mixes in for `task` on the paper's encoder: `mixup_layer.<task>`, an
    integer or {encoder name: layer, default: layer} (§5: QA mixes in the 16th layer of a large
    model, the 8th of a base one)."""
    layer = p["mixup_layer"][task]
    return layer.get(p["encoder"], layer["default"]) if isinstance(layer, dict) else layer


def profile(p: dict, task: str) -> str:
    """The training profile of a task's three models (`task_hparams`, e.g. QA's 2 epochs; else `hparams`)."""
    return (p.get("task_hparams") or {}).get(task, p["hparams"])


def model_of(cfg: dict, task: str, model: str) -> tuple[str, str]:
    """(dataset, recipe) of a model of the paper."""
    p = cfg["papers"][SLUG]
    if model == "zero_shot":  # another paper's English model where the settings agree (one model)
        return task, Recipe((p["source"],), p.get("zero_shot_hparams") or profile(p, task)).name
    return p["translate_train"][task], _translated_recipe(p, task, model, targets(cfg, task))


def _translated_recipe(p: dict, task: str, model: str, target_langs: list[str], hp: str | None = None) -> str:
    """The recipe of a model trained on translations into `target_langs`: translate-train (the
    source language and every target), X-Mixup (the same languages: each target with its
    English original as the other side, English with itself);
    `hp`: its profile (default: the task's)."""
    hp = hp or profile(p, task)
    if model == "trans_train":
        return Recipe((p["source"], *target_langs), hp).name
    if model == "xmixup":  # English a target too, mixed with itself (the authors' training languages)
        tag = f"xmixup{mixup_layer(p, task)}{TYPE_FLAGS[TASK_TYPE[task]]}"
        return Recipe((p["source"], *target_langs), f"{hp}-{tag}").name
    raise XltError(f"xmixup model {model!r}; allowed: {', '.join(MODELS)}")


def qa_test_model(cfg: dict, name: str, model: str) -> tuple[str, str]:
    """(dataset, recipe) of a qa model scored on `qa.<name>`: the set's own where
    papers.xmixup.qa_tests.<name>.train names its training sets (zero-shot on the English set;
    translate-train and X-Mixup on the translate-train set, its languages but the source as
    targets; the set's own profile, `train.hparams`, else QA's), else Table 15's (trained on
    SQuAD / translated SQuAD)."""
    p = cfg["papers"][SLUG]
    train = p["qa_tests"][name].get("train")
    if not train:
        return model_of(cfg, "qa", model)
    hp = train.get("hparams") or profile(p, "qa")
    if model == "zero_shot":
        return train["zero_shot"], Recipe((p["source"],), hp).name
    dataset = train["translate_train"]
    return dataset, _translated_recipe(p, "qa", model, [x for x in task_languages(cfg, dataset) if x != p["source"]], hp)


def scores_file(cfg: dict, task: str, model: str, seed: int, recipe: str | None = None) -> str:
    """Every language's test scores of a model; X-Mixup's on the task's translate-test set where
    the config names one (each target record with its English side: the two sides' predictions
    averaged; English itself alone), else on the plain test set (the target side alone).
    `recipe`: an X-Mixup variant's own (the ablations)."""
    p = cfg["papers"][SLUG]
    dataset, own = model_of(cfg, task, model)
    langset = _langset(p, task)
    testset = None if dataset == _testset(p, task) else _testset(p, task)
    if model == "xmixup" and task in (p.get("translate_test") or {}):
        testset = p["translate_test"][task]
    return eval_file(cfg, p["encoder"], "pretrained", dataset, recipe or own, seed, "test", langset, testset=testset)


def cka_dataset(cfg: dict, dataset: str, recipe: str) -> str:
    """The parallel test set a model's CKA and PCA read: an X-Mixup model's, its task's
    translate-test set where the config names one (each target with its English side, English
    with itself: the mixed states it predicts from); else the task's own."""

    task = task_of(dataset)
    tag = Recipe.parse(recipe).hparams.partition("-")[2]  # <profile>[-<extra tag>]
    mixup = extra_of(tag) is not None
    translate_test = cfg["papers"][SLUG].get("translate_test") or {}
    return translate_test.get(task, task) if mixup else task


def qa_test_file(cfg: dict, name: str, model: str, seed: int) -> str:
    """A qa model's scores on the named set `qa.<name>` (papers.xmixup.qa_tests: MLQA, TyDiQA-GoldP),
    in-language, on its language set; X-Mixup on the target side alone (a plain evaluation)."""
    p = cfg["papers"][SLUG]
    dataset, recipe = qa_test_model(cfg, name, model)
    return eval_file(cfg, p["encoder"], "pretrained", dataset, recipe, seed, "test", p["qa_tests"][name]["languages"],
                     testset=f"qa.{name}")


def cka_file(cfg: dict, task: str, model: str, seed: int) -> str:
    """The CKA of a model's mean-pooled last-layer sentence representations, English vs every
    language, on the task's parallel test set (rule `xmixup_cka`)."""
    p = cfg["papers"][SLUG]
    dataset, recipe = model_of(cfg, task, model)
    return (f"{cfg['results']}/xmixup/cka/{p['encoder']}/pretrained/{dataset}/{recipe}/seed{seed}/"
            f"test.{_langset(p, task)}.json")


def _tasks(spec: dict) -> list[str]:
    return [t for t in spec["tasks"] if t in BUILT]


def _dataset(task: str) -> str:
    return QA_DATASET if task == "qa" else task


def _setting(recipe: Recipe) -> str:
    if "-xmixup" in recipe.hparams:
        return "xmixup"
    return "trans_train" if len(recipe.train_langs) > 1 else "zero_shot"


# the settings the notes compare (a head or an optimizer setting left unset: the engine's default)
SETTINGS = ("lr", "epochs", "batch_size", "warmup_ratio", "max_length", "max_train_examples", "select", "classifier",
            "head_dropout", "adam_betas")


def _zero_shot_differs(cfg: dict, p: dict) -> dict:
    """Where the zero-shot model's profile (another paper's, `zero_shot_hparams`) and the
    paper's own profile disagree: {setting: (zero-shot's, ours)}."""
    if not p.get("zero_shot_hparams"):
        return {}
    zs, own = cfg["hparams"][p["zero_shot_hparams"]], cfg["hparams"][p["hparams"]]
    return {k: (zs.get(k), own.get(k)) for k in SETTINGS if zs.get(k) != own.get(k)}


def table_spec(cfg: dict) -> dict:
    p = cfg["papers"][SLUG]
    return {**p, "langs": {t: _langs(cfg, t) for t in _tasks(p)}, "encoder_label": _encoder_label(p["encoder"]),
            "zero_shot_differs": _zero_shot_differs(cfg, p),
            "zero_shot_classifier": cfg["hparams"][p["zero_shot_hparams"]].get("classifier") if p.get("zero_shot_hparams") else None,
            "qa_test_langs": {name: list(cfg["language_sets"][t["languages"]]) for name, t in (p.get("qa_tests") or {}).items()}}


def _encoder_label(encoder: str) -> str:
    """The published rows ours stand beside: XLM-R large's for an XLM-R encoder, else mBERT's
    (the paper's base encoder; the tiny encoder stands in for it). An encoder of another size
    than the row's is said in the notes (`_size_note`)."""
    return "xlmr_large" if encoder.startswith("xlmr") else "mbert"


# ---- Table 3: main results (average over the language set) ------------------------------------


def main_inputs(cfg: dict) -> list[str]:
    """The three models' scores on each task's own test set (Tables 3 and 8)."""
    p = cfg["papers"][SLUG]
    out = []
    for task in _tasks(p):
        for seed in p["seeds"]:
            out += [scores_file(cfg, task, m, seed) for m in MODELS]
    return list(dict.fromkeys(out))


def table3_inputs(cfg: dict) -> list[str]:
    # MLQA's and TyDiQA's columns: Tables 16 and 17's scores, averaged
    return main_inputs(cfg) + [f for t in QA_TESTS if _in_table3(cfg["papers"][SLUG], t) for f in _qa_test_inputs(t)(cfg)]


def _in_table3(p: dict, table_id: str) -> bool:
    """Whether a QA table's scores are Table 3's column: MLQA's always (SQuAD-trained, as the
    paper's); TyDiQA's only from models trained on TyDiQA-GoldP (qa_tests.tydiqa.train)."""
    t = _qa_tests(p, table_id)
    return t is not None and (QA_TESTS[table_id]["zero_shot_row"] is None or bool(t.get("train")))


UNMIXED = "xmixup_unmixed"  # Table 7's second CKA reading of the X-Mixup model
LABELS[UNMIXED] = "X-Mixup (target side unmixed)"


def table7_inputs(cfg: dict) -> list[str]:
    p = cfg["papers"][SLUG]
    if "xnli" not in p["tasks"]:
        return []
    return [f for seed in p["seeds"] for m in ("trans_train", "xmixup")
            for f in (cka_file(cfg, "xnli", m, seed), scores_file(cfg, "xnli", m, seed))]


def table2_inputs(cfg: dict) -> list[str]:
    p = cfg["papers"][SLUG]
    return [f for task in _tasks(p) for seed in p["seeds"] for m in ("zero_shot", "trans_train")
            for f in (cka_file(cfg, task, m, seed), scores_file(cfg, task, m, seed))]


# ---- Tables 5 and 9: ablations (X-Mixup variants, averaged over languages) ---------------------

# a row -> the recipe tag's flags of its X-Mixup variant (xmixup<layer><flags>)
ABLATION_FLAGS = {"wo_mixup": "-nomix", "constant_ratio": "-fixed", "wo_consistency_loss": "-nomse-nokl",
                  "wo_mse": "-nomse", "wo_kl": "-nokl", "wo_both": "-nomse-nokl"}
ABLATION_ROWS = {"table5": ("xmixup", "wo_mixup", "wo_mixup_inference", "wo_scheduled_sampling", "wo_consistency_loss",
                            "constant_ratio"),
                 "table9": ("xmixup", "wo_mse", "wo_kl", "wo_both")}
LABELS.update({"wo_mixup": "w/o mixup", "wo_mixup_inference": "w/o mixup inference", "constant_ratio": "λ = λ0",
               "wo_scheduled_sampling": "w/o scheduled sampling", "wo_consistency_loss": "w/o consistency loss",
               "wo_mse": "w/o MSE", "wo_kl": "w/o KL", "wo_both": "w/o MSE and KL"})


def ablation_file(cfg: dict, task: str, row: str, seed: int) -> str:
    """The score file of one ablation row: an X-Mixup variant trained with its flags, or (w/o
    mixup inference) the X-Mixup model itself scored on the plain test set, the target side alone."""
    p = cfg["papers"][SLUG]
    dataset, recipe = model_of(cfg, task, "xmixup")
    if row == "xmixup":
        return scores_file(cfg, task, "xmixup", seed)
    if row == "wo_mixup_inference":
        return eval_file(cfg, p["encoder"], "pretrained", dataset, recipe, seed, "test", _langset(p, task),
                         testset=_testset(p, task))
    r = Recipe.parse(recipe)
    return scores_file(cfg, task, "xmixup", seed, Recipe(r.train_langs, r.hparams + ABLATION_FLAGS[row]).name)


def _ablation_inputs(cfg: dict, table_id: str) -> list[str]:
    p = cfg["papers"][SLUG]
    ab = p.get("ablations") or {}
    rows = [r for r in ABLATION_ROWS[table_id] if r == "xmixup" or r in ab.get("rows", [])]
    return [ablation_file(cfg, task, row, seed) for task in ab.get("tasks", []) for row in rows for seed in p["seeds"]]


def table5_inputs(cfg: dict) -> list[str]:
    return _ablation_inputs(cfg, "table5")


def table9_inputs(cfg: dict) -> list[str]:
    return _ablation_inputs(cfg, "table9")


# ---- Tables 11 and 12: per language (XNLI, PAWS-X) ----------------------------------------------

PER_LANGUAGE = {"table11": "xnli", "table12": "pawsx"}


def _per_language_inputs(cfg: dict, table_id: str) -> list[str]:
    p = cfg["papers"][SLUG]
    task = PER_LANGUAGE[table_id]
    if task not in p["tasks"]:
        return []
    return [scores_file(cfg, task, m, seed) for seed in p["seeds"] for m in MODELS]


def table11_inputs(cfg: dict) -> list[str]:
    return _per_language_inputs(cfg, "table11")


def table12_inputs(cfg: dict) -> list[str]:
    return _per_language_inputs(cfg, "table12")


# ---- Table 6: seen and unseen languages (XNLI) --------------------------------------------------

TABLE6_TASK = "xnli"


def table6_inputs(cfg: dict) -> list[str]:
    """Translate-train's and X-Mixup's XNLI score files (Table 11's): the languages a model saw in
    training are read from its recipe, so no model of its own."""
    p = cfg["papers"][SLUG]
    if TABLE6_TASK not in p["tasks"]:
        return []
    return [scores_file(cfg, TABLE6_TASK, m, seed) for seed in p["seeds"] for m in ("trans_train", "xmixup")]


# ---- Table 4: X-Mixup vs xTune on XLM-R base -----------------------------------------------------

TABLE4_ENCODER = "xlmr_base"


def table4_inputs(cfg: dict) -> list[str]:
    """X-Mixup's XNLI score files when the paper's encoder is XLM-R base (Table 4's setting: the
    same files as Table 3's), else none."""
    p = cfg["papers"][SLUG]
    if p["encoder"] != TABLE4_ENCODER or "xnli" not in p["tasks"]:
        return []
    return [scores_file(cfg, "xnli", "xmixup", seed) for seed in p["seeds"]]


def table10_inputs(cfg: dict) -> list[str]:
    """The X-Mixup models of every configured task and seed (Table 10: the α and p_k each one
    trained with, from its xlt_model.json)."""
    p = cfg["papers"][SLUG]
    return [model_dir(cfg, p["encoder"], "pretrained", *model_of(cfg, task, "xmixup"), seed) for task in _tasks(p)
            for seed in p["seeds"]]


# ---- Tables 15-17: QA per language (F1 / EM); Tables 1, 13, 14: tagging (the paper's only) ----


def table15_inputs(cfg: dict) -> list[str]:
    p = cfg["papers"][SLUG]
    return [scores_file(cfg, "qa", m, seed) for seed in p["seeds"] for m in MODELS] if "qa" in p["tasks"] else []


def _qa_tests(p: dict, table_id: str) -> dict | None:
    """papers.xmixup.qa_tests' entry of a QA table, None where the config does not run it."""
    return (p.get("qa_tests") or {}).get(QA_TESTS[table_id]["set"]) if "qa" in p["tasks"] else None


def _qa_test_inputs(table_id: str):
    def inputs(cfg: dict) -> list[str]:
        p = cfg["papers"][SLUG]
        t = _qa_tests(p, table_id)
        return [qa_test_file(cfg, QA_TESTS[table_id]["set"], m, seed) for seed in p["seeds"] for m in t["models"]] if t else []
    return inputs


TAGGING_TABLES = {"table1": ("pos", "ner"), "table13": ("pos",), "table14": ("ner",)}


def _zero_shot_tagging_inputs(table_id: str):
    """The score files of the zero-shot POS / NER models `zero_shot_tagging` names: another
    paper's English models where the settings agree (config.yaml: dlfa's baselines), so the
    table costs no job of its own."""
    def inputs(cfg: dict) -> list[str]:
        p = cfg["papers"][SLUG]
        z = p.get("zero_shot_tagging")
        if not z:
            return []
        recipe = Recipe((p["source"],), z["hparams"]).name
        return [eval_file(cfg, p["encoder"], "pretrained", z["datasets"][t], recipe, seed, "test", z["languages"][t])
                for t in TAGGING_TABLES[table_id] for seed in p["seeds"]]
    return inputs


# Public sizes (docs/data.md) of the QA sets only this paper reads, for the bill: SQuAD v1.1
# train (each translation at most as many questions) and XQuAD (1,190 questions per language).
SQUAD_TRAIN, XQUAD_TEST = 87_599, 1_190


# MLQA test (Lewis et al. 2020) and TyDiQA-GoldP dev (XTREME's test; the Hub's secondary_task
# validation) per language: Tables 16 and 17
MLQA_TEST = {"en": 11590, "ar": 5335, "de": 4517, "es": 5253, "hi": 4918, "vi": 5495, "zh": 5137}
TYDIQA_TRAIN = 3_696  # TyDiQA-GoldP's English train (the paper: "only 3.7k training data in English")
TYDIQA_TEST = {"en": 440, "ar": 921, "bn": 113, "fi": 782, "id": 565, "ko": 276, "ru": 812, "sw": 499, "te": 669}


def data_sizes() -> list[DataSize]:
    where = "public sizes (xlt/papers/xmixup): SQuAD v1.1 train, an upper bound of its translation; XQuAD"

    langs = get_task("qa").languages  # a named set's count is looked up per language
    tests = "public release sizes (xlt/papers/xmixup): MLQA test, TyDiQA-GoldP dev"
    tydi = "public release size (xlt/papers/xmixup): TyDiQA-GoldP English train, an upper bound of its translation"
    return [*(DataSize("qa.translate_train", x, "train", SQUAD_TRAIN, where, 3) for x in langs),
            *(DataSize(d, "en", "train", TYDIQA_TRAIN, tydi, 1) for d in ("qa.tydiqa_train", "qa.tydiqa_translate_train")),
            *(DataSize("qa.tydiqa_translate_train", x, "train", TYDIQA_TRAIN, tydi, 3) for x in TYDIQA_TEST if x != "en"),
            *(DataSize(d, x, "test", XQUAD_TEST, where, 2) for d in ("qa.xquad_xtreme", "qa.translate_test") for x in langs),
            *(DataSize("qa.mlqa", x, "test", n, tests, 1) for x, n in MLQA_TEST.items()),
            *(DataSize("qa.tydiqa", x, "test", n, tests, 1) for x, n in TYDIQA_TEST.items())]
