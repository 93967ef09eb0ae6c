"""Writing a figure: <stem>.png, <stem>.pdf and <stem>.csv (the numbers plotted), each
atomically and without timestamps, so that a figure redrawn from the same numbers is the
same file. Used by every paper's figures and by the alignment stage's.

Before writing, `layout_problems` looks for what a reader would see as broken: text drawn
outside the canvas (a title cut at an edge), a label of a point running past its panel's frame,
two texts drawn over each other (two point labels, a colorbar's ticks over the next panel's
axis label), a text over a marker (a contour label on θ_bi's dot), a panel letter, "(a)",
given to two panels, and a band or line below 0 on an axis marked `nonnegative` (a variance's
confidence band). Each is a `warning:` line on stderr, and an error where `STRICT` is set (the
tests' figure checks, tests/test_figure_layout.py).

Two helpers keep labels apart: `label_points` places each point's label at the first of a
few offsets that is free and inside the panel; `drop_crowded_labels` removes contour labels
that would cover a marker or another text (the contour lines stay; the colorbar reads them).
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Annotation, Text
from matplotlib.transforms import Bbox

from xlt.errors import XltError
from xlt.io import atomic_path, write_text
import textwrap

STRICT = False  # True: a layout problem stops save_figure (tests)
PANEL_LETTER = re.compile(r"^\(([a-z])\)\s")
TOLERANCE_PX = 1.0  # text may touch the edge (or another text) by antialiasing
MARGIN_PX = 2.0  # the least room between a text and the canvas's edge
FIGURE_TEXT_MARGIN = 0.02  # ... and for a figure's own text (a suptitle), this share of its width on each side
LABEL_GAP_PX = 3.0  # a contour label kept this far from a marker or another text (a pile reads as one blot)
NONNEGATIVE = "_xlt_nonnegative"  # an Axes attribute: its y values cannot be below 0 (a variance)


def nonnegative(ax: Axes) -> Axes:
    """Mark `ax`'s y quantity as never negative: a band or line drawn below 0 is a layout problem."""
    setattr(ax, NONNEGATIVE, True)
    return ax


def _undrawn_tick_labels(fig: Figure) -> set[int]:
    """Tick labels matplotlib keeps but does not draw: those of ticks beyond the view limits."""
    out = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            slack = 1e-9 * max(1.0, abs(hi - lo))
            for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
                if not lo - slack <= tick.get_loc() <= hi + slack:
                    out |= {id(tick.label1), id(tick.label2)}
    return out


def _drawn_texts(fig: Figure) -> list[Text]:
    """The text artists the canvas draws: visible, non-empty, of a visible axes (if any)."""
    undrawn = _undrawn_tick_labels(fig)
    return [t for t in fig.findobj(Text)
            if t.get_visible() and t.get_text().strip() and id(t) not in undrawn
            and (t.axes is None or t.axes.get_visible())]


def _renderer(fig: Figure, placed: bool = True):
    """The canvas's renderer; `placed`: once the layout engine has placed everything (a draw
    without pixels, the cost of a figure's layout), else for text sizes alone."""
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    if placed:
        fig.draw_without_rendering()
    return canvas.get_renderer()


def _outside(inner: Bbox, outer: Bbox) -> bool:
    return (inner.x0 < outer.x0 - TOLERANCE_PX or inner.x1 > outer.x1 + TOLERANCE_PX
            or inner.y0 < outer.y0 - TOLERANCE_PX or inner.y1 > outer.y1 + TOLERANCE_PX)


def _overlap(a: Bbox, b: Bbox) -> bool:
    """Two boxes share more than a touch (antialiasing) in both directions."""
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > TOLERANCE_PX) and (min(a.y1, b.y1) - max(a.y0, b.y0) > TOLERANCE_PX)


def _marker_boxes(ax: Axes) -> list[Bbox]:
    """The display boxes of the markers of `ax`'s plotted lines (ax.plot(..., marker=…))."""
    out = []
    for line in ax.lines:
        if not line.get_visible() or line.get_marker() in (None, "None", "none", "", " "):
            continue
        r = (line.get_markersize() + line.get_markeredgewidth()) / 2 * ax.figure.dpi / 72
        xy = line.get_transform().transform(np.column_stack([line.get_xdata(), line.get_ydata()]).astype(float))
        out += [Bbox([[x - r, y - r], [x + r, y + r]]) for x, y in xy if np.isfinite(x) and np.isfinite(y)]
    return out


