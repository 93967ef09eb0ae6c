"""The papers' published numbers, as data.

Every numeric table of a paper is one CSV, ``xlt/papers/<slug>/published/<table_id>.csv``, in
long form: the table's key columns, then ``value`` (the number exactly as printed), and, where
the paper marks significance, a boolean ``significant``. ``index.yaml`` beside the CSVs gives
the paper's title and describes each table (caption, unit, keys, and notes on how a garbled
extraction was read). A paper is any folder of this package with ``published/index.yaml``,
implemented (a plugin of the registry) or not yet.

    >>> from xlt.paperkit.published import load_published, list_published
    >>> df = load_published("crossmulti", "table2")
    >>> df.query("task == 'pos' and setting == 'cross' and lang == 'en'").value.item()
    93.85

The files are read with ``importlib.resources``, so they work from an installed wheel too.
"""

from __future__ import annotations

import difflib
from functools import lru_cache
from importlib import resources

import pandas as pd
import yaml

from xlt.errors import XltError

__all__ = ["load_published", "list_published", "table_info", "paper_title", "slugs"]

INDEX = "published/index.yaml"  # under a paper's folder


def _papers_root():
    # the papers' folders as data, without importing their package (which imports every paper)
    return resources.files("xlt").joinpath("papers")


@lru_cache(maxsize=1)
def _index() -> dict:
    """{"papers": slug -> title, "tables": (slug, table_id) -> index entry}, slugs sorted."""
    papers, tables = {}, {}
    for folder in sorted(_papers_root().iterdir(), key=lambda f: f.name):
        index = folder.joinpath(INDEX)
        if not index.is_file():
            continue
        with index.open("r", encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        papers[folder.name] = doc["title"]
        for entry in doc["tables"]:
            key = (folder.name, entry["table"])
            if key in tables:
                raise XltError(f"xlt/papers/{folder.name}/{INDEX}: duplicate entry {entry['table']!r}")
            tables[key] = entry
    return {"papers": papers, "tables": tables}


def slugs() -> tuple[str, ...]:
    """Every paper with published numbers, sorted."""
    return tuple(_index()["papers"])


def _hint(name: str, allowed) -> str:
    close = difflib.get_close_matches(name, list(allowed), n=1)
    return f" Did you mean {close[0]!r}?" if close else ""


def list_published() -> list[tuple[str, str]]:
    """All (slug, table_id) pairs: papers sorted, each in the order of its index.yaml."""
    return list(_index()["tables"])


def paper_title(slug: str) -> str:
    """The paper's title, as its index.yaml gives it."""
    _check_slug(slug)
    return _index()["papers"][slug]


def _check_slug(slug: str) -> None:
    if slug not in slugs():
        raise XltError(f"unknown paper slug {slug!r}; allowed: {', '.join(slugs())}.{_hint(slug, slugs())}")


def table_info(slug: str, table_id: str) -> dict:
    """The index.yaml entry of one table (caption, unit, keys, notes, ...)."""
    tables = _index()["tables"]
    if (slug, table_id) in tables:
        return dict(tables[(slug, table_id)])
    _check_slug(slug)
    ids = [t for s, t in tables if s == slug]
    raise XltError(
        f"unknown table {table_id!r} for paper {slug!r}; allowed: "
        f"{', '.join(ids) if ids else '(none transcribed)'}.{_hint(table_id, ids)}"
    )


def load_published(slug: str, table_id: str) -> pd.DataFrame:
    """One published table in long form: key columns, ``value`` (float) [, ``significant``].

    ``df.attrs["published"]`` holds the table's index.yaml entry.
    """
    info = table_info(slug, table_id)
    where = f"xlt/papers/{slug}/published/{table_id}.csv"
    res = _papers_root().joinpath(slug, "published", f"{table_id}.csv")
    if not res.is_file():
        raise XltError(f"{where}: missing, but listed in index.yaml")
    with res.open("r", encoding="utf-8") as f:
        # Key values such as a language "no" or a setting "nan" stay strings.
        df = pd.read_csv(f, keep_default_na=False, na_values=[])
    expected = list(info["keys"]) + ["value"] + (["significant"] if "significant" in df else [])
    if list(df.columns) != expected:
        raise XltError(f"{where}: columns {list(df.columns)}, index.yaml says {expected}")
    df["value"] = df["value"].astype(float)
    if "significant" in df:
        df["significant"] = df["significant"].map({True: True, False: False, "true": True,
                                                   "false": False}).astype(bool)
    df.attrs["published"] = info
    return df
