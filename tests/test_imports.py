"""The import contracts of .importlinter (import-linter): the engine imports no paper, shared
modules import no paper (only the registry does), no paper imports another, a paper's plan
imports no pandas, the library imports no Snakemake, no import circles (between sibling
packages; between any modules, a package and its own modules included). They hold, and each
fails when a forbidden import is added (checked on a copy of the package, so the tree itself is
never touched)."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp

from tests.conftest import REPO
from tests.import_contracts import plugins
from xlt.papers import PAPERS

LINT = Path(sys.executable).with_name("lint-imports")
CONTRACTS = REPO / ".importlinter"
# one offending line per contract: (module file, line appended, what the report must name)
OFFENCES = {
    "The engine imports no paper": ("engine/loop.py", "from xlt.papers import crossmulti as _paper", "xlt.engine.loop -> xlt.papers.crossmulti"),
    "The library imports no Snakemake": ("dag/targets.py", "import snakemake as _smk", "xlt.dag.targets -> snakemake"),
    "Shared modules import no paper": ("stats.py", "from xlt.papers.crossmulti import plan as _plan",
                                       "xlt.stats -> xlt.papers.crossmulti.plan"),
    "No paper imports another": ("papers/crossmulti/plan.py", "import xlt.papers.underspec.plan as _other",
                                 "xlt.papers.crossmulti.plan -> xlt.papers.underspec.plan"),
    "A paper's plan imports no pandas": ("papers/underspec/plan.py", "import pandas as _pd", "xlt.papers.underspec.plan -> pandas"),
    "The library imports no Snakemake": ("dag/targets.py", "import snakemake as _smk", "xlt.dag.targets -> snakemake"),
    "No import circles between sibling modules": ("registry.py", "import xlt.dag.targets as _targets", "No cycles are allowed in xlt."),
    # a module importing its own package, which imports it: the circle acyclic_siblings does not see
    "No import circles between any modules": ("papers/xmixup/plan.py", "import xlt.papers.xmixup as _package",
                                              "Import circle: xlt.papers.xmixup -> xlt.papers.xmixup.plan -> xlt.papers.xmixup"),
    # a paper importing a module of the registry's package: importing that module runs the registry
    "No package circles": ("papers/dlfa/tables.py", "import xlt.papers.config_files as _files",
                           "Package circle: xlt.papers -> xlt.papers.dlfa"),
}


def lint(package_parent: Path) -> subprocess.CompletedProcess:
    # the copy ahead of the editable install; the repository for our contract type (tests.import_contracts)
    # COLUMNS: one line per contract in the report (rich wraps at the terminal's width)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(package_parent), str(REPO)]), "COLUMNS": "250"}
    return subprocess.run([str(LINT), "--no-cache", str(CONTRACTS)], cwd=package_parent, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_import_contracts_hold():
    run = lint(REPO)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert run.stdout.count(" KEPT") == len(OFFENCES)


def test_each_contract_fails_when_a_forbidden_import_is_added(tmp_path):
    shutil.copytree(REPO / "xlt", tmp_path / "xlt", ignore=shutil.ignore_patterns("__pycache__", "*.csv", "*.yaml"))
    for module, line, _ in OFFENCES.values():
        with open(tmp_path / "xlt" / module, "a") as f:
            f.write(f"\n{line}\n")
    run = lint(tmp_path)
    assert run.returncode == 1, run.stdout[-3000:]
    for contract, (_, _, named) in OFFENCES.items():
        assert any(line.startswith(contract) and " BROKEN" in line for line in run.stdout.splitlines()), contract
        assert named in run.stdout, named


def test_the_paper_contracts_guard_exactly_the_registered_papers():
    """The plugin contracts read their plugins from the package (tests.import_contracts.plugins):
    they are the registry's papers, so a new paper is guarded with no line in .importlinter."""
    contracts = configparser.ConfigParser()
    contracts.read(CONTRACTS)
    for contract in ("shared-imports-no-paper", "papers-independent"):
        assert contracts[f"importlinter:contract:{contract}"]["plugins_of"] == "xlt.papers"
    graph = grimp.build_graph("xlt", cache_dir=None)
    assert plugins(graph, "xlt.papers") == sorted(f"xlt.papers.{slug}" for slug in PAPERS)


def test_checking_a_config_imports_no_torch():
    """`make tables` checks the config twice before its first job (`python -m xlt.workflow.config`, then
    Snakemake reading the rules): importing torch there cost ~1 s each (underspec's check read
    its α axes from the module that interpolates models)."""
    code = ("import sys; from xlt.workflow.config import check_workflow_config, load_configs\n"
            "for files in ([], ['presets/tiny.yaml']):\n"
            "    check_workflow_config(load_configs(files))\n"
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "[]"


def unexplained_inner_imports(root: Path) -> list[str]:
    """`file:line` of each import inside a function that says not why it is there: neither a
    comment on its line nor one heading the run of import lines (and blank lines) it is in."""
    import ast  # noqa: PLC0415 — only this check parses sources

    found = []
    for path in sorted(root.rglob("*.py")):
        if any(not (d / "__init__.py").is_file() for d in path.parents if d != root.parent and root in (d, *d.parents)):
            continue  # a script beside the library (a paper's benchmarks/): not a module of it
        lines = path.read_text().splitlines()
        for fn in ast.walk(ast.parse("\n".join(lines), str(path))):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if not isinstance(node, (ast.Import, ast.ImportFrom)) or "#" in lines[node.lineno - 1]:
                    continue
                k = node.lineno - 2  # walk up over the imports (and blanks) grouped with it
                while k >= 0 and (lines[k].strip().startswith(("import ", "from ")) or not lines[k].strip()):
                    k -= 1
                if k < 0 or not lines[k].strip().startswith("#"):
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    return found


def test_every_import_inside_a_function_says_why(tmp_path):
    assert unexplained_inner_imports(REPO / "xlt") == []
    # and the check sees one that does not
    (tmp_path / "xlt").mkdir()
    (tmp_path / "xlt" / "__init__.py").write_text("")
    (tmp_path / "xlt" / "m.py").write_text("def f():\n    x = 1\n    import json\n    return json, x\n")
    assert unexplained_inner_imports(tmp_path / "xlt") == ["xlt/m.py:3"]


def test_building_the_dag_imports_no_torch(tmp_path):
    """What Snakemake imports to read the rules and build the DAG (the full-scale config and the
    tiny preset) loads neither torch nor transformers: they are the jobs' own (~4 s a process).
    Read at the process's exit, so that an import behind a try/except or inside a function the
    DAG build calls counts too."""
    (tmp_path / "sitecustomize.py").write_text(
        "import atexit, os, sys\n"
        "atexit.register(lambda: open(os.environ['XLT_HEAVY_SEEN'], 'a').write(\n"
        "    ' '.join(m for m in ('torch', 'transformers') if m in sys.modules) + '\\n'))\n")
    seen = tmp_path / "seen.txt"
    (tmp_path / "run").mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)]), "XLT_HEAVY_SEEN": str(seen)}
    for configfile in ("config.yaml", "presets/tiny.yaml"):
        run = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--quiet", "rules", "--snakefile",
                              str(REPO / "Snakefile"), "--configfile", str(REPO / configfile), "--directory",
                              str(tmp_path / "run"), "--", "all_tables"],
                             cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
        assert run.returncode == 0, run.stderr[-2000:]
    lines = seen.read_text().splitlines()  # one a process that exited
    assert len(lines) >= 2 and not any(lines), lines
