"""xmixup: Enhancing Cross-lingual Transfer by Manifold Mixup.

Three models per task and seed, one profile (`papers.xmixup.hparams`):
- `zero_shot`: fine-tuned on English (the task's own data), scored on every language;
- `trans_train`: fine-tuned on English and every target language's machine translation of
  it (the dataset `<task>.translate_train`, XTREME's translate-train), scored on every language;
- `xmixup`: fine-tuned on the same translate-train pairs (the English original as the source
  side, the translation as the target side) with the X-Mixup extra (xlt.engine.extras), spelt
  `<profile>-xmixup<layer>[-nomix][-fixed][-nomse][-nokl]` in the recipe; scored with both
  sides where a translate-test set gives the English side (`<task>.translate_test`:
  classification averages the two sides' logits) and on the plain test set (the target side
  alone: Table 5's "w/o mixup inference").
Tasks: XNLI, PAWS-X (classification) and QA (span QA: trained on XTREME's translated SQuAD,
scored on XQuAD, MLQA; TyDiQA-GoldP's three models train on its own English train and its
translation, `qa_tests.tydiqa.train`). Tagging's X-Mixup is built in the engine but has no public translate-train
data (POS, NER: the paper's values only, and why; their zero-shot rows in Tables 1, 13, 14 read
another paper's English models, `zero_shot_tagging`). Tables 2 (Spearman ρ of CKA vs
accuracy), 3 (main), 6 (seen / unseen languages, from Table 11's models), 7 (CKA and accuracy per
language), 8 (transfer gap), 15 (XQuAD per language), 4 (XLM-R base: ours only with that
encoder); the CKA of a model is computed by the rule `xmixup_cka` (rules/xmixup.smk).
This module only declares (no torch).
"""

from __future__ import annotations

import functools
import re

import pandas as pd

from xlt.errors import XltError, check_config_ref
from xlt.papers.base import DataSize, Paper, RecipeTags, Table
from xlt.papers.xmixup import figures
from xlt.papers.published import load_published
from xlt.tables import COLLAPSE_NOTE, account, account_all, eval_rows, paper_vs_ours, render_grid
from xlt.targets import Recipe, check_testset, eval_file, paper_language_set, task_languages
from xlt.throughput import encoder_depth

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
NOT_BUILT = ("no public translate-train data for tagging (XTREME ships none; the paper's Google translations and "
             "their soft labels were not released), so X-Mixup for POS / NER (built in the engine) is not run: "
             "the paper's values only.")
NOT_RUN_QA = ("MLQA: ours is Table 16's scores (papers.{SLUG}.qa_tests) averaged over MLQA's seven languages, where "
              "it runs all seven, else the paper's only; TyDiQA: Table 17's scores averaged over its nine languages "
              "where it runs all nine with models trained on TyDiQA-GoldP (qa_tests.tydiqa.train, the paper's "
              "setting), else the paper's only.").replace("{SLUG}", SLUG)
# Tables 16 (MLQA) and 17 (TyDiQA-GoldP): the qa named set each scores (papers.xmixup.qa_tests.<set>)
# and the row ours zero-shot takes: XTREME's zero-shot row (the paper's mBERT / XLM-R rows) where
# it trains on SQuAD v1.1 as ours does (MLQA); a row of its own where it does not (TyDiQA: XTREME
# trains on TyDiQA-GoldP's 3.7k English questions).
QA_TESTS = {"table16": {"set": "mlqa", "title": "xmixup Table 16: MLQA F1 / EM per language", "zero_shot_row": None},
            "table17": {"set": "tydiqa", "title": "xmixup Table 17: TyDiQA-GoldP F1 / EM per language",
                        "zero_shot_row": "zero_shot_squad"}}
# Table 17 without qa_tests.tydiqa.train (config.yaml sets it: qa.tydiqa_train, qa.tydiqa_translate_train)
NOT_RUN_TYDIQA = ("TyDiQA-GoldP translate-train / X-Mixup: the paper trains them on TyDiQA-GoldP's English train and "
                  f"XTREME's translation of it; papers.{SLUG}.qa_tests.tydiqa.train does not name those sets (ours trained "
                  "on translated SQuAD are another setting): the paper's values only.")
ZERO_SHOT_TYDIQA = ("XTREME's zero-shot (this row) trains on TyDiQA-GoldP's English train (3.7k questions); without "
                    f"papers.{SLUG}.qa_tests.tydiqa.train ours trains on SQuAD v1.1: its own row (zero-shot, SQuAD), no Δ.")


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
        tag = f"xmixup{p['mixup_layer'][task]}{TYPE_FLAGS[TASK_TYPE[task]]}"
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
    from xlt.targets import task_of

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


def _not_run(published: pd.DataFrame, keys: list[str], rows: list[str], column: str, title: str, reason: str):
    """A table the config does not run: every published cell, and the reason."""
    table = account_all(paper_vs_ours(pd.DataFrame(columns=[*keys, "seed", "value"]), published, keys), reason)
    md, tex = render_grid(table, rows, column, title, [reason], labels=LABELS)
    return table, md, tex


def _not_run_notes(spec: dict, tasks) -> list[str]:
    """Why a published task has no ours: not built (tagging, QA), or not configured."""
    tasks = list(dict.fromkeys(tasks))
    out = [NOT_RUN_QA] if "qa" in tasks and "qa" in _tasks(spec) else []
    tasks = [t for t in tasks if t not in _tasks(spec) and t != "avg"]
    built = [t for t in tasks if t in BUILT]
    out += [f"{', '.join(LABELS.get(t, t) for t in built)}: not in papers.{SLUG}.tasks; the paper's values only."] if built else []
    rest = [t for t in tasks if t not in BUILT]
    return out + ([f"{', '.join(LABELS.get(t, t) for t in rest)}: {NOT_BUILT}"] if rest else [])


def _tasks(spec: dict) -> list[str]:
    return [t for t in spec["tasks"] if t in BUILT]


def _model_rows(spec: dict, paths: list[str]) -> pd.DataFrame:
    """Per-seed, per-language rows (task, model, lang, seed, value, collapsed) of score files."""
    return eval_rows(paths, spec["metric"], setting_of=_setting).rename(columns={"setting": "model"})


def _metric_rows(spec: dict, paths: list[str], qa_metrics=tuple(QA_METRICS)) -> pd.DataFrame:
    """`_model_rows` with a `metric` column: a classification task's accuracy ("acc"), QA's F1
    and EM ("f1", "em", as `qa_metrics` asks)."""
    frames = []
    for i, key in enumerate(qa_metrics):
        rows = _model_rows({**spec, "metric": {**spec["metric"], "qa": QA_METRICS[key]}}, paths)
        rows = rows[rows["task"] == "qa"] if i else rows
        frames.append(rows.assign(metric=[key if t == "qa" else "acc" for t in rows["task"]]))
    return pd.concat(frames, ignore_index=True)


