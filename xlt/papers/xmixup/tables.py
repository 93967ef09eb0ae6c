"""xmixup's tables (1-17): ours beside the paper's, with the reason for every cell we do not run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from xlt.paperkit.published import load_published
from xlt.papers.xmixup.plan import (ABLATION_FLAGS, ABLATION_ROWS, BUILT, LABELS, MODELS, NOT_BUILT, PER_LANGUAGE, QA_METRICS, QA_TESTS, SLUG,
                                    TABLE4_ENCODER, TABLE6_TASK, TASK_TYPE, UNMIXED, _dataset, _in_table3, _qa_tests, _setting, _tasks, profile)
from xlt.tables import COLLAPSE_NOTE, account, account_all, eval_rows, paper_vs_ours, render_grid
from xlt.dag.targets import Recipe, task_of
from xlt.io import read_json

NOT_RUN_QA = ("MLQA: ours is Table 16's scores (papers.{SLUG}.qa_tests) averaged over MLQA's seven languages, where "
              "it runs all seven, else the paper's only; TyDiQA: Table 17's scores averaged over its nine languages "
              "where it runs all nine with models trained on TyDiQA-GoldP (qa_tests.tydiqa.train, the paper's "
              "setting), else the paper's only.").replace("{SLUG}", SLUG)
# Table 17 without qa_tests.tydiqa.train (config.yaml sets it: qa.tydiqa_train, qa.tydiqa_translate_train)
NOT_RUN_TYDIQA = ("TyDiQA-GoldP translate-train / X-Mixup: the paper trains them on TyDiQA-GoldP's English train and "
                  f"XTREME's translation of it; papers.{SLUG}.qa_tests.tydiqa.train does not name those sets (ours trained "
                  "on translated SQuAD are another setting): the paper's values only.")
ZERO_SHOT_TYDIQA = ("XTREME's zero-shot (this row) trains on TyDiQA-GoldP's English train (3.7k questions); without "
                    f"papers.{SLUG}.qa_tests.tydiqa.train ours trains on SQuAD v1.1: its own row (zero-shot, SQuAD), no Δ.")


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
    said = ", ".join(f"{k} {_shown(a)} vs {_shown(b)}" for k, (a, b) in differs.items())
    return (f" (zero-shot: {spec['zero_shot_hparams']}'s English model, another paper's, trained with other "
            f"settings than the two translated models: {said})")


def _shown(value) -> str:
    return "the engine's default" if value is None else str(value)


# why the zero-shot row can sit at chance on the tiny world where its profile's head is one linear
# layer on [CLS] (xlt/papers/benchmarks/tiny_baselines.py measured the settings over five seeds)
ZERO_SHOT_LINEAR_HEAD = ("Zero-shot marked †: its profile's head is one linear layer on [CLS] (its authors' classifier). "
                         "The tiny encoder learned no sentence-level objective (MLM only), so its [CLS] state starts "
                         "uninformative; at a step of 1e-3 two of five English seeds stayed at chance (one with Adam's β2 "
                         "at 0.999 or the head's dropout at 0.1 too), at 5e-4 (the tiny preset's XNLI step) none did. "
                         "Measured on English dev by xlt/papers/benchmarks/tiny_baselines.py (xlt/papers/benchmarks/tiny_baselines.json).")


MIXUP_COLLAPSE = ("X-Mixup marked †: its consistency terms (MSE of the pooled last layers, KL of the two sides' "
                  "predictions) are both zero when the encoder gives every input the same state; a small encoder "
                  "fine-tuned at a high learning rate (the tiny preset's: fidelity.yaml, lr_classification) can reach "
                  "that state before the task loss takes hold, and then predicts one class. Measured over seeds and "
                  "ablations on the tiny world by xlt/papers/xmixup/benchmarks/tiny_seeds.py (its JSON beside it).")


def _collapsed(ours: pd.DataFrame | None, models: tuple[str, ...]) -> bool:
    """Whether a seed of one of `models` (rows of `ours`) is marked collapsed."""
    if ours is None or not len(ours) or "collapsed" not in ours:
        return False
    return bool((ours["model"].isin(models) & ours["collapsed"].eq(True)).any())


def _encoder_note(spec: dict) -> str:
    """Which published encoder ours stand beside: the baselines' rows are `encoder_label`'s, the
    paper's X-Mixup rows are XLM-R large's; with another encoder of ours, each X-Mixup row's
    label says so (`_labels`)."""
    said = (f"Ours: encoder {spec['encoder']}; the paper's baseline rows beside ours are "
            f"{LABELS[spec['encoder_label']]}'s, its X-Mixup rows XLM-R large's")
    if spec["encoder"] == "xlmr_large":
        return said + "."
    return said + f": a Δ on an X-Mixup row compares ours ({spec['encoder']}) with XLM-R large, as its row label says."


def _labels(spec: dict) -> dict:
    """LABELS, the X-Mixup row named with both encoders where ours is not XLM-R large (the
    paper's X-Mixup rows are XLM-R large's: a Δ there crosses encoders)."""
    if spec["encoder"] == "xlmr_large":
        return LABELS
    return {**LABELS, "xmixup": f"X-Mixup (paper: XLM-R large; ours: {spec['encoder']})"}


def _xquad_labels(spec: dict) -> dict:
    """XQuAD's column labels with ours' language count where ours averages fewer languages than
    the paper's (Table 15's): that Δ compares averages over different language sets."""
    paper = [x for x in dict.fromkeys(load_published(SLUG, "table15")["lang"]) if x != "avg"]
    ours = [x for x in spec["langs"].get("qa", []) if x in paper]
    if "qa" not in _tasks(spec) or len(ours) >= len(paper):
        return {}
    flag = f" (ours: {len(ours)} of the paper's {len(paper)} languages; Δ across language sets)"
    return {k: LABELS[k] + flag for k in ("xquad", "xquad_f1", "xquad_em")}


def _notes(spec: dict, extra: list[str], ours: pd.DataFrame | None = None) -> list[str]:
    return [_encoder_note(spec) + f" Seeds {spec['seeds']}; profile {spec['hparams']}"
            + "".join(f", {task}: {h}" for task, h in (spec.get("task_hparams") or {}).items() if task in _tasks(spec))
            + (_zero_shot_note(spec) if spec.get("zero_shot_hparams") else " for the three models")
            + "; translate-train data: XTREME's (the paper's)." + _size_note(spec),
            *extra, *([MIXUP_COLLAPSE] if _collapsed(ours, ("xmixup", "delta")) else []),
            *([ZERO_SHOT_LINEAR_HEAD] if spec.get("zero_shot_classifier") == "linear" and _collapsed(ours, ("zero_shot",)) else []),
            COLLAPSE_NOTE]


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
                          "over languages)", notes, labels={**LABELS, **_xquad_labels(spec)})
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
                          labels={**_labels(spec), **_xquad_labels(spec)})
    return table, md, tex


# ---- Tables 7 and 2: CKA ---------------------------------------------------------------------


def _cka_rows(paths: list[str], unmixed: bool = False) -> pd.DataFrame:
    """Each CKA file's values by model, language and seed: an X-Mixup model's from its mixed
    target states (what it predicts from); with `unmixed`, also its unmixed ones as the model
    `xmixup_unmixed` (a second, labelled reading)."""
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
                          labels=_labels(spec), columns=spec["langs"]["xnli"])
    return table, md, tex


def _paired_delta(ours: pd.DataFrame) -> pd.DataFrame:
    wide = ours.pivot_table(index=["metric", "lang", "seed"], columns="model", values="value").reset_index()
    if not {"xmixup", "trans_train"} <= set(wide.columns):
        return pd.DataFrame(columns=ours.columns)
    return wide.assign(model="delta", value=wide["xmixup"] - wide["trans_train"])[["metric", "model", "lang", "seed", "value"]]


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
    md, tex = render_grid(table, ["setting"], "task", "xmixup Table 2: Spearman ρ of CKA and accuracy", notes, labels=_labels(spec))
    return table, md, tex
NO_BACK_TRANSLATION = ("w/o scheduled sampling: not distinguishable here — no back-translations are fetched (the authors' are only in their Google Drive folder), so scheduled "
                       "sampling never replaces the gold source and the row would be X-Mixup itself; the paper's value only.")


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
# Which of ours stands beside the paper's mBERT / XLM-R row (published/index.yaml): in Table 11
# those rows are XTREME's translate-train (mBERT avg 75.1 = Table 3's mBERT trans-train), in
# Table 12 XTREME's zero-shot (avg 81.9 and 86.4 = Table 3's zero-shot PAWS-X cells); the other
# of ours takes a row of its own.
ENCODER_ROW = {"table11": "trans_train", "table12": "zero_shot"}
ENCODER_ROW_SOURCE = {"trans_train": "XTREME's translate-train results", "zero_shot": "XTREME's zero-shot results"}


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
    md, tex = render_grid(table, ["model"], "lang", title, notes, labels=_labels(spec),
                          columns=[*spec["langs"][task], "avg"])
    return table, md, tex


def table11(spec: dict, inputs: list[str]):
    return _per_language_table(spec, inputs, "table11")


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
    md, tex = render_grid(table, ["model"], "column", title, notes, labels={**_labels(spec), **{c: c for c in table["column"]}},
                          columns=order)
    return table.drop(columns="column"), md, tex


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


def table10(spec: dict, inputs: list[str]):
    """X-Mixup's α (the consistency terms' weight) and p_k (the scheduled-sampling decay) per task
    type: ours the values each trained X-Mixup model recorded (its xlt_model.json), per seed."""
    keys = ["param", "task_type"]
    rows = []
    for path in inputs:
        meta = json.loads((Path(path) / "xlt_model.json").read_text())
        extra = next(e for e in meta["train_config"]["extras"] if e["name"] == "xmixup")
        task_type, seed = TASK_TYPE[task_of(Path(path).parts[-3])], int(Path(path).name.removeprefix("seed"))
        rows += [{"param": param, "task_type": task_type, "seed": seed, "value": float(extra[key])}
                 for param, key in (("alpha", "alpha"), ("p_k", "schedule_k"))]
    table = paper_vs_ours(pd.DataFrame(rows, columns=[*keys, "seed", "value"]), load_published(SLUG, "table10"), keys)
    table = account(table, lambda row: f"{LABELS.get(row['task_type'], row['task_type'])}: no task of this type in "
                                       f"papers.{SLUG}.tasks ({', '.join(_tasks(spec))}); the paper's value only.")
    notes = [f"Ours: the values each trained X-Mixup model recorded (encoder {spec['encoder']}, seeds {spec['seeds']}). "
             "The recipes take them from this table (the paper's Table 10), so Δ = 0 says the models trained with "
             "the published values; p_k in optimizer steps.", *dict.fromkeys(w for w in table["why"] if w)]
    md, tex = render_grid(table, ["param"], "task_type", "xmixup Table 10: X-Mixup's α and p_k per task type", notes,
                          labels=_labels(spec))
    return table, md, tex


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
    md, tex = render_grid(table, ["model", "metric"], "lang", title, notes, labels=_labels(spec),
                          columns=[*spec["langs"]["qa"], "avg"])
    return table, md, tex


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
        md, tex = render_grid(table, ["model", "metric"], "lang", title, notes, labels=_labels(spec),
                              columns=[*paper_langs, *[x for x in langs if x not in paper_langs], "avg"])
        return table, md, tex
    return build
TAGGING_TITLES = {"table1": "xmixup Table 1: zero-shot POS and NER (F1) per language",
                  "table13": "xmixup Table 13: POS F1 per language", "table14": "xmixup Table 14: NER F1 per language"}


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
        md, tex = render_grid(table, rows, "lang", title, notes, labels=_labels(spec))
        return table, md, tex
    return build


def table12(spec: dict, inputs: list[str]):
    return _per_language_table(spec, inputs, "table12")
