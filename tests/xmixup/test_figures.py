"""xmixup's Figures 1, 3 and 5 (xlt/papers/xmixup/figures.py) from hand-made CKA, score and PCA
files: each writes PNG, PDF and the CSV of the numbers it plots; Figure 5 only with its config."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from xlt.workflow.config import load_configs, validate
from xlt.errors import XltError
from xlt.workflow.paper_outputs import draw_figure
from xlt.workflow.paper_targets import figure_inputs, figure_names, figure_spec
from xlt.papers.xmixup import PAPER
from xlt.papers.xmixup import plan as X
from xlt.papers.xmixup import figures as F


@pytest.fixture(scope="module")
def tiny_cfg():
    """The tiny preset with two xmixup seeds (it runs one): means and stds over seeds are tested."""
    cfg = load_configs(["presets/tiny.yaml"])
    cfg["papers"]["xmixup"]["seeds"] = [1, 2]
    return cfg


def _write(path: str, obj: dict) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(obj))


def _eval(cfg: dict, path: str, model: str, seed: int, scores: dict, layer: int | None = None) -> None:
    dataset, recipe = X.model_of(cfg if layer is None else F.with_layer(cfg, "xnli", layer), "xnli", model)
    _write(path, {"task": "xnli", "seed": seed, "model": f"{cfg['results']}/models/tiny/pretrained/{dataset}/{recipe}/seed{seed}",
                  "metrics": {lang: {"accuracy": v, "n": 10} for lang, v in scores.items()}})


ACC = {"zero_shot": 40.0, "trans_train": 50.0, "xmixup": 55.0}


@pytest.fixture
def made(tiny_cfg, tmp_path):
    """The tiny config under tmp_path with every CKA, score and PCA file its figures read: accuracy
    and CKA fall with the language's position in the set (ρ = 1), except zero-shot, whose accuracy
    rises (ρ = −1); seed 2 is 2 points and 0.02 of CKA above seed 1."""
    cfg = copy.deepcopy(tiny_cfg)
    cfg["results"] = str(tmp_path)
    langs = X._langs(cfg, "xnli")
    sign = {"zero_shot": -1, "trans_train": 1, "xmixup": 1}
    for seed in cfg["papers"]["xmixup"]["seeds"]:
        for m in X.MODELS:
            _eval(cfg, X.scores_file(cfg, "xnli", m, seed), m, seed,
                  {x: ACC[m] + 2 * (seed - 1) - sign[m] * i for i, x in enumerate(langs)})
            _write(X.cka_file(cfg, "xnli", m, seed), {"cka": {x: 0.9 - 0.1 * i + 0.02 * (seed - 1)
                                                              for i, x in enumerate(langs) if x != "en"}})
    for m, spread in (("trans_train", 3.0), ("xmixup", 1.0)):
        coords = {x: [[spread * i + 0.1 * k, -0.1 * k] for k in range(5)] for i, x in enumerate(langs)}
        _write(F.pca_file(cfg, "xnli", m, 1), {"coords": coords, "n": {x: 5 for x in langs},
                                               "explained_variance_ratio": [0.5, 0.2], "rows_per_language": 200})
    return cfg, langs


def _draw(cfg: dict, figure: str, out: Path) -> pd.DataFrame:
    draw_figure("xmixup", figure, json.loads(json.dumps(figure_spec(cfg, "xmixup"))), figure_inputs(cfg, "xmixup", figure),
                str(out))
    for ext in ("png", "pdf", "csv"):
        assert (out / f"{figure}.{ext}").stat().st_size > 0
    assert (out / f"{figure}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and (out / f"{figure}.pdf").read_bytes()[:4] == b"%PDF"
    return pd.read_csv(out / f"{figure}.csv")


def test_the_tiny_preset_makes_figures_1_and_3_from_files_the_tables_already_read(tiny_cfg):
    from xlt.workflow.paper_targets import table_inputs

    assert figure_names(tiny_cfg, "xmixup") == ["fig1", "fig3", "fig4"]
    files = figure_inputs(tiny_cfg, "xmixup", "fig3")
    tables = {f for t in ("table2", "table3", "table7") for f in table_inputs(tiny_cfg, "xmixup", t)}
    pca = [f for f in files if f.endswith(".pca.json")]
    centroids = [f for f in files if "/xmixup/centroids/" in f]  # Figure 4's own jobs: seed 1's three models
    # the PCA files: the sidecars of CKA files Table 7 reads (the same jobs), seed 1
    assert len(pca) == 2 and {f.replace(".pca.json", ".json") for f in pca} <= tables
    assert centroids == F.figure4_files(tiny_cfg) and len(centroids) == 3
    assert set(files) - set(pca) - set(centroids) <= tables and len(files) == len(set(files)) == 3 + 2 + 2 * 3 * 2
    assert figure_spec(tiny_cfg, "xmixup")["fig1_langs"] == ["en", "ar"]  # of en es ar sw, the set holds two


def test_figure3_plots_seed_means_and_each_models_spearman(made, tmp_path):
    cfg, langs = made
    csv = _draw(cfg, "fig3", tmp_path / "out")
    targets = [x for x in langs if x != "en"]
    assert list(csv.columns) == ["model", "lang", "cka", "accuracy", "n_seeds", "spearman_rho"]
    assert list(csv["model"]) == [m for m in X.MODELS for _ in targets] and list(csv["lang"]) == targets * 3
    row = csv[(csv["model"] == "xmixup") & (csv["lang"] == "de")].iloc[0]
    i = langs.index("de")
    assert row["accuracy"] == pytest.approx(ACC["xmixup"] + 1 - i) and row["cka"] == pytest.approx(0.9 - 0.1 * i + 0.01)
    assert row["n_seeds"] == 2
    rho = csv.groupby("model")["spearman_rho"].first()
    assert rho["trans_train"] == pytest.approx(1.0) and rho["xmixup"] == pytest.approx(1.0)
    assert rho["zero_shot"] == pytest.approx(-1.0)


def test_figure1_plots_both_panels_of_the_papers_languages_in_the_set(made, tmp_path):
    cfg, langs = made
    csv = _draw(cfg, "fig1", tmp_path / "out")
    assert list(dict.fromkeys(csv["panel"])) == ["a", "b"] and set(csv["lang"]) == {"en", "ar"}
    assert len(csv) == 2 * 2 * 5
    ar = csv[(csv["model"] == "trans_train") & (csv["lang"] == "ar") & (csv["row"] == 4)].iloc[0]
    assert (ar["pc1"], ar["pc2"]) == pytest.approx((3.0 * langs.index("ar") + 0.4, -0.4))


def test_figure5_is_made_only_with_its_config_and_averages_languages_then_seeds(made, tmp_path):
    cfg, langs = made
    with pytest.raises(XltError, match="fig5"):
        figure_inputs(cfg, "xmixup", "fig5")
    cfg["papers"]["xmixup"]["figure5"] = {"task": "xnli", "layers": [1, 3]}
    validate(cfg)
    assert figure_names(cfg, "xmixup") == ["fig1", "fig3", "fig4", "fig5"]
    fig5 = F.figure5_files(cfg)
    assert len(fig5) == 2 * 2 + 2 and any("/ar+de+en+hi+ru+zh.xmixup-xmixup3/seed2/" in f for f in fig5)
    for seed in (1, 2):  # layer 3: 10 points below layer 1 in every language
        _eval(cfg, X.scores_file(F.with_layer(cfg, "xnli", 3), "xnli", "xmixup", seed), "xmixup", seed,
              {x: ACC["xmixup"] - 10 + 2 * (seed - 1) - i for i, x in enumerate(langs)}, layer=3)
    csv = _draw(cfg, "fig5", tmp_path / "out")
    mean_i = sum(range(len(langs))) / len(langs)
    assert list(csv["model"]) == ["trans_train", "xmixup", "xmixup"] and list(csv["layer"].iloc[1:]) == [1, 3]
    assert list(csv["accuracy"]) == pytest.approx([ACC["trans_train"] + 1 - mean_i, ACC["xmixup"] + 1 - mean_i,
                                                   ACC["xmixup"] - 9 - mean_i])
    assert set(csv["n_seeds"]) == {2}


def test_figure5_sweeps_the_seeds_it_names_among_the_papers(made):
    cfg, _ = made
    cfg["papers"]["xmixup"]["figure5"] = {"task": "xnli", "layers": [1, 2, 3], "seeds": [2]}
    validate(cfg)
    fig5 = F.figure5_files(cfg)
    assert len(fig5) == 3 + 1 and all("/seed2/" in f for f in fig5)  # X-Mixup at 3 layers, translate-train
    cfg["papers"]["xmixup"]["figure5"]["seeds"] = [3]
    with pytest.raises(XltError, match=r"papers.xmixup.figure5.seeds: 3 not among papers.xmixup.seeds \(1, 2\)"):
        PAPER.check(cfg, cfg["papers"]["xmixup"])


def test_config_yaml_plans_figures_4_and_5_and_the_tiny_preset_figure_4_only():
    full, tiny = load_configs(["config.yaml"]), load_configs(["presets/tiny.yaml"])
    assert figure_names(full, "xmixup") == ["fig1", "fig3", "fig4", "fig5"]
    assert figure_names(tiny, "xmixup") == ["fig1", "fig3", "fig4"]
    # the sweep's own models: layers other than the main one, on the swept seeds
    sweep = [f for f in F.figure5_files(full) if f not in {X.scores_file(full, "xnli", m, s) for m in X.MODELS
                                                            for s in full["papers"]["xmixup"]["seeds"]}]
    assert len(sweep) == len(full["papers"]["xmixup"]["figure5"]["layers"]) - 1


def test_figure5s_task_must_be_run(made):
    cfg, _ = made
    cfg["papers"]["xmixup"]["figure5"] = {"task": "pawsx", "layers": [1]}
    with pytest.raises(XltError, match="papers.xmixup.figure5.task: 'pawsx' is not one of papers.xmixup.tasks"):
        PAPER.check(cfg, cfg["papers"]["xmixup"])
    cfg["papers"]["xmixup"]["figure5"] = {"task": "xnli", "layers": [0]}
    with pytest.raises(XltError, match="figure5"):
        validate(cfg)


def _centroids(cfg: dict, model: str, centroids: dict, radius: float) -> None:
    dist = {x: float(np.linalg.norm(np.subtract(c, centroids["en"]))) for x, c in centroids.items() if x != "en"}
    _write(F.centroids_file(cfg, model, 1), {"centroids": centroids, "n": {x: 150 for x in centroids},
                                             "radius": {x: radius for x in centroids}, "distance_to_source": dist})


def test_figure4_projects_each_models_centroids_and_reports_their_distances_to_english(made, tmp_path):
    """Centroids on a line through English's, 1, 2, 3 … apart per step (X-Mixup: half the step):
    a PCA of points on a line keeps their distances on PC1, PC2 is zero."""
    cfg, langs = made
    assert F.centroids_file(cfg, "xmixup", 1).endswith(
        "/xmixup/centroids/tiny/pretrained/xnli.translate_train/ar+de+en+hi+ru+zh.xmixup-xmixup1/seed1/"
        "on-pos.xtreme/test.xmixup_xnli.json")
    assert F.centroids_file(cfg, "zero_shot", 1).endswith("/xnli/en.underspec/seed1/on-pos.xtreme/test.xmixup_xnli.json")
    step = {"zero_shot": 1.0, "trans_train": 1.0, "xmixup": 0.5}
    for m in X.MODELS:
        _centroids(cfg, m, {x: [step[m] * i, 2 * step[m] * i, 5.0] for i, x in enumerate(langs)}, radius=2.0)
    csv = _draw(cfg, "fig4", tmp_path / "out")
    assert list(csv["model"]) == [m for m in X.MODELS for _ in langs] and list(csv["lang"]) == langs * 3
    for m in X.MODELS:
        g = csv[csv["model"] == m].set_index("lang")
        pc1 = g["pc1"] - g.loc["en", "pc1"]
        assert list(pc1.abs()) == pytest.approx([step[m] * 5 ** 0.5 * i for i in range(len(langs))])
        assert g["pc2"].abs().max() < 1e-9 and g["explained_variance_ratio_pc1"].iloc[0] == pytest.approx(1.0)
        mean = step[m] * 5 ** 0.5 * sum(range(1, len(langs))) / (len(langs) - 1)
        assert g["mean_distance_to_source"].iloc[0] == pytest.approx(mean) and g.loc["en", "distance_to_source"] == 0
    assert set(csv["seed"]) == {1} and set(csv["n_sentences"]) == {150}


def test_figure4s_config_is_checked(made):
    cfg, _ = made
    p = cfg["papers"]["xmixup"]
    p["figure4"] = {"task": "pawsx", "dataset": "pos.xtreme", "languages": "xmixup_xnli"}
    with pytest.raises(XltError, match="papers.xmixup.figure4.task: 'pawsx' is not one of papers.xmixup.tasks"):
        PAPER.check(cfg, p)
    p["figure4"] = {"task": "xnli", "dataset": "pos.xtreme", "languages": "nope"}
    with pytest.raises(XltError, match="figure4.languages: unknown language set 'nope'"):
        PAPER.check(cfg, p)
    cfg["language_sets"]["fig4_test"] = ["en", "de", "sw"]
    p["figure4"] = {"task": "xnli", "dataset": "pos.xtreme", "languages": "fig4_test"}
    with pytest.raises(XltError, match="dataset 'pos.xtreme' has no sw"):
        PAPER.check(cfg, p)
    cfg["language_sets"]["fig4_test"] = ["de", "fr", "ru"]
    with pytest.raises(XltError, match="must hold en and at least two more"):
        PAPER.check(cfg, p)
    del p["figure4"]
    assert figure_names(cfg, "xmixup") == ["fig1", "fig3"]


def test_the_plugin_imports_no_plotting_or_model_library():
    import subprocess
    import sys

    code = ("import sys, xlt.papers.xmixup; "
            "print(sorted(m for m in ('matplotlib', 'sklearn', 'torch', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def test_figure_titles_count_seeds_in_proper_plural_and_figure1_says_the_rows_it_plots(made, tmp_path, monkeypatch):
    import xlt.figures

    titles = {}
    real = xlt.figures.save_figure

    def spy(fig, stem, table):
        titles[Path(stem).name] = [ax.get_title() for ax in fig.axes] + [fig._suptitle.get_text() if fig._suptitle else ""]
        return real(fig, stem, table)

    monkeypatch.setattr(xlt.figures, "save_figure", spy)
    cfg, _ = made
    _draw(cfg, "fig3", tmp_path / "two")
    assert "mean over 2 seeds)" in titles["fig3"][0]
    one = copy.deepcopy(cfg)
    one["papers"]["xmixup"]["seeds"] = [1]
    _draw(one, "fig3", tmp_path / "one")
    assert "mean over 1 seed)" in titles["fig3"][0] and "seed(s)" not in titles["fig3"][0]
    _draw(cfg, "fig1", tmp_path / "fig1")  # the PCA files hold 5 rows per language (of the 200 it may fit)
    assert "the first 5 rows per language" in titles["fig1"][-1]
    assert "or all of a language's rows where its test set is shorter" in PAPER.figures[0].caption