def _in_panel(t: Text) -> bool:
    """A text placed in a panel's data (a point's label, a contour label), not an axis's own."""
    return t.axes is not None and t in t.axes.texts


def _below_zero(ax: Axes) -> float | None:
    """The lowest y drawn below 0 by `ax`'s lines and bands (fill_between), or None."""
    ys = [np.asarray(line.get_ydata(), dtype=float) for line in ax.lines  # in data units (not axvline's)
          if line.get_visible() and line.get_transform().contains_branch_seperately(ax.transData)[1]]
    ys += [v[:, 1] for c in ax.collections if isinstance(c, PolyCollection) and c.get_visible() for v in
           (p.vertices for p in c.get_paths())]
    low = min((float(np.nanmin(y)) for y in ys if y.size and np.isfinite(y).any()), default=0.0)
    return low if low < 0 else None


def layout_problems(fig: Figure) -> list[str]:
    """What a reader would see as broken (the module's docstring): one line each."""
    renderer = _renderer(fig)
    texts = _drawn_texts(fig)
    ext = {id(t): t.get_window_extent(renderer) for t in texts}
    problems = [f"text {t.get_text()!r} runs outside the canvas" for t in texts if _outside(ext[id(t)], fig.bbox)]
    own = {id(t) for t in (fig._suptitle, fig._supxlabel, *fig.texts) if t is not None}  # a suptitle, a note
    room = MARGIN_PX + TOLERANCE_PX
    inner = {False: fig.bbox.padded(-room),
             True: Bbox.from_extents(fig.bbox.x0 + max(room, FIGURE_TEXT_MARGIN * fig.bbox.width), fig.bbox.y0 + room,
                                     fig.bbox.x1 - max(room, FIGURE_TEXT_MARGIN * fig.bbox.width), fig.bbox.y1 - room)}
    problems += [f"text {t.get_text()!r} touches the canvas's edge" for t in texts
                 if _outside(ext[id(t)], inner[id(t) in own]) and not _outside(ext[id(t)], fig.bbox)]
    problems += [f"text {t.get_text()!r} runs past its panel's frame" for t in texts
                 if _in_panel(t) and not _outside(ext[id(t)], fig.bbox) and _outside(ext[id(t)], t.axes.bbox)]
    problems += [f"texts {a.get_text()!r} and {b.get_text()!r} overlap" for a, b in combinations(texts, 2)
                 if _overlap(ext[id(a)], ext[id(b)])]
    for ax in fig.axes:
        markers = _marker_boxes(ax) if ax.get_visible() else []
        problems += [f"text {t.get_text()!r} covers a marker" for t in texts
                     if t.axes is ax and _in_panel(t) and any(_overlap(ext[id(t)], m) for m in markers)]
        if ax.get_visible() and getattr(ax, NONNEGATIVE, False) and (low := _below_zero(ax)) is not None:
            problems.append(f"panel {ax.get_title()!r}: drawn down to {low:.3g}, below 0, for a quantity that cannot be negative")
    titles = [ax.get_title(loc) for ax in fig.axes if ax.get_visible() for loc in ("left", "center", "right")]
    letters = Counter(m.group(1) for title in titles if (m := PANEL_LETTER.match(title)))
    problems += [f"panel letter ({k}) labels {n} panels" for k, n in sorted(letters.items()) if n > 1]
    return problems


def fit_suptitle(fig: Figure, title: str, **kw) -> Text:
    """`fig.suptitle(title)`, wrapped onto more lines until it fits the canvas's width with a
    margin (a long title otherwise runs to both edges or past them)."""

    t = fig.suptitle(title, **kw)
    width = fig.bbox.width * 0.94
    renderer = _renderer(fig, placed=False)  # a text's size does not depend on the layout
    for _ in range(4):
        box = t.get_window_extent(renderer)
        if box.width <= width:
            break
        longest = max(map(len, t.get_text().splitlines()))
        t.set_text(textwrap.fill(title, max(20, int(longest * width / box.width))))
    return t


