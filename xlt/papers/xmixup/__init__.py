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
Tables 2 (Spearman ρ of CKA vs accuracy), 3 (main), 7 (CKA and accuracy per language), 8
(transfer gap); the CKA of a model is computed by the rule `xmixup_cka` (rules/xmixup.smk).
This module only declares (no torch).
"""

from __future__ import annotations

import functools
import re

import pandas as pd

from xlt.errors import XltError
from xlt.papers.base import Paper, RecipeTags, Table
from xlt.papers.xmixup import figures
from xlt.papers.published import load_published
from xlt.tables import COLLAPSE_NOTE, eval_rows, paper_vs_ours, render_grid
from xlt.targets import Recipe, eval_file, paper_language_set

SLUG = "xmixup"
MODELS = ("zero_shot", "trans_train", "xmixup")
CLASSIFICATION = ("xnli", "pawsx")  # X-Mixup is built for classification; tagging and QA are not yet
LABELS = {"zero_shot": "zero-shot", "trans_train": "translate-train", "xmixup": "X-Mixup", "xnli": "XNLI",
          "pawsx": "PAWS-X", "pos": "POS", "ner": "NER", "xquad": "XQuAD", "mlqa": "MLQA", "tydiqa": "TyDiQA",
          "avg": "Avg.", "mbert": "mBERT", "xlmr_large": "XLM-R large", "xlmr": "XLM-R", "joint_align": "Joint-Align",
          "filter": "FILTER", "xtune": "xTune", "cka": "CKA", "accuracy": "accuracy", "delta": "Δ",
          "translate_train": "translate-train"}
NOT_BUILT = "X-Mixup for tagging and QA is not built yet (classification only): the paper's values only."


# ---- the X-Mixup extra, spelt in a recipe -----------------------------------------------------

# The paper's constants (its Table 10 and §4): λ0 = 0.5; α and the scheduled-sampling decay k
# per task type, read from the published Table 10 (classification: α 0.4, k 1000).
LAMBDA0 = 0.5
TAG = re.compile(r"xmixup(\d+)((?:-(?:nomix|fixed|nomse|nokl))*)")
TAG_GRAMMAR = "xmixup<layer>[-nomix][-fixed][-nomse][-nokl]"
ABLATIONS = {"nomix": ("mixup", False), "fixed": ("ratio", "fixed"), "nomse": ("mse", False), "nokl": ("kl", False)}


@functools.lru_cache(maxsize=None)  # read once: every X-Mixup recipe's hparams ask for it when the DAG is built
def table10(param: str, task_type: str = "classification") -> float:
    pub = load_published(SLUG, "table10")
    return float(pub[(pub["param"] == param) & (pub["task_type"] == task_type)]["value"].iloc[0])


def extra_of(tag: str) -> dict | None:
    """The X-Mixup extra a recipe tag names: `xmixup1` (mixup after layer 1), ablations appended
    (`-nomix`: no cross-attention, the losses kept; `-fixed`: λ = λ0; `-nomse`, `-nokl`: without
    that consistency loss). None: not this paper's tag."""
    if not tag.startswith("xmixup"):
        return None
    m = TAG.fullmatch(tag)
    if not m:
        raise XltError(f"extra tag {tag!r}: expected {TAG_GRAMMAR}")
    extra = {"name": "xmixup", "layer": int(m.group(1)), "lambda0": LAMBDA0, "alpha": table10("alpha"),
             "schedule_k": table10("p_k"), "mixup": True, "ratio": "learned", "mse": True, "kl": True}
    for flag in filter(None, m.group(2).split("-")):
        key, value = ABLATIONS[flag]
        extra[key] = value
    return extra


# ---- what each model is and where its numbers are ---------------------------------------------


def _langs(cfg: dict, task: str) -> list[str]:
    return list(cfg["language_sets"][paper_language_set(cfg["papers"][SLUG], task)])


def targets(cfg: dict, task: str) -> list[str]:
    source = cfg["papers"][SLUG]["source"]
    return [x for x in _langs(cfg, task) if x != source]


