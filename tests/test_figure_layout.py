"""Every figure is readable: its text inside the canvas and off its edges, a point's label inside
its panel, no two texts over each other nor a text over a marker, each panel letter used once,
a nonnegative quantity's band never below 0, a legend entry (colour and marker) per series. Every test draws with `xlt.figures.STRICT` on
(tests/conftest.py), so each figure test of a paper (tests/<paper>/test_figures.py, ...) checks
its figures too; these add the checker itself and the cases that once broke."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

import xlt.figures
from xlt.errors import XltError
from xlt.figures import layout_problems
from xlt.papers.underspec.aggregate import plot_geometry


def test_text_past_an_edge_and_a_letter_given_twice_are_named():
    fig = Figure(figsize=(2, 2))
    left, right = fig.subplots(1, 2)
    fig.suptitle("a title far too long for a canvas two inches wide, cut at both edges")
    left.set_title("(a) source dev")
    right.set_title("(a) target dev")
    problems = layout_problems(fig)
    assert any("runs outside the canvas" in p and "far too long" in p for p in problems)
    assert "panel letter (a) labels 2 panels" in problems
    with pytest.raises(XltError, match="outside the canvas"):
        xlt.figures.save_figure(fig, "/nonexistent/never-written", pd.DataFrame())


def test_a_figure_that_fits_has_no_problem():
    fig = Figure(figsize=(6, 3), layout="constrained")
    a, b = fig.subplots(1, 2)
    a.set_title("(a) left"), b.set_title("(b) right")
    a.set_xlim(0, 1), a.set_xticks([-1.0, 0.0, 1.0, 2.0])  # ticks beyond the limits are not drawn
    fig.suptitle("fits")
    assert layout_problems(fig) == []


def test_underspec_figures_2_to_4_fit_and_letter_each_panel_once(tmp_path):
    from tests.underspec.test_figures import figures

    made = figures(tmp_path / "u", {})
    assert set(made) == {"fig2", "fig3", "fig4"}


def test_underspec_figure3_letters_follow_the_configured_settings(tmp_path):
    from xlt.papers.underspec.aggregate import plot_2d

    rows = [{"setting": s, "dev": d, "direction": "2d", "alpha1": a1, "alpha2": a2, "norm_mean": 1.0 + a1 - a2}
            for s in ("EN-RU POS", "EN-DE NER") for d in ("source dev", "target dev") for a1 in (0, 1) for a2 in (0, 1)]
    data = pd.DataFrame(rows)
    data["setting"] = pd.Categorical(data["setting"], ["EN-RU POS", "EN-DE NER"], ordered=True)
    plot_2d(data, tmp_path / "fig3", panel=("setting", "dev"), ncols=4, letters=True, title="Figure 3")
    grid = pd.read_csv(tmp_path / "fig3.csv")
    assert list(dict.fromkeys(grid["setting"])) == ["EN-RU POS", "EN-DE NER"]  # config order, not sorted


def test_underspec_figure4_tells_every_task_and_pair_apart(tmp_path, monkeypatch):
    geom = pd.DataFrame([{"encoder": "tiny", "task": t, "pair": p, "seed": s, "ratio": 1 + s / 10 + i / 100,
                          "angle_deg": 50 + 5 * i + s}
                         for i, (t, p) in enumerate([(t, p) for t in ("pos", "ner", "xnli") for p in ("EN-DE", "EN-RU")])
                         for s in (1, 2)])
    seen = {}
    real = xlt.figures.layout_problems

    def spy(fig):
        seen["fig"] = fig
        return real(fig)

    monkeypatch.setattr(xlt.figures, "layout_problems", spy)
    plot_geometry(geom, tmp_path / "fig4", hue=("encoder", "task", "pair"), title="Figure 4")
    ax = seen["fig"].axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(labels) == len(set(labels)) == 6 and "tiny, ner, EN-RU" in labels
    colours = {tuple(c.get_facecolor()[0].round(3)) for c in ax.collections}
    markers = {str(c.get_paths()[0].vertices.round(2).tolist()) for c in ax.collections}
    assert len(ax.collections) == len(colours) == len(markers) == 6  # no two series alike, in colour or in black and white


@pytest.mark.parametrize("pairs", [["hi"], ["es", "hi"]])
def test_adjust_figures_fit_with_one_pair_or_two(tmp_path, pairs):
    from tests.align.test_report import _distances
    from xlt.papers.adjust.figures import draw

    spec = {"targets": pairs, "tasks": ["xnli"], "fig1_pair": pairs[-1], "fig1_task": "xnli", "bins": 4}
    files = []
    for k, xx in enumerate(pairs):
        files.append(tmp_path / f"results/align/en-{xx}/systran_align/l2/tiny.csv")
        files += [tmp_path / f"results/adjust/l2/en-{xx}/{row}.seed1.csv" for row in
                  ("adjusted", "xnli.finetuned", "xnli.adjusted_finetuned", "xnli.adjusted_continual")]
    for k, f in enumerate(files):
        f.parent.mkdir(parents=True, exist_ok=True)
        _distances(f, k / 10)
    for fig in ("fig1", "fig2"):
        draw(spec, [str(f) for f in files], str(tmp_path / "fig"), fig)


# ---- the defects a reader saw, each on a figure made to show it, then on the real figure functions


def _problems(fig) -> list[str]:
    return layout_problems(fig)


def test_two_labels_drawn_over_each_other_are_named():
    fig = Figure(figsize=(3, 3), layout="constrained")
    ax = fig.subplots()
    ax.scatter([0, 0.01, 1], [0, 0.01, 1])
    for x, y, lang in ((0, 0, "de"), (0.01, 0.01, "en"), (1, 1, "hi")):
        ax.annotate(lang, (x, y), textcoords="offset points", xytext=(4, 4))
    problems = _problems(fig)
    assert "texts 'de' and 'en' overlap" in problems
    assert any("'hi' runs past its panel's frame" in p for p in problems)  # the rightmost point's label, cut at the frame


def test_label_points_puts_each_label_where_it_is_free_and_inside_the_panel():
    from xlt.figures import label_points

    fig = Figure(figsize=(3, 3), layout="constrained")
    ax = fig.subplots()
    points = [(0, 0, "de"), (0.01, 0.01, "en"), (1, 1, "hi"), (0.02, 0.0, "zh")]
    ax.scatter([p[0] for p in points], [p[1] for p in points])
    ax.margins(0.15)  # as the figures leave: room for the outermost labels
    labels = label_points([(ax, points)])
    assert [a.get_text() for a in labels] == ["de", "en", "hi", "zh"]
    assert _problems(fig) == []


def test_a_colorbars_ticks_over_the_next_panel_are_named():
    fig = Figure(figsize=(4, 2))  # no layout engine: nothing makes room for the wide tick labels
    left, right = fig.subplots(1, 2)
    fig.colorbar(left.imshow(np.arange(4).reshape(2, 2) * 1234.5678), ax=left, format="%.8f")
    right.set_ylabel("layer")
    assert "texts '0.2' and '1000.00000000' overlap" in _problems(fig)  # the next panel's tick label


def test_a_contour_label_on_a_marker_is_named_and_drop_crowded_labels_removes_it():
    from xlt.figures import drop_crowded_labels

    fig = Figure(figsize=(3, 3), layout="constrained")
    ax = fig.subplots()
    ax.set_xlim(-1, 1), ax.set_ylim(-1, 1)
    label = ax.text(0, 0, "0.97", ha="center", va="center", fontsize=6)  # where a clabel put it
    ax.plot([0], [0], marker="o", ms=5)
    assert "text '0.97' covers a marker" in _problems(fig)
    assert drop_crowded_labels([(ax, [label])]) == [] and _problems(fig) == []


def test_a_band_below_zero_on_a_nonnegative_axis_is_named():
    from xlt.figures import nonnegative

    fig = Figure(figsize=(3, 3), layout="constrained")
    ax = fig.subplots()
    ax.plot([0, 1], [0.02, 0.03])
    band = ax.fill_between([0, 1], [-0.01, 0.0], [0.05, 0.06])
    assert _problems(fig) == []  # unmarked: a normalised score may dip below 0
    nonnegative(ax).set_title("variance")
    assert any("'variance'" in p and "below 0" in p for p in _problems(fig))
    band.remove()
    ax.fill_between([0, 1], [0.0, 0.0], [0.05, 0.06])
    assert _problems(fig) == []


def test_a_title_touching_both_edges_is_named_and_fit_suptitle_wraps_it():
    from xlt.figures import fit_suptitle

    title = "Figure 2: 1D interpolation (normalised by the bilingual model; mean over tasks and pairs, 95% CI)"
    fig = Figure(figsize=(8.4, 3.4), layout="constrained")
    fig.subplots(1, 2)
    t = fig.suptitle(title, fontsize=10)
    size = 10 * (fig.bbox.width - 8) / t.get_window_extent(xlt.figures._renderer(fig)).width
    t.set_fontsize(size)  # the canvas's width, 4 pixels to spare on each side
    assert any("touches the canvas's edge" in p and "Figure 2" in p for p in _problems(fig))
    t.remove()
    fitted = fit_suptitle(fig, title, fontsize=size)
    assert "\n" in fitted.get_text() and fitted.get_text().replace("\n", " ") == title
    assert _problems(fig) == []


def _spy(monkeypatch) -> dict:
    """The figure each save_figure call gets, by its stem's name."""
    seen = {}
    real = xlt.figures.save_figure

    def spy(fig, stem, table):
        seen[Path(stem).name] = fig
        return real(fig, stem, table)

    monkeypatch.setattr(xlt.figures, "save_figure", spy)
    return seen


