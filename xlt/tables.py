"""Paper tables: the published value, ours (mean ± std over seeds) and the difference.

Every number comes from a file a rule made (evaluation JSONs) or from the published data
in `xlt/published/`; nothing is typed here. A table is rendered three ways: a long CSV
(one row per cell, machine-readable), Markdown and LaTeX (the paper's layout).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from xlt.errors import XltError
from xlt.io import read_json, write_text
from xlt.stats import mean_std
from xlt.targets import Recipe

PM_TEX = "$\\pm$"
TASK_LABELS = {"pos": "POS", "ner": "NER", "pawsx": "PI", "marc": "SA", "xnli": "XNLI", "qa": "QA", "parsing": "DEP"}


def paper_vs_ours(ours: pd.DataFrame, published: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Join per-seed scores with the published value on `keys`.

    `ours` has columns keys + [seed, value]; `published` keys + [value]. Every published
    cell appears in the result, in the paper's order; a cell we did not compute shows NaN
    (never silently dropped); cells the paper lacks follow.
    """
    agg = (
        ours.groupby(keys, sort=False)["value"]
        .apply(list)
        .reset_index()
        .assign(
            ours_mean=lambda d: d["value"].map(lambda v: mean_std(v)[0]),
            ours_std=lambda d: d["value"].map(lambda v: mean_std(v)[1]),
            n_seeds=lambda d: d["value"].map(len),
        )
        .drop(columns="value")
    )
    if "collapsed" in ours:  # collapsed runs stay in the mean; each cell counts them
        agg = agg.merge(ours.groupby(keys, sort=False)["collapsed"].sum().astype(int).rename("n_collapsed").reset_index(),
                        on=keys)
    pub = published[keys + ["value"]].rename(columns={"value": "paper"}).assign(_order=range(len(published)))
    table = pub.merge(agg, on=keys, how="outer")  # an outer merge sorts the keys: restore the paper's order
    table = table.sort_values("_order", kind="stable", na_position="last").drop(columns="_order").reset_index(drop=True)
    table["delta"] = table["ours_mean"] - table["paper"]
    return table


def _fmt(x: float, digits: int = 2) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _fmt_delta(x: float) -> str:
    return "–" if x is None or math.isnan(x) else f"{x:+.2f}"


def cell_text(row) -> tuple[str, str, str]:
    ours = "–" if math.isnan(row["ours_mean"]) else f"{row['ours_mean']:.2f} ± {row['ours_std']:.2f}"
    if row.get("n_collapsed", 0) > 0:
        ours += f" †{int(row['n_collapsed'])}"
    return _fmt(row["paper"]), ours, _fmt_delta(row["delta"])


COLLAPSE_NOTE = ("†k: k of the cell's seeds collapsed (dev predictions all one class or tag); they are kept in "
                 "the mean and counted in the CSV's n_collapsed")
SEEDS_LEGEND = "Each cell: paper · ours (mean ± std over seeds) · Δ = ours − paper"


def render_grid(
    table: pd.DataFrame,
    row_keys: list[str],
    col_key: str,
    title: str,
    notes: list[str],
    *,
    cell=cell_text,
    legend: str = SEEDS_LEGEND,
    labels: dict[str, str] = TASK_LABELS,
) -> tuple[str, str]:
    """Markdown and LaTeX in the paper's layout; each cell shows `cell(row)`: paper / ours / Δ.
    `labels` names row and column keys (default: the tasks' short names; columns upper-cased)."""
    cols = list(dict.fromkeys(table[col_key]))
    rows = list(dict.fromkeys(map(tuple, table[row_keys].values.tolist())))
    lookup = {(tuple(r[k] for k in row_keys), r[col_key]): r for _, r in table.iterrows()}
    heads = [labels.get(c, str(c).upper()) for c in cols]

    def label(rk):
        return " ".join(labels.get(v, str(v)) for v in rk)

    md = [f"## {title}", "", legend, ""]
    md.append("| | " + " | ".join(heads) + " |")
    md.append("|---|" + "---|" * len(cols))
    tex = [
        "% " + title,
        "\\begin{tabular}{l" + "r" * len(cols) + "}",
        "\\toprule",
        " & " + " & ".join(heads) + " \\\\",
        "\\midrule",
    ]
    for rk in rows:
        cells_md, cells_tex = [], []
        for c in cols:
            r = lookup.get((rk, c))
            if r is None:
                cells_md.append("–")
                cells_tex.append("--")
                continue
            p, o, d = cell(r)
            cells_md.append(f"{p} · {o} · {d}")
            cells_tex.append(f"{p} / {o.replace('±', PM_TEX)} / {d}")
        md.append(f"| {label(rk)} | " + " | ".join(cells_md) + " |")
        tex.append(f"{label(rk)} & " + " & ".join(cells_tex) + " \\\\")
    tex += ["\\bottomrule", "\\end{tabular}"]
    md += [""] + [f"- {n}" for n in notes]
    return "\n".join(md) + "\n", "\n".join(tex) + "\n"


