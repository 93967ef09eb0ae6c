"""Whole-workflow runs of the real Snakemake DAG on the tiny preset (shrunk further here)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.conftest import REPO
from xlt.workflow import paper_targets as P
from xlt.workflow.config import load_configs
from xlt.workflow.packs import base_rule, pack_models

SNAKEMAKE = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile")]

# The tiny preset, smaller still: the same DAG and code paths in about a minute.
SHRINK = {
    "world": {"sizes": {"train": 120, "dev": 40, "test": 40, "qa": {"train": 60}, "bitext": {"train": 60},
                        "pawsx": {"train": 1000, "dev": 40, "test": 40}, "marc": {"train": 1000, "dev": 40, "test": 40}}},
    "encoders": {"tiny": {"build": {"vocab_size": 600, "pretrain_sentences": 300,
                                    "shape": {"layers": 2, "hidden": 32, "heads": 2, "intermediate": 64, "max_positions": 128},
                                    "mlm": {"steps": 30, "batch_size": 32, "lr": 5.0e-4, "max_length": 64, "seed": 1}}}},
    "hparams": {"crossmulti": {"epochs": 2, "batch_size": 16}},
    "papers": {"crossmulti": {"seeds": [1, 2], "tasks": ["pos", "ner"]}},
}


def snakemake(workdir: Path, *args: str, timeout: int = 900, zygote: dict | None = None) -> subprocess.CompletedProcess:
    """Snakemake on the tiny preset and `workdir/shrink.yaml`; with `zygote` (the fixture's
    environment) its jobs are served by the session's fork server, as `make tables` runs them."""
    cmd = [*SNAKEMAKE, *args, "--directory", str(workdir), "--configfile", str(REPO / "presets" / "tiny.yaml"), str(workdir / "shrink.yaml")]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=zygote)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, zygote):
    workdir = tmp_path_factory.mktemp("workflow")
    (workdir / "shrink.yaml").write_text(yaml.safe_dump(SHRINK))
    run = snakemake(workdir, "crossmulti_table2", "--cores", "2", zygote=zygote)
    assert run.returncode == 0, run.stderr[-4000:]
    return workdir


@pytest.mark.slow
def test_the_progress_line_says_the_time_left(tiny_run):
    from xlt.workflow.runsummary import jobs_run

    log = max((tiny_run / ".snakemake" / "log").glob("*.snakemake.log"), key=lambda p: p.stat().st_mtime).read_text()
    lines = [x for x in log.splitlines() if " steps (" in x]
    assert lines and all(x.endswith("left at this run's pace") for x in lines[:-1]), lines
    assert lines[-1].endswith("steps (100%) done")  # nothing left: no estimate
    assert jobs_run(log)[0] == jobs_run(log)[1] > 1  # xlt.workflow.runsummary still reads the counts


@pytest.mark.slow
def test_tiny_workflow_writes_table2_beside_the_paper(tiny_run):
    table = pd.read_csv(tiny_run / "results/tables/crossmulti/table2.csv")
    ran = table[table.task.isin(["pos", "ner"])]
    assert len(ran) == 2 * 2 * 4  # tasks × settings × languages
    assert ran["ours_mean"].notna().all() and ran["paper"].notna().all()
    assert (ran["n_seeds"] == 2).all()
    assert ((ran["delta"] - (ran["ours_mean"] - ran["paper"])).abs() < 1e-9).all()
    md = (tiny_run / "results/tables/crossmulti/table2.md").read_text()
    assert "93.85 · " in md  # POS cross EN, the paper's value, beside ours


