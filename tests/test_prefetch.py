"""Offline compute nodes: `prefetch` plans every download and encoder snapshot of config.yaml,
a fine-tune depends on its encoder's snapshot, and jobs on a remote executor (the SLURM
profile) run with the Hub offline while local runs keep their environment."""

from __future__ import annotations

import os
import subprocess

from tests.conftest import REPO
from tests.test_config import base
from tests.test_workflow import SNAKEMAKE, job_counts
from xlt.dag import targets as T
from xlt.workflow import paper_targets as P
from xlt.process.network import OFFLINE_VARIABLES


def _dry_run(tmp_path, *targets: str) -> str:
    run = subprocess.run([*SNAKEMAKE, "-n", *targets, "--directory", str(tmp_path)], capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout + run.stderr


def test_prefetch_plans_every_dataset_and_encoder_snapshot_and_a_fine_tune_reads_its_snapshot(tmp_path):
    cfg = base()
    model = "results/models/mbert/pretrained/xnli/en.underspec/seed1"
    out = _dry_run(tmp_path, "prefetch", model)
    counts = job_counts(out)
    assert counts["download"] == len(P.download_plan(cfg)) and counts["download_encoder"] == 3
    # the seed's model comes with its pack's (config.yaml's engine.pack: its seeds trained in one job)
    assert set(counts) == {"download", "download_encoder", "prefetch", "prepare_task", "finetune_pack_1_2_3", "total"}
    for source in P.download_plan(cfg):
        assert f"resources/raw/manifests/{source}.json" in out
    for encoder in ("mbert", "xlmr_base", "xlmr_large"):
        assert f"output: resources/raw/encoders/{encoder}\n" in out
    # The fine-tune on config.yaml waits for its encoder's snapshot (a job of the DAG).
    job = out[out.index(f"output: {model},"):]
    reason = next(line for line in job.splitlines() if line.strip().startswith("reason:"))
    assert "resources/raw/encoders/mbert" in reason and "xlmr" not in reason


def test_jobs_of_a_remote_executor_run_with_the_hub_offline(tmp_path):
    """What the SLURM plugin runs on a compute node is `snakemake --mode remote` on the job
    (submitted with --export=ALL): there the workflow sets HF_HUB_OFFLINE and HF_DATASETS_OFFLINE
    for the job. A local run keeps its environment: the download rules are local rules (they
    run in the main process, where there is network)."""
    (tmp_path / "Snakefile").write_text(
        f'include: "{REPO / "Snakefile"}"\n\n\n'
        'rule envcheck:\n    output:\n        "env.txt",\n    shell:\n'
        '        "env | sort | sed -n -E \'/^HF_(HUB|DATASETS)_OFFLINE=/p\' > {output}"\n'
    )
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_VARIABLES}
    cmd = [*SNAKEMAKE[:3], "--snakefile", str(tmp_path / "Snakefile"),
           "--directory", str(tmp_path), "--configfile", str(REPO / "config.yaml"), "--cores", "1", "envcheck"]
    run = subprocess.run([*cmd, "--mode", "remote"], capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tmp_path / "env.txt").read_text() == "HF_DATASETS_OFFLINE=1\nHF_HUB_OFFLINE=1\n"
    smk = (REPO / "rules" / "data.smk").read_text()
    local = smk[smk.index("localrules:"):smk.index("\n\n", smk.index("localrules:"))]
    assert all(f"    {r}," in local for r in ("download", "download_encoder", "prefetch"))


def test_the_suite_ignores_the_users_offline_variables():
    """A shell with TRANSFORMERS_OFFLINE=1 (huggingface_hub reads it as HF_HUB_OFFLINE) or
    HF_HUB_OFFLINE=0 runs the tests as `make test` does: the Makefile's two variables, not that one."""
    env = {**os.environ, "TRANSFORMERS_OFFLINE": "1", "HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0"}
    code = ("import os, tests.conftest; from huggingface_hub import constants; "
            "print([os.environ.get(v) for v in ('TRANSFORMERS_OFFLINE', 'HF_HUB_OFFLINE', 'HF_DATASETS_OFFLINE')], "
            "constants.HF_HUB_OFFLINE)")
    run = subprocess.run([SNAKEMAKE[0], "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split("\n")[-2] == "[None, '1', '1'] True"