def write_table(table: pd.DataFrame, out_prefix: str | Path, md: str, tex: str) -> None:
    out_prefix = str(out_prefix)
    write_text(out_prefix + ".csv", table.to_csv(index=False, float_format="%.4f"))
    write_text(out_prefix + ".md", md)
    write_text(out_prefix + ".tex", tex)


# ---- per-table builders ---------------------------------------------------------------------


def _eval_rows(inputs: list[str], metric_of: dict[str, str], setting_of) -> pd.DataFrame:
    rows = []
    for path in inputs:
        report = read_json(path)
        recipe = Recipe.parse(Path(report["model"]).parent.name)
        metric = metric_of[report["task"]]
        for lang, m in report["metrics"].items():
            if metric not in m:
                raise XltError(f"{path}: no metric {metric!r}; has {', '.join(k for k in m if k != 'n')}")
            rows.append({"task": report["task"], "setting": setting_of(recipe), "lang": lang, "seed": report["seed"], "value": m[metric],
                         "collapsed": bool(report.get("collapsed", False))})
    return pd.DataFrame(rows)


def crossmulti_table2(spec: dict, inputs: list[str]) -> tuple[pd.DataFrame, str, str]:
    from xlt.published import load_published

    source = spec["source"]
    ours = _eval_rows(inputs, spec["metric"], lambda r: "cross" if r.train_langs == (source,) else "multi")
    published = load_published("crossmulti", "table2")
    published = published[published["task"].isin(spec["tasks"])]
    keys = ["task", "setting", "lang"]
    table = paper_vs_ours(ours, published, keys)
    seeds = sorted(ours["seed"].unique().tolist())
    notes = [
        "Metric (×100): " + ", ".join(f"{t} {m}" for t, m in spec["metric"].items() if t in spec["tasks"])
        + f". Encoder: {spec['encoder']}. Seeds: {seeds}.",
        "cross = fine-tuned on the source language only; multi = on all four languages.",
        COLLAPSE_NOTE,
    ]
    md, tex = render_grid(table, ["task", "setting"], "lang", "crossmulti Table 2: cross- vs multi-lingual fine-tuning", notes)
    return table, md, tex


# ---- data-size tables (Table 1 of crossmulti, dlfa, underspec) ------------------------------
# Ours are the record counts in each prepared dataset's manifest.json (xlt.prepare.prepare_task):
# one "seed", so a cell is paper · ours · Δ with no ± and the CSV has `ours`, not mean / std.

DATASET_LABELS = {"pos": "UD", "parsing": "UD", "ner": "WikiANN", "pawsx": "PAWS-X", "marc": "MARC", "xnli": "XNLI"}
STAT_LABELS = {"train": "Train", "dev": "Dev", "test": "Test", "test_min": "Test min", "test_max": "Test max", "langs": "Langs"}
COUNTS_LEGEND = "Each cell: paper · ours · Δ = ours − paper (examples; UD: sentences with text)"


def data_counts(inputs: list[str], spec: dict) -> pd.DataFrame:
    """(task, lang, split, value) record counts of the prepared datasets, for the languages
    the paper's table covers (a dataset shared with other papers may hold more)."""
    rows = []
    for folder in inputs:
        manifest = read_json(Path(folder) / "manifest.json")
        task = manifest["task"]
        if task not in spec["tasks"]:
            raise XltError(f"{folder}: data of task {task!r}, not one of this table's ({', '.join(spec['tasks'])})")
        for lang in spec["tasks"][task]["languages"]:
            for split, n in manifest["counts"].get(lang, {}).items():
                rows.append({"task": task, "lang": lang, "split": split, "value": n})
    return pd.DataFrame(rows, columns=["task", "lang", "split", "value"])


