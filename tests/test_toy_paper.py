"""A new paper is its folder, its rules file and its name on the registry's line
(docs/adding-a-paper.md): the toy paper of tests/toy_paper/ (one table, one job of its own),
added to a copy of the repository with no other file changed, plans, runs on the tiny world
and writes its table beside its published numbers."""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.conftest import REPO
from tests.test_imports import lint
from tests.test_workflow import SHRINK
from xlt.papers import PAPERS

TOY = Path(__file__).resolve().parent / "toy_paper"  # its files, at their paths in the repository
REGISTRY = "xlt/papers/__init__.py"
# the prepared PAWS-X data and the toy's own rule: no encoder, no fine-tune
TOY_SHRINK = {"world": SHRINK["world"]}


def repository_files(root: Path) -> list[str]:
    """The repository's files (tracked, or new and not ignored), as git lists them."""
    run = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=root, capture_output=True,
                         text=True, check=True)
    return [f for f in run.stdout.splitlines() if (root / f).is_file()]


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def add_to_registry(text: str, slug: str) -> str:
    """The registry with `slug` added to its line of plugins (the line importing every registered paper)."""
    lines = text.splitlines(keepends=True)
    pattern = re.compile(r"from xlt\.papers import ([\w, ]+?)(\s+#.*)?\n")
    found = [i for i, line in enumerate(lines) if (m := pattern.fullmatch(line))
             and set(PAPERS) <= {n.strip() for n in m.group(1).split(",")}]
    assert len(found) == 1, f"{REGISTRY}: expected one line importing {sorted(PAPERS)}, found {len(found)}"
    m = pattern.fullmatch(lines[found[0]])
    lines[found[0]] = f"from xlt.papers import {m.group(1)}, {slug}{m.group(2) or ''}\n"
    return "".join(lines)