def _dataset(task: str) -> str:
    return QA_DATASET if task == "qa" else task


def _setting(recipe: Recipe) -> str:
    if "-xmixup" in recipe.hparams:
        return "xmixup"
    return "trans_train" if len(recipe.train_langs) > 1 else "zero_shot"


SETTINGS = ("lr", "epochs", "batch_size", "warmup_ratio", "max_length", "max_train_examples", "select")


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
            "qa_test_langs": {name: list(cfg["language_sets"][t["languages"]]) for name, t in (p.get("qa_tests") or {}).items()}}


def _encoder_label(encoder: str) -> str:
    """The published rows ours stand beside: XLM-R large's for an XLM-R encoder, else mBERT's
    (the paper's base encoder; the tiny encoder stands in for it). An encoder of another size
    than the row's is said in the notes (`_size_note`)."""
    return "xlmr_large" if encoder.startswith("xlmr") else "mbert"


def _size_note(spec: dict) -> str:
    """Why Δ crosses model sizes: an XLM-R encoder other than large beside XLM-R large's rows
    (mBERT's rows take mBERT or a built stand-in, `_encoder_label`)."""
    if spec["encoder_label"] != "xlmr_large" or spec["encoder"] == "xlmr_large":
        return ""
    return (f" {spec['encoder']} is not the rows' XLM-R large: Δ compares encoders of different sizes (Table 4 is "
            "the paper's XLM-R base comparison).")


def _zero_shot_note(spec: dict) -> str:
    differs = spec.get("zero_shot_differs") or {}
    if not differs:
        return f" (zero-shot: {spec['zero_shot_hparams']}'s English model, another paper's, the same settings)"
    said = ", ".join(f"{k} {a} vs {b}" for k, (a, b) in differs.items())
    return (f" (zero-shot: {spec['zero_shot_hparams']}'s English model, another paper's, trained with other "
            f"settings than the two translated models: {said})")


MIXUP_COLLAPSE = ("X-Mixup marked †: its consistency terms (MSE of the pooled last layers, KL of the two sides' "
                  "predictions) are both zero when the encoder gives every input the same state; a small encoder "
                  "fine-tuned at a high learning rate (the tiny preset: lr 1e-3, the paper 5e-6) can reach that "
                  "state before the task loss takes hold, and then predicts one class. Measured over seeds and "
                  "ablations on the tiny world by benchmarks/xmixup_tiny_seeds.py (its JSON beside it).")


def _mixup_collapsed(ours: pd.DataFrame | None) -> bool:
    if ours is None or not len(ours) or "collapsed" not in ours:
        return False
    return bool((ours["model"].isin(["xmixup", "delta"]) & ours["collapsed"].eq(True)).any())


def _notes(spec: dict, extra: list[str], ours: pd.DataFrame | None = None) -> list[str]:
    return [f"Ours: encoder {spec['encoder']} beside the paper's {LABELS[spec['encoder_label']]} rows; seeds "
            f"{spec['seeds']}; profile {spec['hparams']}"
            + "".join(f", {task}: {h}" for task, h in (spec.get("task_hparams") or {}).items() if task in _tasks(spec))
            + (_zero_shot_note(spec) if spec.get("zero_shot_hparams") else " for the three models")
            + "; translate-train data: XTREME's (the paper's); model selection on English dev (the paper averages "
            "every language's translate-dev set, which it did not release)." + _size_note(spec),
            "Scheduled sampling: no back-translations are public (the paper's own were not released), so the source "
            "side is always the gold English original.",
            *extra, *([MIXUP_COLLAPSE] if _mixup_collapsed(ours) else []), COLLAPSE_NOTE]


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


def _qa_average_rows(spec: dict, paths: list[str], table_id: str) -> pd.DataFrame:
    """Table 3's MLQA / TyDiQA cells: the qa models' scores on the set (Table 16's / 17's files)
    averaged over its languages — only where papers.xmixup.qa_tests covers all the paper's
    (its average's) and `_in_table3`."""
    name = QA_TESTS[table_id]["set"]
    langs = [x for x in dict.fromkeys(load_published(SLUG, table_id)["lang"]) if x != "avg"]
    rows = _metric_rows(spec, paths) if paths else pd.DataFrame(columns=["task", "lang", "metric"])
    if not set(langs) <= set(spec["qa_test_langs"].get(name, [])) or not _in_table3(spec, table_id):
        rows = rows.iloc[0:0]
    return rows[rows["lang"].isin(langs)].assign(dataset=name)


def table3(spec: dict, inputs: list[str]):
    keys = ["encoder", "model", "task", "dataset", "metric"]
    published = load_published(SLUG, "table3")
    on_set = {t: [x for x in inputs if f"/on-qa.{q['set']}/" in x] for t, q in QA_TESTS.items()}
    own = [x for x in inputs if not any(x in files for files in on_set.values())]
    ours = (_metric_rows(spec, own) if own
            else pd.DataFrame(columns=["task", "model", "lang", "seed", "value", "collapsed", "metric"]))
    ours = ours[[lang in spec["langs"].get(t, []) for t, lang in zip(ours["task"], ours["lang"])]]
    ours = pd.concat([ours.assign(dataset=[_dataset(t) for t in ours["task"]]),
                      *(_qa_average_rows(spec, files, t) for t, files in on_set.items())], ignore_index=True)
    avg = (ours.groupby(["task", "dataset", "model", "seed", "metric"], as_index=False)
           .agg(value=("value", "mean"), collapsed=("collapsed", "any")))
    avg = avg.assign(encoder=spec["encoder_label"])
    table = paper_vs_ours(avg[[*keys, "seed", "value", "collapsed"]], published, keys)
    # a QA dataset's F1 and EM are two columns
    table = table.assign(column=[f"{d}_{m}" if m in QA_METRICS else d for d, m in zip(table["dataset"], table["metric"])])
    not_run = [t for t in dict.fromkeys(published["task"]) if t not in _tasks(spec) and t != "avg"]
    notes = _notes(spec, [
        "A cell is the accuracy (QA: F1, EM) averaged over the task's languages, English included (XTREME's average); "
        "X-Mixup's target languages are scored with their English side mixed in where a translate-test set exists, "
        "English mixed with itself (classification: both sides' class probabilities averaged; QA: the target's span).",
        *_not_run_notes(spec, published["task"]),
        "Avg.: the paper's only (it averages every task, QA included)."], avg)
    md, tex = render_grid(table, ["encoder", "model"], "column", "xmixup Table 3: main results (accuracy, average "
                          "over languages)", notes, labels=LABELS)
    return table, md, tex


# ---- Table 8: the transfer gap -----------------------------------------------------------------


