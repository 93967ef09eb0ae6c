"""Rendering paper tables: the published value, ours (mean ± std over seeds), the difference.

Every number comes from a file a rule made (evaluation JSONs) or from the published data
in `xlt/papers/<slug>/published/`; nothing is typed here. A table is rendered three ways: a long CSV
(one row per cell, machine-readable), Markdown and LaTeX (the paper's layout). Which tables
exist and how each is built: the paper plugins (xlt.papers).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from xlt.engine.train_config import ORACLE_FILE
from xlt.errors import XltError
from xlt.io import read_json, write_text
from xlt.stats import mean_std, significance_mark
from xlt.dag.targets import Recipe

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
    agg = agg.merge(_per_seed(ours, keys), on=keys)
    if "collapsed" in ours:  # collapsed runs stay in the mean; each cell counts them and has the mean without them
        agg = agg.merge(_without_collapsed(ours, keys), on=keys)
    pub = published[keys + ["value"]].rename(columns={"value": "paper"}).assign(_order=range(len(published)))
    table = pub.merge(agg, on=keys, how="outer")  # an outer merge sorts the keys: restore the paper's order
    table = table.sort_values("_order", kind="stable", na_position="last").drop(columns="_order").reset_index(drop=True)
    table["delta"] = table["ours_mean"] - table["paper"]
    return table


PER_SEED = "per_seed"  # the long table's column of each seed's value: "1=71.2000 2=70.1000†" (†: collapsed)


def _per_seed(ours: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per cell of `keys`: `PER_SEED`, each seed's value as `seed=value` (4 decimals, as the
    CSV's), `†` after a collapsed seed's; what xlt.claims reads to pair seeds across cells."""
    collapsed = ours["collapsed"].eq(True) if "collapsed" in ours else pd.Series(False, index=ours.index)
    text = [f"{s}={v:.4f}{'†' if c else ''}" for s, v, c in zip(ours["seed"], ours["value"], collapsed)]
    return (ours[keys].assign(**{PER_SEED: text}).groupby(keys, sort=False)[PER_SEED]
            .agg(" ".join).reset_index())


