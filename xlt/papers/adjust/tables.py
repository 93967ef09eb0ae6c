"""adjust's tables (2-9): ours beside the paper's, gains over the original model and their
significance, with the reason for every cell we do not run."""

from __future__ import annotations

import re

import pandas as pd

from xlt.papers.adjust.plan import QA_SETS, SLUG, VARIANT_KEY, _variant_inputs, table_spec
from xlt.paperkit.base import Table
from xlt.paperkit.published import load_published
from xlt.tables import COLLAPSE_NOTE, account, account_all, add_marks, eval_rows, paper_vs_ours, render_grid
from xlt.papers.adjust.inits import Adjusted

PUBLISHED_DATASET = {"xnli": "xnli", "ner": "wikiann", "qa": "xquad"}  # the published tables' dataset key per task
LABELS = {"original": "Original", "adjusted": "Adjusted", "adjusted_continual": "Adjusted + continual",
          "xnli": "XNLI", "xnli_mixed": "mixed-language XNLI", "ner": "NER", "qa": "QA", "squad": "SQuAD", "mlqa": "MLQA",
          "xquad": "XQuAD", "tydiqa": "TyDiQA", "target": "target", "en": "EN", "cls": "[CLS]", "cls_sep": "[CLS]+[SEP]",
          "xnli:xnli": "XNLI", "ner:wikiann": "NER", "qa:tydiqa": "QA TyDiQA", "qa:xquad": "QA XQuAD", "qa:mlqa": "QA MLQA"}


def _where(path: str) -> tuple[str, str | None]:
    """(init, test set or None) of an evaluation file:
    results/eval/<encoder>/<init>/<task>/<recipe>/seed<s>/[on-<testset>/]<file>."""
    parts = path.split("/")
    k = max(i for i, x in enumerate(parts) if re.fullmatch(r"seed\d+", x))
    return parts[k - 3], (parts[k + 1][3:] if parts[k + 1].startswith("on-") else None)


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


ZERO_SHOT = "Fine-tuning on English only, zero-shot on the target language"


def continual_note(spec: dict) -> str:
    """How continual learning's aligned pairs were drawn in this run (its aux set's `draw`)."""
    size, name = spec["continual_size"], spec["continual"]
    if spec.get("continual_draw", "adjustment") == "adjustment":
        how = ("the alignment stage's sample of that size drawn with the model's seed: with the adjustment's size, "
               "the very pairs its encoder was adjusted on")
    else:
        how = "a second draw of the pool with the model's seed, not the adjustment's pairs"
    return (f"Continual learning (Eq. 2): {size:,} aligned pairs per seed (aux_sets.{name}.size, "
            f"draw: {spec.get('continual_draw', 'adjustment')}), {how}.")


def _notes(spec: dict, ours: pd.DataFrame, extra: list[str], training: str = ZERO_SHOT) -> list[str]:
    """The notes every table of the paper carries: what this run is (from its config); the
    deviations and this run's scalings come from the fidelity ledger (xlt.fidelity.item_notes)."""
    seeds = sorted(ours["seed"].unique().tolist())
    return [
        f"Encoder: {spec['encoder']}. Seeds: {seeds}; each seed redoes the adjustment (its own sample of aligned "
        f"pairs) and the fine-tuning. {training} (profile {spec['hparams']}); the adjusted models of a column are "
        "adjusted on English paired with it.",
        f"Aligned pairs: the alignment stage's links ({spec['aligner']}, 1-to-1; docs/align.md has each aligner's "
        "AER on the world's gold links); a link joining two identical words (\".\", names, numbers) is dropped.",
        *([continual_note(spec)] if "adjusted_continual" in set(ours["model"]) else []),
        *extra,
        COLLAPSE_NOTE,
    ]


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


def table2(spec: dict, inputs: list[str]):
    table, md, tex = _main_table(spec, inputs, "xnli", "table2", "adjust Table 2: XNLI accuracy",
                                 load_published(SLUG, "table2"), ["dataset", "model", "lang"])
    if spec.get("mixed"):
        md += (f"- xnli_mixed: the test set {spec['mixed']['dataset']} (data.xnli.sets): in each target pair the "
               "premise or the hypothesis, drawn with a seed, is the English original.\n")
    else:
        md += "- xnli_mixed: not configured (papers.adjust.mixed): its rows show the paper only.\n"
    return table, md, tex


def table3(spec: dict, inputs: list[str]):
    return _main_table(spec, inputs, "ner", "table3", "adjust Table 3: NER (WikiANN) F1", load_published(SLUG, "table3"),
                       ["model", "lang"])


def table4(spec: dict, inputs: list[str]):
    keys = ["question", "context", "dataset", "model", "lang"]
    published = load_published(SLUG, "table4")
    if not inputs:
        return _not_run(spec, published, keys, "qa", "adjust Table 4: QA F1")
    table, md, tex = _main_table(spec, inputs, "qa", "table4", "adjust Table 4: QA F1 (question · context · dataset)",
                                 published, keys)
    return table, md + ("- question / context: target = the target language, en = English (the cross-lingual "
                        "directions of MLQA, and of XQuAD joined by question id: xlt.stages.bilingual_sets).\n"), tex


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
        f"{spec['table8']['train'].partition('.')[2]}), from the original or the encoder adjusted on it."],
        training=("Fine-tuning: the squad rows' models on English SQuAD; the mlqa rows' on SQuAD machine-translated "
                  "into the column's language, tested in that language (not zero-shot)"))
    md, tex = render_grid(table, ["dataset", "model", "align_lang"], "eval_lang", "adjust Table 8: monolingual QA F1",
                          notes, labels=LABELS)
    return table, md, tex


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


VARIANT_COLUMN = {"table5": "size", "table6": "word_vectors", "table7": "tokens"}
PUBLISHED_COLUMN = {"table5": "size", "table6": "mode", "table7": "tokens"}
VARIANT_TITLE = {
    "table5": "adjust Table 5: gain over the original by the number of en–{pair} sentence pairs",
    "table6": "adjust Table 6: gain over the original by how subword vectors make a word's ({pair})",
    "table7": "adjust Table 7: gain over the original by which tokens are aligned ({pair})",
}


# A variant's name in the published tables where ours differs (the init's `-subword`).
PUBLISHED_NAME = {"subword": "subword_alignment"}


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
