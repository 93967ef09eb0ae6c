"""The AER table and the L2 figures: files, the numbers behind them, missing backends."""

import pandas as pd
import pytest

from xlt.align.report import aer_table, l2_figures
from xlt.errors import XltError
from xlt.io import write_json

STAGES = {"forward": {"precision": 0.9, "recall": 0.8, "aer": 0.15, "links": 90, "gold_links": 100},
          "reverse": {"precision": 0.8, "recall": 0.8, "aer": 0.2, "links": 100, "gold_links": 100},
          "one_to_one": {"precision": 1.0, "recall": 0.7, "aer": 0.1765, "links": 70, "gold_links": 100}}  # fmt: skip


def test_aer_table_has_a_row_per_stage_and_names_backends_not_installed(tmp_path):
    write_json(tmp_path / "a.json", {"pair": "es", "backend": {"name": "eflomal", "version": "2.0.0"}, "stages": STAGES})
    # write_json sorts keys: one_to_one < reverse; the table puts stages in pipeline order
    table = aer_table([tmp_path / "a.json"], ["fast_align", "eflomal"], "eflomal", tmp_path / "aer")
    assert list(table.stage) == ["forward", "reverse", "one_to_one", "-"]
    assert table.loc[3, "backend"] == "fast_align" and table.loc[3, "status"] == "not installed here"
    csv = pd.read_csv(tmp_path / "aer.csv")
    assert csv.loc[2, "aer"] == pytest.approx(0.1765)
    md = (tmp_path / "aer.md").read_text()
    assert "| es " in md and "17.6" in md and "Default backend: `eflomal`" in md


def _distances(path, shift):
    pd.DataFrame({"kind": ["related"] * 3 + ["unrelated"] * 3, "distance": [1.0, 1.5, 2.0, 3.0 + shift, 3.5, 4.0],
                  "en_word": list("abcabc"), "xx_word": list("xyzuvw")}).to_csv(path, index=False)  # fmt: skip


def test_l2_figures_write_png_pdf_and_the_counts_plotted(tmp_path):
    _distances(tmp_path / "es.csv", 0.0)
    _distances(tmp_path / "hi.csv", 0.5)
    l2_figures({"es": tmp_path / "es.csv", "hi": tmp_path / "hi.csv"}, "original", "hi", 4, tmp_path / "fig")
    for fig in ("fig1", "fig2"):
        for ext in ("png", "pdf", "csv"):
            assert (tmp_path / "fig" / f"{fig}.{ext}").stat().st_size > 0
    fig1, fig2 = pd.read_csv(tmp_path / "fig/fig1.csv"), pd.read_csv(tmp_path / "fig/fig2.csv")
    assert set(fig1.pair) == {"hi"} and set(fig2.pair) == {"es", "hi"}
    assert (fig2.groupby(["pair", "kind"])["count"].sum() == 3).all()  # every distance in a bin
    assert fig2[(fig2.pair == "es") & (fig2.kind == "related")]["mean"].iloc[0] == pytest.approx(1.5)


def test_fig1_pair_must_be_aligned(tmp_path):
    _distances(tmp_path / "es.csv", 0.0)
    with pytest.raises(XltError, match="align.l2.fig1_pair: 'hi' is not an aligned pair; allowed: es"):
        l2_figures({"es": tmp_path / "es.csv"}, "original", "hi", 4, tmp_path / "fig")
