"""Every figure is readable: its text inside the canvas, each panel letter used once, a legend
entry (colour and marker) per series. Every test draws with `xlt.figures.STRICT` on
(tests/conftest.py), so each figure test of a paper (tests/<paper>/test_figures.py, ...) checks
its figures too; these add the checker itself and the cases that once broke."""

from __future__ import annotations

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
    from xlt.papers.adjust import draw

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
