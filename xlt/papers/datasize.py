"""Data-size tables (Table 1 of crossmulti, dlfa, underspec): the papers' counts beside ours.

Ours are the record counts in each prepared dataset's manifest.json (xlt.prepare.prepare_task):
one "seed", so a cell is paper · ours · Δ with no ± and the CSV has `ours`, not mean / std.
Each paper lays its counts out its own way (its builder); what is counted, and from which
folders, is the same for all:

    datasize.table(slug, build)   # the Table entry of a paper's data-size table
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from xlt.errors import XltError
from xlt.io import read_json
from xlt.papers.base import DataSize, Table, TableBuilder
from xlt.papers.published import load_published
from xlt.registry import get_task
from xlt.tables import paper_vs_ours, render_grid
from xlt.targets import data_dir, dataset_name, paper_languages, treebank_set_of, ud_selection

DATASET_LABELS = {"pos": "UD", "parsing": "UD", "ner": "WikiANN", "pawsx": "PAWS-X", "marc": "MARC", "xnli": "XNLI"}
STAT_LABELS = {"train": "Train", "dev": "Dev", "test": "Test", "test_min": "Test min", "test_max": "Test max", "langs": "Langs"}
COUNTS_LEGEND = "Each cell: paper · ours · Δ = ours − paper (examples; UD: sentences with text)"


def spec(cfg: dict, paper: str) -> dict:
    """What a paper's data-size table counts: per task, its dataset and languages (and, for
    UD tasks, the treebank selection, which the table's notes name)."""
    tasks = {}
    for task in cfg["papers"][paper]["tasks"]:
        dataset = dataset_name(cfg, paper, task)
        tasks[task] = {"dataset": dataset, "languages": paper_languages(cfg, paper, task)}
        if get_task(task).source == "ud":
            tasks[task]["ud"] = ud_selection(cfg, treebank_set_of(dataset))
    return {"paper": paper, "tasks": tasks}


def inputs(cfg: dict, paper: str) -> list[str]:
    """The prepared data folders (their manifest.json holds the counts)."""
    return [data_dir(cfg, task["dataset"]) for task in spec(cfg, paper)["tasks"].values()]


def table(slug: str, build: TableBuilder, table_id: str = "table1") -> Table:
    """The entry of a paper's data-size table; `build(spec, inputs)` lays out its counts."""
    return Table(table_id, inputs=lambda cfg: inputs(cfg, slug), build=build, spec=lambda cfg: spec(cfg, slug))


def published_sizes(slug: str, rank: int, table_id: str = "table1") -> list[DataSize]:
    """A paper's printed per-language sizes (keys task, lang, split) for the bill (DataSize.rank)."""
    return [DataSize(r.task, r.lang, r.split, int(r.value), f"published {slug} {table_id}", rank)
            for r in load_published(slug, table_id).itertuples()]


def counts(slug: str, spec: dict, inputs: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Ours (`data_counts`) and the paper's Table 1 counts of the configured tasks."""
    published = load_published(slug, "table1")
    return data_counts(inputs, spec), published[published["task"].isin(spec["tasks"])]


def render(table: pd.DataFrame, row_keys: list[str], col_key: str, title: str, spec: dict, notes: list[str],
           labels: dict[str, str] = DATASET_LABELS) -> tuple[str, str]:  # fmt: skip
    """`render_grid` for counts: the treebank selection noted first, cells paper · ours · Δ."""
    notes = [n for n in [treebank_note(spec)] if n] + notes
    return render_grid(table, row_keys, col_key, title, notes, cell=count_cell, legend=COUNTS_LEGEND, labels=labels)


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


def treebank_note(spec: dict) -> str | None:
    for task in ("pos", "parsing"):
        ud = spec["tasks"].get(task, {}).get("ud")
        if ud:
            tbs = ud["treebanks"]
            which = "every treebank of each language" if tbs == "all" else "; ".join(
                f"{lang} {'+'.join(tbs[lang])}" for lang in spec["tasks"][task]["languages"] if lang in tbs
            )
            return f"UD v{ud['version']} ({spec['tasks'][task]['dataset']}): {which}."
    return None