def model_of(cfg: dict, task: str, model: str) -> tuple[str, str]:
    """(dataset, recipe) of a model of the paper."""
    p = cfg["papers"][SLUG]
    if model == "zero_shot":  # another paper's English model where the settings agree (one model)
        return task, Recipe((p["source"],), p.get("zero_shot_hparams") or p["hparams"]).name
    dataset = p["translate_train"][task]
    if model == "trans_train":
        return dataset, Recipe((p["source"], *targets(cfg, task)), p["hparams"]).name
    if model == "xmixup":
        return dataset, Recipe(tuple(targets(cfg, task)), f"{p['hparams']}-xmixup{p['mixup_layer'][task]}").name
    raise XltError(f"xmixup model {model!r}; allowed: {', '.join(MODELS)}")


def scores_file(cfg: dict, task: str, model: str, seed: int, recipe: str | None = None) -> str:
    """Every language's test scores of a model; X-Mixup's on the task's translate-test set where
    the config names one (each target record with its English side: the two sides' predictions
    averaged; English itself alone), else on the plain test set (the target side alone).
    `recipe`: an X-Mixup variant's own (the ablations)."""
    p = cfg["papers"][SLUG]
    dataset, own = model_of(cfg, task, model)
    langset = paper_language_set(p, task)
    testset = None if dataset == task else task
    if model == "xmixup" and task in (p.get("translate_test") or {}):
        testset = p["translate_test"][task]
    return eval_file(cfg, p["encoder"], "pretrained", dataset, recipe or own, seed, "test", langset, testset=testset)


def cka_file(cfg: dict, task: str, model: str, seed: int) -> str:
    """The CKA of a model's mean-pooled last-layer sentence representations, English vs every
    language, on the task's parallel test set (rule `xmixup_cka`)."""
    p = cfg["papers"][SLUG]
    dataset, recipe = model_of(cfg, task, model)
    return (f"{cfg['results']}/xmixup/cka/{p['encoder']}/pretrained/{dataset}/{recipe}/seed{seed}/"
            f"test.{paper_language_set(p, task)}.json")


def _not_run(published: pd.DataFrame, keys: list[str], rows: list[str], column: str, title: str, reason: str):
    """A table the config does not run: every published cell, and the reason."""
    table = paper_vs_ours(pd.DataFrame(columns=[*keys, "seed", "value"]), published, keys)
    md, tex = render_grid(table, rows, column, title, [reason], labels=LABELS)
    return table, md, tex


def _not_run_notes(spec: dict, tasks) -> list[str]:
    """Why a published task has no ours: not built (tagging, QA), or not configured."""
    tasks = [t for t in dict.fromkeys(tasks) if t not in _tasks(spec) and t != "avg"]
    built = [t for t in tasks if t in CLASSIFICATION]
    out = [f"{', '.join(LABELS.get(t, t) for t in built)}: not in papers.{SLUG}.tasks; the paper's values only."] if built else []
    rest = [t for t in tasks if t not in CLASSIFICATION]
    return out + ([f"{', '.join(LABELS.get(t, t) for t in rest)}: {NOT_BUILT}"] if rest else [])


def _tasks(spec: dict) -> list[str]:
    return [t for t in spec["tasks"] if t in CLASSIFICATION]


def _model_rows(spec: dict, paths: list[str]) -> pd.DataFrame:
    """Per-seed, per-language rows (task, model, lang, seed, value, collapsed) of score files."""
    return eval_rows(paths, spec["metric"], setting_of=_setting).rename(columns={"setting": "model"})


def _setting(recipe: Recipe) -> str:
    if "-xmixup" in recipe.hparams:
        return "xmixup"
    return "trans_train" if len(recipe.train_langs) > 1 else "zero_shot"


def table_spec(cfg: dict) -> dict:
    p = cfg["papers"][SLUG]
    return {**p, "langs": {t: _langs(cfg, t) for t in _tasks(p)}, "encoder_label": _encoder_label(p["encoder"])}


def _encoder_label(encoder: str) -> str:
    """The published rows ours stand beside: mBERT's (the paper's base encoder); the tiny
    encoder stands in for it."""
    return "xlmr_large" if encoder.startswith("xlmr") else "mbert"


