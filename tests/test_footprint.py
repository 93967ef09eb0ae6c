"""Disk (xlt.workflow.footprint): the sizes the plan prints, which models are removed once
evaluated (checked against Snakemake's own DAG: no removed model is read by any rule but
evaluate), and a real run that removes them and has nothing left to do afterwards."""

from __future__ import annotations

import collections
import contextlib
import io
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from tests.test_config import base
from xlt.workflow import footprint as F
from xlt.workflow.config import load_configs

EVALUATE = {"evaluate", "evaluate_on"}


def test_encoder_sizes_match_the_published_parameter_counts():
    cfg = base()
    # Hugging Face's counts (with the pooler): mBERT 177.9M, XLM-R base 278.0M, large 559.9M
    assert F.encoder_params(cfg, "mbert") == pytest.approx(177.9e6, rel=2e-3)
    assert F.encoder_params(cfg, "xlmr_base") == pytest.approx(278.0e6, rel=2e-3)
    assert F.encoder_params(cfg, "xlmr_large") == pytest.approx(559.9e6, rel=2e-3)
    assert F.gb(F.encoder_bytes(cfg, "mbert")) == "0.7 GB"  # 4 bytes a parameter


def test_a_built_encoders_size_is_its_shapes_as_transformers_counts_it():
    from transformers import BertConfig, BertModel

    cfg = load_configs([REPO / "presets" / "tiny.yaml"])
    b = cfg["encoders"]["tiny"]["build"]
    s = b["shape"]
    model = BertModel(BertConfig(vocab_size=b["vocab_size"], hidden_size=s["hidden"], num_hidden_layers=s["layers"],
                                 num_attention_heads=s["heads"], intermediate_size=s["intermediate"],
                                 max_position_embeddings=s["max_positions"]))  # fmt: skip
    assert F.encoder_params(cfg, "tiny") == sum(p.numel() for p in model.parameters())


def test_keep_models_true_removes_nothing_and_the_tiny_preset_keeps_every_model():
    cfg = base()
    assert F.removed_families(cfg) and not F.removed_families({**cfg, "keep_models": True})
    assert load_configs([REPO / "presets" / "tiny.yaml"])["keep_models"] is True


def test_disk_counts_what_each_stage_writes_and_what_is_left():
    cfg = {**base(), "keep_models": False}
    removed = F.removed_families(cfg)[0]
    kept = sorted(F.kept_families(cfg))[0]
    gone, stays = (f"results/models/{'/'.join(f)}/seed1" for f in (removed, kept))
    jobs = [("finetune_temp", [gone]), ("finetune", [stays]), ("evaluate", ["results/eval/x/pretrained/d/en.p/seed1/test.s.json",
            "results/eval/x/pretrained/d/en.p/seed1/test.s.predictions.jsonl"]), ("all_tables", [])]  # fmt: skip
    stage = {"finetune": "finetune", "evaluate": "evaluate"}
    d = F.disk(cfg, jobs, stage, base_rule=lambda r: r.removesuffix("_temp"))
    size = {f: F.encoder_bytes(cfg, f[0]) for f in (removed, kept)}
    assert d["stages"]["finetune"] == (size[removed] + size[kept], size[kept])
    assert d["stages"]["evaluate"] == (F.EVAL_BYTES, F.EVAL_BYTES)
    assert (d["models"], d["removable"], d["left"]) == (2, 1, size[kept] + F.EVAL_BYTES)
    kept_all = F.disk({**cfg, "keep_models": True}, jobs, stage, base_rule=lambda r: r.removesuffix("_temp"))
    assert kept_all["left"] == kept_all["written"] == d["written"] and kept_all["left_without"] == d["left"]


def dag(configfiles: list[Path], workdir: Path, target: str = "all_tables"):
    """Snakemake's DAG of `target` (dry run): {model directory: the rules reading it}, {model: its rule}, config."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.enums import Quietness
    from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, ResourceSettings

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        with SnakemakeApi(OutputSettings(quiet={Quietness.RULES, Quietness.PROGRESS})) as api:
            wf = api.workflow(resource_settings=ResourceSettings(cores=1),
                              config_settings=ConfigSettings(configfiles=configfiles),
                              snakefile=REPO / "Snakefile", workdir=workdir)  # fmt: skip
            wf.dag(DAGSettings(targets={target})).execute_workflow(executor="dryrun")
            jobs = wf._workflow.dag.jobs
            config = dict(wf._workflow.config)
    made = {str(o): j.rule.name for j in jobs if j.rule.name.startswith("finetune") for o in j.output}
    readers = collections.defaultdict(set)
    for j in jobs:
        for f in j.input:
            if str(f) in made:
                readers[str(f)].add(j.rule.name)
    return readers, made, config


@pytest.mark.parametrize("preset", [[], ["presets/tiny.yaml"]], ids=["config.yaml", "tiny"])
def test_models_removed_are_exactly_the_dags_models_only_evaluate_reads(preset, tmp_path, monkeypatch):
    extra = tmp_path / "remove.yaml"
    extra.write_text("keep_models: false\n")
    monkeypatch.setattr(sys, "argv", ["snakemake"])  # rules/common.smk reads it for a misplaced --configfile
    readers, made, cfg = dag([*(REPO / p for p in preset), extra], tmp_path)
    families = set(F.removed_families(cfg))
    removed = {m for m in made if F.removed(cfg, m, families)}
    # never a model that a grid, probe, analysis, table or zero_shot reads
    assert removed and all(readers[m] <= EVALUATE for m in removed), {m: readers[m] for m in removed if readers[m] - EVALUATE}
    # and each is made by a rule whose output is temp(), every kept one by one whose is not
    assert all(made[m].endswith("_temp") == (m in removed) for m in made)
    only_evaluated = {m for m in made if readers[m] <= EVALUATE}
    # a family whose other seed another rule reads stays whole (config.yaml: adjust's 12 such)
    assert len(removed) >= 0.97 * len(only_evaluated)


@pytest.mark.slow
def test_a_run_removes_its_evaluated_models_and_a_rerun_has_nothing_to_do(tmp_path, zygote):
    from tests.test_workflow import SHRINK, snakemake

    (tmp_path / "shrink.yaml").write_text(yaml.safe_dump({**SHRINK, "keep_models": False}))
    run = snakemake(tmp_path, "dlfa_table5", "--cores", "2", zygote=zygote)
    assert run.returncode == 0, run.stderr[-4000:]
    cfg = load_configs([REPO / "presets" / "tiny.yaml", tmp_path / "shrink.yaml"])
    models = sorted((tmp_path / "results/models").glob("*/*/*/*/seed*"))
    evals = sorted((tmp_path / "results/eval").glob("*/*/*/*/seed*"))
    assert evals and len(models) < len(evals)  # some models are gone, every evaluation is there
    gone = [e for e in evals if not (tmp_path / "results/models" / e.relative_to(tmp_path / "results/eval")).exists()]
    assert gone and all(F.removed(cfg, f"results/models/{e.relative_to(tmp_path / 'results/eval')}") for e in gone)
    assert all(list(e.glob("*.predictions.jsonl")) for e in gone)
    again = snakemake(tmp_path, "dlfa_table5", "--cores", "1", "-n")
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr, again.stdout[-3000:]
    table = tmp_path / "results/tables/dlfa/table5.md"
    assert table.exists()
