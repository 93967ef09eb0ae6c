"""The docs' walk-throughs, done as written on the tiny preset (shrunk as in test_workflow):
docs/adding-a-language.md (a language set of one's own, scored by the zero_shot target), then
docs/adding-an-encoder.md (the tiny encoder saved as a local Hugging Face directory, then given
to zero_shot as a path)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from functools import reduce
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.conftest import REPO
from tests.test_workflow import SHRINK, SNAKEMAKE, job_counts
from xlt import zeroshot as Z
from xlt.workflow.config import deep_merge, load_configs

DOCS = REPO / "docs"
# one epoch of underspec's profile (zero_shot's on the tiny preset) on the shrunk world
SHRINK_ZS = {**SHRINK, "hparams": {**SHRINK["hparams"], "underspec": {"epochs": 1}}}


def blocks(guide: Path, lang: str) -> list[str]:
    """The fenced code blocks of `lang` in a guide, in order."""
    return re.findall(rf"```{lang}\n(.*?)```", guide.read_text(), flags=re.S)


def guide_config() -> dict:
    """docs/adding-a-language.md's blocks of `my.yaml` merged in order (the later keys winning)."""
    mine = [b for b in blocks(DOCS / "adding-a-language.md", "yaml") if b.startswith("# my.yaml")]
    assert len(mine) == 2, "the guide declares a set (step 2), then the whole of it with a new toy language"
    return reduce(deep_merge, [yaml.safe_load(b) for b in mine], {})


def zero_shot_command(guide: Path, encoder: str) -> list[str]:
    """The guide's zero_shot command for `encoder` (its words after `snakemake`)."""
    for line in blocks(guide, "bash")[0].splitlines():
        words = shlex.split(line, comments=True)
        if words and "zero_shot" in words and f"encoder={encoder}" in words:
            return words[1:]
    raise AssertionError(f"{guide.name}: no zero_shot command with encoder={encoder}")


def run_guide(workdir: Path, words: list[str], zygote: dict) -> None:
    """A guide's command in `workdir`: the preset from this checkout, the shrink file after the
    guide's own config files (the words before `--config`)."""
    words = [str(REPO / w) if w.startswith("presets/") else w for w in words]
    at = words.index("--config")
    cmd = [*SNAKEMAKE, *words[:at], str(workdir / "shrink.yaml"), *words[at:], "--directory", str(workdir)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=zygote, cwd=workdir)
    assert run.returncode == 0, run.stderr[-4000:]


@pytest.fixture(scope="module")
def walked(tmp_path_factory, zygote):
    workdir = tmp_path_factory.mktemp("zero_shot")
    (workdir / "shrink.yaml").write_text(yaml.safe_dump(SHRINK_ZS))
    # adding a language: the guide's config (its blocks in order, the later keys winning), then its command
    (workdir / "my.yaml").write_text(yaml.safe_dump(guide_config()))
    run_guide(workdir, zero_shot_command(DOCS / "adding-a-language.md", "tiny"), zygote)
    # adding an encoder: its snippet saves the tiny encoder built above as a directory; its command
    # uses it, in a folder of its own (without my.yaml, the world there has no bg)
    elsewhere = tmp_path_factory.mktemp("zero_shot_encoder")
    (elsewhere / "shrink.yaml").write_text(yaml.safe_dump(SHRINK_ZS))
    encoder = elsewhere / "my-encoder"
    code = blocks(DOCS / "adding-an-encoder.md", "python")[0].replace("/data/my-encoder", str(encoder))
    subprocess.run([sys.executable, "-c", code], check=True, cwd=workdir, capture_output=True, timeout=300)
    words = [w.replace("/data/my-encoder", str(encoder)) for w in zero_shot_command(DOCS / "adding-an-encoder.md", "/data/my-encoder")]
    run_guide(elsewhere, words, zygote)
    return workdir, elsewhere, encoder


@pytest.mark.slow
def test_adding_a_language_walkthrough_scores_the_new_set(walked):
    workdir, _, _ = walked
    langs = guide_config()["language_sets"]["my_langs"]
    assert "bg" in langs  # a toy language the tiny preset does not have
    table = pd.read_csv(workdir / "results/tables/zero_shot/tiny.ner.my_langs.csv")
    assert list(dict.fromkeys(table["lang"])) == [*langs, "avg", "avg_targets"]
    assert set(table["metric"]) == {"span_f1", "span_f1_macro", "accuracy", "token_f1_macro"} and (table["n_seeds"] == 2).all()
    assert table["ours_mean"].notna().all()
    md = (workdir / "results/tables/zero_shot/tiny.ner.my_langs.md").read_text()
    assert "| bg | " in md and "| fr | " not in md
    assert (workdir / "results/data/ner/bg/test.jsonl").is_file()  # zero_shot.languages: prepared for it
    for seed in (1, 2):  # underspec's and adjust's English NER models on the tiny preset
        assert (workdir / f"results/models/tiny/pretrained/ner/en.underspec/seed{seed}/xlt_model.json").is_file()


@pytest.mark.slow
def test_adding_an_encoder_walkthrough_fine_tunes_the_local_directory(walked):
    _, workdir, encoder = walked
    cfg = load_configs([REPO / "presets/tiny.yaml"])
    name, spec = Z.resolve_encoder(cfg, str(encoder))
    assert spec == {"path": str(encoder.resolve())}
    for model in Z.models(cfg, name, "ner"):
        meta = json.loads((workdir / model / "xlt_model.json").read_text())
        assert meta["train_config"]["encoder"] == str(encoder.resolve())
    table = pd.read_csv(workdir / f"results/tables/zero_shot/{name}.ner.xtreme_ner.csv")
    assert set(table["lang"]) == {*cfg["language_sets"]["xtreme_ner"], "avg", "avg_targets"}
    assert table["ours_mean"].notna().all()


def test_the_zero_shot_target_adds_no_job_to_a_papers_dag_but_its_table(tmp_path):
    """underspec's θ_src on NER, scored by adjust on its language set, is zero_shot's
    tiny/ner/adjust: asking for both plans
    the table and the target rule beside all_tables, nothing else (and all_tables' own DAG is
    the same with or without the keys)."""
    def dry(*args):
        run = subprocess.run([*SNAKEMAKE, "-n", *args, "--directory", str(tmp_path), f"--configfile={REPO / 'presets/tiny.yaml'}"],
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr[-3000:]
        return job_counts(run.stdout + run.stderr)

    alone = dry("all_tables")
    both = dry("all_tables", "zero_shot", "--config", "encoder=tiny", "task=ner", "langs=adjust")
    assert both == {**alone, "zero_shot_table": 1, "zero_shot": 1, "total": alone["total"] + 2}
