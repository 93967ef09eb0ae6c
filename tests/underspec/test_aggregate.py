from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from xlt.errors import XltError
from xlt.papers.underspec.aggregate import aggregate, normalise_by_bilingual, plot_1d, plot_2d, plot_geometry

T975_2 = 4.302652729911275  # t quantile 0.975, 2 degrees of freedom


def hand_frame():
    """One setting (ner, en→de), two seeds, a few grid points; scores chosen by hand."""
    rows = []

    def add(seed, direction, lang, score, alpha=None, a1=None, a2=None):
        rows.append(dict(task="ner", source="en", target="de", seed=seed, direction=direction,
                         alpha=alpha, alpha1=a1, alpha2=a2, eval_lang=lang, score=score))  # fmt: skip

    # Bilingual model (α = 1 on both 1D paths, (0, 0) in 2D): source 90 / 92, target 80 / 82.
    for seed, s, t in ((1, 90.0, 80.0), (2, 92.0, 82.0)):
        for d in ("src", "tgt"):
            add(seed, d, "source", s, alpha=1.0)
            add(seed, d, "target", t, alpha=1.0)
        add(seed, "2d", "source", s, a1=0.0, a2=0.0)
        add(seed, "2d", "target", t, a1=0.0, a2=0.0)
    # α = 0 on the src path (the zero-shot model).
    add(1, "src", "source", 89.0, alpha=0.0)
    add(2, "src", "source", 91.0, alpha=0.0)
    add(1, "src", "target", 60.0, alpha=0.0)
    add(2, "src", "target", 70.0, alpha=0.0)
    # One 2D interior point.
    add(1, "2d", "target", 40.0, a1=0.5, a2=0.5)
    add(2, "2d", "target", 41.0, a1=0.5, a2=0.5)
    return pd.DataFrame(rows)


def pick(df, **kw):
    m = np.ones(len(df), dtype=bool)
    for k, v in kw.items():
        m &= df[k].to_numpy() == v
    (i,) = np.flatnonzero(m)
    return df.iloc[i]


def test_normalise_mean_and_variance():
    out = normalise_by_bilingual(hand_frame())
    r = pick(out, direction="src", alpha=0.0, eval_lang="target")
    assert r["n_seeds"] == 2 and r["mean"] == 65.0 and r["var"] == 50.0
    assert r["bi_mean"] == 81.0
    assert r["norm_mean"] == pytest.approx(65 / 81)
    assert r["norm_var"] == pytest.approx(50 / 81**2)
    assert r["norm_std"] == pytest.approx(math.sqrt(50) / 81)
    r = pick(out, direction="src", alpha=0.0, eval_lang="source")
    assert r["norm_mean"] == pytest.approx(90 / 91) and r["norm_var"] == pytest.approx(2 / 91**2)
    for d in ("src", "tgt"):
        r = pick(out, direction=d, alpha=1.0, eval_lang="target")
        assert r["norm_mean"] == 1.0 and r["norm_var"] == pytest.approx(2 / 81**2)
    r = pick(out, direction="2d", alpha1=0.5, alpha2=0.5)
    assert r["norm_mean"] == pytest.approx(40.5 / 81)
    assert math.isnan(r["alpha"])
    assert len(out) == 4 + 2 + 2 + 1  # src α∈{0,1}, tgt α=1, 2d (0,0), × 2 langs; + 1 interior


def test_normalise_per_seed():
    out = normalise_by_bilingual(hand_frame(), per_seed=True)
    r = pick(out, direction="src", alpha=0.0, eval_lang="target")
    ratios = [60 / 80, 70 / 82]
    assert r["norm_mean"] == pytest.approx(np.mean(ratios))
    assert r["norm_var"] == pytest.approx(np.var(ratios, ddof=1))
    r = pick(out, direction="src", alpha=1.0, eval_lang="target")
    assert r["norm_mean"] == 1.0 and r["norm_var"] == 0.0


def test_extra_setting_columns_are_kept_apart():
    a, b = hand_frame(), hand_frame()
    a["encoder"], b["encoder"] = "mbert", "xlmr"
    b["score"] = b["score"] * 0.5  # halves both the score and its bilingual reference
    out = normalise_by_bilingual(pd.concat([a, b]))
    for enc in ("mbert", "xlmr"):
        r = pick(out, encoder=enc, direction="src", alpha=0.0, eval_lang="target")
        assert r["norm_mean"] == pytest.approx(65 / 81)


