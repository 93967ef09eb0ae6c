"""The stage's target lists on the shipped configs, and its config checks."""

import copy

import pytest

from tests.test_config import base, shipped_configs
from xlt.workflow import paper_targets as P
from xlt.dag import targets as T
from xlt.align import targets as A
from xlt.workflow.config import validate
from xlt.errors import XltError


def tiny():
    return dict(shipped_configs())["tiny.yaml"]


def test_full_config_plans_the_four_pairs_and_the_papers_samples():
    cfg = base()
    assert A.pairs(cfg) == ["es", "ru", "vi", "hi"]
    samples = A.sample_files(cfg)
    # 30K for every pair x 5 seeds, plus the en-ru sweep's other sizes (5K-250K) x 5 seeds
    assert len(samples) == len(set(samples)) == 4 * 5 + 4 * 5
    assert "results/align/en-ru/systran_align/samples/n250000.seed5.jsonl" in samples
    assert "results/align/en-hi/systran_align/samples/n30000.seed1.jsonl" in samples
    assert A.bitext_inputs(cfg) == [T.download_manifest(cfg, "wikimatrix")]
    assert A.bitext_file(cfg, "vi") == "resources/raw/wikimatrix/WikiMatrix.en-vi.tsv.gz"
    # real WikiMatrix has no gold links: no AER table; the L2 distances of all four pairs are
    # the original rows of adjust's figures
    assert A.align_tables(cfg) == []
    assert A.l2_inputs(cfg)[0] == "results/align/en-es/systran_align/l2/mbert.csv"
    assert set(A.l2_inputs(cfg)) <= set(P.figure_inputs(cfg, "adjust", "fig2"))
    assert set(T.figure_files(cfg, "adjust", "fig2")) <= set(P.all_tables(cfg))


def test_tiny_config_adds_the_aer_table_of_installed_backends():
    cfg = tiny()
    assert A.bitext_inputs(cfg) == ["results/world/manifest.json"]
    assert A.gold_file(cfg, "hi") == "results/raw/wikimatrix/gold-alignments/en-hi.pharaoh"
    assert "results/tables/align/aer.md" in P.all_tables(cfg)
    backends = {p.split("/")[3] for p in A.aer_inputs(cfg)}
    assert "systran_align" in backends  # installed by `make install`
    assert "eflomal" not in backends  # not seeded: left out of the tiny run's byte-identical tables
    assert "eflomal" in {p.split("/")[3] for p in A.aer_inputs(base() | {"world": cfg["world"]})}
    assert A.l2_encoder(cfg) == "tiny"
    assert A.l2_job_config(cfg) == {"sentences": 300, "word_pairs": 1500, "seed": 1, "max_length": 64, "batch_size": 32}


def test_the_wikimatrix_threshold_of_the_data_block_reaches_the_pool():
    cfg = base()
    cfg["data"]["wikimatrix"] = {"threshold": 1.06}
    assert A.pool_config(cfg) == {"size": 250000, "max_words": 64, "threshold": 1.06}


@pytest.mark.parametrize(
    ("change", "message"),
    [(lambda a: a.update(backend="giza"), r"align.backend: 'giza' is not allowed; allowed: fast_align, eflomal, systran_align"),
     (lambda a: a["l2"].update(fig1_pair="zh"), r"align.l2.fig1_pair: 'zh' is not an aligned pair"),
     (lambda a: a["l2"].update(encoder="bert"), r"align.l2.encoder: unknown encoder 'bert'"),
     (lambda a: a["samples"]["sweep"].update(pairs=["de"]), r"align.samples.sweep.pairs: 'de' is not an aligned pair"),
     (lambda a: a["pool"].pop("size"), r"align.pool: 'size' is a required property")],
)  # fmt: skip
def test_bad_align_config_names_the_key(change, message):
    cfg = copy.deepcopy(base())
    change(cfg["align"])
    with pytest.raises(XltError, match=message):
        validate(cfg)
        A.check(cfg)


def test_a_pair_the_world_does_not_write_is_refused():
    cfg = copy.deepcopy(tiny())
    cfg["align"]["pairs"] = ["hi", "ru", "ja"]
    with pytest.raises(XltError, match="align.pairs: the world writes no en-ja bitext"):
        A.check(cfg)