def snakemake(copy: Path, workdir: Path, *args: str) -> subprocess.CompletedProcess:
    """The copy's Snakefile, its xlt first on the path (ahead of the editable install), on the
    tiny preset and workdir/shrink.yaml; no fork server (the session's serves the repository's xlt)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST") and k != "XLT_ZYGOTE"}
    env["PYTHONPATH"] = str(copy)
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(copy / "Snakefile"), *args, "--directory", str(workdir),
           "--configfile", str(copy / "presets" / "tiny.yaml"), str(workdir / "shrink.yaml")]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=copy)


@pytest.fixture(scope="module")
def toy_repo(tmp_path_factory) -> Path:
    """A copy of the repository with the toy paper added: its folder, its rules file, one registry line."""
    copy = tmp_path_factory.mktemp("toy_repo")
    for name in repository_files(REPO):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, copy / name)
    shutil.copytree(TOY, copy, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / REGISTRY).write_text(add_to_registry((REPO / REGISTRY).read_text(encoding="utf-8"), "toy"), encoding="utf-8")
    return copy


@pytest.fixture(scope="module")
def toy_run(toy_repo, tmp_path_factory) -> tuple[Path, str]:
    """The plan of `toy_all` (a dry run), then the run, on the tiny world."""
    workdir = tmp_path_factory.mktemp("toy_run")
    (workdir / "shrink.yaml").write_text(yaml.safe_dump(TOY_SHRINK))
    plan = snakemake(toy_repo, workdir, "toy_all", "-n")
    assert plan.returncode == 0, plan.stderr[-4000:]
    run = snakemake(toy_repo, workdir, "toy_all", "--cores", "2")
    assert run.returncode == 0, run.stderr[-4000:]
    return workdir, plan.stdout + plan.stderr


def test_the_toy_paper_is_its_folder_its_rules_and_one_registry_line(toy_repo):
    ours, theirs, toy_files = set(repository_files(REPO)), files_under(toy_repo), files_under(TOY)
    assert theirs - ours == toy_files
    assert {f for f in toy_files if not f.startswith("xlt/papers/toy/")} == {"rules/toy.smk"}
    changed = [f for f in ours & theirs if (REPO / f).read_bytes() != (toy_repo / f).read_bytes()]
    assert changed == [REGISTRY]
    diff = [line for line in difflib.unified_diff((REPO / REGISTRY).read_text().splitlines(),
                                                  (toy_repo / REGISTRY).read_text().splitlines(), lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert [line[0] for line in diff] == ["-", "+"]
    names = [re.match(r"from xlt\.papers import ([\w, ]+)", line[1:]).group(1).strip().split(", ") for line in diff]
    assert names[1] == [*names[0], "toy"] and diff[1][1:].split("#")[1:] == diff[0][1:].split("#")[1:]


@pytest.mark.slow
def test_the_plan_runs_the_world_the_data_the_toys_rule_and_its_table(toy_run):
    _, plan = toy_run
    # Snakemake's job stats: one line per rule, `<rule> <count>`
    rules = dict(re.findall(r"^(\w+)\s+(\d+)\s*$", plan, re.M))
    assert rules == {"world": "1", "prepare_task": "1", "toy_count": "1", "paper_table": "1", "toy_all": "1", "total": "5"}


@pytest.mark.slow
def test_the_toy_table_shows_its_counts_beside_the_papers(toy_run):
    workdir, _ = toy_run
    manifest = json.loads((workdir / "results/data/pawsx/manifest.json").read_text())
    table = pd.read_csv(workdir / "results/tables/toy/table1.csv").set_index(["task", "lang"])
    world = ["en", "de", "es", "fr", "zh"]  # the tiny preset's xtreme_pawsx
    for lang in world:
        assert table.loc[("pawsx", lang), "paper"] == 2000
        assert table.loc[("pawsx", lang), "ours"] == manifest["counts"][lang]["test"] == SHRINK["world"]["sizes"]["pawsx"]["test"]
    # every published cell is kept, ours or the reason why not from the config
    assert len(table) == 22 and table["paper"].notna().all()
    assert table.loc[[("pawsx", "ja"), ("pawsx", "ko")], "ours"].isna().all()
    assert table.loc["xnli", "ours"].isna().all() and table.loc["xnli", "why"].str.contains("papers.toy.tasks").all()
    md = (workdir / "results/tables/toy/table1.md").read_text()
    assert md.startswith("## toy Table 1: test examples per language") and f"2,000 · {manifest['counts']['en']['test']}" in md
    assert (workdir / "results/tables/toy/table1.tex").is_file()


@pytest.mark.slow
def test_the_toy_paper_is_in_the_targets_and_the_status(toy_repo):
    env = {**os.environ, "PYTHONPATH": str(toy_repo)}
    helped = subprocess.run([sys.executable, "-m", "xlt.workflow.help"], cwd=toy_repo, env=env, capture_output=True,
                            text=True, timeout=120)
    assert helped.returncode == 0, helped.stderr[-2000:]
    assert "toy_table1" in helped.stdout and "toy_all" in helped.stdout
    status = subprocess.run([sys.executable, "-m", "xlt.workflow.status"], cwd=toy_repo, env=env, capture_output=True,
                            text=True, timeout=120)
    assert status.returncode == 0, status.stderr[-2000:]
    assert "| `toy` | Toy: test set sizes (a paper of the tests) | Table 1 | – | – |" in status.stdout.splitlines(), status.stdout


def test_the_import_contracts_guard_the_toy_paper_with_no_line_of_its_own(toy_repo, tmp_path):
    """The contracts read the plugins from the package: the toy importing another paper breaks one."""
    shutil.copytree(toy_repo / "xlt", tmp_path / "xlt", ignore=shutil.ignore_patterns("__pycache__", "*.csv", "*.yaml"))
    with open(tmp_path / "xlt/papers/toy/plan.py", "a") as f:
        f.write("\nimport xlt.papers.dlfa.plan as _other\n")
    run = lint(tmp_path)
    assert run.returncode == 1, run.stdout[-3000:]
    broken = [line for line in run.stdout.splitlines() if line.endswith(" BROKEN")]
    assert broken == ["No paper imports another BROKEN"], run.stdout[-3000:]
    assert "xlt.papers.toy.plan -> xlt.papers.dlfa.plan" in run.stdout