def _without_collapsed(ours: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per cell of `keys`: n_collapsed (its collapsed seeds), and the mean of the others
    (mean_without_collapsed, NaN when every seed collapsed) and their count."""
    collapsed = ours["collapsed"].eq(True)  # NaN (a row of no fine-tuned model, e.g. the vanilla encoder's): not
    kept = ours.assign(_kept=ours["value"].where(~collapsed), collapsed=collapsed)
    return (kept.groupby(keys, sort=False)
            .agg(n_collapsed=("collapsed", "sum"), mean_without_collapsed=("_kept", "mean"),
                 n_without_collapsed=("_kept", "count"))
            .astype({"n_collapsed": int, "n_without_collapsed": int}).reset_index())


def _fmt(x: float, digits: int = 2) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _fmt_delta(x: float) -> str:
    return "–" if x is None or math.isnan(x) else f"{x:+.2f}"


def _mark(row, column: str) -> str:
    value = row.get(column)
    return value if isinstance(value, str) else ""


def collapse_mark(row) -> str:
    """" †k" after ours where k of the cell's seeds collapsed, else ""."""
    n = row.get("n_collapsed", 0)
    return f" †{int(n)}" if n > 0 else ""  # NaN (a cell we did not compute) > 0 is False


def cell_text(row) -> tuple[str, str, str]:
    """paper / ours / Δ; a significance mark (`add_marks`) follows its value: 74.82*, 75.10* ± 0.31."""
    mark = _mark(row, "ours_mark")
    if math.isnan(row["ours_mean"]):
        ours = "–"
    elif math.isnan(row["ours_std"]):  # one seed: no spread to show
        ours = f"{row['ours_mean']:.2f}{mark} (1 seed)"
    else:
        ours = f"{row['ours_mean']:.2f}{mark} ± {row['ours_std']:.2f}"
    ours += collapse_mark(row)
    paper = _fmt(row["paper"])
    return paper + (_mark(row, "paper_mark") if paper != "–" else ""), ours, _fmt_delta(row["delta"])


def add_marks(table: pd.DataFrame, keys: list[str], marks: dict[str, str], by: str,
              published: pd.DataFrame | None = None, tests: pd.DataFrame | None = None,
              alpha: float = 0.05) -> pd.DataFrame:
    """`table` (`paper_vs_ours`) with the paper's significance marks and ours, which `cell_text` prints.

    `marks` maps a value of column `by` to the mark its rows carry when significant (adjust:
    ``{"adjusted": "*", "adjusted_continual": "**"}`` on ``model``; other rows get none).
    `published`: the paper's table with its boolean ``significant`` column -> ``paper_mark``.
    `tests`: keys + ``pvalue`` (e.g. xlt.stats.compare_outputs per cell) -> columns ``pvalue``
    and ``ours_mark`` (xlt.stats.significance_mark at `alpha`). A test naming no cell of the
    table fails loudly.
    """
    out = table.copy()
    mark_of = out[by].map(lambda v: marks.get(v, ""))
    if published is not None:
        if "significant" not in published:
            raise XltError(f"add_marks: the published table has no 'significant' column (columns: {', '.join(published)})")
        sig = out[keys].merge(published[keys + ["significant"]], on=keys, how="left")["significant"].eq(True)
        out["paper_mark"] = [m if s else "" for m, s in zip(mark_of, sig)]
    if tests is not None:
        unknown = tests[keys].merge(out[keys], on=keys, how="left", indicator=True)
        unknown = unknown[unknown["_merge"] == "left_only"]
        if len(unknown):
            raise XltError(f"add_marks: tests for cells the table lacks: {unknown[keys].to_dict('records')}")
        out["pvalue"] = out[keys].merge(tests[keys + ["pvalue"]], on=keys, how="left")["pvalue"].to_numpy()
        out["ours_mark"] = [significance_mark(p, m, alpha) for p, m in zip(out["pvalue"], mark_of)]
    return out


COLLAPSE_NOTE = ("†k: k of the cell's seeds collapsed or did not learn (the selected model's dev predictions nearly all "
                 "one class or tag, its dev score not above the dev set's majority baseline, or its dev labels not "
                 "clearly more often right than the majority label's share: a one-sided exact binomial test at "
                 "config collapse.alpha; recorded in each "
                 "model's xlt_model.json; or the scored predictions behind the cell nearly all one label); they are "
                 "kept in the mean and counted in the CSV's n_collapsed")


def collapse_note(table: pd.DataFrame, cell_name) -> str | None:
    """The note giving each †-marked cell's mean without its collapsed seeds (None: no cell is
    marked): `COLLAPSE_NOTE`, then "without collapsed seeds: <cell> 63.20 (n=1); …" with
    `cell_name(row)` naming a cell as the table shows it."""
    if "n_collapsed" not in table:
        return None
    marked = table[table["n_collapsed"].fillna(0) > 0]
    if marked.empty:
        return None
    digits = 4 if table["ours_mean"].abs().max() <= 1 else 2  # a table of similarities or correlations alone: 4
    means = "; ".join(f"{cell_name(r)} {_fmt(r['mean_without_collapsed'], digits)} (n={int(r['n_without_collapsed'])})"
                      for _, r in marked.iterrows())
    return f"{COLLAPSE_NOTE}; without collapsed seeds (CSV: mean_without_collapsed): {means}"


# ---- every published cell accounted for ------------------------------------------------------

WHY = "why"  # the long table's column: why a published cell has no ours (empty where it has)


def _ours_column(table: pd.DataFrame) -> str:
    return "ours_mean" if "ours_mean" in table else "ours"


def account(table: pd.DataFrame, reason_of) -> pd.DataFrame:
    """`table` (`paper_vs_ours`) with column `why`: for each published cell without ours, the
    reason `reason_of(row)` gives (a sentence built from the config, e.g. "XNLI: not trained in
    this run (papers.dlfa.train_tasks: pawsx)"); None leaves the cell unexplained, which
    `make_table` refuses (`check_accounted`). Reasons already given are kept."""
    out = table.copy()
    ours = out[_ours_column(out)]
    old = out[WHY] if WHY in out else pd.Series("", index=out.index)
    out[WHY] = [w if isinstance(w, str) and w else (reason_of(r) or "") if pd.notna(r["paper"]) and pd.isna(o) else ""
                for w, o, (_, r) in zip(old, ours, out.iterrows())]
    return out


def account_all(table: pd.DataFrame, reason: str) -> pd.DataFrame:
    """`account` with one reason for every published cell without ours (a table not run)."""
    return account(table, lambda _row: reason)


def account_tasks(table: pd.DataFrame, tasks: list[str], key: str) -> pd.DataFrame:
    """`account` of the published cells of tasks the config key `key` (its value `tasks`) does
    not run: their task, or their probing task where the table has one, is not in `tasks`."""
    run = set(tasks)
    reason = f"Tasks not in {key} ({', '.join(tasks)}): the paper's values only."
    return account(table, lambda r: reason if r["task"] not in run or r.get("probe_task", r["task"]) not in run else None)


def unexplained(table: pd.DataFrame) -> pd.DataFrame:
    """The published cells of a built table that have neither ours nor a reason (`account`)."""
    ours = table[_ours_column(table)]
    why = table[WHY].fillna("").astype(str) if WHY in table else pd.Series("", index=table.index)
    return table[table["paper"].notna() & ours.isna() & why.eq("")]


def check_accounted(table: pd.DataFrame, published_cells: int, where: str, per_cell: bool = True) -> None:
    """Every published cell is in the table (none dropped) and, with `per_cell`, has ours or a
    reason (`account`)."""
    if "paper" not in table and not published_cells:  # a table of ours alone
        return
    shown = int(table["paper"].notna().sum()) if "paper" in table else 0
    if shown < published_cells:
        raise XltError(f"{where}: shows {shown} of the {published_cells} published cells; a table keeps every "
                       "published cell, with ours or a reason (xlt.tables.account)")
    bare = unexplained(table) if per_cell else table.iloc[:0]
    if len(bare):
        keys = [c for c in table.columns if c not in ("paper", "ours", "ours_mean", "ours_std", "n_seeds", "n_collapsed",
                                                      "delta", WHY, "pvalue", "ours_mark", "paper_mark", PER_SEED)]
        raise XltError(f"{where}: {len(bare)} published cell(s) without ours and without a reason, e.g. "
                       f"{bare[keys].head(3).to_dict('records')} (xlt.tables.account)")


def why_notes(table: pd.DataFrame) -> list[str]:
    """The distinct reasons of `account`, in the table's order: a note each."""
    if WHY not in table:
        return []
    return [w for w in dict.fromkeys(table[WHY].fillna("").astype(str)) if w]


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
    columns: list | None = None,
) -> tuple[str, str]:
    """Markdown and LaTeX in the paper's layout; each cell shows `cell(row)`: paper / ours / Δ
    (or one text, for a table without a published value).
    `labels` names row and column keys (default: the tasks' short names; columns upper-cased);
    `columns` orders the columns (default: as they first appear)."""
    present = list(dict.fromkeys(table[col_key]))
    cols = [c for c in columns if c in present] + [c for c in present if c not in columns] if columns else present
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
            parts = cell(r)
            parts = (parts,) if isinstance(parts, str) else parts
            cells_md.append(" · ".join(parts))
            cells_tex.append(" / ".join(parts).replace("±", PM_TEX))
        md.append(f"| {label(rk)} | " + " | ".join(cells_md) + " |")
        tex.append(f"{label(rk)} & " + " & ".join(cells_tex) + " \\\\")
    tex += ["\\bottomrule", "\\end{tabular}"]
    notes = [*notes, *(w for w in why_notes(table) if w not in notes)]  # why published cells have no ours
    md += [""] + [f"- {n}" for n in with_collapse_note(notes, table, lambda r: f"{label(tuple(r[k] for k in row_keys))} / "
                                                                            f"{heads[cols.index(r[col_key])]}")]
    return "\n".join(md) + "\n", "\n".join(tex) + "\n"