def counts_vs_paper(ours: pd.DataFrame, published: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """`paper_vs_ours` for counts: keys, paper, ours, delta as integers (missing: empty)."""
    if ours.empty:
        table = published[keys + ["value"]].rename(columns={"value": "paper"}).assign(ours=float("nan"))
    else:
        table = paper_vs_ours(ours.assign(seed=0), published, keys).rename(columns={"ours_mean": "ours"})
    table["delta"] = table["ours"] - table["paper"]
    table = table[keys + ["paper", "ours", "delta"]]
    return table.astype({c: "Int64" for c in ("paper", "ours", "delta")})


def count_cell(row) -> tuple[str, str, str]:
    def fmt(x, sign=""):
        return "–" if pd.isna(x) else f"{int(x):{sign},}"

    return fmt(row["paper"]), fmt(row["ours"]), fmt(row["delta"], "+")


def _treebank_note(spec: dict) -> str | None:
    for task in ("pos", "parsing"):
        ud = spec["tasks"].get(task, {}).get("ud")
        if ud:
            tbs = ud["treebanks"]
            which = "every treebank of each language" if tbs == "all" else "; ".join(
                f"{lang} {'+'.join(tbs[lang])}" for lang in spec["tasks"][task]["languages"] if lang in tbs
            )
            return f"UD v{ud['version']} ({spec['tasks'][task]['dataset']}): {which}."
    return None


def crossmulti_table1(spec: dict, inputs: list[str]) -> tuple[pd.DataFrame, str, str]:
    from xlt.published import load_published

    published = load_published("crossmulti", "table1")
    published = published[published["task"].isin(spec["tasks"])]
    ours = data_counts(inputs, spec)
    ours = ours[ours["split"].isin(published["split"].unique())]  # the paper prints train and test
    table = counts_vs_paper(ours, published, ["task", "split", "lang"])
    notes = [n for n in [_treebank_note(spec)] if n] + [
        "UD ES: the paper's 14,035 training sentences beside AnCora's test size (1,721) read as "
        "AnCora's 14,305 with two digits swapped (docs/papers.md).",
        "MARC: the mteb/amazon_reviews_multi mirror (the original was withdrawn).",
    ]
    md, tex = render_grid(table, ["task", "split"], "lang", "crossmulti Table 1: training and test set sizes",
                          notes, cell=count_cell, legend=COUNTS_LEGEND, labels=DATASET_LABELS)  # fmt: skip
    return table, md, tex


def underspec_table1(spec: dict, inputs: list[str]) -> tuple[pd.DataFrame, str, str]:
    from xlt.published import load_published

    published = load_published("underspec", "table1")
    published = published[published["task"].isin(spec["tasks"])]
    ours = data_counts(inputs, spec)
    if "pos" in spec["tasks"]:  # the paper's one column "POS tagging / Parsing": same treebanks
        ours = ours[ours["task"] != "parsing"]
    ours = ours[ours["split"].isin(published["split"].unique())]  # train and dev
    table = counts_vs_paper(ours, published, ["task", "lang", "split"])
    notes = [n for n in [_treebank_note(spec)] if n] + [
        "XNLI: the paper prints 392,703 training examples per language; XNLI-MT's training TSVs "
        "hold 392,702 pairs and a header line, so it likely counted lines (ours: 392,702).",
        "POS and parsing read the same treebanks; their counts are one column, as in the paper.",
    ]
    md, tex = render_grid(table, ["lang", "split"], "task", "underspec Table 1: number of examples",
                          notes, cell=count_cell, legend=COUNTS_LEGEND, labels=DATASET_LABELS)  # fmt: skip
    return table, md, tex


DLFA_STATS = ("train", "dev", "test", "test_min", "test_max", "langs")


def dlfa_table1(spec: dict, inputs: list[str]) -> tuple[pd.DataFrame, str, str]:
    """XTREME statistics: English train / dev / test, the range of test sizes, #languages."""
    from xlt.published import load_published

    published = load_published("dlfa", "table1")
    published = published[published["task"].isin(spec["tasks"])]
    counts = data_counts(inputs, spec)
    rows = []
    for task, group in counts.groupby("task", sort=False):
        english = group[group["lang"] == "en"].set_index("split")["value"]
        tests = group[group["split"] == "test"]["value"]
        stats = {s: english.get(s) for s in ("train", "dev", "test")}
        stats.update(test_min=tests.min(), test_max=tests.max(), langs=len(tests))
        rows += [{"task": task, "stat": k, "value": v} for k, v in stats.items() if not pd.isna(v)]
    ours = pd.DataFrame(rows, columns=["task", "stat", "value"])
    ours = ours.merge(published[["task", "stat"]], on=["task", "stat"])  # the statistics the paper prints
    table = counts_vs_paper(ours, published, ["task", "stat"])
    table = table.sort_values("stat", key=lambda c: c.map(DLFA_STATS.index), kind="stable")
    notes = [n for n in [_treebank_note(spec)] if n] + [
        "Train / dev / test: English; test min / max and langs: over the languages of the task "
        "that have a test set (" + "; ".join(f"{t} {len(s['languages'])}" for t, s in spec["tasks"].items()) + " configured).",
        "XNLI train: MultiNLI (data.xnli.train_source).",
    ]
    md, tex = render_grid(table, ["task"], "stat", "dlfa Table I: XTREME dataset statistics", notes,
                          cell=count_cell, legend=COUNTS_LEGEND, labels={**TASK_LABELS, **STAT_LABELS})  # fmt: skip
    return table, md, tex


BUILDERS = {
    ("crossmulti", "table2"): crossmulti_table2,
    ("crossmulti", "table1"): crossmulti_table1,
    ("dlfa", "table1"): dlfa_table1,
    ("underspec", "table1"): underspec_table1,
}


def make_table(paper: str, table_id: str, spec: dict, inputs: list[str], out_prefix: str) -> pd.DataFrame:
    try:
        builder = BUILDERS[(paper, table_id)]
    except KeyError:
        raise XltError(f"no table {paper}/{table_id}; known: {', '.join(f'{p}/{t}' for p, t in BUILDERS)}") from None
    table, md, tex = builder(spec, inputs)
    write_table(table, out_prefix, md, tex)
    return table