def test_normalise_errors():
    df = hand_frame()
    no_bi = df[~((df["seed"] == 2) & (df["eval_lang"] == "source") & (df["alpha"].fillna(0) == 1.0))]
    no_bi = no_bi[~((no_bi["seed"] == 2) & (no_bi["direction"] == "2d") & (no_bi["eval_lang"] == "source"))]
    with pytest.raises(XltError, match="no bilingual score .*eval_lang=source, seed=2"):
        normalise_by_bilingual(no_bi)
    with pytest.raises(XltError, match="direction must be"):
        normalise_by_bilingual(df.assign(direction="sideways"))
    with pytest.raises(XltError, match="missing column"):
        normalise_by_bilingual(df.drop(columns="score"))
    clash = df.copy()
    i = clash.index[(clash["direction"] == "2d") & (clash["seed"] == 1) & (clash["eval_lang"] == "target")
                    & (clash["alpha1"] == 0.0)][0]  # fmt: skip
    clash.loc[i, "score"] = 70.0  # θ_bi scored 80 on the 1D paths
    with pytest.raises(XltError, match=r"scores disagree for .*eval_lang=target, seed=1: \[70.0, 80.0\]"):
        normalise_by_bilingual(clash)
    clash.loc[i, "score"] = 80.2  # within 0.5 %: averaged
    assert pick(normalise_by_bilingual(clash), direction="tgt", alpha=1.0, eval_lang="target")["n_seeds"] == 2
    bad = df.copy()
    bad.loc[0, "score"] = np.nan
    with pytest.raises(XltError, match="non-finite"):
        normalise_by_bilingual(bad)


def test_separately_recorded_bilingual_row():
    df = hand_frame()
    df = df[~((df["alpha"] == 1.0) | ((df["alpha1"] == 0.0) & (df["alpha2"] == 0.0)))]
    bi = [dict(task="ner", source="en", target="de", seed=s, direction="bi", eval_lang=lang, score=v)
          for s, lang, v in ((1, "target", 80.0), (2, "target", 82.0), (1, "source", 90.0), (2, "source", 92.0))]  # fmt: skip
    out = normalise_by_bilingual(pd.concat([df, pd.DataFrame(bi)]))
    assert set(out["direction"]) == {"src", "2d"}
    assert pick(out, direction="src", alpha=0.0, eval_lang="target")["norm_mean"] == pytest.approx(65 / 81)


def test_aggregate_t_interval():
    df = pd.DataFrame({"g": ["a", "a", "a", "b"], "v": [1.0, 2.0, 3.0, 5.0]})
    out = aggregate(df, by=["g"], value="v")
    a = out.set_index("g").loc["a"]
    assert a["mean"] == 2.0 and a["std"] == 1.0 and a["n"] == 3
    assert a["ci_high"] - a["mean"] == pytest.approx(T975_2 / math.sqrt(3))
    assert a["mean"] - a["ci_low"] == pytest.approx(T975_2 / math.sqrt(3))
    b = out.set_index("g").loc["b"]
    assert b["mean"] == 5.0 and b["n"] == 1 and math.isnan(b["ci_low"])
    with pytest.raises(XltError, match="missing column"):
        aggregate(df, by=["nope"], value="v")


def grid_frame():
    """Several settings over a 1D and a small 2D grid: a smooth surface plus noise.

    Noise is drawn per evaluated model, so every evaluation of θ_bi (1D α = 1 on either path,
    2D (0, 0)) gets the same score, as it does in a real grid.
    """
    rng = np.random.default_rng(0)
    cache = {}

    def noisy(key, mean):
        if key not in cache:
            cache[key] = mean + rng.normal()
        return cache[key]

    def surface(lang, a1, a2):  # the 2D point; 1D path src: (1 − α, 0), tgt: (0, 1 − α)
        return (90 - 2 * a2**2 if lang == "source" else 80 - 20 * a1 - 5 * a2**2) - 3 * a1 * a2

    rows = []
    alphas = [-0.5, 0.0, 0.025, 0.5, 1.0, 1.5]
    axis = [-0.5, 0.0, 0.5, 1.0, 1.5]
    for task in ("ner", "pos"):
        for target in ("de", "zh"):
            for seed in (1, 2, 3):
                base = dict(task=task, source="en", target=target, seed=seed)
                points = [("src", a, 1 - a, 0.0) for a in alphas] + [("tgt", a, 0.0, 1 - a) for a in alphas]
                points += [("2d", None, a1, a2) for a1 in axis for a2 in axis]
                for direction, alpha, a1, a2 in points:
                    for lang in ("source", "target"):
                        score = noisy((task, target, seed, lang, a1 + 0.0, a2 + 0.0), surface(lang, a1, a2))
                        coords = dict(alpha=alpha) if alpha is not None else dict(alpha1=a1, alpha2=a2)
                        rows.append(base | coords | dict(direction=direction, eval_lang=lang, score=score))
    return pd.DataFrame(rows)


