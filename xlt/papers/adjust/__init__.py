"""adjust: The Impact of Cross-Lingual Adjustment of Contextual Word Representations on
Zero-Shot Transfer.

A row's `model`: `original` = EN fine-tuning of the encoder as released (the EN-only model
other papers train with the same profile: one model), `adjusted` = EN fine-tuning of the
encoder adjusted on en–xx aligned pairs (init `adjust-<xx>-n<size>-seed<seed>`, xlt.targets.
Adjusted; one adjustment per target language and seed, as the authors' scripts do), and
`adjusted_continual` = the same with continual learning (the recipe's aux set, Eq. 2). Every
model is scored on every language of the paper's set; a column xx reads the models adjusted
on en–xx. Tables 2 (XNLI, mixed-language XNLI), 3 (NER), 4 (QA test sets, both cross-lingual
directions), 5 (en–ru sample sizes), 6 (how subword vectors make a word's), 7 (which tokens
are aligned), 8 (SQuAD dev; translated SQuAD on MLQA); Figures 1-2 (L2 distances of related
and unrelated words, per model). This module only declares (no torch).
"""

from __future__ import annotations

import re

import pandas as pd

from xlt.align import targets as align
from xlt.errors import XltError, check_config_ref
from xlt.papers.base import DataSize, Figure, Paper, Table
from xlt.papers.published import load_published
from xlt.tables import COLLAPSE_NOTE, account, account_all, add_marks, eval_rows, paper_vs_ours, render_grid
from xlt.targets import Adjusted, Recipe, adjust_config, dataset_name, encoder_dir, eval_file, langset_languages, model_dir, paper_language_set

SLUG = "adjust"
MODELS = ("original", "adjusted", "adjusted_continual")
PUBLISHED_DATASET = {"xnli": "xnli", "ner": "wikiann", "qa": "xquad"}  # the published tables' dataset key per task
LABELS = {"original": "Original", "adjusted": "Adjusted", "adjusted_continual": "Adjusted + continual",
          "xnli": "XNLI", "xnli_mixed": "mixed-language XNLI", "ner": "NER", "qa": "QA", "squad": "SQuAD", "mlqa": "MLQA",
          "xquad": "XQuAD", "tydiqa": "TyDiQA", "target": "target", "en": "EN", "cls": "[CLS]", "cls_sep": "[CLS]+[SEP]",
          "xnli:xnli": "XNLI", "ner:wikiann": "NER", "qa:tydiqa": "QA TyDiQA", "qa:xquad": "QA XQuAD", "qa:mlqa": "QA MLQA"}


def targets(cfg: dict) -> list[str]:
    """The target languages: papers.adjust.targets, by default every language English is
    aligned with (config align.pairs)."""
    return list(cfg["papers"][SLUG].get("targets") or cfg["align"]["pairs"])


def _recipe(p: dict, model: str) -> str:
    base = Recipe((p["source"],), p["hparams"])
    return Recipe(base.train_langs, base.hparams, p["continual"]).name if model == "adjusted_continual" else base.name


def _init(p: dict, model: str, pair: str, seed: int, size: int | None = None, word_vectors: str = "avg",
          tokens: str = "all") -> str:
    if model == "original":
        return "pretrained"
    return Adjusted(pair, size or p["size"], seed, word_vectors, tokens).name


def _eval(cfg: dict, p: dict, task: str, model: str, pair: str | None, seed: int, testset: str | None = None,
          langset: str | None = None, split: str = "test", encoder: str | None = None, **variant) -> str:
    """A model's evaluation on its task's test set (the paper's language set), or on another
    dataset of the task (`testset`, scored on `langset`); `encoder`: another than the paper's.
    An adjusted model is scored on the language it was adjusted on alone where the set has it:
    its tables read that column only (xlt.targets.langset_languages)."""
    langset = langset or paper_language_set(p, task)
    if model != "original" and pair in langset_languages(cfg, langset):
        langset = pair
    return eval_file(cfg, encoder or p["encoder"], _init(p, model, pair, seed, **variant), dataset_name(cfg, SLUG, task),
                     _recipe(p, model), seed, split, langset, testset=testset)


def _test_sets(cfg: dict, task: str) -> list[tuple[str | None, str | None, list[str]]]:
    """(test set, language set, target languages it has) of a main table's task: XNLI and its
    mixed-language set (Table 2), NER's own test set (Table 3), Table 4's QA sets."""
    p = cfg["papers"][SLUG]
    if task == "qa":
        return [(f"qa.{name}", langset, [x for x in targets(cfg) if x in cfg["language_sets"][langset]])
                for name, langset in p["qa_sets"].items()]
    own = [(None, None, targets(cfg))]
    if task == "xnli" and p.get("mixed"):
        own.append((p["mixed"]["dataset"], p["mixed"]["languages"], targets(cfg)))
    return own


def _where(path: str) -> tuple[str, str | None]:
    """(init, test set or None) of an evaluation file:
    results/eval/<encoder>/<init>/<task>/<recipe>/seed<s>/[on-<testset>/]<file>."""
    parts = path.split("/")
    k = max(i for i, x in enumerate(parts) if re.fullmatch(r"seed\d+", x))
    return parts[k - 3], (parts[k + 1][3:] if parts[k + 1].startswith("on-") else None)