def table8(spec: dict, inputs: list[str]):
    """English minus the mean of the target languages, per seed (lower is better)."""
    keys = ["model", "task", "dataset"]
    published = load_published(SLUG, "table8")
    ours = _metric_rows(spec, inputs, qa_metrics=("em",))  # the paper's QA gaps are EM's
    rows = []
    for (task, model, seed), g in ours.groupby(["task", "model", "seed"]):
        en = g[g["lang"] == spec["source"]]["value"]
        tg = g[(g["lang"] != spec["source"]) & g["lang"].isin(spec["langs"][task])]["value"]
        if len(en) and len(tg):
            rows.append({"model": spec["encoder_label"] if model == "zero_shot" else model, "task": task,
                         "dataset": _dataset(task),
                         "seed": seed, "value": float(en.iloc[0] - tg.mean()), "collapsed": bool(g["collapsed"].any())})
    table = paper_vs_ours(pd.DataFrame(rows, columns=[*keys, "seed", "value", "collapsed"]), published, keys)
    notes = _notes(spec, [f"Gap = English accuracy (QA: EM, as the paper) minus the mean over the target languages, "
                          "per seed. The row "
                          f"{LABELS[spec['encoder_label']]} is zero-shot transfer (the paper's XTREME rows).",
                          *_not_run_notes(spec, published["task"])], pd.DataFrame(rows, columns=["model", "collapsed"]))
    md, tex = render_grid(table, ["model"], "dataset", "xmixup Table 8: cross-lingual transfer gap (points)", notes,
                          labels=LABELS)
    return table, md, tex


# ---- Tables 7 and 2: CKA ---------------------------------------------------------------------


def _cka_rows(paths: list[str], unmixed: bool = False) -> pd.DataFrame:
    """Each CKA file's values by model, language and seed: an X-Mixup model's from its mixed
    target states (what it predicts from); with `unmixed`, also its unmixed ones as the model
    `xmixup_unmixed` (a second, labelled reading)."""
    from xlt.io import read_json

    from xlt.targets import task_of

    rows = []
    for path in paths:  # …/cka/<encoder>/<init>/<dataset>/<recipe>/seed<s>/<split>.<langset>.json
        parts = path.split("/")
        recipe, seed = Recipe.parse(parts[-3]), int(parts[-2].removeprefix("seed"))
        found = read_json(path)
        readings = [(_setting(recipe), found["cka"])]
        if unmixed and "cka_unmixed" in found:
            readings.append((UNMIXED, found["cka_unmixed"]))
        for model, values in readings:
            for lang, value in values.items():
                rows.append({"model": model, "lang": lang, "seed": seed, "value": float(value), "task": task_of(parts[-4])})
    return pd.DataFrame(rows, columns=["model", "lang", "seed", "value", "task"])


UNMIXED = "xmixup_unmixed"  # Table 7's second CKA reading of the X-Mixup model
LABELS[UNMIXED] = "X-Mixup (target side unmixed)"


def table7_inputs(cfg: dict) -> list[str]:
    p = cfg["papers"][SLUG]
    if "xnli" not in p["tasks"]:
        return []
    return [f for seed in p["seeds"] for m in ("trans_train", "xmixup")
            for f in (cka_file(cfg, "xnli", m, seed), scores_file(cfg, "xnli", m, seed))]


def table7(spec: dict, inputs: list[str]):
    keys = ["metric", "model", "lang"]
    published = load_published(SLUG, "table7")
    title = "xmixup Table 7: CKA and XNLI accuracy per language"
    if not inputs:
        return _not_run(published, keys, ["metric", "model"], "lang", title,
                        "Not run: xnli is not in papers.xmixup.tasks; the paper's values only.")
    cka = _cka_rows([f for f in inputs if "/xmixup/cka/" in f], unmixed=True).assign(metric="cka")
    acc = _model_rows(spec, [f for f in inputs if "/xmixup/cka/" not in f]).assign(metric="accuracy")
    acc = acc[acc["lang"].isin(spec["langs"]["xnli"])]
    ours = pd.concat([cka[["metric", "model", "lang", "seed", "value"]], acc[["metric", "model", "lang", "seed", "value"]]])
    delta = _paired_delta(ours)
    table = paper_vs_ours(pd.concat([ours, delta]), published, keys)
    shown = [x for x in published["lang"].drop_duplicates() if x not in spec["langs"]["xnli"]]
    notes = _notes(spec, ["CKA: linear CKA (Kornblith et al. 2019) between English and the language's mean-pooled "
                          "last-layer sentence representations on the XNLI test set (parallel by row), per seed; accuracy: "
                          "XNLI test. Δ: X-Mixup minus translate-train, per seed.",
                          "X-Mixup's CKA is read from the states it predicts from: each target sentence with its English "
                          "translate-test side mixed in, English mixed with itself. The row 'X-Mixup (target side "
                          "unmixed)' reads the same sentences through the encoder alone, which X-Mixup never trained "
                          "for a target language; the paper does not say which it measured.",
                          *([f"Languages not in this run's XNLI set ({', '.join(shown)}) show the paper's values only."]
                            if shown else [])], acc)
    md, tex = render_grid(table, ["metric", "model"], "lang", title, notes,
                          labels=LABELS, columns=spec["langs"]["xnli"])
    return table, md, tex


def _paired_delta(ours: pd.DataFrame) -> pd.DataFrame:
    wide = ours.pivot_table(index=["metric", "lang", "seed"], columns="model", values="value").reset_index()
    if not {"xmixup", "trans_train"} <= set(wide.columns):
        return pd.DataFrame(columns=ours.columns)
    return wide.assign(model="delta", value=wide["xmixup"] - wide["trans_train"])[["metric", "model", "lang", "seed", "value"]]


def table2_inputs(cfg: dict) -> list[str]:
    p = cfg["papers"][SLUG]
    return [f for task in _tasks(p) for seed in p["seeds"] for m in ("zero_shot", "trans_train")
            for f in (cka_file(cfg, task, m, seed), scores_file(cfg, task, m, seed))]