def with_collapse_note(notes: list[str], table: pd.DataFrame, cell_name) -> list[str]:
    """`notes` with the collapse note (`collapse_note`) where a cell is marked †: in place of
    `COLLAPSE_NOTE` where the plugin listed it, else last; unchanged where nothing is marked."""
    note = collapse_note(table, cell_name)
    if note is None:
        return list(notes)
    return [note if n == COLLAPSE_NOTE else n for n in notes] if COLLAPSE_NOTE in notes else [*notes, note]


def markdown_html(md: str) -> str:
    """A table's Markdown as HTML (its title, an HTML table, its notes), as the report shows it:
    markdown-it's CommonMark with its GitHub-style tables."""
    # deferred: loads markdown_it only when this runs
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table").render(md)


def write_table(table: pd.DataFrame, out_prefix: str | Path, md: str, tex: str) -> None:
    out_prefix = str(out_prefix)
    write_text(out_prefix + ".csv", table.to_csv(index=False, float_format="%.4f"))
    write_text(out_prefix + ".md", md)
    write_text(out_prefix + ".tex", tex)
    write_text(out_prefix + ".html", markdown_html(md))


# ---- what builders share (each paper's builders live in its plugin, xlt.papers) -------------


def eval_rows(inputs: list[str], metric_of: dict[str, str], setting_of) -> pd.DataFrame:
    """Per-seed rows (task, setting, lang, seed, value) of evaluation JSONs: `metric_of` maps a
    task to the metric the table reports, `setting_of` a Recipe to the table's setting."""
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