# Table 4's test sets: a named set of qa (data.qa.sets) -> (question, context, published dataset)
QA_SETS = {
    "mlqa": ("target", "target", "mlqa"), "xquad": ("target", "target", "xquad"), "tydiqa": ("target", "target", "tydiqa"),
    "mlqa_q_target": ("target", "en", "mlqa"), "xquad_q_target": ("target", "en", "xquad"),
    "mlqa_q_en": ("en", "target", "mlqa"), "xquad_q_en": ("en", "target", "xquad"),
}


BLOCKS = {("target", "target"): "in-language", ("target", "en"): "question xx, paragraph en",
          ("en", "target"): "question en, paragraph xx"}


def _labels(task: str, testset: str | None) -> dict:
    """The published tables' keys of an evaluation: `dataset` (`xnli_mixed` for the mixed set,
    `squad` for QA's own dev set) and, for Table 4's sets, `question` and `context`."""
    if testset is None:
        return {"dataset": "squad" if task == "qa" else PUBLISHED_DATASET[task]}
    name = testset.partition(".")[2]
    if task == "qa":
        question, context, dataset = QA_SETS[name]
        return {"dataset": dataset, "question": question, "context": context}
    return {"dataset": f"{PUBLISHED_DATASET[task]}_{name}"}


def _scores(spec: dict, inputs: list[str]) -> pd.DataFrame:
    """Per-seed rows (task, dataset, model, lang, seed, value, collapsed, path, …) of the
    evaluation files, each kept for its own column: an adjusted model for the language it was
    adjusted on; the original for every target language. The row's model is read from the
    model's path; `dataset` is the published tables' name (`xnli_mixed` for the mixed set)."""
    rows = []
    for path in inputs:
        init, testset = _where(path)
        part = eval_rows([path], spec["metric"], setting_of=lambda r: "continual" if r.aux else "plain")
        if not len(part):
            continue
        part = part.assign(path=path, **_labels(part["task"].iloc[0], testset))
        if init == "pretrained":
            part = part[part["lang"].isin(spec["targets"])].assign(init="pretrained", pair=None, size=None,
                                                                   word_vectors=None, tokens=None)
        else:
            it = Adjusted.parse(init)
            part = part[part["lang"] == it.pair].assign(init=init, pair=it.pair, size=it.size,
                                                        word_vectors=it.word_vectors, tokens=it.tokens)
        rows.append(part)
    ours = pd.concat(rows, ignore_index=True)
    ours["model"] = [("original" if i == "pretrained" else "adjusted_continual" if s == "continual" else "adjusted")
                     for i, s in zip(ours["init"], ours["setting"])]
    return ours


def _gains(ours: pd.DataFrame, column: str) -> pd.DataFrame:
    """Per seed, each adjusted variant's score minus the original's (same task, language, seed);
    collapsed where either model collapsed."""
    base = ours[ours["model"] == "original"].set_index(["task", "lang", "seed"])[["value", "collapsed"]]
    adj = ours[ours["model"] == "adjusted"].copy()
    at = list(zip(adj["task"], adj["lang"], adj["seed"]))
    adj["value"] = [v - base.at[k, "value"] for k, v in zip(at, adj["value"])]
    adj["collapsed"] = [bool(c or base.at[k, "collapsed"]) for k, c in zip(at, adj["collapsed"])]
    return adj[["task", "dataset", column, "lang", "seed", "value", "collapsed"]]


def _notes(spec: dict, ours: pd.DataFrame, extra: list[str]) -> list[str]:
    seeds = sorted(ours["seed"].unique().tolist())
    return [
        f"Encoder: {spec['encoder']}. Seeds: {seeds}; each seed redoes the adjustment (its own sample of aligned "
        "pairs) and the fine-tuning. Fine-tuning on English only (profile " + spec["hparams"] + "), "
        "zero-shot on the target language; the adjusted models of a column are adjusted on English paired with it.",
        f"Aligned pairs: the alignment stage's links ({spec['aligner']}, 1-to-1; docs/align.md has each aligner's "
        "AER on the world's gold links), the paper's: fast_align, intersected. As in the authors' code, a link "
        "joining two identical words (\".\", names, numbers) is dropped and each sentence is cut at "
        f"{spec['cut']} subwords (adapt.adjust.max_length; the authors': 512, mBERT's limit).",
        *([f"Continual learning (Eq. 2): its own sample of {spec['continual_size']:,} aligned pairs per seed "
           f"(aux_sets.{spec['continual']}.size; the paper's 30K), drawn anew from the same pool with the seed, not "
           "the adjustment's pairs."] if "adjusted_continual" in set(ours["model"]) else []),
        *extra,
        COLLAPSE_NOTE,
    ]


def table_spec(cfg: dict) -> dict:
    """The paper block, with what its builders need from the rest of the config."""
    p = cfg["papers"][SLUG]
    return {**p, "targets": targets(cfg), "aligner": cfg["align"]["backend"],
            "cut": adjust_config(cfg, Adjusted("xx", p["size"], 1).name)["max_length"],
            "continual_size": cfg["aux_sets"][p["continual"]]["size"]}


# ---- Tables 2 and 3: original, adjusted, adjusted + continual --------------------------------