def table2(spec: dict, inputs: list[str]):
    """Spearman's ρ between the per-language CKA and accuracy over the target languages, per seed."""
    from scipy.stats import spearmanr  # only when a table is built

    keys = ["task", "setting"]
    published = load_published(SLUG, "table2")
    cka = _cka_rows([f for f in inputs if "/xmixup/cka/" in f])
    acc = _model_rows(spec, [f for f in inputs if "/xmixup/cka/" not in f])
    rows, pvalues = [], []
    for (task, model, seed), g in cka.groupby(["task", "model", "seed"]):
        a = acc[(acc["task"] == task) & (acc["model"] == model) & (acc["seed"] == seed)].set_index("lang")["value"]
        langs = [x for x in g["lang"] if x != spec["source"] and x in a.index]
        setting = "translate_train" if model == "trans_train" else model
        x, y = g.set_index("lang").loc[langs, "value"], a.loc[langs]
        if x.nunique() < 2 or y.nunique() < 2:  # a rank correlation with a constant is undefined
            pvalues.append(f"{task} {LABELS[setting]} seed {seed}: undefined ({'CKA' if x.nunique() < 2 else 'accuracy'} "
                           "is the same in every language), left out")
            continue
        rho, pvalue = spearmanr(x, y)
        collapsed = acc[(acc["task"] == task) & (acc["model"] == model) & (acc["seed"] == seed)]["collapsed"].any()
        rows.append({"task": task, "setting": setting, "seed": seed, "value": float(rho), "collapsed": bool(collapsed)})
        pvalues.append(f"{task} {LABELS[setting]} seed {seed}: ρ {rho:.2f}, p {pvalue:.3g} ({len(langs)} languages)")
    table = paper_vs_ours(pd.DataFrame(rows, columns=[*keys, "seed", "value", "collapsed"]), published, keys)
    not_run = [t for t in dict.fromkeys(published["task"]) if t not in _tasks(spec)]
    notes = _notes(spec, ["ρ over the target languages between CKA with English and the test accuracy, per seed "
                          "(scipy.stats.spearmanr); the paper marks all four p < 0.05. Ours: " + "; ".join(pvalues) + ".",
                          *([f"{', '.join(LABELS[t] for t in not_run)}: not in papers.xmixup.tasks; the paper's values only."]
                            if not_run else [])])
    md, tex = render_grid(table, ["setting"], "task", "xmixup Table 2: Spearman ρ of CKA and accuracy", notes, labels=LABELS)
    return table, md, tex


# ---- Tables 5 and 9: ablations (X-Mixup variants, averaged over languages) ---------------------

# a row -> the recipe tag's flags of its X-Mixup variant (xmixup<layer><flags>)
ABLATION_FLAGS = {"wo_mixup": "-nomix", "constant_ratio": "-fixed", "wo_consistency_loss": "-nomse-nokl",
                  "wo_mse": "-nomse", "wo_kl": "-nokl", "wo_both": "-nomse-nokl"}
ABLATION_ROWS = {"table5": ("xmixup", "wo_mixup", "wo_mixup_inference", "wo_scheduled_sampling", "wo_consistency_loss",
                            "constant_ratio"),
                 "table9": ("xmixup", "wo_mse", "wo_kl", "wo_both")}
NO_BACK_TRANSLATION = ("w/o scheduled sampling: not distinguishable here — no back-translations are public, so scheduled "
                       "sampling never replaces the gold source and the row would be X-Mixup itself; the paper's value only.")
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


def _ablation_row(path: str) -> str:
    """The ablation row a score file belongs to (its recipe's flags; the plain test set: w/o mixup inference)."""
    parts = path.split("/")
    k = max(i for i, x in enumerate(parts) if re.fullmatch(r"seed\d+", x))
    flags = Recipe.parse(parts[k - 1]).hparams.partition("-xmixup")[2].lstrip("0123456789")
    if flags:
        return next(r for r, f in ABLATION_FLAGS.items() if f == flags)
    on = parts[k + 1] if parts[k + 1].startswith("on-") else ""
    return "xmixup" if on.endswith(".translate_test") or not on else "wo_mixup_inference"


def _ablation_table(spec: dict, inputs: list[str], table_id: str, title: str):
    keys = ["encoder", "model", "task", "dataset", "metric"]
    published = load_published(SLUG, table_id)
    ab = spec.get("ablations") or {}
    reasons = [NO_BACK_TRANSLATION] if "wo_scheduled_sampling" in ABLATION_ROWS[table_id] else []
    skipped = [r for r in ABLATION_ROWS[table_id] if r != "xmixup" and r not in ab.get("rows", [])
               and r != "wo_scheduled_sampling"]
    if skipped:
        reasons.append(f"{', '.join(LABELS[r] for r in skipped)}: not run (papers.{SLUG}.ablations.rows; each is one "
                       "more X-Mixup fine-tuning per seed); the paper's values only.")
    if not inputs:
        return _not_run(published[published["metric"] != "em"], keys, ["encoder", "model"], "dataset", title,
                        f"Not run: papers.{SLUG}.ablations.tasks is empty; the paper's values only (QA: F1).")
    rows = []
    for path in inputs:
        part = _model_rows(spec, [path])
        rows.append(part.assign(model=_ablation_row(path)))
    ours = pd.concat(rows, ignore_index=True)
    ours = ours[[lang in spec["langs"].get(t, []) for t, lang in zip(ours["task"], ours["lang"])]]
    avg = ours.groupby(["task", "model", "seed"], as_index=False).agg(value=("value", "mean"), collapsed=("collapsed", "any"))
    avg = avg.assign(encoder=spec["encoder_label"], dataset=avg["task"], metric="acc")
    table = paper_vs_ours(avg[[*keys, "seed", "value", "collapsed"]], published, keys)
    notes = _notes(spec, ["A cell is the accuracy averaged over the task's languages, English included. Rows: X-Mixup "
                          "trained without the named part (recipe tags -nomix, -fixed, -nomse, -nokl), or (w/o mixup "
                          "inference) the X-Mixup model scored on the target side alone.", *reasons,
                          *_not_run_notes({**spec, "tasks": ab.get("tasks", [])}, published["task"]),
                          "QA cells: F1 (the CSV has EM too)."], avg)
    md, tex = render_grid(table[table["metric"] != "em"], ["encoder", "model"], "dataset", title, notes, labels=LABELS)
    return table, md, tex


def table5(spec: dict, inputs: list[str]):
    return _ablation_table(spec, inputs, "table5", "xmixup Table 5: ablations (accuracy / F1, average over languages)")


def table9(spec: dict, inputs: list[str]):
    return _ablation_table(spec, inputs, "table9", "xmixup Table 9: consistency losses (average over languages)")


# ---- Tables 11 and 12: per language (XNLI, PAWS-X) ----------------------------------------------

PER_LANGUAGE = {"table11": "xnli", "table12": "pawsx"}
# Which of ours stands beside the paper's mBERT / XLM-R row (published/index.yaml): in Table 11
# those rows are XTREME's translate-train (mBERT avg 75.1 = Table 3's mBERT trans-train), in
# Table 12 XTREME's zero-shot (avg 81.9 and 86.4 = Table 3's zero-shot PAWS-X cells); the other
# of ours takes a row of its own.
ENCODER_ROW = {"table11": "trans_train", "table12": "zero_shot"}
ENCODER_ROW_SOURCE = {"trans_train": "XTREME's translate-train results", "zero_shot": "XTREME's zero-shot results"}


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


