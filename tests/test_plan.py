"""The plan before a full-scale run (`make plan`, xlt.workflow.plan) on config.yaml's real DAG: one screen,
the bill's total, the missing steps in order and the next command; and `make prefetch` fetches
every download `all_tables` needs."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from xlt.workflow import plan as L
from xlt.dag import targets as T
from xlt.workflow import paper_targets as P
from xlt.workflow.packs import base_rule


def _plan_script():
    spec = importlib.util.spec_from_file_location("xlt_plan_script", REPO / "workflow_scripts" / "plan.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    """config.yaml's `all_tables` DAG from an empty directory: (config, jobs)."""
    return _plan_script().dag_jobs([str(REPO / "config.yaml")], "all_tables", tmp_path_factory.mktemp("plan"))


def test_prefetch_fetches_every_download_all_tables_needs(full):
    cfg, jobs = full
    needed = {f for rule, outputs in jobs if rule in ("download", "download_encoder") for f in outputs}
    assert needed == set(P.prefetch(cfg))
    assert "resources/raw/manifests/wikimatrix.json" in needed  # the alignment stage's bitext (adjust)


def test_every_rule_of_the_dag_has_a_stage(full):
    _, jobs = full
    stages = L.stages()
    # the target: no work of its own; a pack of fine-tunes (config engine.pack) is a fine-tune
    assert sorted({base_rule(r) for r, _ in jobs} - set(stages)) == ["all_tables"]
    assert any(r.startswith("finetune_pack_") for r, _ in jobs)  # config.yaml packs seeds
    assert stages["finetune"] == "finetune" and stages["evaluate_on"] == "evaluate" and stages["download"] == "data"


def test_the_plan_is_one_screen_with_the_bills_total_the_missing_steps_and_the_next_command(full, tmp_path):
    cfg, jobs = full
    lines = L.plan_lines(cfg, jobs, "all_tables", [str(REPO / "config.yaml")], tmp_path, env={})
    text = "\n".join(lines)
    assert len(lines) <= 45 and max(map(len, lines)) <= 200
    bill = L.bill_of(cfg, jobs, "all_tables", "config.yaml", {})
    total = bill["papers"]["total"]["ours"]
    rows = {w[0]: int(w[1].replace(",", "")) for line in lines if line.startswith("  ")
            and len(w := line.split()) == 7 and w[1].replace(",", "").isdigit()}  # fmt: skip
    assert rows["total"] == len(jobs) - 1 == sum(n for s, n in rows.items() if s != "total")
    assert {"data", "finetune", "evaluate", "tables"} <= set(rows)
    assert lines[0].startswith(f"Plan of `all_tables` on config.yaml: {len(jobs) - 1:,} jobs to run, ")
    assert f" {L._hours(total)} GPU-hours on the {bill['gpu']} (" in lines[0] and total > 10
    n_dl, n_enc = len(P.download_plan(cfg)), len(T.hub_encoders(cfg))
    assert f"{n_dl} of {n_dl} downloads and {n_enc} of {n_enc} encoder snapshots are not prefetched" in text
    assert text.index("make prefetch") < text.index("not locked yet") < text.index("XLT_SLURM_ACCOUNT is unset")
    assert lines[-1] == "Next: make prefetch"


def test_what_is_done_leaves_the_plan_and_the_last_step_is_the_submission(full, tmp_path):
    cfg, jobs = full
    for path in P.prefetch(cfg):  # as if `make prefetch` had run here
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).mkdir() if not path.endswith(".json") else (tmp_path / path).write_text("{}")
    missing = L.missing_first(cfg, tmp_path, env={"XLT_SLURM_ACCOUNT": "proj"}, lock_counts={"not locked": 3})
    assert [m.command.split()[:2] for m in missing] == [["make", "pins"]]
    assert L.missing_first(cfg, tmp_path, env={"XLT_SLURM_ACCOUNT": "proj"}, lock_counts={"not locked": 0}) == []
    lines = L.render("all_tables", "config.yaml", jobs, {"rules": {}, "papers": {}}, [],
                     L.run_command("all_tables", [str(REPO / "config.yaml"), "my.yaml"]))  # fmt: skip
    assert lines[-1].startswith("Next: .venv/bin/snakemake --profile slurm all_tables --configfile my.yaml")
    started = L.render("all_tables", "config.yaml", jobs, {"rules": {}, "papers": {}}, missing, None)
    assert not any(line.startswith("Next:") for line in started)


def test_make_plan_names_a_misspelled_target_before_snakemake_runs():
    run = subprocess.run([sys.executable, str(REPO / "workflow_scripts" / "plan.py"), "--target", "all_tabels"],
                         capture_output=True, text=True, timeout=120, cwd=REPO)  # fmt: skip
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.strip() == ("error: no target 'all_tabels'; did you mean all_tables, tables, all_claims? "
                                  "(`make help` lists every target)")  # fmt: skip


def test_a_config_error_is_one_line_through_the_plan(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("hparams:\n  crossmulti:\n    dropout: high\n")
    run = subprocess.run([sys.executable, str(REPO / "workflow_scripts" / "plan.py"), "--configfile",
                          str(REPO / "config.yaml"), str(bad), "--directory", str(tmp_path)],
                         capture_output=True, text=True, timeout=300, cwd=REPO)  # fmt: skip
    assert run.returncode == 1, run.stdout[-2000:]
    assert len(run.stderr.strip().splitlines()) == 1 and "hparams.crossmulti.dropout" in run.stderr
    assert Path(bad).name in run.stderr
