"""Data-size tables (Table 1 of crossmulti, dlfa, underspec): the papers' counts beside ours.

Ours are the record counts in each prepared dataset's manifest.json (xlt.stages.prepare.prepare_task):
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
from xlt.paperkit.base import DataSize, Table, TableBuilder
from xlt.paperkit.published import load_published
from xlt.registry import get_task
from xlt.tables import account, paper_vs_ours, render_grid
from xlt.dag.targets import data_dir, dataset_name, paper_languages, treebank_set_of, ud_selection

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
    # a synthetic world's counts are not the real corpora's: no Δ between them (`same_quantity`)
    return {"paper": paper, "tasks": tasks, "world": bool(cfg.get("world"))}


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
    return data_counts(inputs, spec), load_published(slug, "table1")  # every task's: `why_missing` says why


def render(table: pd.DataFrame, row_keys: list[str], col_key: str, title: str, spec: dict, notes: list[str],
           labels: dict[str, str] = DATASET_LABELS) -> tuple[str, str]:  # fmt: skip
    """`render_grid` for counts: the treebank selection noted first, cells paper · ours · Δ."""
    notes = [n for n in [treebank_note(spec)] if n] + notes + ([] if same_quantity(spec) else [WORLD_NOTE])
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


WORLD_NOTE = ("Δ left out: ours count the tiny synthetic world's datasets (the config's `world`), the paper's the "
              "real corpora, so the two sides are not the same quantity; the paper's counts are shown for reference.")


def same_quantity(spec: dict) -> bool:
    """Whether ours and the paper's count the same data (not so on a synthetic world)."""
    return not spec.get("world", False)


def counts_vs_paper(ours: pd.DataFrame, published: pd.DataFrame, keys: list[str], spec: dict | None = None) -> pd.DataFrame:
    """`paper_vs_ours` for counts: keys, paper, ours, delta as integers (missing: empty; no
    delta where ours and the paper's are not the same quantity, `same_quantity(spec)`)."""
    if ours.empty:
        table = published[keys + ["value"]].rename(columns={"value": "paper"}).assign(ours=float("nan"))
    else:
        table = paper_vs_ours(ours.assign(seed=0), published, keys).rename(columns={"ours_mean": "ours"})
    table["delta"] = table["ours"] - table["paper"] if spec is None or same_quantity(spec) else float("nan")
    table = table[keys + ["paper", "ours", "delta"]].astype({c: "Int64" for c in ("paper", "ours", "delta")})
    return table if spec is None else account(table, lambda r: why_missing(spec, r))


def why_missing(spec: dict, row) -> str:
    """Why a published count has no ours, from the config: the task or language is not prepared
    in this run, or the prepared data has no such split."""
    task, lang = row["task"], row.get("lang")
    if task not in spec["tasks"]:
        return (f"Tasks not counted in this run (papers.{spec['paper']}.tasks: {', '.join(spec['tasks'])}): the "
                "paper's counts only.")
    if isinstance(lang, str) and lang not in spec["tasks"][task]["languages"]:
        return "Languages not among the task's languages in this run (its language set): the paper's counts only."
    return "Not in the prepared data (the source delivers no such split here; the manifest's counts): the paper's count only."


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