def _per_language_table(spec: dict, inputs: list[str], table_id: str):
    task = PER_LANGUAGE[table_id]
    keys = ["model", "lang"]
    published = load_published(SLUG, table_id)
    title = f"xmixup Table {table_id[5:]}: {LABELS[task]} accuracy per language"
    if not inputs:
        return _not_run(published, keys, ["model"], "lang", title,
                        f"Not run: {task} is not in papers.{SLUG}.tasks; the paper's values only.")
    ours = _model_rows(spec, inputs)
    ours = ours[ours["lang"].isin(spec["langs"][task])]
    avg = ours.groupby(["model", "seed"], as_index=False).agg(value=("value", "mean"), collapsed=("collapsed", "any"))
    ours = pd.concat([ours[["model", "lang", "seed", "value", "collapsed"]], avg.assign(lang="avg")], ignore_index=True)
    paired = ENCODER_ROW[table_id]
    alone = next(m for m in MODELS if m not in (paired, "xmixup"))
    ours["model"] = ours["model"].replace({paired: spec["encoder_label"].split("_")[0]})
    table = paper_vs_ours(ours, published, keys)
    notes = _notes(spec, [f"Rows: ours {LABELS[paired]} beside the paper's {LABELS[spec['encoder_label']]} row "
                          f"({ENCODER_ROW_SOURCE[paired]}), ours X-Mixup beside the paper's X-Mixup (XLM-R large), ours "
                          f"{LABELS[alone]} on a row of its own. avg: over the languages we run.",
                          "Languages we do not run show the paper's values only."], ours)
    md, tex = render_grid(table, ["model"], "lang", title, notes, labels=LABELS,
                          columns=[*spec["langs"][task], "avg"])
    return table, md, tex


def table11(spec: dict, inputs: list[str]):
    return _per_language_table(spec, inputs, "table11")


# ---- Table 6: seen and unseen languages (XNLI) --------------------------------------------------

TABLE6_TASK = "xnli"


def table6_inputs(cfg: dict) -> list[str]:
    """Translate-train's and X-Mixup's XNLI score files (Table 11's): the languages a model saw in
    training are read from its recipe, so no model of its own."""
    p = cfg["papers"][SLUG]
    if TABLE6_TASK not in p["tasks"]:
        return []
    return [scores_file(cfg, TABLE6_TASK, m, seed) for seed in p["seeds"] for m in ("trans_train", "xmixup")]


def _trained_on(path: str, source: str) -> list[str]:
    """The languages a score file's model saw in training: its recipe's, and the source side."""
    parts = path.split("/")
    k = max(i for i, x in enumerate(parts) if re.fullmatch(r"seed\d+", x))
    return sorted({source, *Recipe.parse(parts[k - 1]).train_langs})


def table6(spec: dict, inputs: list[str]):
    """Per language, translate-train and X-Mixup accuracy and their per-seed difference, each
    language grouped as seen or unseen by the language our models trained on. A published cell
    is ours only where our model stands in the same group for that language (the paper: trained
    on en bg el fr ru th ur zh, tested on those and on ar de es hi sw tr vi)."""
    keys = ["model", "group", "lang"]
    published = load_published(SLUG, "table6")
    title = "xmixup Table 6: XNLI accuracy on seen and unseen languages"
    if not inputs:
        return _not_run(published, keys, ["model"], "lang", title,
                        f"Not run: {TABLE6_TASK} is not in papers.{SLUG}.tasks; the paper's values only.")
    langs, source = spec["langs"][TABLE6_TASK], spec["source"]
    frames, seen = [], {}
    for path in inputs:
        rows = _model_rows(spec, [path])
        trained = _trained_on(path, source)
        seen[rows["model"].iloc[0]] = trained
        frames.append(rows[rows["lang"].isin(langs)].assign(group=lambda d: ["seen" if x in trained else "unseen"
                                                                              for x in d["lang"]]))
    ours = pd.concat(frames, ignore_index=True)[["model", "group", "lang", "seed", "value", "collapsed"]]
    wide = ours.pivot_table(index=["group", "lang", "seed"], columns="model", values="value").reset_index()
    delta = (wide.assign(model="delta", value=wide["xmixup"] - wide["trans_train"], collapsed=False)
             [["model", "group", "lang", "seed", "value", "collapsed"]] if {"xmixup", "trans_train"} <= set(wide) else None)
    ours = pd.concat([ours, delta], ignore_index=True)
    paper_group = dict(zip(published["lang"], published["group"]))
    paper_seen = [x for x, g in paper_group.items() if g == "seen"]
    paper_unseen = [x for x, g in paper_group.items() if g == "unseen"]
    our_seen = sorted(set(seen.get("trans_train", [])) | set(seen.get("xmixup", [])))
    # the paper's average is over its 15 languages, 8 seen and 7 unseen: ours only with the same split
    same_split = set(our_seen) & set(langs) == set(paper_seen) and set(langs) == set(paper_seen) | set(paper_unseen)
    if same_split:
        avg = (ours[ours["lang"].isin(langs)].groupby(["model", "seed"], as_index=False)
               .agg(value=("value", "mean"), collapsed=("collapsed", "any")).assign(group="all", lang="avg"))
        ours = pd.concat([ours, avg], ignore_index=True)
    # a language our models saw where the paper's did not (or the other way) is not that cell
    matched = ours[[paper_group.get(x) in (g, None) or x == "avg" for x, g in zip(ours["lang"], ours["group"])]]
    table = paper_vs_ours(matched, published, keys)
    regrouped = [x for x in langs if x in paper_group and ("seen" if x in our_seen else "unseen") != paper_group[x]]
    missing = [x for x in paper_group if x not in langs and x != "avg"]
    trained = "+".join(our_seen)
    reasons = {
        "avg": (f"Avg.: the paper's over its 15 languages (8 seen, 7 unseen); our models trained on {trained}, another "
                "split: the paper's value only."),
        "missing": (f"{', '.join(missing)}: not in our {LABELS[TABLE6_TASK]} language set ({', '.join(langs)}): "
                    "the paper's values only."),
        "regrouped": (f"{', '.join(regrouped)}: unseen in the paper, seen by our models (trained on {trained}): not the "
                      "same setting, the paper's values only (ours on them: Table 11)."),
    }

    def why(row):
        if row["lang"] == "avg":
            return reasons["avg"]
        return reasons["missing"] if row["lang"] in missing else reasons["regrouped"] if row["lang"] in regrouped else None

    table = account(table, why)
    notes = _notes(spec, [
        f"Ours: the translate-train and X-Mixup models of Tables 3 and 11 (no model of their own), trained on {trained}; "
        "a language is seen when its translation is in the training data. Δ: X-Mixup minus translate-train, per seed. "
        "The paper trains both on 8 seen languages (en bg el fr ru th ur zh) and tests on those and 7 unseen ones.",
        *(w for w in dict.fromkeys(table["why"]) if w)])
    table = table.assign(column=[f"{x} ({g})" if x != "avg" else "avg" for x, g in zip(table["lang"], table["group"])])
    order = [f"{x} ({g})" for x, g in paper_group.items() if x != "avg"] + ["avg"]
    md, tex = render_grid(table, ["model"], "column", title, notes, labels={**LABELS, **{c: c for c in table["column"]}},
                          columns=order)
    return table.drop(columns="column"), md, tex


