"""Claims (xlt.claims): decided on constructed table CSVs — a clear gain holds, a clear loss is
contradicted, overlapping seeds are inconclusive with a seed count — the page regenerates
byte-identically, and every shipped claims file validates against its paper's tables."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from xlt import claims as C
from xlt.workflow import paper_targets as P
from xlt.errors import XltError
from xlt.tables import paper_vs_ours

REFLECTS = "a constructed table; encoder tiny"


def claim_file(**claim) -> C.ClaimsFile:
    base = {"id": "gain", "quote": "B beats A.", "section": "Abstract", "source": {"table": "table2"},
            "test": "difference", "a": {"model": "new"}, "b": {"model": "old"}, "match": ["lang"],
            "direction": "greater", "stated": "+1.5"}
    return C.parse_claims({"claims": [{**base, **claim}], "left_out": [{"finding": "F.", "why": "W."}]}, "test.yaml")


def table_csv(tmp_path, per_seed: dict, name="table2.csv", published=None):
    """A table CSV as xlt.tables.paper_vs_ours writes it: per_seed {(model, lang): {seed: value or (value, collapsed)}}."""
    rows = []
    for (model, lang), seeds in per_seed.items():
        for seed, v in seeds.items():
            value, collapsed = v if isinstance(v, tuple) else (v, False)
            rows.append({"model": model, "lang": lang, "seed": seed, "value": value, "collapsed": collapsed})
    pub = published if published is not None else pd.DataFrame(
        [{"model": m, "lang": lang, "value": 70.0 + (1.5 if m == "new" else 0)} for m, lang in per_seed])
    table = paper_vs_ours(pd.DataFrame(rows), pub, ["model", "lang"])
    path = tmp_path / "tables" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False, float_format="%.4f")
    return str(path)


def decide(tmp_path, spec: C.ClaimsFile, seeds: dict) -> pd.Series:
    path = table_csv(tmp_path, seeds)
    return C.evaluate("paper", spec.claims, {"tables/table2": path}, REFLECTS).iloc[0]


OLD = {1: 70.0, 2: 71.0, 3: 69.5}


def test_a_clear_gain_holds(tmp_path):
    row = decide(tmp_path, claim_file(), {("old", "de"): OLD, ("new", "de"): {s: v + 3.0 + 0.1 * s for s, v in OLD.items()},
                                          ("old", "fr"): OLD, ("new", "fr"): {s: v + 2.0 for s, v in OLD.items()}})
    assert row["verdict"] == "holds"
    assert row["ci_low"] > 0 and row["n_seeds"] == 3
    assert row["paper_value"] == "+1.50"  # the paper's column, the same cells
    assert "paired by seed" in row["detail"]


def test_a_clear_loss_is_contradicted(tmp_path):
    row = decide(tmp_path, claim_file(), {("old", "de"): OLD, ("new", "de"): {s: v - 4.0 + 0.2 * s for s, v in OLD.items()}})
    assert row["verdict"] == "contradicted"
    assert row["ci_high"] < 0


def test_overlapping_seeds_are_inconclusive_with_a_seed_count(tmp_path):
    new = {1: 71.0, 2: 70.0, 3: 71.5}  # differences +1, -1, +2: mean +0.67, sd 1.53
    row = decide(tmp_path, claim_file(), {("old", "de"): OLD, ("new", "de"): new})
    assert row["verdict"] == "inconclusive"
    assert row["ci_low"] < 0 < row["ci_high"]
    n = int(row["seeds_to_decide"].split()[0])
    d = [new[s] - OLD[s] for s in OLD]
    diff = C.Diff(sum(d) / 3, math.nan, math.nan, 3, True, tuple(d), pd.Series(d).std())
    # n is the first count whose interval half-width, at the observed sd, falls below the mean
    assert C._t(n - 1) * diff.sd / math.sqrt(n) < diff.value <= C._t(n - 2) * diff.sd / math.sqrt(n - 1)
    assert row["spread"].startswith("per-seed Δ -1.00 … +2.00")


def test_one_seed_is_inconclusive_and_says_two_are_needed(tmp_path):
    row = decide(tmp_path, claim_file(), {("old", "de"): {1: 70.0}, ("new", "de"): {1: 75.0}})
    assert row["verdict"] == "inconclusive" and row["seeds_to_decide"].startswith("at least 2 seeds")


def test_collapsed_seeds_left_out_change_the_verdict(tmp_path):
    # seed 3 collapsed (new model near chance): with it the interval spans 0, without it a clear gain
    seeds = {("old", "de"): OLD, ("new", "de"): {1: 73.0, 2: 74.1, 3: (40.0, True)}}
    row = decide(tmp_path, claim_file(), seeds)
    assert row["verdict"] == "inconclusive"
    assert row["n_collapsed"] == 1
    assert row["verdict_without_collapsed"] == "holds"


def test_a_claim_not_run_says_so(tmp_path):
    spec = claim_file(a={"model": "new"}, b={"model": "old"}, where={"lang": "ja"})
    row = decide(tmp_path, spec, {("old", "de"): OLD, ("new", "de"): OLD})
    assert row["verdict"] == "not run"


def test_count_with_the_papers_test(tmp_path):
    spec = claim_file(test="count", per=["lang"], at_least=2, significance="pvalue")
    path = table_csv(tmp_path, {("old", "de"): OLD, ("new", "de"): {1: 72.0, 2: 73.0, 3: 71.0},
                                ("old", "fr"): OLD, ("new", "fr"): {1: 72.0, 2: 73.0, 3: 71.0}})
    table = pd.read_csv(path)
    table["pvalue"] = [math.nan, 0.01, math.nan, 0.20]  # the paper's test on the compared (new) rows
    table.to_csv(path, index=False)
    row = C.evaluate("paper", spec.claims, {"tables/table2": path}, REFLECTS).iloc[0]
    assert row["verdict"] == "inconclusive" and row["ours"].startswith("1 of 2")
    table["pvalue"] = [math.nan, 0.01, math.nan, 0.03]
    table.to_csv(path, index=False)
    assert C.evaluate("paper", spec.claims, {"tables/table2": path}, REFLECTS).iloc[0]["verdict"] == "holds"


def test_equivalence_and_correlation(tmp_path):
    flat = claim_file(test="equivalence", margin=2.0, direction=None)
    row = decide(tmp_path, flat, {("old", "de"): OLD, ("new", "de"): {1: 70.2, 2: 71.1, 3: 69.4}})
    assert row["verdict"] == "holds"
    fig = tmp_path / "figures" / "fig2.csv"
    fig.parent.mkdir()
    pd.DataFrame({"alpha": [0, 0.25, 0.5, 0.75, 1], "mean": [0.1, 0.3, 0.5, 0.72, 0.9]}).to_csv(fig, index=False)
    spec = C.parse_claims({"claims": [{"id": "lin", "quote": "q", "section": "s", "source": {"figure": "fig2"},
                                       "test": "correlation", "x": "alpha", "direction": "negative", "stated": "s",
                                       "columns": {"mean": "mean", "std": None, "n": None, "per_seed": None}}]}, "t")
    assert C.evaluate("p", spec.claims, {"figures/fig2": str(fig)}, REFLECTS).iloc[0]["verdict"] == "contradicted"


def test_the_page_regenerates_byte_identically(tmp_path):
    path = table_csv(tmp_path, {("old", "de"): OLD, ("new", "de"): {1: 72.0, 2: 70.0, 3: (71.5, True)}})
    spec = claim_file()
    pages = []
    for run in ("a", "b"):
        csv = tmp_path / f"{run}.csv"
        C.write_csv(C.evaluate("paper", spec.claims, {"tables/table2": path}, REFLECTS), str(csv))
        pages.append((csv.read_bytes(), C.render(C.read_csv(str(csv)), {"paper": "T"}, {"paper": spec.left_out})))
    assert pages[0] == pages[1]
    assert "| **gain** (Abstract)" in pages[0][1] and "Findings left out" in pages[0][1]


@pytest.mark.parametrize("bad, message", [
    ({"test": "mean"}, "test 'mean'; allowed"),
    ({"direction": "up"}, "direction 'up'"),
    ({"colour": 1}, "unknown key(s) ['colour']"),
    ({"test": "count", "per": ["lang"]}, "exactly one of `at_least`, `at_most`"),
])
def test_a_bad_claim_fails_naming_it(bad, message):
    with pytest.raises(XltError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                       .replace("]", r"\]")):
        claim_file(**bad)


def test_a_claim_naming_a_row_the_table_lacks_fails():
    spec = claim_file(a={"model": "adjustd"})
    published = pd.DataFrame({"model": ["original", "adjusted"], "lang": ["es", "es"], "value": [1, 2]})
    with pytest.raises(XltError, match=r"a.model value\(s\) \['adjustd'\] not in table2"):
        C.check_references(spec.claims[0], ["model", "lang"], published, "test.yaml")


@pytest.mark.parametrize("slug", [slug for slug, paper in P.PAPERS.items() if paper.claims])
def test_every_shipped_claims_file_validates(slug):
    """Its tables, columns and values exist (the published cells, which every built table keeps)."""
    spec = P.load_claims(slug)
    assert spec.claims, f"{slug}: no claims"
    assert all(c.quote and c.section for c in spec.claims)


def test_claims_targets_and_inputs():
    cfg = {"results": "results", "papers": {"adjust": {"encoder": "tiny", "seeds": [1, 2]}}, "world": {"seed": 1}}
    assert "results/tables/adjust/table2.csv" in P.claims_inputs(cfg, "adjust")
    rules = P.target_rules(cfg)
    assert rules["adjust_claims"] == ["results/claims/adjust.csv", "results/claims/adjust.md"]
    assert rules["all_claims"] == ["results/claims.md", "results/claims.csv"]
    assert "synthetic world" in P.claims_reflect(cfg, "adjust") and "encoder tiny" in P.claims_reflect(cfg, "adjust")


def test_a_count_short_only_of_comparisons_not_run_is_inconclusive(tmp_path):
    """Two languages in the table, one run: one clear gain cannot reach `at_least: 2`, but the
    language not run could; only significant losses make a count unreachable."""
    spec = claim_file(test="count", per=["lang"], at_least=2)
    gain = {s: v + 3.0 + 0.1 * s for s, v in OLD.items()}
    path = table_csv(tmp_path, {("old", "de"): OLD, ("new", "de"): gain, ("old", "fr"): OLD, ("new", "fr"): OLD})
    table = pd.read_csv(path)
    table.loc[table["lang"] == "fr", ["ours_mean", "ours_std", "n_seeds", "per_seed"]] = math.nan  # fr: not run
    table.to_csv(path, index=False)
    row = C.evaluate("paper", spec.claims, {"tables/table2": path}, REFLECTS).iloc[0]
    assert row["verdict"] == "inconclusive" and "1 of 2 comparisons not run" in row["seeds_to_decide"]
    loss = {s: v - 3.0 - 0.1 * s for s, v in OLD.items()}
    row = decide(tmp_path, spec, {("old", "de"): OLD, ("new", "de"): loss, ("old", "fr"): OLD, ("new", "fr"): gain})
    assert row["verdict"] == "contradicted"


def test_a_count_the_table_could_never_reach_fails():
    spec = claim_file(test="count", per=["lang"], at_least=3)
    published = pd.DataFrame({"model": ["old", "new", "old", "new"], "lang": ["de", "de", "fr", "fr"], "value": [1, 2, 1, 2]})
    with pytest.raises(XltError, match="at_least 3, but table2 has 2 comparison"):
        C.check_references(spec.claims[0], ["model", "lang"], published, "test.yaml")