@pytest.mark.slow
def test_every_model_and_result_carries_provenance(tiny_run):
    model = tiny_run / "results/models/tiny/pretrained/pos.es_ancora/en.crossmulti/seed1"
    meta = json.loads((model / "xlt_model.json").read_text())
    assert meta["provenance"]["seed"] == 1
    preset = load_configs([REPO / "presets" / "tiny.yaml"])
    assert meta["provenance"]["config"]["lr"] == preset["hparams"]["crossmulti"]["lr"]  # the preset's, resolved
    assert all(len(d) == 64 for d in meta["provenance"]["data_sha256"].values())
    assert "source_sha256" in meta["provenance"]["code"]
    report = json.loads((tiny_run / "results/eval/tiny/pretrained/pos.es_ancora/en.crossmulti/seed1/test.crossmulti.json").read_text())
    assert set(report["metrics"]) == {"en", "de", "es", "fr"}
    assert report["provenance"]["data_sha256"]
    # the encoder built by the DAG loads with the stock Hugging Face class
    from transformers import AutoModel

    assert AutoModel.from_pretrained(tiny_run / "results/encoders/tiny/pretrained").config.num_hidden_layers == 2


@pytest.mark.slow
def test_a_finished_workflow_has_nothing_left_to_do(tiny_run):
    run = snakemake(tiny_run, "crossmulti_table2", "-n")
    assert run.returncode == 0
    assert "Nothing to be done" in run.stdout + run.stderr


@pytest.mark.slow
def test_malformed_conllu_stops_with_file_and_line_and_no_partial_output(tiny_run, tmp_path, zygote):
    work = tmp_path / "copy"
    shutil.copytree(tiny_run, work, ignore=shutil.ignore_patterns(".snakemake"))
    conllu = work / "results/raw/ud-treebanks-v2.7/UD_German-Tiny/de_tiny-ud-dev.conllu"
    lines = conllu.read_text(encoding="utf-8").splitlines()
    bad = next(i for i, line in enumerate(lines) if line and not line.startswith("#"))
    lines[bad] = "\t".join(lines[bad].split("\t")[:7])  # 7 columns instead of 10
    conllu.write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = snakemake(work, "--forcerun", "prepare_task", "--cores", "1", "results/data/pos.es_ancora", zygote=zygote)
    assert run.returncode != 0
    log = (work / "logs/data/pos.es_ancora.prepare.log").read_text()
    assert f"error: {conllu.relative_to(work)}:{bad + 1}:" in log or f"{conllu}:{bad + 1}:" in log
    assert "10 columns" in log or "columns" in log
    assert not (work / "results/data/pos.es_ancora").exists()