def test_underspec_figure5s_variance_band_is_clipped_at_zero(tmp_path):
    from xlt.papers.underspec.aggregate import aggregate, plot_1d

    # two settings whose normalised variances differ a lot: the t interval of their mean (n = 2) reaches below 0
    rows = [{"setting": s, "direction": "src", "alpha": a, "eval_lang": "source", "norm_var": v * (1 + a)}
            for s, v in (("EN-DE POS", 0.0001), ("EN-RU POS", 0.02)) for a in (0.0, 0.5, 1.0)]
    data = pd.DataFrame(rows)
    assert (aggregate(data, ["direction", "eval_lang", "alpha"], value="norm_var")["ci_low"] < 0).all()
    made = plot_1d(data, tmp_path / "fig5", value="norm_var", hue="eval_lang", nonnegative_value=True)
    plotted = pd.read_csv(made["csv"])
    assert plotted["ci_low"].eq(0).all() and (plotted["ci_high"] > plotted["mean"]).all()
    with pytest.raises(XltError, match="below 0"):  # the same band unclipped on the figure's axes fails the check
        ax = Figure().subplots()
        xlt.figures.nonnegative(ax).fill_between([0, 1], [-0.01, -0.01], [0.02, 0.03])
        xlt.figures.save_figure(ax.figure, tmp_path / "bad", pd.DataFrame())


def test_crossmulti_figure1_ticks_every_layer_and_head_by_its_number(tmp_path, monkeypatch):
    import itertools

    from xlt.papers.crossmulti.figures import figure1

    seen = _spy(monkeypatch)
    upd = pd.DataFrame([{"task": t, "setting": s, "seed": seed, "layer": layer, "head": head,
                         "update": 1e-5 * (1 + (layer * 7 + head * 3 + seed) % 5) * (2 if s == "multi" else 1)}
                        for t, s, seed in itertools.product(("pos", "ner"), ("cross", "multi"), (1, 2))
                        for layer, head in itertools.product(range(4), range(4))])
    figure1({"tasks": ["pos", "ner"]}, upd, str(tmp_path))  # STRICT: no overlap, nothing at an edge
    maps = [ax for ax in seen["fig1"].axes if ax.get_ylabel() == "layer"]
    assert len(maps) == 6
    for ax in maps:
        assert [t.get_text() for t in ax.get_yticklabels()] == ["0", "1", "2", "3"]
        assert list(ax.get_yticks()) == [0, 1, 2, 3] and list(ax.get_xticks()) == [0, 1, 2, 3]
