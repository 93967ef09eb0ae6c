import json
import math

import pandas as pd

from xlt.workflow.paper_outputs import make_table
from xlt.tables import paper_vs_ours


def test_paper_vs_ours_mean_std_and_delta():
    ours = pd.DataFrame({"task": ["pos"] * 3, "lang": ["en"] * 3, "seed": [1, 2, 3], "value": [90.0, 92.0, 94.0]})
    pub = pd.DataFrame({"task": ["pos", "pos"], "lang": ["en", "de"], "value": [93.0, 70.0]})
    t = paper_vs_ours(ours, pub, ["task", "lang"]).set_index("lang")
    assert t.loc["en", "ours_mean"] == 92.0
    assert t.loc["en", "ours_std"] == 2.0  # sample std of 90, 92, 94
    assert t.loc["en", "delta"] == -1.0
    assert t.loc["en", "n_seeds"] == 3
    assert math.isnan(t.loc["de", "ours_mean"])  # a published cell we did not run stays visible


def test_crossmulti_table2_renders_every_cell(tmp_path):
    spec = {"source": "en", "metric": {"pos": "f1_macro", "ner": "f1_macro", "pawsx": "f1_macro", "marc": "f1_macro"}, "tasks": ["pos", "ner", "pawsx", "marc"], "encoder": "tiny"}
    inputs = []
    for task in spec["tasks"]:
        for recipe in ("en.crossmulti", "de+en+es+fr.crossmulti"):
            for seed in (1, 2):
                path = tmp_path / f"{task}-{recipe}-{seed}.json"
                metrics = {lang: {"f1_macro": 50.0 + seed + (10 if "+" in recipe else 0), "n": 10} for lang in ("en", "de", "es", "fr")}
                path.write_text(json.dumps({"task": task, "seed": seed, "model": f"results/models/tiny/pretrained/{task}/{recipe}/seed{seed}", "metrics": metrics}))
                inputs.append(str(path))
    table = make_table("crossmulti", "table2", spec, inputs, str(tmp_path / "table2"))
    assert len(table) == 32 and table["ours_mean"].notna().all() and table["paper"].notna().all()
    row = table[(table.task == "pos") & (table.setting == "cross") & (table.lang == "en")].iloc[0]
    assert row["paper"] == 93.85 and row["ours_mean"] == 51.5 and abs(row["delta"] - (51.5 - 93.85)) < 1e-9
    md = (tmp_path / "table2.md").read_text()
    assert "93.85 · 51.50 ± 0.71 · -42.35" in md
    assert (tmp_path / "table2.tex").read_text().count("\\\\") == 9  # header + 8 rows
    assert len(pd.read_csv(tmp_path / "table2.csv")) == 32
    # the report's form: the same Markdown rendered, a heading and an HTML table cell by cell
    html = (tmp_path / "table2.html").read_text()
    assert html.startswith("<h2>") and html.count("<table>") == 1 and "<td>93.85 · 51.50 ± 0.71 · -42.35</td>" in html
    assert "|" not in html and "##" not in html


def test_a_tables_html_shows_markup_in_its_notes_as_text():
    from xlt.tables import markdown_html

    html = markdown_html("## T\n\n| | en |\n|---|---|\n| a | 1 |\n\n- note with <script>x</script> and `code`\n")
    assert "<td>a</td>" in html and "&lt;script&gt;" in html and "<script>" not in html and "<code>code</code>" in html


def test_one_seed_prints_no_spread():
    """A cell with one seed has no sample std: it says so instead of printing ± 0.00."""
    import math

    from xlt.tables import cell_text

    row = {"paper": 90.0, "ours_mean": 85.5, "ours_std": float("nan"), "delta": -4.5, "n_collapsed": 0}
    assert cell_text(row) == ("90.00", "85.50 (1 seed)", "-4.50")
    assert math.isnan(row["ours_std"])


def test_every_published_cell_has_ours_or_a_reason():
    """make_table's check (xlt.tables.check_accounted): a dropped published cell or one without
    ours and without a reason fails; `account` gives the reason, which the table's notes print."""
    import pytest

    from xlt.errors import XltError
    from xlt.tables import account, check_accounted, render_grid

    ours = pd.DataFrame({"task": ["pos"], "lang": ["en"], "seed": [1], "value": [90.0]})
    pub = pd.DataFrame({"task": ["pos", "pos", "ner"], "lang": ["en", "de", "en"], "value": [93.0, 70.0, 80.0]})
    with pytest.raises(XltError, match="shows 2 of the 3 published cells"):
        check_accounted(paper_vs_ours(ours, pub[pub["task"] == "pos"], ["task", "lang"]), 3, "toy")
    table = paper_vs_ours(ours, pub, ["task", "lang"])
    with pytest.raises(XltError, match=r"2 published cell\(s\) without ours and without a reason"):
        check_accounted(table, 3, "toy")
    table = account(table, lambda r: "NER: not run (tasks: pos)." if r["task"] == "ner" else None)
    with pytest.raises(XltError, match=r"1 published cell\(s\).*'lang': 'de'"):
        check_accounted(table, 3, "toy")
    table = account(table, lambda r: "DE: not in the language set.")
    check_accounted(table, 3, "toy")
    assert list(table["why"]) == ["", "DE: not in the language set.", "NER: not run (tasks: pos)."]
    md, _ = render_grid(table, ["task"], "lang", "toy", ["A note."])
    assert md.endswith("- A note.\n- DE: not in the language set.\n- NER: not run (tasks: pos).\n")
