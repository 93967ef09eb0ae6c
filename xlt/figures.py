"""Writing a figure: <stem>.png, <stem>.pdf and <stem>.csv (the numbers plotted), each
atomically and without timestamps, so that a figure redrawn from the same numbers is the
same file. Used by every paper's figures and by the alignment stage's."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from xlt.io import atomic_path, write_text


def save_figure(fig: Figure, out_stem: str | Path, table: pd.DataFrame) -> dict[str, Path]:
    """Write <stem>.png, <stem>.pdf and <stem>.csv, each atomically."""
    stem = Path(out_stem)
    if stem.suffix in (".png", ".pdf", ".csv"):
        stem = stem.with_suffix("")
    FigureCanvasAgg(fig)
    paths = {ext: stem.parent / f"{stem.name}.{ext}" for ext in ("png", "pdf", "csv")}
    with atomic_path(paths["png"]) as tmp:
        fig.savefig(tmp, format="png", dpi=150, metadata={"Software": None})
    with atomic_path(paths["pdf"]) as tmp:
        fig.savefig(tmp, format="pdf", metadata={"CreationDate": None, "Producer": None})
    write_text(paths["csv"], table.to_csv(index=False, float_format="%.10g"))
    return paths
