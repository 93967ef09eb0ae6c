"""Results shown (issue 53, item 6): a table or zero-shot target ends with the table's first rows
and its path (xlt.workflow.shown: `make <target>` after Snakemake, the workflow's onsuccess when
snakemake runs it); the tables that show the paper's numbers alone are marked as such in
results/tables/index.md, in `make help` and in the report's captions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.test_bad_inputs import TINY, _env
from xlt.workflow import paper_targets as P
from xlt.workflow.config import load_configs
from xlt.workflow.help import PUBLISHED_MARK, lines as help_lines
from xlt.workflow.report import PUBLISHED_ONLY, index_markdown, rst_caption
from xlt.workflow.shown import ROWS, shown_lines


@pytest.fixture(scope="module")
def tiny():
    return load_configs([TINY])


def test_the_tiny_preset_has_nine_published_only_tables(tiny):
    stems = sorted({f.rsplit(".", 1)[0] for f in P.published_only(tiny)})
    assert len(stems) == 9 and "results/tables/xmixup/table1" in stems and "results/tables/adjust/table9" in stems


def test_the_index_marks_each_published_only_table_and_no_other(tiny):
    published = P.published_only(tiny)
    md = index_markdown(P.index_items(tiny), P.index_file(tiny), None, published)
    marked = [line for line in md.splitlines() if PUBLISHED_ONLY in line]
    assert len(marked) == 9
    assert any(line.startswith("- [xmixup/table1.md]") for line in marked)
    assert not any(line.startswith("- [xmixup/table2.md]") for line in marked)
    assert PUBLISHED_ONLY not in index_markdown(P.index_items(tiny), P.index_file(tiny))  # none given, none marked


def test_the_index_job_passes_them(tmp_path, tiny):
    items = [f for f in P.index_items(tiny) if "/xmixup/" in f]
    run = subprocess.run([sys.executable, str(REPO / "workflow_scripts" / "tables_index.py"), "--items", *items,
                          "--published-only", *P.published_only(tiny), "--out", str(tmp_path / "index.md")],
                         capture_output=True, text=True, timeout=120, env=_env(), cwd=REPO)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "index.md").read_text().count(PUBLISHED_ONLY) == 8  # xmixup's eight of the nine


def test_make_help_marks_them_under_the_preset():
    text = "\n".join(help_lines([str(TINY)]))
    assert f"xmixup_table1{PUBLISHED_MARK} " in text and f"xmixup_table2{PUBLISHED_MARK}" not in text
    assert text.splitlines()[-1].startswith(f"{PUBLISHED_MARK} published numbers only on {TINY}")
    assert PUBLISHED_MARK + " published" not in "\n".join(help_lines())  # no preset: nothing marked


def test_the_reports_caption_marks_them(tiny):
    assert P.is_published_only(tiny, "xmixup", "table1") and not P.is_published_only(tiny, "xmixup", "table2")
    assert "published numbers only" in rst_caption("xmixup", "table1", True)
    assert "published numbers only" not in rst_caption("xmixup", "table2", False)


def _table(root: Path, rel: str, rows: int) -> str:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(["## A table", "", "| | EN |", "|---|---|", *(f"| row{i} | {i} |" for i in range(rows))]) + "\n")
    return rel


def test_a_table_target_ends_with_its_first_rows_and_path(tmp_path, monkeypatch, tiny):
    monkeypatch.chdir(tmp_path)
    md = _table(tmp_path, "results/tables/xmixup/table2.md", 30)
    out = shown_lines(tiny, ["xmixup_table2"])
    assert out[:3] == ["", "## A table", ""] and out[ROWS + 1] == f"… {4 + 30 - ROWS} more lines in the file"
    assert out[-1] == f"Table: {md} (also table2.csv, table2.tex)"
    published = _table(tmp_path, "results/tables/xmixup/table1.md", 2)
    assert shown_lines(tiny, ["xmixup_table1"])[-1] == f"Table: {published} (also table1.csv, table1.tex); {PUBLISHED_ONLY}"
    assert shown_lines(tiny, ["all_tables"]) == []  # make tables lists its own


def test_the_zero_shot_target_ends_with_its_table(tmp_path):
    """`python -m xlt.workflow.shown` as `make zero_shot` runs it: the table the config keys ask for."""
    (tmp_path / "zs.yaml").write_text("encoder: tiny\ntask: ner\nlangs: xtreme_ner\n")
    md = _table(tmp_path, "results/tables/zero_shot/tiny.ner.xtreme_ner.md", 3)
    run = subprocess.run([sys.executable, "-m", "xlt.workflow.shown", "zero_shot", "--configfile", str(TINY), "zs.yaml"],
                         capture_output=True, text=True, timeout=120, env={**_env(), "PYTHONPATH": str(REPO)}, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-1] == f"Table: {md} (also tiny.ner.xtreme_ner.csv, tiny.ner.xtreme_ner.tex)"
    assert "| row2 | 2 |" in run.stdout
