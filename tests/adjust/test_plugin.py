"""adjust's paths and tables: the adjusted init's grammar, its inputs and settings, continual
learning's aligned-pairs stream, the config checks, and the tables built from hand-made
evaluation files."""

from __future__ import annotations

import copy
import json
import re

import pytest

from xlt.config import load_configs
from xlt.errors import XltError
from xlt.papers import adjust as A
from xlt.papers import get_table, table_inputs
from xlt.targets import WILDCARDS, Adjusted, Init, adjust_config, adjust_inputs, aux_inputs, aux_streams


@pytest.fixture(scope="module")
def tiny_cfg():
    return load_configs(["presets/tiny.yaml"])


def test_an_adjusted_init_has_one_spelling_per_setting():
    for name in ("adjust-hi-n300-seed2", "adjust-hi-n300-seed2-start", "adjust-ru-n5000-seed1-words",
                 "adjust-hi-n300-seed1-end-cls_sep"):
        it = Init.parse(name)
        assert isinstance(it, Adjusted) and it.name == name and re.fullmatch(WILDCARDS["init"], name)
    assert Adjusted("hi", 300, 2, "avg", "all").name == "adjust-hi-n300-seed2"  # defaults are not spelt
    for bad in ("adjust-hi-300", "adjust-hi-n300-seed1-avg", "adjust-hi-n300-seed1-all", "adjust-hi-n300-seed1-cls-start"):
        assert not re.fullmatch(WILDCARDS["init"], bad)
        with pytest.raises(XltError, match=re.escape(Adjusted.GRAMMAR)):
            Init.parse(bad)


def test_an_adjustment_reads_its_seeds_sample_with_the_configured_settings(tiny_cfg):
    cfg = tiny_cfg
    inputs = adjust_inputs(cfg, "tiny", "adjust-ru-n100-seed2-start-words")
    assert inputs["pairs"] == [f"{cfg['results']}/align/en-ru/{cfg['align']['backend']}/samples/n100.seed2.jsonl"]
    assert inputs["encoder"] == [f"{cfg['results']}/encoders/tiny/pretrained"]
    job = adjust_config(cfg, "adjust-ru-n100-seed2-start-words")
    assert (job["seed"], job["word_vectors"], job["tokens"], job["lr"]) == (2, "start", "words", cfg["adapt"]["adjust"]["lr"])
    from xlt.engine.recipes.adjust import AdjustConfig

    AdjustConfig.from_dict(job)  # every key is an AdjustConfig field
    with pytest.raises(XltError, match="not made by cross-lingual adjustment"):
        adjust_inputs(cfg, "tiny", "mlm-ner-crossmulti")


def test_continual_learning_streams_the_inits_own_pairs_anchored_to_the_released_encoder(tiny_cfg):
    cfg = tiny_cfg
    (stream,) = aux_streams(cfg, "en.underspec.adjust_continual", "xnli", "tiny", "adjust-hi-n300-seed1-end")
    assert stream["kind"] == "aligned_pairs"
    assert stream["data"].endswith("/align/en-hi/systran_align/samples/n300.seed1.jsonl")
    assert stream["reference"] == f"{cfg['results']}/encoders/tiny/pretrained"
    assert (stream["weight"], stream["anchor_weight"], stream["batch_size"], stream["word_vectors"]) == (0.01, 1.0, 16, "end")
    assert aux_inputs(cfg, "en.underspec.adjust_continual", "xnli", "tiny", "adjust-hi-n300-seed1") == [
        stream["data"].replace("-end", ""), f"{cfg['results']}/encoders/tiny/pretrained"]
    with pytest.raises(XltError, match="needs an adjusted encoder init"):
        aux_streams(cfg, "en.underspec.adjust_continual", "xnli", "tiny", "pretrained")


def test_tables_read_one_adjustment_per_target_and_seed(tiny_cfg):
    files = table_inputs(tiny_cfg, "adjust", "table2")
    p = tiny_cfg["papers"]["adjust"]
    targets = A.targets(tiny_cfg)
    assert len(files) == len(p["seeds"]) * (1 + 2 * len(targets))
    assert sum("/pretrained/xnli/en.underspec/" in f for f in files) == len(p["seeds"])  # underspec's θ_src, shared
    assert any("/adjust-hi-n300-seed2/xnli/en.underspec.adjust_continual/seed2/" in f for f in files)
    t6 = table_inputs(tiny_cfg, "adjust", "table6")
    assert any("/adjust-hi-n300-seed1-start/" in f for f in t6) and not any("-avg" in f for f in t6)


@pytest.mark.parametrize("edit, message", [
    (lambda c: c["papers"]["adjust"].update(size=123), r"papers.adjust.size: 123 is not a sample size"),
    (lambda c: c["papers"]["adjust"].update(continual="crossmulti_fa"), "is not of kind aligned_pairs"),
    (lambda c: c["papers"]["adjust"].update(seeds=[1, 9]), r"papers.adjust.seeds: \[9\] have no aligned-pairs sample"),
    (lambda c: c["papers"]["adjust"]["table5"].update(sizes=[700]), r"table5.sizes: \[700\] are not sampled for ru"),
    (lambda c: c["papers"]["adjust"].update(targets=["de"]), "'de' is not aligned with English"),
    (lambda c: c["papers"]["adjust"].update(targets=["ru"]), r"align.l2.fig1_pair: 'hi' is not a target"),
    (lambda c: c["papers"]["adjust"].update(figures={"seed": 7}), r"papers.adjust.figures.seed"),
])
def test_bad_adjust_settings_are_named(tiny_cfg, edit, message):
    cfg = copy.deepcopy(tiny_cfg)
    edit(cfg)
    with pytest.raises(XltError, match=message):
        A.check(cfg, cfg["papers"]["adjust"])


