"""The alignment stage through the real Snakemake DAG on the tiny preset, shrunk further."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

from tests.test_workflow import SHRINK, snakemake

ALIGN_SHRINK = {
    **SHRINK,
    "align": {"pairs": ["es", "hi"], "samples": {"seeds": [1, 2], "sizes": [20], "sweep": {"pairs": ["hi"], "sizes": [10]}},
              "l2": {"sentences": 30, "word_pairs": 100, "bins": 10}},
    # adjust and versus read this stage's samples: their sizes and pairs must be among them
    "papers": {**SHRINK["papers"], "adjust": {"size": 20, "table5": {"pair": "hi", "sizes": [10, 20], "tasks": ["ner"]}},
               "versus": {"adjust_size": 20}},
}  # fmt: skip


@pytest.fixture(scope="module")
def align_run(tmp_path_factory, zygote):
    workdir = tmp_path_factory.mktemp("align_workflow")
    (workdir / "shrink.yaml").write_text(yaml.safe_dump(ALIGN_SHRINK))
    run = snakemake(workdir, "align_all", "--cores", "2", zygote=zygote)
    assert run.returncode == 0, run.stderr[-4000:]
    return workdir


@pytest.mark.slow
def test_align_all_writes_samples_aer_table_and_distances(align_run):
    res = align_run / "results"
    for xx, sizes in (("es", [20]), ("hi", [10, 20])):
        for n in sizes:
            for seed in (1, 2):
                meta = json.loads((res / f"align/en-{xx}/systran_align/samples/n{n}.seed{seed}.json").read_text())
                assert meta["size"] == n and meta["seed"] == seed and meta["backend"]["name"] == "systran_align"
                lines = (res / f"align/en-{xx}/systran_align/samples/n{n}.seed{seed}.jsonl").read_text().splitlines()
                assert len(lines) == n
    aer = pd.read_csv(res / "tables/align/aer.csv")
    final = aer[aer.stage == "one_to_one"]
    assert set(final.pair) == {"es", "hi"} and "systran_align" in set(final.backend)  # eflomal: not in tiny
    # ~52 pairs are too few for unsupervised aligners (AER 0.1-0.6 here; test_aer bounds them on
    # the preset's 800); shifted or swapped links would be near 1
    assert (final.aer < 0.75).all()
    for xx in ("es", "hi"):  # the original encoder's rows of adjust's Figures 1-2
        dist = pd.read_csv(res / f"align/en-{xx}/systran_align/l2/tiny.csv")
        assert set(dist.kind) == {"related", "unrelated"} and (dist.distance > 0).all()


@pytest.mark.slow
def test_a_finished_alignment_stage_has_nothing_left_to_do(align_run):
    run = snakemake(align_run, "align_all", "-n")
    assert run.returncode == 0 and "Nothing to be done" in run.stdout + run.stderr


def test_full_scale_all_tables_plans_the_alignment_of_all_four_pairs(tmp_path):
    """`snakemake -n all_tables` on config.yaml: WikiMatrix download, pool, links and L2 per pair."""
    import subprocess

    from tests.test_workflow import SNAKEMAKE, job_counts

    run = subprocess.run([*SNAKEMAKE, "-n", "all_tables", "--directory", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout + run.stderr
    counts = job_counts(out)
    assert counts["align_pool"] == counts["align_links"] == counts["align_l2"] == 4
    assert "align_aer" not in counts  # no gold links in WikiMatrix
    assert "results/figures/adjust/fig2.png" in out  # drawn by adjust's plugin from the distances
    for xx in ("es", "ru", "vi", "hi"):
        assert f"results/align/en-{xx}/systran_align/links.pharaoh" in out
    assert "resources/raw/manifests/wikimatrix.json" in out
    # adjust Table 6's subword alignment: Hindi's pool in mBERT's WordPieces, aligned once, one
    # sample per seed on the word sample's pairs, one adjustment per seed
    assert counts["align_subword_pool"] == counts["align_subword_links"] == 1
    assert counts["align_subword_sample"] == 5
    for seed in range(1, 6):
        assert f"results/align/en-hi/subword-mbert/systran_align/samples/n30000.seed{seed}.jsonl" in out
        assert f"results/encoders/mbert/adjust-hi-n30000-seed{seed}-subword" in out
    assert "results/eval/mbert/adjust-hi-n30000-seed1-subword/ner/en.adjust/seed1/test.hi.json" in out