# ---- Table 4: X-Mixup vs xTune on XLM-R base -----------------------------------------------------

TABLE4_ENCODER = "xlmr_base"


def table4_inputs(cfg: dict) -> list[str]:
    """X-Mixup's XNLI score files when the paper's encoder is XLM-R base (Table 4's setting: the
    same files as Table 3's), else none."""
    p = cfg["papers"][SLUG]
    if p["encoder"] != TABLE4_ENCODER or "xnli" not in p["tasks"]:
        return []
    return [scores_file(cfg, "xnli", "xmixup", seed) for seed in p["seeds"]]


def table4(spec: dict, inputs: list[str]):
    """X-Mixup beside xTune (XLM-R base, machine translation only): ours X-Mixup on XNLI where
    the config's encoder is XLM-R base; every other cell the paper's, with its reason."""
    keys = ["encoder", "model", "task", "dataset", "metric"]
    published = load_published(SLUG, "table4")
    title = "xmixup Table 4: X-Mixup vs xTune, XLM-R base"
    rows = _model_rows(spec, inputs) if inputs else pd.DataFrame(columns=["task", "model", "lang", "seed", "value", "collapsed"])
    rows = rows[rows["lang"].isin(spec["langs"].get("xnli", []))]
    avg = rows.groupby(["task", "model", "seed"], as_index=False).agg(value=("value", "mean"), collapsed=("collapsed", "any"))
    avg = avg.assign(encoder=TABLE4_ENCODER, dataset=avg["task"], metric="acc")
    table = paper_vs_ours(avg[[*keys, "seed", "value", "collapsed"]], published, keys)
    not_base = (f"Table 4's encoder is XLM-R base; papers.{SLUG}.encoder is {spec['encoder']} (ours on it: Table 3): "
                "the paper's value only.")

    def why(row):
        if row["model"].startswith("xtune"):
            return "xTune (Zheng et al. 2021's numbers, as the paper quotes them): not reimplemented here."
        if row["task"] == "pos":
            return f"POS: {NOT_BUILT}"
        if row["task"] == "qa":
            return (not_base if spec["encoder"] != TABLE4_ENCODER else
                    "MLQA: ours is in Table 3's MLQA column and Table 16 (per language), not repeated here.")
        return not_base if spec["encoder"] != TABLE4_ENCODER else f"xnli: not in papers.{SLUG}.tasks; the paper's value only."

    table = account(table, why)
    reasons = list(dict.fromkeys(w for w in table["why"] if w))
    notes = _notes(spec, ["A cell is the accuracy (POS: F1; MLQA: F1, EM) averaged over the task's languages, English "
                          "included. xTune R1 / R2: its two variants, both Zheng et al.'s numbers.", *reasons])
    table = table.assign(column=[f"{d}_{m}" if m in QA_METRICS else d for d, m in zip(table["dataset"], table["metric"])])
    md, tex = render_grid(table, ["encoder", "model"], "column", title, notes, labels=LABELS)
    return table.drop(columns="column"), md, tex


# ---- Tables 15-17: QA per language (F1 / EM); Tables 1, 13, 14: tagging (the paper's only) ----


def table15_inputs(cfg: dict) -> list[str]:
    p = cfg["papers"][SLUG]
    return [scores_file(cfg, "qa", m, seed) for seed in p["seeds"] for m in MODELS] if "qa" in p["tasks"] else []


def table15(spec: dict, inputs: list[str]):
    """XQuAD F1 and EM per language; ours zero-shot beside the paper's mBERT row (XTREME's
    zero-shot), ours translate-train on a row of its own, X-Mixup beside X-Mixup."""
    keys = ["model", "lang", "metric"]
    published = load_published(SLUG, "table15")
    title = "xmixup Table 15: XQuAD F1 / EM per language"
    if not inputs:
        return _not_run(published, keys, ["model", "metric"], "lang", title,
                        f"Not run: qa is not in papers.{SLUG}.tasks; the paper's values only.")
    ours = _metric_rows(spec, inputs)
    ours = ours[ours["lang"].isin(spec["langs"]["qa"])]
    avg = ours.groupby(["model", "metric", "seed"], as_index=False).agg(value=("value", "mean"), collapsed=("collapsed", "any"))
    ours = pd.concat([ours[["model", "lang", "metric", "seed", "value", "collapsed"]], avg.assign(lang="avg")], ignore_index=True)
    ours["model"] = ours["model"].replace({"zero_shot": spec["encoder_label"].split("_")[0]})
    table = paper_vs_ours(ours, published, keys)
    notes = _notes(spec, ["Rows: ours zero-shot (SQuAD v1.1 English) beside the paper's "
                          f"{LABELS[spec['encoder_label']]} row (XTREME's zero-shot), ours translate-train (English and "
                          "XTREME's translated SQuAD) on a row of its own, ours X-Mixup beside the paper's (XLM-R large). "
                          "X-Mixup's targets: the target's span, with XQuAD's English translate-test mixed in.",
                          "Languages we do not run show the paper's values only (el, th, tr are not among the qa task's "
                          "languages). avg: over the languages we run."])
    md, tex = render_grid(table, ["model", "metric"], "lang", title, notes, labels=LABELS,
                          columns=[*spec["langs"]["qa"], "avg"])
    return table, md, tex


def _qa_tests(p: dict, table_id: str) -> dict | None:
    """papers.xmixup.qa_tests' entry of a QA table, None where the config does not run it."""
    return (p.get("qa_tests") or {}).get(QA_TESTS[table_id]["set"]) if "qa" in p["tasks"] else None


def _qa_test_inputs(table_id: str):
    def inputs(cfg: dict) -> list[str]:
        p = cfg["papers"][SLUG]
        t = _qa_tests(p, table_id)
        return [qa_test_file(cfg, QA_TESTS[table_id]["set"], m, seed) for seed in p["seeds"] for m in t["models"]] if t else []
    return inputs


