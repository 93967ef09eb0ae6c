"""crossmulti Table 4 and Figure 1 on hand-made data: the top-k heads do not depend on how the
heads are numbered (ties at the cut-off included), and the p of each Spearman ρ is shown."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from xlt.errors import XltError
from xlt.papers.crossmulti import figures as F
from xlt.papers.crossmulti import tables as A

LAYERS, HEADS = 4, 4
SPEC = {"tasks": ["pos", "ner"], "heads_total": LAYERS * HEADS, "encoder": "tiny",
        "analysis": {"topk": [40, 60, 80], "topk_of_heads": 144}}  # k = 4, 7, 9 of 16 heads


def probe_frame(rng: np.random.Generator, numbering: np.ndarray | None = None) -> pd.DataFrame:
    """Per-head probe scores of cross and multi models of two tasks, two seeds, each probed on
    both tasks; half of every model's heads score exactly 0.0 (probes that learned nothing),
    so ties straddle every cut-off. `numbering`: a relabelling of the heads (a permutation of
    0..15), applied alike to every model, as another numbering of the same encoder would be."""
    rows = [{"unit": "head", "task": "none", "setting": "vanilla", "seed": 0, "probe_task": probe,
             "layer": h // HEADS, "head": h % HEADS, "value": 0.0} for probe in SPEC["tasks"] for h in range(LAYERS * HEADS)]
    for task in SPEC["tasks"]:
        for setting in ("cross", "multi"):
            for seed in (1, 2):
                for probe in SPEC["tasks"]:
                    scores = np.round(rng.uniform(0.1, 0.9, LAYERS * HEADS), 1)  # ties among non-zero scores too
                    scores[rng.permutation(LAYERS * HEADS)[: LAYERS * HEADS // 2]] = 0.0
                    for h, value in enumerate(scores):
                        label = h if numbering is None else int(numbering[h])
                        rows.append({"unit": "head", "task": task, "setting": setting, "seed": seed, "probe_task": probe,
                                     "layer": label // HEADS, "head": label % HEADS, "value": value})
    return pd.DataFrame(rows)


def build_table4(tmp_path, probes: pd.DataFrame, name: str) -> pd.DataFrame:
    path = tmp_path / f"{name}.csv"
    probes.to_csv(path, index=False)
    table, md, _ = A.table4(SPEC, [str(path)])
    return table, md


@pytest.mark.parametrize("k, expected", [(2, [0, 3]), (3, [0, 3]), (4, [0, 1, 3, 4]), (5, [0, 1, 3, 4]), (9, list(range(6)))])
def test_top_heads_leave_out_every_head_tied_at_the_cut_off(k, expected):
    scores = np.array([0.9, 0.5, 0.0, 0.9, 0.5, 0.0])
    assert A.top_heads(scores, k).tolist() == expected


def test_top_heads_of_a_model_that_learned_nothing_are_none():
    assert A.top_heads(np.zeros(16), 4).tolist() == []


@pytest.mark.parametrize("perm_seed", [0, 1, 2])
def test_table4_does_not_depend_on_the_heads_numbering(tmp_path, perm_seed):
    numbering = np.random.default_rng(100 + perm_seed).permutation(LAYERS * HEADS)
    base, md = build_table4(tmp_path, probe_frame(np.random.default_rng(7)), "base")
    relabelled, md2 = build_table4(tmp_path, probe_frame(np.random.default_rng(7), numbering), "perm")
    pd.testing.assert_frame_equal(base, relabelled)
    assert md == md2
    assert base["ours_mean"].notna().any()  # not vacuous: cells are filled


def test_the_old_cut_by_index_was_not_invariant():
    """The case the rule exists for: with 0.0 ties at the cut-off, cutting the stable argsort
    changes the overlap when the heads are relabelled; `top_heads` does not."""
    model = np.array([0.9, 0.0, 0.0, 0.0, 0.0, 0.0])
    base = np.array([0.9, 0.0, 0.0, 0.0, 0.0, 0.5])
    perm = np.array([5, 4, 3, 2, 1, 0])

    def stable(x, k):
        return set(np.argsort(-x, kind="stable")[:k])

    assert len(stable(model, 2) & stable(base, 2)) != len(stable(model[perm], 2) & stable(base[perm], 2))
    assert A.topk_compare(model, base, 2)[0] == A.topk_compare(model[perm], base[perm], 2)[0] == 1


def test_table4_marks_significant_rho_with_its_p(tmp_path):
    """Two seeds of one model vs the cross baseline over 16 heads: a perfectly monotone pair
    (p ≈ 0) and a weak one; the cell is marked only when every seed is below α, and the CSV
    carries the largest p and the count of significant seeds."""
    rows = []
    base = np.arange(16, dtype=float) / 16
    strong = base ** 2  # same order as the base: ρ = 1
    weak = np.array([5, 1, 9, 3, 14, 0, 7, 12, 2, 10, 4, 15, 6, 13, 8, 11], dtype=float) / 16

    def add(task, setting, seed, values):
        for h, v in enumerate(values):
            rows.append({"unit": "head", "task": task, "setting": setting, "seed": seed, "probe_task": "pos",
                         "layer": h // HEADS, "head": h % HEADS, "value": v})

    add("none", "vanilla", 0, np.zeros(16))
    for seed in (1, 2):
        add("pos", "cross", seed, base)
        add("pos", "multi", seed, strong)  # significant in both seeds
        add("ner", "cross", seed, strong if seed == 1 else weak)  # significant in one seed only
    table, md = build_table4(tmp_path, pd.DataFrame(rows), "marks")
    k = A.scaled_k(80, 16, 144)  # 9 heads: the overlap is the top 9 in both models
    cell = table.set_index(["task", "setting", "probe_task", "topk", "metric"])
    multi = cell.loc[("pos", "multi", "pos", 80, "spearman")]
    top = A.top_heads(base, k)
    assert multi["ours_mean"] == pytest.approx(1.0)
    assert multi["pvalue"] == pytest.approx(A.spearman_test(strong[top], base[top])[1]) and multi["pvalue"] < A.TABLE4_ALPHA
    assert multi["ours_mark"] == "*" and multi["n_significant"] == 2
    ner = cell.loc[("ner", "cross", "pos", 80, "spearman")]
    shared = np.intersect1d(A.top_heads(weak, k), top)
    p_weak = A.spearman_test(weak[shared], base[shared])[1]
    assert p_weak >= A.TABLE4_ALPHA and ner["pvalue"] == pytest.approx(p_weak)
    assert ner["ours_mark"] == "" and ner["n_significant"] == 1
    assert cell.loc[("pos", "multi", "pos", 80, "overlap")]["ours_mark"] == ""  # overlaps carry no test
    assert "1.00* ± 0.00" in md
    assert "p < 0.05" in md and "at most k" in md


def test_rho_over_three_heads_has_its_exact_p():
    """ρ = 1 over 3 heads: the t approximation says p = 0; of the 3! pairings one gives ρ = 1 and
    one ρ = −1, so the exact two-sided p is 2/6 = 1/3 (not significant)."""
    x, y = np.array([0.1, 0.2, 0.3]), np.array([0.5, 0.7, 0.9])
    assert spearmanr(x, y)[1] == pytest.approx(0.0)
    rho, p = A.spearman_test(x, y)
    assert rho == pytest.approx(1.0) and p == pytest.approx(1 / 3)
    assert A.spearman_test(np.arange(4.0), -np.arange(4.0)) == pytest.approx((-1.0, 2 / 24))  # 2 of 4! pairings
    # exact up to EXACT_MAX_N heads: ρ = 1 over 7 has p = 2/7!
    assert A.spearman_test(np.arange(7.0), np.arange(7.0) ** 2)[1] == pytest.approx(2 / 5040)
    # beyond, a seeded Monte Carlo test: never 0, the same p run to run
    x = np.arange(12.0)
    p1, p2 = A.spearman_test(x, x ** 3)[1], A.spearman_test(x, x ** 3)[1]
    assert p1 == p2 == pytest.approx(2 / (A.PERMUTATIONS + 1))  # two-sided: twice the one-sided (1 + 0) / (n + 1)
    assert np.isnan(A.spearman_test(np.ones(4), np.arange(4.0))[1])  # all tied: ρ undefined


def test_table4_does_not_star_a_perfect_rho_over_three_heads(tmp_path):
    rows = []

    def add(task, setting, values):
        for h, v in enumerate(values):
            rows.append({"unit": "head", "task": task, "setting": setting, "seed": 1, "probe_task": "pos",
                         "layer": h // HEADS, "head": h % HEADS, "value": v})

    base = np.zeros(16)
    base[:3] = [0.9, 0.8, 0.7]  # three heads above the rest: the top 4 of every K leaves the tied 0s out
    add("none", "vanilla", np.zeros(16))
    add("pos", "cross", base)
    add("pos", "multi", base / 2)
    table, _ = build_table4(tmp_path, pd.DataFrame(rows), "three")
    cell = table.set_index(["task", "setting", "probe_task", "topk", "metric"]).loc[("pos", "multi", "pos", 40, "spearman")]
    assert cell["ours_mean"] == pytest.approx(1.0) and cell["pvalue"] == pytest.approx(1 / 3)
    assert cell["ours_mark"] == ""


def test_table4_shows_the_papers_marks():
    published = A._published("table4")
    assert published["significant"].any()  # the CSV has marks to show


def test_figure1_rho_carries_the_largest_p_over_seeds():
    rng = np.random.default_rng(3)
    rows, expected = [], []
    for seed in (1, 2):
        cross = rng.uniform(size=16)
        multi = cross + rng.normal(scale=0.3 * seed, size=16)
        expected.append(spearmanr(cross, multi))
        for setting, values in (("cross", cross), ("multi", multi)):
            rows += [{"task": "pos", "setting": setting, "seed": seed, "layer": h // HEADS, "head": h % HEADS,
                      "update": v} for h, v in enumerate(values)]
    _, rhos = F.head_update_maps(pd.DataFrame(rows))
    rho, _, p = rhos["pos"]
    assert rho == pytest.approx(np.mean([e[0] for e in expected]))
    assert p == pytest.approx(max(e[1] for e in expected))
    assert F.p_text(0.0123) == "p=0.012" and F.p_text(2.1e-5) == "p=2.1e-05" and F.p_text(float("nan")) == "p=–"



def test_a_collapsed_model_or_baseline_marks_its_table4_cells(tmp_path):
    probes = probe_frame(np.random.default_rng(7))
    probes["collapsed"] = (probes["task"] == "pos") & (probes["setting"] == "cross") & (probes["seed"] == 2)
    table, md = build_table4(tmp_path, probes, "collapsed")
    cells = table.dropna(subset=["ours_mean"]).set_index(["task", "setting", "probe_task", "topk", "metric"]).sort_index()
    # pos-cross seed 2 is the pos baseline of seed 2: every model compared on pos shares its †
    assert (cells.xs("pos", level="probe_task")["n_collapsed"] == 1).all()
    assert (cells.loc[("pos", "cross", "ner")]["n_collapsed"] == 1).all()  # the model itself
    assert (cells.loc[("ner", "multi", "ner")]["n_collapsed"] == 0).all()
    assert "without collapsed seeds" in md and "the model or its baseline" in md


def test_model_setting_reads_the_collapse_verdict(tmp_path):
    from xlt.papers.crossmulti.plan import model_setting

    model = tmp_path / "pos" / "en.crossmulti" / "seed2"
    model.mkdir(parents=True)
    assert "collapsed" not in model_setting(str(model))  # no saved model: nothing to say
    (model / "xlt_model.json").write_text('{"collapse": {"collapsed": true}}')
    assert model_setting(str(model)) == {"task": "pos", "setting": "cross", "seed": 2, "collapsed": True}


def test_table5_marks_a_collapsed_model_and_not_the_vanilla_encoder(tmp_path):
    rows = [{"task": "pos", "setting": "vanilla", "seed": None, "lang": "de", "pppl": 10.0}]  # no model: no flag
    rows += [{"task": "pos", "setting": "cross", "seed": s, "lang": "de", "pppl": 10.0 + s, "collapsed": s == 2}
             for s in (1, 2)]
    pd.DataFrame(rows).to_csv(tmp_path / "pppl.csv", index=False)
    table, md, _ = A.table5(SPEC, [str(tmp_path / "pppl.csv")])
    cells = table.set_index(["task", "setting", "lang"])
    assert cells.loc[("pos", "vanilla", "de"), "n_collapsed"] == 0 and cells.loc[("pos", "cross", "de"), "n_collapsed"] == 1
    assert "POS cross / DE 11.00 (n=1)" in md


def test_head_scores_are_over_the_vanilla_encoders_probe_of_the_same_head(tmp_path):
    """The paper's Sect. 3.2 method: a head's score is its fine-tuned probe minus the vanilla one.
    Here the raw multi scores follow the vanilla encoder's (reversed) ranking and share no top head
    with the cross model; over the vanilla scores both follow one ranking."""
    rank = np.arange(16, dtype=float)
    vanilla = 3 * (15 - rank)
    rows = []

    def add(task, setting, seed, values):
        rows.extend({"unit": "head", "task": task, "setting": setting, "seed": seed, "probe_task": "pos",
                     "layer": h // HEADS, "head": h % HEADS, "value": v} for h, v in enumerate(values))

    add("none", "vanilla", 0, vanilla)
    add("pos", "cross", 1, rank)  # over vanilla: 4·rank − 45
    add("pos", "multi", 1, vanilla + rank)  # raw: 45 − 2·rank (reversed); over vanilla: rank
    probes = pd.DataFrame(rows)
    scores = A.head_scores(probes)
    assert np.allclose(scores[("pos", "multi", 1, "pos")], rank) and np.allclose(scores[("pos", "cross", 1, "pos")], 4 * rank - 45)
    table, _ = build_table4(tmp_path, probes, "over_vanilla")
    cell = table.set_index(["task", "setting", "probe_task", "topk", "metric"])
    assert cell.loc[("pos", "multi", "pos", 40, "overlap"), "ours_mean"] == 4  # raw: 0
    assert cell.loc[("pos", "multi", "pos", 40, "spearman"), "ours_mean"] == pytest.approx(1.0)
    with pytest.raises(XltError, match="no per-head probe of the vanilla encoder"):
        A.head_scores(probes[probes["setting"] != "vanilla"])