def _eval(tmp_path, init: str, recipe: str, task: str, seed: int, scores: dict, metric: str) -> str:
    path = tmp_path / "results/eval/tiny" / init / task / recipe / f"seed{seed}" / "test.adjust.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"task": task, "seed": seed, "model": f"results/models/tiny/{init}/{task}/{recipe}/seed{seed}",
                                "metrics": {lang: {metric: 100 * v, "n": 10} for lang, v in scores.items()},
                                "collapsed": False}))  # scores x100, as evaluate writes them
    return str(path)


def test_table2_puts_each_adjusted_model_in_its_own_column_and_keeps_every_published_cell(tiny_cfg, tmp_path):
    spec = {**A.table_spec(tiny_cfg), "targets": ["ru", "hi"]}
    files = []
    for seed, shift in ((1, 0.0), (2, 2.0)):
        files.append(_eval(tmp_path, "pretrained", "en.underspec", "xnli", seed,
                           {"en": 0.9, "ru": 0.50 + shift / 100, "hi": 0.40}, "accuracy"))
        for xx, gain in (("ru", 0.05), ("hi", 0.10)):
            # the adjusted model's score on the other language must not enter any cell
            other = "hi" if xx == "ru" else "ru"
            for recipe, extra in (("en.underspec", 0.0), ("en.underspec.adjust_continual", 0.01)):
                files.append(_eval(tmp_path, f"adjust-{xx}-n300-seed{seed}", recipe, "xnli", seed,
                                   {xx: {"ru": 0.50, "hi": 0.40}[xx] + gain + extra + shift / 100, other: 0.0}, "accuracy"))
    table, md, _ = A.table2(spec, files)
    cell = table.set_index(["dataset", "model", "lang"])
    assert cell.loc[("xnli", "original", "ru"), "ours_mean"] == pytest.approx(51.0)
    assert cell.loc[("xnli", "adjusted", "hi"), "ours_mean"] == pytest.approx(51.0)  # 40 + 10 + 1 (mean shift)
    assert cell.loc[("xnli", "adjusted_continual", "ru"), "ours_mean"] == pytest.approx(57.0)
    assert cell.loc[("xnli", "adjusted", "ru"), "n_seeds"] == 2
    mixed = cell.loc[("xnli_mixed", "adjusted", "hi")]
    assert mixed["paper"] > 0  # published, ours missing: the cell is kept
    assert pytest.approx(float("nan"), nan_ok=True) == mixed["ours_mean"]
    assert "xnli_mixed" in md and "systran_align" in md


def test_table6_reports_gains_over_the_original_per_seed(tiny_cfg, tmp_path):
    spec = A.table_spec(tiny_cfg)
    files = []
    for seed, base in ((1, 0.40), (2, 0.44)):
        files.append(_eval(tmp_path, "pretrained", "en.underspec", "xnli", seed, {"hi": base, "ru": 0.5}, "accuracy"))
        for mode, gain in (("start", 0.02), ("end", -0.01), ("avg", 0.03)):
            init = Adjusted("hi", 300, seed, mode).name
            files.append(_eval(tmp_path, init, "en.underspec", "xnli", seed, {"hi": base + gain + seed / 100}, "accuracy"))
    table, md, _ = get_table("adjust", "table6").build(spec, files)
    rows = table[table["task"] == "xnli"].set_index("mode")
    assert rows.loc["start", "ours_mean"] == pytest.approx(3.5)  # (2+1 + 2+2) / 2 points
    assert rows.loc["end", "ours_mean"] == pytest.approx(0.5)
    assert rows.loc["avg", "ours_std"] == pytest.approx(0.7071, abs=1e-3)
    assert rows.loc["subword_alignment", "paper"] == pytest.approx(2.37)  # published, not built: kept with a reason
    assert "subword_alignment" in md and "not built" in md


def test_figure_rows_read_each_models_encoder(tiny_cfg):
    cfg = tiny_cfg
    r = cfg["results"]
    assert A.l2_encoder(cfg, "hi", "adjusted", 1) == f"{r}/encoders/tiny/adjust-hi-n300-seed1"
    assert A.l2_encoder(cfg, "hi", "xnli.finetuned", 1) == f"{r}/models/tiny/pretrained/xnli/en.underspec/seed1/encoder"
    assert A.l2_model(cfg, "ru", "ner.adjusted_continual", 2) == \
        f"{r}/models/tiny/adjust-ru-n300-seed2/ner/en.underspec.adjust_continual/seed2"
    from xlt.papers import figure_inputs

    inputs = figure_inputs(cfg, "adjust", "fig1")
    assert f"{r}/align/en-hi/systran_align/l2/tiny.csv" in inputs  # the original row: the alignment stage's
    assert f"{r}/adjust/l2/en-hi/xnli.adjusted_continual.seed1.csv" in inputs
    assert len(inputs) == len(A.targets(cfg)) * (2 + 3 * len(cfg["papers"]["adjust"]["tasks"]))
    for row in A.l2_rows(cfg):
        assert re.fullmatch(A.WILDCARDS["row"], row)