def _notes(spec: dict, extra: list[str]) -> list[str]:
    return [f"Ours: encoder {spec['encoder']} beside the paper's {LABELS[spec['encoder_label']]} rows; seeds "
            f"{spec['seeds']}; profile {spec['hparams']}"
            + (f" (zero-shot: {spec['zero_shot_hparams']}, the same settings: another paper's English model)"
               if spec.get("zero_shot_hparams") else " for the three models")
            + "; translate-train data: XTREME's (the paper's); model selection on English dev (the paper averages "
            "every language's translate-dev set, which it did not release).",
            "Scheduled sampling: no back-translations are public (the paper's own were not released), so the source "
            "side is always the gold English original.",
            *extra, COLLAPSE_NOTE]


# ---- Table 3: main results (average over the language set) ------------------------------------


def table3_inputs(cfg: dict) -> list[str]:
    p = cfg["papers"][SLUG]
    out = []
    for task in _tasks(p):
        for seed in p["seeds"]:
            out += [scores_file(cfg, task, m, seed) for m in MODELS]
    return list(dict.fromkeys(out))


def table3(spec: dict, inputs: list[str]):
    keys = ["encoder", "model", "task", "dataset", "metric"]
    published = load_published(SLUG, "table3")
    ours = _model_rows(spec, inputs) if inputs else pd.DataFrame(columns=["task", "model", "lang", "seed", "value", "collapsed"])
    avg = (ours[[lang in spec["langs"].get(t, []) for t, lang in zip(ours["task"], ours["lang"])]]
           .groupby(["task", "model", "seed"], as_index=False).agg(value=("value", "mean"), collapsed=("collapsed", "any")))
    avg = avg.assign(encoder=spec["encoder_label"], dataset=avg["task"], metric="acc")
    table = paper_vs_ours(avg[[*keys, "seed", "value", "collapsed"]], published, keys)
    table = table.assign(column=table["dataset"])
    not_run = [t for t in dict.fromkeys(published["task"]) if t not in _tasks(spec) and t != "avg"]
    notes = _notes(spec, [
        "A cell is the accuracy averaged over the task's languages, English included (XTREME's average); X-Mixup's "
        "target languages are scored with both sides where a translate-test set exists (class probabilities averaged).",
        *_not_run_notes(spec, published["task"]),
        "Avg.: the paper's only (it averages every task, QA included)."])
    md, tex = render_grid(table, ["encoder", "model"], "column", "xmixup Table 3: main results (accuracy, average "
                          "over languages)", notes, labels=LABELS)
    return table, md, tex


# ---- Table 8: the transfer gap -----------------------------------------------------------------


def table8(spec: dict, inputs: list[str]):
    """English minus the mean of the target languages, per seed (lower is better)."""
    keys = ["model", "task", "dataset"]
    published = load_published(SLUG, "table8")
    ours = _model_rows(spec, inputs)
    rows = []
    for (task, model, seed), g in ours.groupby(["task", "model", "seed"]):
        en = g[g["lang"] == spec["source"]]["value"]
        tg = g[(g["lang"] != spec["source"]) & g["lang"].isin(spec["langs"][task])]["value"]
        if len(en) and len(tg):
            rows.append({"model": spec["encoder_label"] if model == "zero_shot" else model, "task": task, "dataset": task,
                         "seed": seed, "value": float(en.iloc[0] - tg.mean()), "collapsed": bool(g["collapsed"].any())})
    table = paper_vs_ours(pd.DataFrame(rows, columns=[*keys, "seed", "value", "collapsed"]), published, keys)
    notes = _notes(spec, [f"Gap = English accuracy minus the mean over the target languages, per seed. The row "
                          f"{LABELS[spec['encoder_label']]} is zero-shot transfer (the paper's XTREME rows).",
                          *_not_run_notes(spec, published["task"])])
    md, tex = render_grid(table, ["model"], "dataset", "xmixup Table 8: cross-lingual transfer gap (points)", notes,
                          labels=LABELS)
    return table, md, tex


# ---- Tables 7 and 2: CKA ---------------------------------------------------------------------