# Where a point's label may go, tried in order: (dx, dy) in points, horizontal and vertical alignment.
LABEL_SPOTS = ((4, 4, "left", "bottom"), (4, -4, "left", "top"), (-4, 4, "right", "bottom"), (-4, -4, "right", "top"),
               (0, 7, "center", "bottom"), (0, -7, "center", "top"), (8, 0, "left", "center"), (-8, 0, "right", "center"))


def label_points(panels: list[tuple[Axes, list[tuple[float, float, str]]]], fontsize: float = 8, **kw) -> list[Annotation]:
    """Label each (x, y, text) of each (panel, points) beside its point at the first of
    `LABEL_SPOTS` where the label stays inside the panel and covers neither the legend nor a
    label placed before (the first spot if none is free: `layout_problems` then names it).
    Call once the panels' limits and the layout are final (one layout for all panels)."""
    if not panels:
        return []
    renderer = _renderer(panels[0][0].figure)
    return [a for ax, points in panels for a in _label_panel(ax, points, renderer, fontsize, **kw)]


def _label_panel(ax: Axes, points: list[tuple[float, float, str]], renderer, fontsize: float, **kw) -> list[Annotation]:
    legend = ax.get_legend()
    placed: list[Bbox] = [legend.get_window_extent(renderer)] if legend is not None else []
    out = []
    for x, y, text in points:
        for k, (dx, dy, ha, va) in enumerate(LABEL_SPOTS):
            a = ax.annotate(text, (x, y), textcoords="offset points", xytext=(dx, dy), ha=ha, va=va, fontsize=fontsize, **kw)
            box = a.get_window_extent(renderer)
            if not _outside(box, ax.bbox) and not any(_overlap(box, b) for b in placed):
                break
            a.remove()
        else:
            dx, dy, ha, va = LABEL_SPOTS[0]
            a = ax.annotate(text, (x, y), textcoords="offset points", xytext=(dx, dy), ha=ha, va=va, fontsize=fontsize, **kw)
            box = a.get_window_extent(renderer)
        placed.append(box)
        out.append(a)
    return out


def drop_crowded_labels(panels: list[tuple[Axes, list[Text]]]) -> list[Text]:
    """Remove each of the labels of each (panel, labels) (e.g. `ax.clabel`'s) that covers a
    marker, a text of the panel that is not one of them, or a label kept before it; return
    those kept. Call once the layout is final (one layout for all panels)."""
    if not panels:
        return []
    renderer = _renderer(panels[0][0].figure)
    return [t for ax, labels in panels for t in _drop_in_panel(ax, labels, renderer)]


def _drop_in_panel(ax: Axes, labels: list[Text], renderer) -> list[Text]:
    mine = {id(t) for t in labels}
    taken = _marker_boxes(ax) + [t.get_window_extent(renderer) for t in ax.texts if id(t) not in mine and t.get_visible()]
    kept = []
    for t in labels:
        box = t.get_window_extent(renderer)
        if any(_overlap(box.padded(LABEL_GAP_PX), b) for b in taken) or _outside(box, ax.bbox):
            t.remove()
        else:
            taken.append(box)
            kept.append(t)
    return kept


def save_figure(fig: Figure, out_stem: str | Path, table: pd.DataFrame) -> dict[str, Path]:
    """Write <stem>.png, <stem>.pdf and <stem>.csv, each atomically."""
    stem = Path(out_stem)
    if stem.suffix in (".png", ".pdf", ".csv"):
        stem = stem.with_suffix("")
    paths = {ext: stem.parent / f"{stem.name}.{ext}" for ext in ("png", "pdf", "csv")}
    for problem in layout_problems(fig):
        if STRICT:
            raise XltError(f"{paths['png']}: {problem}")
        print(f"warning: {paths['png']}: {problem}", file=sys.stderr)
    with atomic_path(paths["png"]) as tmp:
        fig.savefig(tmp, format="png", dpi=150, metadata={"Software": None})
    with atomic_path(paths["pdf"]) as tmp:
        fig.savefig(tmp, format="pdf", metadata={"CreationDate": None, "Producer": None})
    write_text(paths["csv"], table.to_csv(index=False, float_format="%.10g"))
    return paths