def test_plots_write_png_pdf_csv(tmp_path):
    norm = normalise_by_bilingual(grid_frame())
    p = plot_1d(norm, tmp_path / "fig2", directions=("src", "tgt"), hue="eval_lang", panel="target")
    p5 = plot_1d(norm, tmp_path / "fig5", value="norm_var", hue=["task", "eval_lang"])
    one = norm[(norm["task"] == "ner") & (norm["target"] == "de")]
    p3 = plot_2d(one, tmp_path / "fig3.png", title="EN-DE NER")
    geom = pd.DataFrame({"encoder": ["mbert", "mbert", "xlmr"], "ratio": [1.0, 1.1, 0.95], "angle_deg": [55.0, 57.0, 52.0]})
    p4 = plot_geometry(geom, tmp_path / "fig4", hue="encoder")
    for paths in (p, p5, p3, p4):
        assert set(paths) == {"png", "pdf", "csv"}
        assert paths["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and paths["png"].stat().st_size > 5000
        assert paths["pdf"].read_bytes()[:5] == b"%PDF-" and paths["pdf"].stat().st_size > 1000
    assert p3["png"] == tmp_path / "fig3.png"
    assert not list(tmp_path.glob(".*.tmp"))

    csv = pd.read_csv(p["csv"])
    # 2 targets × 2 directions × 2 eval langs × 6 alphas, each a mean over 2 tasks.
    assert len(csv) == 2 * 2 * 2 * 6 and (csv["n"] == 2).all()
    want = aggregate(norm[norm["direction"].isin(["src", "tgt"])], ["target", "direction", "eval_lang", "alpha"])
    got = csv.sort_values(["target", "direction", "eval_lang", "alpha"]).reset_index(drop=True)
    assert np.allclose(got["mean"], want["mean"]) and np.allclose(got["ci_low"], want["ci_low"])
    at1 = got[got["alpha"] == 1.0]
    assert np.allclose(at1["mean"], 1.0)
    csv3 = pd.read_csv(p3["csv"])
    assert len(csv3) == 2 * 25 and (csv3["n"] == 1).all()
    assert pd.read_csv(p4["csv"]).shape == (3, 3)


def test_plot_errors(tmp_path):
    norm = normalise_by_bilingual(grid_frame())
    with pytest.raises(XltError, match="no rows"):
        plot_1d(norm, tmp_path / "x", directions=("nowhere",))
    with pytest.raises(XltError, match="missing column"):
        plot_geometry(pd.DataFrame({"ratio": [1.0]}), tmp_path / "y")
    assert not list(tmp_path.iterdir())


def test_a_line_of_one_setting_gets_its_seeds_band(tmp_path):
    """Figures 6-9 with one pair a task (the tiny preset): no interval over pairs exists, so the
    band is the t interval over the setting's seeds; with several settings it stays theirs."""
    norm = normalise_by_bilingual(grid_frame())
    one = norm[(norm["task"] == "ner") & (norm["target"] == "de")]
    csv = pd.read_csv(plot_1d(one, tmp_path / "fig6", directions=("src", "tgt"), hue="eval_lang")["csv"])
    assert (csv["n"] == 1).all() and set(csv["band"]) == {"seeds"}
    rows = one[one["direction"].isin(["src", "tgt"])].sort_values(["direction", "eval_lang", "alpha"]).reset_index(drop=True)
    csv = csv.sort_values(["direction", "eval_lang", "alpha"]).reset_index(drop=True)
    k = rows["n_seeds"].to_numpy()
    half = stats.t.ppf(0.975, k - 1) * np.sqrt(rows["norm_var"].to_numpy() / k)
    assert np.allclose(csv["ci_high"] - csv["mean"], half) and np.allclose(csv["mean"] - csv["ci_low"], half)
    assert (half[rows["alpha"].to_numpy() != 1.0] > 0).all()  # a band is drawn
    many = pd.read_csv(plot_1d(norm, tmp_path / "fig2", directions=("src", "tgt"), hue="eval_lang")["csv"])
    assert set(many["band"]) == {"settings"}
    var = pd.read_csv(plot_1d(one, tmp_path / "fig5", value="norm_var", hue="eval_lang")["csv"])
    assert set(var["band"]) == {"none"}  # a variance has no seed interval of its mean