def _cka_rows(paths: list[str]) -> pd.DataFrame:
    from xlt.io import read_json

    from xlt.targets import task_of

    rows = []
    for path in paths:  # …/cka/<encoder>/<init>/<dataset>/<recipe>/seed<s>/<split>.<langset>.json
        parts = path.split("/")
        recipe, seed = Recipe.parse(parts[-3]), int(parts[-2].removeprefix("seed"))
        for lang, value in read_json(path)["cka"].items():
            rows.append({"model": _setting(recipe), "lang": lang, "seed": seed, "value": float(value),
                         "task": task_of(parts[-4])})
    return pd.DataFrame(rows, columns=["model", "lang", "seed", "value", "task"])


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
    cka = _cka_rows([f for f in inputs if "/xmixup/cka/" in f]).assign(metric="cka")
    acc = _model_rows(spec, [f for f in inputs if "/xmixup/cka/" not in f]).assign(metric="accuracy")
    acc = acc[acc["lang"].isin(spec["langs"]["xnli"])]
    ours = pd.concat([cka[["metric", "model", "lang", "seed", "value"]], acc[["metric", "model", "lang", "seed", "value"]]])
    delta = _paired_delta(ours)
    table = paper_vs_ours(pd.concat([ours, delta]), published, keys)
    notes = _notes(spec, ["CKA: linear CKA (Kornblith et al. 2019) between English and the language's mean-pooled "
                          "last-layer sentence representations on the XNLI test set (parallel by row), per seed; accuracy: "
                          "XNLI test. Δ: X-Mixup minus translate-train, per seed."])
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
        return eval_file(cfg, p["encoder"], "pretrained", dataset, recipe, seed, "test", paper_language_set(p, task), testset=task)
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
                          "QA cells: F1 (the CSV has EM too)."])
    md, tex = render_grid(table[table["metric"] != "em"], ["encoder", "model"], "dataset", title, notes, labels=LABELS)
    return table, md, tex


def table5(spec: dict, inputs: list[str]):
    return _ablation_table(spec, inputs, "table5", "xmixup Table 5: ablations (accuracy / F1, average over languages)")


def table9(spec: dict, inputs: list[str]):
    return _ablation_table(spec, inputs, "table9", "xmixup Table 9: consistency losses (average over languages)")


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
    # the paper's mBERT / XLM-R rows are XTREME's translate-train results (published/index.yaml)
    ours["model"] = ours["model"].replace({"trans_train": spec["encoder_label"].split("_")[0]})
    table = paper_vs_ours(ours, published, keys)
    notes = _notes(spec, [f"Rows: ours translate-train beside the paper's {LABELS[spec['encoder_label']]} row (XTREME's "
                          "translate-train results), ours X-Mixup beside the paper's X-Mixup (XLM-R large), ours "
                          "zero-shot on a row of its own. avg: over the languages we run.",
                          "Languages we do not run show the paper's values only."])
    md, tex = render_grid(table, ["model"], "lang", title, notes, labels=LABELS,
                          columns=[*spec["langs"][task], "avg"])
    return table, md, tex


def table11(spec: dict, inputs: list[str]):
    return _per_language_table(spec, inputs, "table11")


def table12(spec: dict, inputs: list[str]):
    return _per_language_table(spec, inputs, "table12")


def check(cfg: dict, p: dict) -> None:
    for task in p["tasks"]:
        if task not in CLASSIFICATION:
            raise XltError(f"papers.{SLUG}.tasks: {task!r}: {NOT_BUILT.split(':')[0]}; allowed: {', '.join(CLASSIFICATION)}")
        for key in ("translate_train", "mixup_layer"):
            if task not in (p.get(key) or {}):
                raise XltError(f"papers.{SLUG}.{key}: no entry for task {task!r}")


PAPER = Paper(
    slug=SLUG,
    tables=(
        Table("table2", table2_inputs, table2, spec=table_spec),
        Table("table3", table3_inputs, table3, spec=table_spec),
        Table("table5", table5_inputs, table5, spec=table_spec),
        Table("table7", table7_inputs, table7, spec=table_spec),
        Table("table8", table3_inputs, table8, spec=table_spec),
        Table("table9", table9_inputs, table9, spec=table_spec),
        Table("table11", table11_inputs, table11, spec=table_spec),
        Table("table12", table12_inputs, table12, spec=table_spec),
    ),
    figures=figures.FIGURES,
    figure_inputs=figures.figure_inputs,
    draw=figures.draw,
    figure_spec=figures.figure_spec,
    check=figures.with_figure_check(check),
    recipe_tags=RecipeTags(TAG_GRAMMAR, extra_of),
)