# ---- selection beside the oracle -------------------------------------------------------------

ORACLE_LEGEND = ("Each cell: paper · ours (mean ± std over seeds; the checkpoint the paper's way: best epoch on the "
                 "training languages' dev) · Δ = ours − paper · oracle = ours with the checkpoint chosen per target "
                 "language on its own dev set")
ORACLE_NOTE = ("oracle: target-dev selection (Keung et al., 2020: English-dev selection can mislead in zero-shot "
               "transfer): per language, the test score of the epoch whose dev score in that language was best "
               "(oracle.json beside each model; the same fine-tune, no extra training). It peeks at target-language "
               "dev data, so it is a reference beside the paper's setting, not a zero-shot result.")


def oracle_off_note(slug: str) -> str:
    """What a table that can show the oracle says when its paper's `oracle` option is off."""
    return (f"oracle (target-dev) selection: not run here (papers.{slug}.oracle: false); with it on, each of the "
            "table's fine-tunes also scores every target's dev set each epoch and the table shows the oracle beside "
            "the paper's column (config.yaml has it on).")


def oracle_rows(models: list[str], metric_of: dict[str, str], setting_of) -> pd.DataFrame:
    """Per-seed rows (task, setting, lang, seed, value) of the oracle selection beside models
    (their oracle.json, xlt.engine.recipes.finetune.oracle_step): the test `metric_of[task]` of
    each language's own best-dev epoch."""
    rows = []
    for model in models:
        path = Path(model) / ORACLE_FILE
        if not path.exists():
            raise XltError(f"{path}: missing; the model was trained without oracle selection (rerun its fine-tune)")
        report = read_json(path)
        setting = setting_of(Recipe.parse(Path(model).parent.name))
        metric = metric_of[report["task"]]
        for lang, best in report["languages"].items():
            rows.append({"task": report["task"], "setting": setting, "lang": lang, "seed": report["seed"],
                         "value": best["test"][metric], "epoch": best["epoch"]})
    return pd.DataFrame(rows, columns=["task", "setting", "lang", "seed", "value", "epoch"])


def add_oracle(table: pd.DataFrame, oracle: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """`table` with oracle_mean / oracle_std (over seeds) of `oracle`'s per-seed rows on `keys`."""
    agg = oracle.groupby(keys, sort=False)["value"].apply(list).reset_index()
    agg["oracle_mean"] = agg["value"].map(lambda v: mean_std(v)[0])
    agg["oracle_std"] = agg["value"].map(lambda v: mean_std(v)[1])
    return table.merge(agg.drop(columns="value"), on=keys, how="left")


def oracle_cell(row) -> tuple[str, str, str]:
    """cell_text, then the oracle's mean ± std (`add_oracle`)."""
    paper, ours, delta = cell_text(row)
    mean, std = row.get("oracle_mean"), row.get("oracle_std")
    oracle = "–" if mean is None or pd.isna(mean) else f"{mean:.2f}" + (" (1 seed)" if pd.isna(std) else f" ± {std:.2f}")
    return paper, ours, f"{delta} · oracle {oracle}"