def test_full_scale_dag_builds_offline(tmp_path):
    """`snakemake -n all_tables` with config.yaml plans the real-data DAG (no download needed)."""
    run = subprocess.run([*SNAKEMAKE, "-n", "all_tables", "--directory", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout + run.stderr
    assert "finetune" in out
    assert "results/models/mbert/pretrained/pos.es_ancora/en.crossmulti/seed1" in out


def test_full_scale_dag_adapts_mbert_and_xlmr_by_mlm(tmp_path):
    """An adapted encoder is a path the DAG makes: MLM on a task's training text."""
    targets = ["results/models/mbert/mlm-pawsx-crossmulti/pawsx/en.crossmulti/seed1",
               "results/encoders/xlmr_large/mlm-xnli-xtreme_xnli"]
    run = subprocess.run([*SNAKEMAKE, "-n", *targets, "--directory", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout + run.stderr
    assert job_counts(out)["adapt_mlm"] == 2
    assert "results/encoders/mbert/mlm-pawsx-crossmulti" in out
    assert "results/encoders/xlmr_large/mlm-xnli-xtreme_xnli" in out


def test_full_scale_dag_scores_a_model_on_another_dataset_of_its_task(tmp_path):
    """eval .../on-<testset>/: the model of its own dataset, the named set prepared from its downloads."""
    target = "results/eval/mbert/pretrained/xnli/en.underspec/seed1/on-xnli.mixed/test.underspec_targets.json"
    run = subprocess.run([*SNAKEMAKE, "-n", target, "--directory", str(tmp_path)], capture_output=True, text=True, timeout=300)
    out = run.stdout + run.stderr
    assert run.returncode == 1 and "dataset 'xnli.mixed' has no language ar, de, fr, zh" in out  # its languages: es ru vi hi
    run = subprocess.run([*SNAKEMAKE, "-n", target.replace("underspec_targets", "adjust_targets"), "--directory", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    counts = job_counts(run.stdout + run.stderr)
    # one fine-tune job: seed 1's pack (config.yaml's engine.pack trains the model's seeds together)
    assert counts["evaluate_on"] == 1 and fine_tunes(counts)[0] == 1 and counts["prepare_task"] == 2  # xnli, xnli.mixed
    assert "results/data/xnli.mixed" in run.stdout and "evaluate " not in run.stdout


def test_full_scale_dag_scores_xmixups_qa_models_on_mlqa_and_tydiqa_for_tables_16_17(tmp_path):
    """xmixup Tables 16-17 on config.yaml: Table 15's qa models (no model of their own) scored on
    MLQA (three models x three seeds); TyDiQA-GoldP's own three models per seed, trained on its
    English train and XTREME's translation of it (qa_tests.tydiqa.train), scored on its nine languages."""
    targets = ["results/tables/xmixup/table16.md", "results/tables/xmixup/table17.md"]
    run = subprocess.run([*SNAKEMAKE, "-n", *targets, "--directory", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout + run.stderr
    counts = job_counts(out)
    assert counts["paper_table"] == 2 and counts["evaluate_on"] == 3 * 3 + 3 * 3 and "evaluate" not in counts
    assert fine_tunes(counts)[1] == 3 * 3 + 3 * 3  # models: Table 15's, TyDiQA-GoldP's own (some in packs)
    assert out.count("/on-qa.mlqa/test.xtreme_mlqa.json") >= 9 and out.count("/on-qa.tydiqa/test.xtreme_tydiqa.json") >= 9
    assert out.count("results/models/mbert/pretrained/qa.tydiqa_translate_train/") >= 6  # translate-train and X-Mixup
    assert "results/models/mbert/pretrained/qa.tydiqa_train/en.xmixup_tydiqa/seed1" in out


def test_full_scale_dag_plans_adjusts_alignment_adjustment_and_fine_tuning_of_every_table(tmp_path):
    """adjust on config.yaml: per seed (5) one adjustment per target language for Tables 2-4, the
    en-ru size sweep (Table 5), the subword and token variants on Hindi (Tables 6-7); the
    fine-tunes of each (plain and continual for the main adjustments; translated SQuAD for Table 8)."""
    run = subprocess.run([*SNAKEMAKE, "-n", "adjust_all", "--directory", str(tmp_path)], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout + run.stderr
    counts = job_counts(out)
    # 4 pairs (main) + 4 more sizes (ru) + 3 word-vector modes (start, end, subword) + 3 token sets (hi), 5 seeds each
    assert counts["adjust_encoder"] == (4 + 4 + 3 + 3) * 5
    assert counts["align_sample"] == 40 and counts["align_links"] == 4  # 30K x 4 pairs + 4 sizes of ru, 5 seeds
    assert counts["align_subword_links"] == 1 and counts["align_subword_sample"] == 5  # hi in mBERT's subwords
    # continual learning reads the main adjustment's own 30K (the authors' draw): no second sample
    assert "align_continual_sample" not in counts
    for xx in ("es", "ru", "vi", "hi"):
        assert f"results/align/en-{xx}/systran_align/samples/n30000.seed3.jsonl" in out
    for seed in range(1, 6):
        assert f"results/encoders/mbert/adjust-hi-n30000-seed{seed}-cls_sep" in out
        assert f"results/models/mbert/adjust-vi-n30000-seed{seed}/qa/en.adjust.adjust_continual/seed{seed}" in out
    assert "results/models/mbert/adjust-ru-n250000-seed3/xnli/en.adjust/seed3" in out
    assert "results/models/mbert/adjust-hi-n30000-seed1/qa.translated/hi.adjust/seed1" in out
    assert counts["adjust_l2"] == 4 * (1 + 3 * 3)  # Figures 1-2: per pair the adjusted encoder and 3 rows per task


@pytest.mark.slow
def test_tiny_adapted_encoder_is_made_then_fine_tuned(tmp_path, zygote):
    (tmp_path / "shrink.yaml").write_text(yaml.safe_dump({**SHRINK, "adapt": {"mlm": {"steps": 8, "batch_size": 16}}}))
    model = "results/models/tiny/mlm-ner-crossmulti/ner/en.crossmulti/seed1"
    run = snakemake(tmp_path, model, "--cores", "2", zygote=zygote)
    assert run.returncode == 0, run.stderr[-4000:]
    enc = json.loads((tmp_path / "results/encoders/tiny/mlm-ner-crossmulti/xlt_encoder.json").read_text())
    assert enc["steps"] == 8 and enc["init_from"] == "results/encoders/tiny/pretrained"
    assert {Path(p).parts[-2] for p in enc["provenance"]["data_sha256"]} == {"en", "de", "es", "fr"}
    meta = json.loads((tmp_path / model / "xlt_model.json").read_text())
    assert meta["train_config"]["encoder"] == "results/encoders/tiny/mlm-ner-crossmulti"
    assert meta["train_config"]["select_metric"] == "token_f1_macro"  # what crossmulti's table reports


@pytest.mark.slow
def test_one_seeds_model_with_engine_pack_runs_its_pack(tmp_path, zygote):
    """engine.pack 2: asking for seed 2's model runs the pack of seeds 1 and 2 (one job, both
    models in their own directories, each trained as alone: its own seed); seed 7, which no
    table reads, is a job of its own."""
    (tmp_path / "shrink.yaml").write_text(yaml.safe_dump({**SHRINK, "engine": {"pack": 2}}))
    family = "results/models/tiny/pretrained/ner/en.crossmulti"
    run = snakemake(tmp_path, f"{family}/seed2", f"{family}/seed7", "--cores", "2", zygote=zygote)
    assert run.returncode == 0, run.stderr[-4000:]
    counts = job_counts(run.stdout + run.stderr)
    assert counts.get("finetune_pack_1_2") == 1 and counts.get("finetune") == 1, counts
    for seed, pack in ((1, [1, 2]), (2, [1, 2]), (7, None)):
        meta = json.loads((tmp_path / family / f"seed{seed}" / "xlt_model.json").read_text())
        assert meta["train_config"]["seed"] == seed and meta["train"].get("pack") == pack
    checkpoints = tmp_path / "results/checkpoints/models/tiny/pretrained/ner/en.crossmulti"
    assert not list(checkpoints.rglob("*.safetensors"))  # every model's and the pack's, cleared


def fine_tunes(counts: dict[str, int]) -> tuple[int, int]:
    """(jobs, models) of the fine-tune rules in `job_counts`: `finetune` trains one model, a pack
    `finetune_pack_<seeds>` (config engine.pack) one per seed in its name; their `_temp` twins
    (keep_models: false) the same."""
    rules = {r: n for r, n in counts.items() if base_rule(r) == "finetune"}
    return sum(rules.values()), sum(n * pack_models(r) for r, n in rules.items())


def job_counts(output: str) -> dict[str, int]:
    """The `Job stats` table of a dry run: {rule: count}."""
    stats = output[output.index("Job stats:"):].splitlines()[3:]
    counts = {}
    for line in stats:
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            break
        counts[parts[0]] = int(parts[1])
    return counts


def test_full_scale_data_all_downloads_each_real_source_once(tmp_path):
    """`snakemake -n data_all` with config.yaml: one download job per real source."""
    from tests.test_config import base
    from xlt.dag import targets as T

    run = subprocess.run([*SNAKEMAKE, "-n", "data_all", "--directory", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    counts = job_counts(run.stdout + run.stderr)
    cfg = base()
    downloads = [p for p in P.data_all(cfg) if "/manifests/" in p]
    # the catalog's 23 entries less 3 second routes (squad, xquad, mlqa): XTREME's XNLI and PAWS-X
    # translate-test (xmixup's source side at inference) are two of them
    assert counts["download"] == len(downloads) == 20
    assert counts["prepare_task"] == len(T.datasets(cfg))
    for source in P.download_plan(cfg):  # what the papers read is among them
        assert f"resources/raw/manifests/{source}.json" in run.stdout + run.stderr


def test_tiny_all_tables_dag_has_the_data_size_tables_and_no_download(tmp_path):
    run = subprocess.run([*SNAKEMAKE, "-n", "all_tables", "--directory", str(tmp_path), f"--configfile={REPO / 'presets' / 'tiny.yaml'}"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout + run.stderr
    counts = job_counts(out)
    # three data-size tables, crossmulti tables 2-6, dlfa Tables II-VII
    # adjust's Tables 2-9 (4, 8 and 9 print the paper's values: no QA, no extended mBERT) and
    # xmixup's Tables 2-12 (4, 9 and 12 print the paper's values; 6 ours where our models
    # saw a language as the paper's did) and 1, 13-17 (the paper's values and why: tagging has no
    # public translate-train, QA is config.yaml's)
    assert counts["paper_table"] == 3 + 5 + 6 + 8 + 11 + 6 and "download" not in counts
    assert counts["paper_claims"] == 5 and counts["claims_page"] == 1  # results/claims.md: reads the CSVs, trains nothing
    assert counts["xmixup_cka"] == 3 * len(load_configs([REPO / "presets" / "tiny.yaml"])["papers"]["xmixup"]["seeds"])
    assert counts["xmixup_centroids"] == 3  # Figure 4: the three models of the first seed
    seeds = load_configs([REPO / "presets" / "tiny.yaml"])["papers"]["crossmulti"]["analysis"]["seeds"]
    # one probe job per fine-tuned model: 4 tasks × cross / multi × the analysed seeds
    assert counts["crossmulti_probe_model"] == 8 * len(seeds) and counts["crossmulti_pppl"] == 4 and counts["adapt_mlm"] == 1
    assert "results/models/tiny/mlm-ner-crossmulti/ner/en.crossmulti.crossmulti_fa/seed1" in out
    for paper in ("crossmulti", "dlfa", "underspec"):
        assert f"results/tables/{paper}/table1.md" in out


def test_invalid_config_names_key_and_allowed_values(tmp_path):
    (tmp_path / "bad.yaml").write_text("papers: {crossmulti: {tasks: [pos, nre]}}\n")
    run = subprocess.run([*SNAKEMAKE, "-n", "all_tables", "--directory", str(tmp_path), "--configfile", str(tmp_path / "bad.yaml")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert "config key papers.crossmulti.tasks[1]: 'nre' is not allowed; allowed: pos, ner, pawsx, marc" in run.stdout + run.stderr


def test_a_config_file_that_is_not_yaml_is_read_by_snakemake_before_the_snakefile(tmp_path):
    """Snakemake loads `--configfile` files when it builds its settings, before the Snakefile
    runs, so no check of ours can come first: its message names neither file nor line. This is
    why `make tables` runs `python -m xlt.workflow.config` first (README, "When something is wrong"),
    which names both. If Snakemake ever names the file itself, this test says so."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("world:\n  seed: [1,\n")
    run = subprocess.run([*SNAKEMAKE, "-n", "all_tables", "--directory", str(tmp_path), f"--configfile={bad}"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    said = run.stdout + run.stderr
    assert "Config file is not valid JSON or YAML" in said and str(bad) not in said
    assert "error: invalid configuration" not in said  # the Snakefile never ran
    check = subprocess.run([sys.executable, "-m", "xlt.workflow.config", str(bad)], capture_output=True, text=True, timeout=120)
    assert check.returncode == 1 and check.stderr.startswith(f"error: invalid configuration: {bad}:3: invalid YAML")
    assert "Traceback" not in check.stderr