def table_seeds(cfg: dict, table: str) -> list[int]:
    """The seeds a table runs: its own `seeds` (Tables 4-8 may run fewer of the paper's), or
    papers.adjust.seeds."""
    p = cfg["papers"][SLUG]
    return list((p.get(table) or {}).get("seeds") or p["seeds"])


def _main_inputs(cfg: dict, task: str) -> list[str]:
    p = cfg["papers"][SLUG]
    if task not in p["tasks"]:
        return []
    seeds = table_seeds(cfg, "table4") if task == "qa" else p["seeds"]
    out = []
    for testset, langset, langs in _test_sets(cfg, task):
        out += [_eval(cfg, p, task, "original", None, seed, testset, langset) for seed in seeds]
        out += [_eval(cfg, p, task, model, xx, seed, testset, langset) for model in MODELS[1:] for xx in langs
                for seed in seeds]
    return out


# which model a row's mark compares with (the paper's * and **)
BASELINE_OF = {"adjusted": "original", "adjusted_continual": "adjusted"}
MARKS = {"adjusted": "*", "adjusted_continual": "**"}


def significance(ours: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per cell (keys) of an adjusted row, the paper's test against the row it is compared with
    (xlt.stats.compare_outputs on every seed's per-example predictions): keys + pvalue + test."""
    from xlt.stats import compare_outputs, read_seed_outputs  # numpy / scipy: only when a table is built

    files = ours.groupby([*keys], sort=False)["path"].apply(list)
    rows = []
    for key, paths in files.items():
        cell = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        if cell["model"] not in BASELINE_OF:
            continue
        other = dict(cell, model=BASELINE_OF[cell["model"]])
        base = files.get(tuple(other[k] for k in keys))
        if base is None:
            continue
        r = compare_outputs(read_seed_outputs(paths, cell["lang"]), read_seed_outputs(base, cell["lang"]))
        rows.append({**cell, "pvalue": r["pvalue"], "test": r["test"]})
    return pd.DataFrame(rows, columns=[*keys, "pvalue", "test"])


def _main_table(spec: dict, inputs: list[str], task: str, table_id: str, title: str, published: pd.DataFrame,
                keys: list[str]) -> tuple[pd.DataFrame, str, str]:
    if not inputs:
        return _not_run(spec, published, keys, task, title)
    ours = _scores(spec, inputs)
    ours = ours[ours["task"] == task]
    table = paper_vs_ours(ours[[*keys, "seed", "value", "collapsed"]], published, keys)
    tests = significance(ours, keys)
    table = add_marks(table, keys, MARKS, "model", published=published, tests=tests)
    not_run = (f"Languages not among papers.{SLUG}.targets ({', '.join(spec['targets'])}): the paper's values only.")
    table = account(table, lambda r: not_run if r["lang"] not in spec["targets"] else None)
    test = tests["test"].iloc[0] if len(tests) else "none (fewer than two models per cell)"
    notes = _notes(spec, ours, [f"{LABELS[task]} {spec['metric'][task]} on the test sets, x100.",
                                f"Marks: * adjusted vs original, ** adjusted + continual vs adjusted, p < 0.05 "
                                f"(the paper's and ours; two-sided); ours: {test} (the CSV's pvalue column)."])
    rows = [k for k in keys if k != "lang"]
    if "question" in keys:  # Table 4's blocks: one row label for the question / paragraph languages
        table = table.assign(block=[BLOCKS[(q, c)] for q, c in zip(table["question"], table["context"])])
        rows = ["block", "dataset", "model"]
    md, tex = render_grid(table, rows, "lang", title, notes, labels=LABELS,
                          columns=spec["targets"])
    return table, md, tex


def table2_inputs(cfg: dict) -> list[str]:
    return _main_inputs(cfg, "xnli")


def table2(spec: dict, inputs: list[str]):
    table, md, tex = _main_table(spec, inputs, "xnli", "table2", "adjust Table 2: XNLI accuracy",
                                 load_published(SLUG, "table2"), ["dataset", "model", "lang"])
    if spec.get("mixed"):
        md += (f"- xnli_mixed: the test set {spec['mixed']['dataset']} (data.xnli.sets): in each target pair the "
               "premise or the hypothesis, drawn with a seed, is the English original.\n")
    else:
        md += "- xnli_mixed: not configured (papers.adjust.mixed): its rows show the paper only.\n"
    return table, md, tex


def table3_inputs(cfg: dict) -> list[str]:
    return _main_inputs(cfg, "ner")


def table3(spec: dict, inputs: list[str]):
    return _main_table(spec, inputs, "ner", "table3", "adjust Table 3: NER (WikiANN) F1", load_published(SLUG, "table3"),
                       ["model", "lang"])


def table4_inputs(cfg: dict) -> list[str]:
    return _main_inputs(cfg, "qa")


def table4(spec: dict, inputs: list[str]):
    keys = ["question", "context", "dataset", "model", "lang"]
    published = load_published(SLUG, "table4")
    if not inputs:
        return _not_run(spec, published, keys, "qa", "adjust Table 4: QA F1")
    table, md, tex = _main_table(spec, inputs, "qa", "table4", "adjust Table 4: QA F1 (question · context · dataset)",
                                 published, keys)
    return table, md + ("- question / context: target = the target language, en = English (the cross-lingual "
                        "directions of MLQA, and of XQuAD joined by question id: xlt.evalsets).\n"), tex


def _not_run(spec: dict, published: pd.DataFrame, keys: list[str], task: str, title: str, reason: str | None = None):
    """A table the config does not run (its task, or an option left off): every published cell,
    with the reason."""
    reason = reason or f"Not run: {task} is not in papers.{SLUG}.tasks ({', '.join(spec['tasks'])}); the paper's values only."
    table = account_all(paper_vs_ours(pd.DataFrame(columns=[*keys, "seed", "value"]), published, keys), reason)
    if "question" in keys:
        table = table.assign(block=[BLOCKS[(q, c)] for q, c in zip(table["question"], table["context"])])
        keys = ["block", "dataset", "model", "lang"]
    md, tex = render_grid(table, [k for k in keys if k != "lang" and k != "eval_lang"],
                          "lang" if "lang" in keys else "eval_lang", title,
                          [reason], labels=LABELS)
    return table, md, tex


# ---- Table 8: monolingual QA (SQuAD dev; MLQA after training on translated SQuAD) ----------


def table8_inputs(cfg: dict) -> list[str]:
    p = cfg["papers"][SLUG]
    if "qa" not in p["tasks"]:
        return []
    t8 = p["table8"]
    out = []
    for seed in table_seeds(cfg, "table8"):
        out.append(_eval(cfg, p, "qa", "original", None, seed, split="dev", langset=t8["source_languages"]))
        out += [_eval(cfg, p, "qa", "adjusted", xx, seed, split="dev", langset=t8["source_languages"]) for xx in targets(cfg)]
        for xx in t8_langs(cfg):  # trained on SQuAD translated into xx, scored on MLQA xx
            for model in ("original", "adjusted"):
                out.append(eval_file(cfg, p["encoder"], _init(p, model, xx, seed), t8["train"], Recipe((xx,), p["hparams"]).name,
                                     seed, "test", t8["test_languages"], testset=t8["test"]))
    return out


def t8_langs(cfg: dict) -> list[str]:
    t8 = cfg["papers"][SLUG]["table8"]
    return [x for x in targets(cfg) if x in cfg["language_sets"][t8["test_languages"]]]


def table8(spec: dict, inputs: list[str]):
    keys = ["dataset", "model", "align_lang", "eval_lang"]
    published = load_published(SLUG, "table8")
    if not inputs:
        return _not_run(spec, published, keys, "qa", "adjust Table 8: monolingual QA F1")
    rows = []
    for path in inputs:
        init, testset = _where(path)
        part = eval_rows([path], spec["metric"], setting_of=lambda r: r.train_langs[0])
        it = None if init == "pretrained" else Adjusted.parse(init)
        if testset is None:  # SQuAD dev, English
            dataset = "squad"
        else:  # MLQA in the language of the translated training data
            dataset = "mlqa"
            part = part[part["lang"] == part["setting"]]
        rows.append(part.assign(dataset=dataset, model="original" if it is None else "adjusted",
                                align_lang="none" if it is None else it.pair, eval_lang=part["lang"]))
    ours = pd.concat(rows, ignore_index=True)
    table = paper_vs_ours(ours[[*keys, "seed", "value", "collapsed"]], published, keys)
    notes = _notes(spec, ours, [
        "squad: SQuAD v1.1 dev F1 (English) of the models of Table 4, by the language the encoder was adjusted on; "
        "mlqa: MLQA F1 of models fine-tuned on SQuAD machine-translated into that language (data.qa.sets."
        f"{spec['table8']['train'].partition('.')[2]}), from the original or the encoder adjusted on it."])
    md, tex = render_grid(table, ["dataset", "model", "align_lang"], "eval_lang", "adjust Table 8: monolingual QA F1",
                          notes, labels=LABELS)
    return table, md, tex


# ---- Table 9 (an option): an encoder with a larger Hindi vocabulary, original vs adjusted -----


def table9_inputs(cfg: dict) -> list[str]:
    """Off unless `papers.adjust.table9` names the encoder (the paper's: Wang et al. 2020's
    extended mBERT, a TensorFlow checkpoint outside the Hub, converted to a local Hugging Face
    directory: `encoders.<name>.path`)."""
    p = cfg["papers"][SLUG]
    t9 = p.get("table9")
    if not t9:
        return []
    pair, out = t9["pair"], []
    for task in p["tasks"]:
        sets = [(None, None)] if task != "qa" else [(f"qa.{n}", p["qa_sets"][n]) for n in t9["qa_sets"]]
        for testset, langset in sets:
            for seed in p["seeds"]:
                out.append(_eval(cfg, p, task, "original", None, seed, testset, langset, encoder=t9["encoder"]))
                out += [_eval(cfg, p, task, "adjusted", pair, seed, testset, langset, encoder=t9["encoder"], size=n)
                        for n in t9["sizes"]]
    return out


def table9(spec: dict, inputs: list[str]):
    keys = ["model", "task", "dataset", "lang"]
    published = load_published(SLUG, "table9")
    if not inputs:
        return _not_run(spec, published, keys, "", "adjust Table 9: extended mBERT (Hindi)",
                        f"Not run: papers.{SLUG}.table9 is not set (an option: the paper's encoder is a TensorFlow "
                        "checkpoint outside the Hub; xlt/papers/adjust/README.md).")
    t9 = spec["table9"]
    ours = _scores({**spec, "targets": [t9["pair"]]}, inputs)
    ours = ours[ours["lang"] == t9["pair"]]
    ours["model"] = ["original" if m == "original" else f"adjusted_{int(n) // 1000}k" for m, n in zip(ours["model"], ours["size"])]
    table = paper_vs_ours(ours[[*keys, "seed", "value", "collapsed"]], published, keys)
    table = table.assign(column=[f"{t}:{d}" for t, d in zip(table["task"], table["dataset"])])
    md, tex = render_grid(table, ["model"], "column", f"adjust Table 9: {t9['encoder']} ({t9['pair']})",
                          _notes({**spec, "encoder": t9["encoder"]}, ours, [f"Adjusted on en–{t9['pair']} pairs: "
                                 + ", ".join(str(n) for n in t9["sizes"]) + "."]), labels=LABELS)
    return table, md, tex


# ---- Tables 5-7: gains over the original by sample size, subword vectors, aligned tokens ------


def _variant_inputs(cfg: dict, table: str) -> list[str]:
    p = cfg["papers"][SLUG]
    t = p.get(table)
    if not t:
        return []
    out = []
    for task in t["tasks"]:
        for seed in table_seeds(cfg, table):  # a table may run fewer of the paper's seeds
            out.append(_eval(cfg, p, task, "original", None, seed))
            for variant in _variants(cfg, table):
                out.append(_eval(cfg, p, task, "adjusted", t["pair"], seed, **variant))
    return list(dict.fromkeys(out))


def _variants(cfg: dict, table: str) -> list[dict]:
    t = cfg["papers"][SLUG][table]
    if table == "table5":
        return [{"size": n} for n in t["sizes"]]
    if table == "table6":
        return [{"word_vectors": m} for m in t["modes"]]
    return [{"tokens": k} for k in t["tokens"]]


VARIANT_COLUMN = {"table5": "size", "table6": "word_vectors", "table7": "tokens"}
PUBLISHED_COLUMN = {"table5": "size", "table6": "mode", "table7": "tokens"}
VARIANT_TITLE = {
    "table5": "adjust Table 5: gain over the original by the number of en–{pair} sentence pairs",
    "table6": "adjust Table 6: gain over the original by how subword vectors make a word's ({pair})",
    "table7": "adjust Table 7: gain over the original by which tokens are aligned ({pair})",
}


# A variant's name in the published tables where ours differs (the init's `-subword`).
PUBLISHED_NAME = {"subword": "subword_alignment"}
VARIANT_KEY = {"table5": "sizes", "table6": "modes", "table7": "tokens"}


def _variant_table(spec: dict, inputs: list[str], table_id: str, notes: list[str]):
    t = spec[table_id]
    column, pub_column = VARIANT_COLUMN[table_id], PUBLISHED_COLUMN[table_id]
    ours = _scores(spec, inputs)
    ours = ours[(ours["model"] == "original") & (ours["lang"] == t["pair"]) | (ours["pair"] == t["pair"])]
    gains = _gains(ours, column).rename(columns={column: pub_column})
    gains[pub_column] = [PUBLISHED_NAME.get(str(v), str(v)) for v in gains[pub_column]]
    published = load_published(SLUG, table_id)
    published = published.assign(**{pub_column: published[pub_column].astype(str)})
    table = paper_vs_ours(gains, published, [pub_column, "task", "dataset", "lang"])
    # the paper's cells of another language pair: kept in the CSV with the reason, not in the grid
    elsewhere = table[(table["lang"] != t["pair"]) & table["paper"].notna()]
    if len(elsewhere):
        why = (f"The paper's pair is en–{', en–'.join(sorted(set(elsewhere['lang'])))}; this run's is en–{t['pair']} "
               f"(papers.{SLUG}.{table_id}.pair): the paper's values are in the CSV only.")
        elsewhere, notes = account_all(elsewhere, why), [*notes, why]
    table = table[table["lang"] == t["pair"]]
    reasons = {}  # why a published cell has no ours: its task not run, or its size / mode / tokens not run
    if not_run := [task for task in dict.fromkeys(published["task"]) if task not in t["tasks"]]:
        reasons["task"] = (f"{', '.join(LABELS.get(x, x) for x in not_run)}: not run (papers.{SLUG}.{table_id}.tasks: "
                           f"{', '.join(t['tasks'])}); the paper's values only.")
    run = table["task"].isin(t["tasks"])
    unmatched = sorted({str(v) for v in table.loc[run & table["ours_mean"].isna() & table["paper"].notna(), pub_column]},
                       key=lambda v: (len(v), v))
    if unmatched:
        key = VARIANT_KEY[table_id]
        ours_only = ", ".join(str(v) for v in t[key] if PUBLISHED_NAME.get(str(v), str(v)) not in set(published[pub_column]))
        reasons["variant"] = (f"The paper's {', '.join(unmatched)}: not run here (papers.{SLUG}.{table_id}.{key}: "
                              f"{', '.join(str(v) for v in t[key])})" + (f"; ours: {ours_only}, their own rows" if ours_only else "")
                              + "." + "".join(f" {HOW_TO_RUN[v]}" for v in unmatched if v in HOW_TO_RUN))
    notes = [*notes, *reasons.values()]
    table = account(table, lambda r: reasons["task"] if r["task"] not in t["tasks"] else reasons.get("variant"))
    table = table.assign(column=[f"{task}:{d}" for task, d in zip(table["task"], table["dataset"])])
    md, tex = render_grid(table, [pub_column], "column", VARIANT_TITLE[table_id].format(pair=t["pair"]),
                          _notes(spec, ours, ["Each cell: the adjusted model's score minus the original's, per seed, "
                                              "then mean ± std over seeds (points)."] + notes), labels=LABELS)
    return pd.concat([table, elsewhere], ignore_index=True) if len(elsewhere) else table, md, tex


VARIANT_NOTES = {
    "table5": ["Sizes: sentence pairs drawn from the pool (align.samples); the paper's 5K-250K from a 250K "
               "WikiMatrix pool."],
    "table6": ["start / end / avg: a word's vector is its first subword's, its last's or their average, on word "
               "links; subword_alignment (init -subword): the aligner run on the pool re-tokenised by the encoder's "
               "tokenizer (each word alone, as the adjustment tokenises it; results/align/en-<xx>/subword-<encoder>/), "
               "its 1-to-1 subword links used as they are; each seed's sample holds the same sentence pairs as its "
               "word-level sample (xlt/align/subword.py)."],
    "table7": ["Every variant keeps the English vectors of all tokens near the original's (the anchor term); only the "
               "aligned pairs change."],
}


# How to run a published row the config leaves out (the generated note of a variant table).
HOW_TO_RUN = {"subword_alignment": "`subword` in that list runs it: the pool in the encoder's subwords, aligned "
                                   "again, one more adjustment and fine-tuning per seed and task (docs/align.md)."}


def variant_table(table_id: str) -> Table:
    """Table 5, 6 or 7: the gains of one family of adjustment variants on one language pair."""
    return Table(table_id, inputs=lambda cfg: _variant_inputs(cfg, table_id), spec=table_spec,
                 build=lambda spec, inputs: _variant_table(spec, inputs, table_id, VARIANT_NOTES[table_id]))


# ---- Figures 1-2: L2 distances of related vs unrelated word pairs, per model ----------------
# A row's distances: the original encoder's are the alignment stage's (rules/align.smk); every
# other row's are computed by rule adjust_l2 from that row's encoder, one seed's models:
#     results/adjust/l2/en-{xx}/{row}.seed{seed}.{csv,json}
# row = adjusted | <task>.finetuned | <task>.adjusted_finetuned | <task>.adjusted_continual
ROW_KINDS = ("finetuned", "adjusted_finetuned", "adjusted_continual")
ROW_LABELS = {"original": "original", "adjusted": "adjusted", "finetuned": "fine-tuned",
              "adjusted_finetuned": "adjusted + fine-tuned", "adjusted_continual": "adjusted + continual"}
WILDCARDS = {"row": r"adjusted|[a-z]+\.(" + "|".join(ROW_KINDS) + ")"}


def l2_rows(cfg: dict, tasks: list[str] | None = None) -> list[str]:
    p = cfg["papers"][SLUG]
    return ["adjusted"] + [f"{task}.{kind}" for task in (tasks or p["tasks"]) for kind in ROW_KINDS]


def l2_file(cfg: dict, xx: str, row: str, seed: int) -> str:
    return f"{cfg['results']}/adjust/l2/en-{xx}/{row}.seed{seed}.csv"


def l2_model(cfg: dict, xx: str, row: str, seed: int) -> str:
    """The directory made by the DAG that holds a row's encoder: the adjusted encoder, or a model."""
    p = cfg["papers"][SLUG]
    adjusted = Adjusted(xx, p["size"], int(seed)).name
    if row == "adjusted":
        return encoder_dir(cfg, p["encoder"], adjusted)
    task, kind = row.split(".")
    model = "original" if kind == "finetuned" else "adjusted_continual" if kind == "adjusted_continual" else "adjusted"
    return model_dir(cfg, p["encoder"], "pretrained" if model == "original" else adjusted, dataset_name(cfg, SLUG, task),
                     _recipe(p, model), int(seed))


def l2_encoder(cfg: dict, xx: str, row: str, seed: int) -> str:
    """A row's encoder: the adjusted encoder's directory, or a model's encoder folder."""
    where = l2_model(cfg, xx, row, seed)
    return where if row == "adjusted" else f"{where}/encoder"


def figure_seed(cfg: dict) -> int:
    p = cfg["papers"][SLUG]
    return int((p.get("figures") or {}).get("seed", p["seeds"][0]))


def figure_inputs(cfg: dict) -> list[str]:
    seed = figure_seed(cfg)
    original = {xx: f"{align.backend_dir(cfg, xx)}/l2/{cfg['papers'][SLUG]['encoder']}.csv" for xx in targets(cfg)}
    return [f for xx in targets(cfg) for f in [original[xx]] + [l2_file(cfg, xx, r, seed) for r in l2_rows(cfg)]]


def figure_spec(cfg: dict) -> dict:
    p = cfg["papers"][SLUG]
    l2 = cfg["align"]["l2"]
    return {"targets": targets(cfg), "tasks": p["tasks"], "fig1_pair": l2.get("fig1_pair", targets(cfg)[0]),
            "fig1_task": (p.get("figures") or {}).get("fig1_task", p["tasks"][0]), "bins": l2.get("bins", 50)}


def _row_of(path: str) -> tuple[str, str]:
    """(pair, row) of a distances file: the alignment stage's (original) or adjust_l2's."""
    if m := re.search(r"/adjust/l2/en-([a-z]+)/([a-z_.]+)\.seed\d+\.csv$", path):
        return m[1], m[2]
    if m := re.search(r"/align/en-([a-z]+)/[^/]+/l2/[^/]+\.csv$", path):
        return m[1], "original"
    raise XltError(f"{path}: not a distances file of adjust's figures")


def _row_label(row: str) -> str:
    if "." not in row:
        return ROW_LABELS[row]
    task, kind = row.split(".")
    return f"{LABELS.get(task, task)} {ROW_LABELS[kind]}"


def draw(spec: dict, inputs: list[str], out_dir: str, figure: str) -> None:
    import pandas as pd

    from xlt.align.report import l2_figure  # matplotlib: only when a figure is drawn

    frames = []
    for path in inputs:
        pair, row = _row_of(path)
        d = pd.read_csv(path)
        if d.empty:
            raise XltError(f"{path}: no word-pair distances")
        frames.append(d.assign(pair=pair, row=row))
    dist = pd.concat(frames, ignore_index=True)
    if figure == "fig1":
        keep = ["original", "adjusted"] + [f"{spec['fig1_task']}.{k}" for k in ROW_KINDS]
        pairs = [spec["fig1_pair"]]
        title = f"L2 distances, related vs unrelated\nword pairs (en-{spec['fig1_pair']}), {LABELS.get(spec['fig1_task'])}"
    else:
        keep = ["original", "adjusted"] + [f"{t}.{k}" for t in spec["tasks"] for k in ROW_KINDS]
        pairs = spec["targets"]
        title = "L2 distances of related vs unrelated word pairs, every pair and model"
    dist = dist[dist["row"].isin(keep)].copy()
    dist["row"] = pd.Categorical(dist["row"], keep, ordered=True)
    dist = dist.sort_values("row", kind="stable")
    dist["model"] = dist["row"].map(_row_label).astype(str)
    l2_figure(dist.drop(columns="row"), pairs, spec["bins"], title, f"{out_dir}/{figure}")


# Public sizes of the QA data the paper reads and prints no count of (the bill's counts of data not
# prepared; xlt.bill): per language as the releases give them; the cross-lingual MLQA files
# and translated SQuAD as upper bounds (their source sets' counts).
QA_SIZES = {
    ("qa", "en", "train"): 87599, ("qa", "en", "dev"): 10570,  # SQuAD v1.1
    **{("qa.xquad", x, "test"): 1190 for x in ("es", "ru", "vi", "hi")},
    **{(f"qa.{s}", x, "test"): 1190 for s in ("xquad_q_target", "xquad_q_en") for x in ("es", "ru", "vi", "hi")},
    **{("qa.mlqa", x, "test"): n for x, n in (("es", 5253), ("vi", 5495), ("hi", 4918))},  # MLQA test
    ("qa.tydiqa", "ru", "test"): 812,  # TyDiQA-GoldP dev (XTREME's test)
}


def data_sizes() -> list[DataSize]:
    out = [DataSize(d, lang, split, n, "public release sizes (xlt/papers/adjust)", 1) for (d, lang, split), n in QA_SIZES.items()]
    mlqa = {x: n for (d, x, _), n in QA_SIZES.items() if d == "qa.mlqa"}
    out += [DataSize(f"qa.{s}", x, "test", n, "upper bound: the MLQA test set of the language", 3)
            for s in ("mlqa_q_target", "mlqa_q_en") for x, n in mlqa.items()]
    out += [DataSize("qa.translated", x, split, QA_SIZES[("qa", "en", split)], "upper bound: SQuAD's count", 3)
            for x in ("es", "ru", "vi", "hi") for split in ("train", "dev")]
    return out


def check(cfg: dict, p: dict) -> None:
    check_config_ref("aux set", f"papers.{SLUG}.continual", p["continual"], cfg.get("aux_sets") or {})
    tests = []  # (config key, model's dataset, test set, language set)
    if (m := p.get("mixed")) and "xnli" in p["tasks"]:
        tests.append(("mixed", "xnli", m["dataset"], m["languages"]))
    if "qa" in p["tasks"]:
        for key in ("qa_sets", "table8"):
            if key not in p:
                raise XltError(f"config key papers.{SLUG}.{key}: required when qa is one of papers.{SLUG}.tasks")
        tests += [(f"qa_sets.{name}", "qa", f"qa.{name}", langs) for name, langs in p["qa_sets"].items()]
        t8 = p["table8"]
        tests.append(("table8", t8["train"], t8["test"], t8["test_languages"]))
    for key, dataset, testset, langs in tests:
        check_config_ref("language set", f"papers.{SLUG}.{key}", langs, cfg["language_sets"])
        try:
            eval_file(cfg, p["encoder"], "pretrained", dataset, "en.x", 1, "test", langs, testset=testset)
        except XltError as e:
            raise XltError(f"config key papers.{SLUG}.{key}: {e}") from None
    if (cfg["aux_sets"][p["continual"]]).get("kind") != "aligned_pairs":
        raise XltError(f"config key papers.{SLUG}.continual: aux set {p['continual']!r} is not of kind aligned_pairs")
    sizes = set(cfg["align"]["samples"]["sizes"])
    if p["size"] not in sizes:
        raise XltError(f"config key papers.{SLUG}.size: {p['size']} is not a sample size of align.samples.sizes "
                       f"({sorted(sizes)})")
    missing = sorted(set(p["seeds"]) - set(cfg["align"]["samples"]["seeds"]))
    if missing:
        raise XltError(f"config key papers.{SLUG}.seeds: {missing} have no aligned-pairs sample (align.samples.seeds)")
    langs = cfg["language_sets"][paper_language_set(p, p["tasks"][0])]
    for xx in targets(cfg):
        if xx not in cfg["align"]["pairs"]:
            raise XltError(f"config key papers.{SLUG}.targets: {xx!r} is not aligned with English (align.pairs: "
                           f"{cfg['align']['pairs']})")
        if xx not in langs:
            raise XltError(f"config key papers.{SLUG}.targets: {xx!r} is not in the paper's language set ({langs})")
    fig1 = figure_spec(cfg)
    if fig1["fig1_pair"] not in targets(cfg):
        raise XltError(f"config key align.l2.fig1_pair: {fig1['fig1_pair']!r} is not a target of papers.{SLUG} "
                       f"(its Figure 1 shows that pair's models; targets: {targets(cfg)})")
    check_config_ref("task", f"papers.{SLUG}.figures.fig1_task", fig1["fig1_task"], p["tasks"])
    for table in ("table4", "table5", "table6", "table7", "table8"):
        if extra := sorted(set((p.get(table) or {}).get("seeds") or []) - set(p["seeds"])):
            raise XltError(f"config key papers.{SLUG}.{table}.seeds: {extra} are not among papers.{SLUG}.seeds ({p['seeds']})")
    if figure_seed(cfg) not in p["seeds"]:
        raise XltError(f"config key papers.{SLUG}.figures.seed: {figure_seed(cfg)} is not one of papers.{SLUG}.seeds "
                       f"({p['seeds']})")
    if t9 := p.get("table9"):
        check_config_ref("encoder", f"papers.{SLUG}.table9.encoder", t9["encoder"], cfg["encoders"])
        sweep = cfg["align"]["samples"].get("sweep") or {}
        have = set(cfg["align"]["samples"]["sizes"]) | (set(sweep.get("sizes", [])) if t9["pair"] in sweep.get("pairs", []) else set())
        if bad := sorted(set(t9["sizes"]) - have):
            raise XltError(f"config key papers.{SLUG}.table9.sizes: {bad} are not sampled for {t9['pair']} "
                           "(align.samples.sizes, align.samples.sweep)")
    for table in ("table5", "table6", "table7"):
        t = p.get(table)
        if t and t["pair"] not in targets(cfg):
            raise XltError(f"config key papers.{SLUG}.{table}.pair: {t['pair']!r} is not aligned (align.pairs: "
                           f"{targets(cfg)})")
        if t and table == "table5":
            sweep = cfg["align"]["samples"].get("sweep") or {}
            have = set(cfg["align"]["samples"]["sizes"]) | (set(sweep.get("sizes", [])) if t["pair"] in sweep.get("pairs", []) else set())
            if bad := sorted(set(t["sizes"]) - have):
                raise XltError(f"config key papers.{SLUG}.table5.sizes: {bad} are not sampled for {t['pair']} "
                               "(align.samples.sizes, align.samples.sweep)")


PAPER = Paper(
    SLUG,
    jobs=f"{__name__}.jobs",  # its jobs (jobs.py), run by workflow_scripts/paper_job.py
    tables=(
        Table("table2", inputs=table2_inputs, build=table2, spec=table_spec),
        Table("table3", inputs=table3_inputs, build=table3, spec=table_spec),
        Table("table4", inputs=table4_inputs, build=table4, spec=table_spec),
        *(variant_table(t) for t in VARIANT_NOTES),
        Table("table8", inputs=table8_inputs, build=table8, spec=table_spec),
        Table("table9", inputs=table9_inputs, build=table9, spec=table_spec),
    ),
    figures=(
        Figure("fig1", "Histograms of the L2 distances between the last-layer vectors of related (aligned) and "
                       "unrelated word pairs of one language pair (align.l2.fig1_pair): original, adjusted, fine-tuned "
                       "on English NLI, adjusted + fine-tuned, adjusted + continual learning."),
        Figure("fig2", "Histograms of the L2 distances of related vs unrelated word pairs for every aligned language "
                       "pair: original, adjusted, and per task fine-tuned, adjusted + fine-tuned, adjusted + continual."),
    ),
    figure_inputs=figure_inputs,
    draw=draw,
    figure_spec=figure_spec,
    check=check,
    data_sizes=data_sizes,
    wildcards=WILDCARDS,
    claims="claims.yaml",
    reads_alignment=True,  # its adjusted encoders learn from aligned word pairs
)
