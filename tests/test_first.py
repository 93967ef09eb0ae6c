"""`make first`: one paper table, ours beside the paper's, with only the jobs that table needs
(Makefile, presets/first.yaml, xlt.workflow.first)."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import REPO
from tests.test_workflow import job_counts
from xlt.workflow import first as F
from xlt.workflow.config import load_configs

FIRST = [str(REPO / "presets" / "tiny.yaml"), str(REPO / "presets" / "first.yaml")]
TARGET = re.search(r"^FIRST_TARGET := (\S+)$", (REPO / "Makefile").read_text(), re.M).group(1)


def test_the_makefile_runs_the_target_this_module_prints():
    make = (REPO / "Makefile").read_text()
    assert TARGET == "xmixup_table14"
    assert re.search(r"^FIRST_PRESET \?= presets/first\.yaml$", make, re.M)
    assert "first:" in make and "-m xlt.workflow.first --target $(FIRST_TARGET)" in make


def test_the_first_table_needs_ten_jobs_the_tiny_encoder_and_two_ner_fine_tunes(tmp_path):
    run = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "-n", TARGET,
                          "--directory", str(tmp_path), "--configfile", *FIRST], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout + run.stderr
    assert job_counts(out) == {"world": 1, "encoder_corpus": 1, "prepare_task": 1, "build_encoder": 1, "finetune": 2,
                               "evaluate": 2, "paper_table": 1, TARGET: 1, "total": 10}
    # the models `make tables` trains too (underspec's English NER θ_src) and the README's zero_shot reads
    for seed in (1, 2):
        assert f"output: results/models/tiny/pretrained/ner/en.underspec/seed{seed}\n" in out
    cfg = load_configs(FIRST)
    assert str(F.table_files(cfg, TARGET)["md"]) in out


def test_only_the_first_presets_keys_differ_from_the_tiny_preset():
    tiny, first = load_configs(FIRST[:1]), load_configs(FIRST)
    first_x, tiny_x = first["papers"].pop("xmixup"), tiny["papers"].pop("xmixup")
    assert first == tiny  # the encoder, the world and every other paper's settings are make tables' own
    assert {k for k in first_x if first_x[k] != tiny_x.get(k)} == {"seeds", "zero_shot_tagging"}
    assert first_x["zero_shot_tagging"]["hparams"] == tiny["zero_shot"]["hparams"]
    assert first_x["seeds"] == tiny["papers"]["underspec"]["seeds"]


def test_the_end_of_make_first_prints_the_table_its_path_and_the_timing(tmp_path):
    cfg = {"results": "results"}
    csv = tmp_path / F.table_files(cfg, TARGET)["csv"]
    csv.parent.mkdir(parents=True)
    csv.write_text("model,lang,paper,ours_mean,ours_std,n_seeds,per_seed,n_collapsed,mean_without_collapsed,n_without_collapsed,delta\n"
                   "mbert,en,85.2000,95.5406,0.6945,2.0000,1=96.0 2=95.0,0.0000,95.5406,2.0000,10.3406\n"
                   "mbert,af,77.4000,,,,,,,,\n"
                   "mbert,zh,42.7000,74.3400,3.2000,2.0000,1=77.5 2=71.1,1.0000,77.5,1.0000,31.6400\n")
    out = F.lines(cfg, TARGET, since=0.0, rc=0, workdir=tmp_path)
    text = "\n".join(out)
    assert "| en | 85.20 | 95.54 ± 0.69 (2 seeds) | +10.34 |" in text and "| zh | 42.70 | 74.34 ± 3.20 (2 seeds) †1 | +31.64 |" in text
    assert "results/tables/xmixup/table14.md" in text and "af" not in text.split("The whole table")[0]
    assert out[-1].startswith("make first: ") and " threads" in out[-1]
    failed = F.lines(cfg, TARGET, since=0.0, rc=1, workdir=tmp_path)
    assert "| en |" not in "\n".join(failed) and "make first" in failed[-1]
