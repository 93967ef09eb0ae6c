"""Writing a figure: <stem>.png, <stem>.pdf and <stem>.csv (the numbers plotted), each
atomically and without timestamps, so that a figure redrawn from the same numbers is the
same file. Used by every paper's figures and by the alignment stage's.

Before writing, `layout_problems` looks for text drawn outside the canvas (a title cut at
an edge) and for a panel letter, "(a)", given to two panels: each is a `warning:` line on
stderr, and an error where `STRICT` is set (the tests' figure checks, tests/test_figure_layout.py).
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from xlt.errors import XltError
from xlt.io import atomic_path, write_text

STRICT = False  # True: a layout problem stops save_figure (tests)
PANEL_LETTER = re.compile(r"^\(([a-z])\)\s")
TOLERANCE_PX = 1.0  # text may touch the edge by antialiasing


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


def layout_problems(fig: Figure) -> list[str]:
    """What a reader would see as broken: text outside the canvas, a panel letter used twice."""
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    fig.draw_without_rendering()  # the layout engine places everything; no pixels drawn
    renderer = canvas.get_renderer()
    box = fig.bbox
    problems = []
    for t in _drawn_texts(fig):
        ext = t.get_window_extent(renderer)
        if (ext.x0 < box.x0 - TOLERANCE_PX or ext.x1 > box.x1 + TOLERANCE_PX
                or ext.y0 < box.y0 - TOLERANCE_PX or ext.y1 > box.y1 + TOLERANCE_PX):
            problems.append(f"text {t.get_text()!r} runs outside the canvas")
    titles = [ax.get_title(loc) for ax in fig.axes if ax.get_visible() for loc in ("left", "center", "right")]
    letters = Counter(m.group(1) for title in titles if (m := PANEL_LETTER.match(title)))
    problems += [f"panel letter ({k}) labels {n} panels" for k, n in sorted(letters.items()) if n > 1]
    return problems


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
