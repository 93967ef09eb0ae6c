"""What a figure promises, it draws (issue 53, item 7): each 95% CI band its caption names is on
the Axes (one band per line whose CSV rows have one; a line without says so in its legend),
every colorbar has a label, and xmixup's one-panel legends sit beside the points, not on them.

Drawn from small hand-made inputs (no workflow run), with matplotlib's Agg canvas; each figure
object is taken from `save_figure` as it is written, and its CSV read back.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection

import xlt.figures
from xlt.workflow import paper_targets as P
from xlt.papers.underspec import aggregate as A
from xlt.papers.underspec.figures import make_figures
from tests.underspec import test_figures as UF

# The figures whose caption promises a band, and those drawn with a colour scale: a caption
# that starts promising one must join these lists (and so this test).
BANDED = {("underspec", f) for f in ("fig2", "fig5", "fig6", "fig7", "fig8", "fig9")}
COLOURED = {("underspec", "fig3"), ("underspec", "fig10"), ("crossmulti", "fig1"),
            *(("crossmulti", f"figa{i}") for i in range(1, 5))}


@pytest.fixture
def drawn(monkeypatch):
    """figure stem -> (the matplotlib Figure, its CSV) of every figure saved while the test runs."""
    out: dict[str, tuple] = {}
    save = xlt.figures.save_figure

    def keep(fig, stem, table):
        paths = save(fig, stem, table)
        out[str(stem).rsplit("/", 1)[-1]] = (fig, pd.read_csv(paths["csv"]))
        return paths

    monkeypatch.setattr(xlt.figures, "save_figure", keep)
    monkeypatch.setattr(A, "save_figure", keep)
    return out


def test_the_figures_that_promise_a_band_are_the_ones_checked_here():
    promised = {(slug, f.id) for slug, paper in P.PAPERS.items() for f in paper.figures
                if "95% CI" in f.caption or "95% band" in f.caption}
    assert promised == BANDED


def _underspec_grids(root, task: str, seeds, monkeypatch) -> list[str]:
    monkeypatch.setitem(UF.SETTING, "task", task)
    return [UF.write_grid(root, seed, set(), kind) for seed in seeds for kind in ("1d", "2d")]


def _bands_match_the_csv(fig, csv: pd.DataFrame) -> int:
    """Each Axes: one filled band per line that has one; a line without one says so. The bands drawn."""
    bands = 0
    for ax in fig.axes:
        lines = [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]
        filled = [c for c in ax.collections if isinstance(c, PolyCollection)]
        without = [ln for ln in lines if ln.get_label().endswith(A.NO_BAND)]
        assert len(filled) == len(lines) - len(without), ax.get_title()
        bands += len(filled)
    lines_of_csv = csv.groupby([c for c in ("panel", "direction", "encoder", "dev") if c in csv.columns])["band"]
    assert bands == int(lines_of_csv.agg(lambda b: (b != "none").any()).sum())
    return bands


@pytest.mark.parametrize("fig,task", [("fig2", "parsing"), ("fig5", "parsing"), *((f, t) for f, t in
                                      {"fig6": "ner", "fig7": "parsing", "fig8": "pos", "fig9": "xnli"}.items())])
def test_each_promised_band_is_drawn_where_its_csv_has_one(tmp_path, monkeypatch, drawn, fig, task):
    """One pair and two seeds, as the tiny preset has: every line has its band (over the seeds
    for a task figure and Figure 2, over the settings for Figure 5's variance)."""
    root = tmp_path / "grids"
    root.mkdir()
    make_figures(UF.SPEC, _underspec_grids(root, task, (1, 2), monkeypatch), tmp_path / "out", [fig])
    figure, csv = drawn[fig]
    assert "band" in csv.columns
    bands = _bands_match_the_csv(figure, csv)
    if fig != "fig5":  # a variance of one setting has no interval over settings (its legend says so)
        assert set(csv["band"]) == {"seeds"} and bands == 4  # source/target dev × the two paths


def test_a_line_without_a_band_says_so_in_its_legend(tmp_path, monkeypatch, drawn):
    """One seed and one pair: no interval exists; the legend says so instead of a silent line."""
    root = tmp_path / "grids"
    root.mkdir()
    make_figures(UF.SPEC, _underspec_grids(root, "parsing", (1,), monkeypatch), tmp_path / "out", ["fig7"])
    figure, csv = drawn["fig7"]
    assert set(csv["band"]) == {"none"}
    labels = [t.get_text() for ax in figure.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert labels and all(t.endswith(A.NO_BAND) for t in labels)
    assert not any(isinstance(c, PolyCollection) for ax in figure.axes for c in ax.collections)


def _colorbar_labels(fig) -> list[str]:
    bars = [ax._colorbar for ax in fig.axes if getattr(ax, "_colorbar", None) is not None]
    assert bars, "no colorbar drawn"
    return [cb.ax.get_ylabel() or cb.ax.get_xlabel() for cb in bars]


def test_every_colorbar_of_the_2d_figures_has_a_label(tmp_path, monkeypatch, drawn):
    root = tmp_path / "grids"
    root.mkdir()
    make_figures(UF.SPEC, _underspec_grids(root, "parsing", (1, 2), monkeypatch), tmp_path / "out", ["fig3"])
    assert all(_colorbar_labels(drawn["fig3"][0]))


def test_every_colorbar_of_crossmultis_head_maps_has_a_label(tmp_path, drawn):
    """Two tasks' maps, labelled colorbars and all, fit the canvas (tests set xlt.figures.STRICT)."""
    from tests.crossmulti.test_head_probing import SPEC, probe_frame
    from xlt.papers.crossmulti.figures import FIGURE_A, figure1, figure_a

    rng = np.random.default_rng(0)
    updates = pd.DataFrame([{"task": "pos.x", "setting": s, "seed": seed, "layer": h // 2, "head": h % 2,
                             "update": rng.uniform()} for s in ("cross", "multi") for seed in (1, 2) for h in range(4)])
    figure1({"tasks": ["pos"]}, updates, str(tmp_path))
    figure_a({**SPEC, "metric": {"pos": "accuracy", "ner": "f1"}}, probe_frame(rng), str(tmp_path), "figa1", FIGURE_A["figa1"])
    for stem in ("fig1", "figa1"):
        assert all(_colorbar_labels(drawn[stem][0])), stem


def test_xmixups_figure3_legend_covers_no_point(made, tmp_path, drawn):
    from tests.xmixup.test_figures import _draw

    cfg, _ = made
    _draw(cfg, "fig3", tmp_path / "out")
    fig, _ = drawn["fig3"]
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    legend = ax.get_legend().get_window_extent(renderer)
    points = np.concatenate([c.get_offset_transform().transform(c.get_offsets()) for c in ax.collections])
    inside = (points[:, 0] >= legend.x0) & (points[:, 0] <= legend.x1) & (points[:, 1] >= legend.y0) & (points[:, 1] <= legend.y1)
    assert not inside.any()
    assert not xlt.figures.layout_problems(fig)


from tests.xmixup.test_figures import made, tiny_cfg  # noqa: E402,F401  (fixtures of the xmixup figure test)
