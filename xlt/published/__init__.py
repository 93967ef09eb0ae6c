"""The five papers' published numbers, as data.

Every numeric table of each paper is one CSV, ``xlt/published/<slug>/<table_id>.csv``, in long
form: the table's key columns, then ``value`` (the number exactly as printed), and, where the
paper marks significance, a boolean ``significant``. ``index.yaml`` beside this file describes
each table (caption, unit, keys, and notes on how a garbled extraction was read).

    >>> from xlt.published import load_published, list_published
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

__all__ = ["load_published", "list_published", "table_info", "paper_title", "SLUGS"]

SLUGS = ("crossmulti", "dlfa", "adjust", "underspec", "xmixup")


def _root():
    return resources.files(__name__)


@lru_cache(maxsize=1)
def _index() -> dict:
    with _root().joinpath("index.yaml").open("r", encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    tables = {}
    for entry in doc["tables"]:
        key = (entry["slug"], entry["table"])
        if key in tables:
            raise XltError(f"xlt/published/index.yaml: duplicate entry {key}")
        tables[key] = entry
    return {"papers": doc.get("papers", {}), "tables": tables}


def _hint(name: str, allowed) -> str:
    close = difflib.get_close_matches(name, list(allowed), n=1)
    return f" Did you mean {close[0]!r}?" if close else ""


def list_published() -> list[tuple[str, str]]:
    """All (slug, table_id) pairs, in the order of index.yaml."""
    return list(_index()["tables"])


def paper_title(slug: str) -> str:
    """The paper's title, as index.yaml gives it."""
    _check_slug(slug)
    return _index()["papers"][slug]


def _check_slug(slug: str) -> None:
    if slug not in SLUGS:
        raise XltError(f"unknown paper slug {slug!r}; allowed: {', '.join(SLUGS)}.{_hint(slug, SLUGS)}")


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
    res = _root().joinpath(slug, f"{table_id}.csv")
    if not res.is_file():
        raise XltError(f"xlt/published/{slug}/{table_id}.csv: missing, but listed in index.yaml")
    with res.open("r", encoding="utf-8") as f:
        # Key values such as a language "no" or a setting "nan" stay strings.
        df = pd.read_csv(f, keep_default_na=False, na_values=[])
    expected = list(info["keys"]) + ["value"] + (["significant"] if "significant" in df else [])
    if list(df.columns) != expected:
        raise XltError(
            f"xlt/published/{slug}/{table_id}.csv: columns {list(df.columns)}, "
            f"index.yaml says {expected}"
        )
    df["value"] = df["value"].astype(float)
    if "significant" in df:
        df["significant"] = df["significant"].map({True: True, False: False, "true": True,
                                                   "false": False}).astype(bool)
    df.attrs["published"] = info
    return df