def _qa_test_table(table_id: str):
    """MLQA / TyDiQA-GoldP F1 and EM per language (the qa models scored in-language on a named
    set, papers.xmixup.qa_tests): ours zero-shot beside XTREME's zero-shot row where it trains on
    the same data (MLQA), else on a row of its own; translate-train on its own row; X-Mixup
    beside X-Mixup. Every published cell without ours says why."""
    qt = QA_TESTS[table_id]
    name, title = qt["set"], qt["title"]

    def build(spec: dict, inputs: list[str]):
        keys = ["model", "lang", "metric"]
        published = load_published(SLUG, table_id)
        t = _qa_tests(spec, table_id)
        if not inputs or t is None:
            why = (f"qa is not in papers.{SLUG}.tasks" if "qa" not in spec["tasks"]
                   else f"papers.{SLUG}.qa_tests has no {name}")
            return _not_run(published, keys, ["model", "metric"], "lang", title, f"Not run: {why}; the paper's values only.")
        langs = spec["qa_test_langs"][name]
        paper_langs = [x for x in dict.fromkeys(published["lang"]) if x != "avg"]
        label = spec["encoder_label"].split("_")[0]  # XTREME's zero-shot row of ours' encoder
        own = bool(t.get("train"))  # the set's own models: XTREME's zero-shot setting
        zero_row = label if own else qt["zero_shot_row"] or label
        ours = _metric_rows(spec, inputs)
        ours = ours[ours["lang"].isin(langs)]
        frames = [ours[["model", "lang", "metric", "seed", "value", "collapsed"]]]
        if set(paper_langs) <= set(langs):  # the paper's average: over its languages, all of them ours
            sub = ours[ours["lang"].isin(paper_langs)]
            frames.append(sub.groupby(["model", "metric", "seed"], as_index=False)
                          .agg(value=("value", "mean"), collapsed=("collapsed", "any")).assign(lang="avg"))
        ours = pd.concat(frames, ignore_index=True)
        ours["model"] = ours["model"].replace({"zero_shot": zero_row})
        table = paper_vs_ours(ours, published, keys)
        run = {zero_row if m == "zero_shot" else m for m in t["models"]}
        missing = [x for x in paper_langs if x not in langs]
        baselines = {"mbert", "xlmr"} - {label}

        def why(row):
            if row["model"] in run:
                if row["lang"] == "avg":
                    return (f"avg: the paper's over {', '.join(paper_langs)}; ours lacks {', '.join(missing)}: the paper's "
                            "value only.")
                return (f"{', '.join(missing)}: not in language set {t['languages']} (papers.{SLUG}.qa_tests.{name}): "
                        "the paper's values only.")
            if row["model"] == label:
                return ZERO_SHOT_TYDIQA if not own else f"zero-shot: not in papers.{SLUG}.qa_tests.{name}.models."
            if row["model"] == "xmixup":
                return (NOT_RUN_TYDIQA if name == "tydiqa" and not own
                        else f"X-Mixup: not in papers.{SLUG}.qa_tests.{name}.models.")
            if row["model"] in baselines:
                return (f"{LABELS.get(row['model'], row['model'])}: XTREME's zero-shot with another encoder (ours: "
                        f"{spec['encoder']}, beside the {LABELS.get(label, label)} row).")
            return (f"{LABELS.get(row['model'], row['model'])}: another system's numbers, as the paper quotes them; "
                    "not reimplemented here.")

        table = account(table, why)
        english, translated = ((f"{LABELS[name]}'s English train", f"XTREME's translation of {LABELS[name]}'s English train")
                               if own else ("SQuAD v1.1 English", "XTREME's translated SQuAD"))
        rows = {"zero_shot": (f"ours zero-shot ({english}) beside the paper's {LABELS[label]} row (XTREME's zero-shot, "
                              "trained on the same data)") if zero_row == label
                else f"ours zero-shot ({english}) on a row of its own",
                "trans_train": f"ours translate-train (English and {translated}) on a row of its own",
                "xmixup": f"ours X-Mixup ({translated}, each question with its English original) beside the paper's "
                          "X-Mixup (XLM-R large), scored on the target side alone (no translate-test set for this test set)"}
        models = (f"the set's own models (papers.{SLUG}.qa_tests.{name}.train: {t['train']['zero_shot']}, "
                  f"{t['train']['translate_train']}: translations joined by question id to their English originals; "
                  f"profile {t['train'].get('hparams') or profile(spec, 'qa')}), "
                  "selected on the English dev split of those sets (config.yaml: SQuAD v1.1's; TyDiQA-GoldP's only dev "
                  "is this test set, never selected on)" if own else "the qa models of Table 15 (no model of their own)")
        notes = _notes(spec, [
            f"Ours: {models} scored in-language (context and question in one "
            f"language) on {LABELS[name]}'s test set (data.qa.sets.{name}), languages {', '.join(langs)}; rows: "
            + "; ".join(rows[m] for m in t["models"]) + ".",
            *(w for w in dict.fromkeys(table["why"]) if w)])
        md, tex = render_grid(table, ["model", "metric"], "lang", title, notes, labels=LABELS,
                              columns=[*paper_langs, *[x for x in langs if x not in paper_langs], "avg"])
        return table, md, tex
    return build


TAGGING_TABLES = {"table1": ("pos", "ner"), "table13": ("pos",), "table14": ("ner",)}
TAGGING_TITLES = {"table1": "xmixup Table 1: zero-shot POS and NER (F1) per language",
                  "table13": "xmixup Table 13: POS F1 per language", "table14": "xmixup Table 14: NER F1 per language"}


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


def _zero_shot_tagging_table(table_id: str):
    """Ours zero-shot beside the paper's zero-shot row (XTREME's mBERT / XLM-R, Table 1 = the
    same numbers); translate-train and X-Mixup: the paper's only, and why."""
    def build(spec: dict, inputs: list[str]):
        published = load_published(SLUG, table_id)
        keys = ["encoder", "task", "lang"] if table_id == "table1" else ["model", "lang"]
        rows = ["encoder", "task"] if table_id == "table1" else ["model"]
        title = TAGGING_TITLES[table_id]
        z = spec.get("zero_shot_tagging")
        if not inputs:
            return _not_run(published, keys, rows, "lang", title, f"Not run: papers.{SLUG}.zero_shot_tagging is not set; "
                            f"X-Mixup and translate-train: {NOT_BUILT}")
        ours = eval_rows(inputs, z["metric"], setting_of=_setting)
        label = spec["encoder_label"].split("_")[0]  # the paper's zero-shot row of ours' encoder
        if table_id == "table1":
            ours = ours.assign(encoder=label)
        else:
            avg = ours.groupby(["seed"], as_index=False).agg(value=("value", "mean"), collapsed=("collapsed", "any"))
            ours = pd.concat([ours.assign(model=label), avg.assign(model=label, lang="avg")], ignore_index=True)
        table = paper_vs_ours(ours[[*keys, "seed", "value", "collapsed"]], published, keys)
        notes = _notes(spec, [f"Ours: the zero-shot (English-trained) models of papers.{SLUG}.zero_shot_tagging (profile "
                              f"{z['hparams']}: another paper's models, no job of their own), metric "
                              f"{', '.join(f'{t} {m}' for t, m in z['metric'].items())}, beside the paper's "
                              f"{LABELS[spec['encoder_label']]} row (XTREME's zero-shot).",
                              f"X-Mixup and translate-train rows: {NOT_BUILT}"])
        md, tex = render_grid(table, rows, "lang", title, notes, labels=LABELS)
        return table, md, tex
    return build


