"""The AER table and adjust's L2 figures: files, the numbers behind them, missing backends."""

import pandas as pd
import pytest

from xlt.align.report import aer_table
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


def test_adjust_figures_have_a_row_per_model_and_write_png_pdf_and_the_counts(tmp_path):
    from xlt.papers.adjust.figures import draw

    spec = {"targets": ["es", "hi"], "tasks": ["xnli", "ner"], "fig1_pair": "hi", "fig1_task": "xnli", "bins": 4}
    files = []
    for xx, shift in (("es", 0.0), ("hi", 0.5)):
        files.append(tmp_path / f"results/align/en-{xx}/systran_align/l2/tiny.csv")
        for row in ("adjusted", "xnli.finetuned", "xnli.adjusted_finetuned", "xnli.adjusted_continual",
                    "ner.finetuned", "ner.adjusted_finetuned", "ner.adjusted_continual"):
            files.append(tmp_path / f"results/adjust/l2/en-{xx}/{row}.seed1.csv")
    for k, f in enumerate(files):
        f.parent.mkdir(parents=True, exist_ok=True)
        _distances(f, k / 10)
    for fig in ("fig1", "fig2"):
        draw(spec, [str(f) for f in files], str(tmp_path / "fig"), fig)
        for ext in ("png", "pdf", "csv"):
            assert (tmp_path / "fig" / f"{fig}.{ext}").stat().st_size > 0
    fig1, fig2 = pd.read_csv(tmp_path / "fig/fig1.csv"), pd.read_csv(tmp_path / "fig/fig2.csv")
    assert set(fig1.pair) == {"hi"} and set(fig2.pair) == {"es", "hi"}
    assert list(dict.fromkeys(fig1.model)) == ["original", "adjusted", "XNLI fine-tuned", "XNLI adjusted + fine-tuned",
                                               "XNLI adjusted + continual"]
    assert fig2.model.nunique() == 8 and "NER adjusted + continual" in set(fig2.model)
    assert (fig2.groupby(["model", "pair", "kind"])["count"].sum() == 3).all()  # every distance in a bin
    original = fig2[(fig2.pair == "es") & (fig2.kind == "related") & (fig2.model == "original")]
    assert original["mean"].iloc[0] == pytest.approx(1.5)


def test_a_distances_file_outside_the_figures_grammar_is_named(tmp_path):
    from xlt.papers.adjust.figures import draw

    _distances(tmp_path / "elsewhere.csv", 0.0)
    with pytest.raises(XltError, match="elsewhere.csv: not a distances file of adjust's figures"):
        draw({"targets": ["es"], "tasks": ["xnli"], "fig1_pair": "es", "fig1_task": "xnli", "bins": 4},
             [str(tmp_path / "elsewhere.csv")], str(tmp_path / "fig"), "fig2")