def table12(spec: dict, inputs: list[str]):
    return _per_language_table(spec, inputs, "table12")


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
    from xlt.registry import get_task

    langs = get_task("qa").languages  # a named set's count is looked up per language
    tests = "public release sizes (xlt/papers/xmixup): MLQA test, TyDiQA-GoldP dev"
    tydi = "public release size (xlt/papers/xmixup): TyDiQA-GoldP English train, an upper bound of its translation"
    return [*(DataSize("qa.translate_train", x, "train", SQUAD_TRAIN, where, 3) for x in langs),
            *(DataSize(d, "en", "train", TYDIQA_TRAIN, tydi, 1) for d in ("qa.tydiqa_train", "qa.tydiqa_translate_train")),
            *(DataSize("qa.tydiqa_translate_train", x, "train", TYDIQA_TRAIN, tydi, 3) for x in TYDIQA_TEST if x != "en"),
            *(DataSize(d, x, "test", XQUAD_TEST, where, 2) for d in ("qa.xquad_xtreme", "qa.translate_test") for x in langs),
            *(DataSize("qa.mlqa", x, "test", n, tests, 1) for x, n in MLQA_TEST.items()),
            *(DataSize("qa.tydiqa", x, "test", n, tests, 1) for x, n in TYDIQA_TEST.items())]


def check(cfg: dict, p: dict) -> None:
    for task in p["tasks"]:
        if task not in BUILT:
            raise XltError(f"papers.{SLUG}.tasks: {task!r}: {NOT_BUILT.split(':')[0]}; allowed: {', '.join(BUILT)}")
        for key in ("translate_train", "mixup_layer"):
            if task not in (p.get(key) or {}):
                raise XltError(f"papers.{SLUG}.{key}: no entry for task {task!r}")
    if "qa" in p["tasks"]:
        _check_qa_tests(cfg, p)
    _check_layers(cfg, p)


def _check_layers(cfg: dict, p: dict) -> None:
    """Each mixup layer (and Figure 5's) within the encoder's depth, where the config tells it
    (a built encoder's shape, a known Hub id): else the engine refuses it when training starts."""
    depth = encoder_depth(cfg, p["encoder"])
    if depth is None:
        return
    layers = {f"mixup_layer.{t}": p["mixup_layer"][t] for t in p["tasks"]}
    layers.update({f"figure5.layers[{i}]": x for i, x in enumerate((p.get("figure5") or {}).get("layers", []))})
    for key, layer in layers.items():
        if not 1 <= layer <= depth:
            raise XltError(f"config key papers.{SLUG}.{key}: {layer} is out of range for encoder {p['encoder']!r} "
                           f"({depth} layers); allowed: 1 … {depth} (the paper's numbering: the mixup happens "
                           f"inside that layer, 1 the first)")


def _check_qa_tests(cfg: dict, p: dict) -> None:
    """papers.xmixup.qa_tests: a table's set, a language set the set holds and, for the models
    trained on translations, one they were trained for (a language no translation reached is
    not that model's setting)."""
    known = [q["set"] for q in QA_TESTS.values()]
    for name, t in (p.get("qa_tests") or {}).items():
        key = f"papers.{SLUG}.qa_tests.{name}"
        check_config_ref("QA test set of Tables 16-17", f"papers.{SLUG}.qa_tests", name, known)
        check_config_ref("language set", f"{key}.languages", t["languages"], cfg["language_sets"])
        train = t.get("train")
        if train:  # the set's own training data: named sets of qa, the translations' languages trained for
            sets = [f"qa.{x}" for x in (cfg["data"].get("qa") or {}).get("sets") or {}]
            for side in ("zero_shot", "translate_train"):
                check_config_ref("qa named set (data.qa.sets)", f"{key}.train.{side}", train[side], sets)
            if train.get("hparams"):
                check_config_ref("hparams profile", f"{key}.train.hparams", train["hparams"], cfg["hparams"])
            trained, where = set(task_languages(cfg, train["translate_train"])), f"{key}.train.translate_train"
        else:
            trained, where = set(_langs(cfg, "qa")), f"papers.{SLUG}.test_languages.qa"
        for model in t["models"]:
            dataset = qa_test_model(cfg, name, model)[0]
            try:
                check_testset(cfg, dataset, f"qa.{name}", "test", t["languages"])
            except XltError as e:
                raise XltError(f"config key {key}: {e}") from None
            beyond = [x for x in cfg["language_sets"][t["languages"]] if x not in trained]
            if model != "zero_shot" and beyond:
                raise XltError(f"config key {key}: the {LABELS[model]} model is trained for "
                               f"{', '.join(sorted(trained))} ({where}), not {', '.join(beyond)}; "
                               f"score it on a language set within those, or only the zero-shot model (models: [zero_shot])")


PAPER = Paper(
    slug=SLUG,
    jobs=f"{__name__}.jobs",  # its jobs (jobs.py), run by workflow_scripts/paper_job.py
    tables=(
        Table("table2", table2_inputs, table2, spec=table_spec),
        Table("table3", table3_inputs, table3, spec=table_spec),
        Table("table4", table4_inputs, table4, spec=table_spec),
        Table("table5", table5_inputs, table5, spec=table_spec),
        Table("table6", table6_inputs, table6, spec=table_spec),
        Table("table7", table7_inputs, table7, spec=table_spec),
        Table("table8", main_inputs, table8, spec=table_spec),
        Table("table9", table9_inputs, table9, spec=table_spec),
        Table("table11", table11_inputs, table11, spec=table_spec),
        Table("table12", table12_inputs, table12, spec=table_spec),
        Table("table15", table15_inputs, table15, spec=table_spec),
        *(Table(t, _zero_shot_tagging_inputs(t), _zero_shot_tagging_table(t), spec=table_spec) for t in TAGGING_TABLES),
        *(Table(t, _qa_test_inputs(t), _qa_test_table(t), spec=table_spec) for t in QA_TESTS),
    ),
    figures=figures.FIGURES,
    figure_inputs=figures.figure_inputs,
    draw=figures.draw,
    figure_spec=figures.figure_spec,
    check=figures.with_figure_check(check),
    recipe_tags=RecipeTags(TAG_GRAMMAR, extra_of),
    reasons_in_notes=True,  # free-text notes say why a published cell has no ours (not yet per cell)
    data_sizes=data_sizes,
    claims="claims.yaml",
)
