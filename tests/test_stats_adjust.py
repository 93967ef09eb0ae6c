"""The adjust paper's significance tests (xlt.stats): per-example scores read back from the
files `evaluate` writes, the seed-averaged paired t-test (XNLI, QA), the NER permutation
test over the sentences of all seeds, and the marks the tables print.

Every model below is hand-made: its predictions are written where `evaluate` writes them,
with an evaluation JSON whose metrics the same scorer computed, so the expected answer is
known (identical models: p = 1, no mark; a model right wherever the other is wrong: a mark).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from xlt.engine.kinds import kind_of
from xlt.errors import XltError
from xlt.io import sha256_file, write_json, write_jsonl
from xlt.metrics import f1_of_counts, ner_metrics, ner_span_counts, qa_example_scores
from xlt.registry import get_task
from xlt.stats import (
    compare_outputs,
    f1_permutation_test,
    predictions_file,
    read_seed_outputs,
    seed_averaged_ttest,
    significance_mark,
)
from xlt.tables import add_marks, cell_text, paper_vs_ours

approx = pytest.approx
LABELS = ("entailment", "neutral", "contradiction")


def write_gold(root, task: str, lang: str, records: list[dict]):
    path = root / "data" / task / lang / "test.jsonl"
    write_jsonl(path, records)
    return path


def write_eval(root, model: str, seed: int, gold, records: list[dict], preds: list, lang: str = "es", ids=None):
    """What `evaluate` writes for one seed: the metrics JSON (provenance naming the test file)
    and the predictions beside it. `ids` overrides the predictions' ids (to break the pairing)."""
    task = get_task(records and ("ner" if "tags" in records[0] else "qa" if "answers" in records[0] else "xnli"))
    kind = kind_of(task)
    metrics = kind.metrics(task, [kind.gold(task, r) for r in records], preds)
    out = root / "eval" / model / f"seed{seed}" / "test.tgt.json"
    ids = ids or [r["id"] for r in records]
    write_jsonl(predictions_file(out), [{"lang": lang, "id": i, "prediction": p} for i, p in zip(ids, preds)])
    write_json(out, {"task": task.name, "split": "test", "seed": seed, "metrics": {lang: {**metrics, "n": len(records)}},
                     "provenance": {"data_sha256": {str(gold): sha256_file(gold)}}})
    return out


def xnli_records(n: int) -> list[dict]:
    return [{"id": f"x{i}", "text": "a", "text_pair": "b", "label": LABELS[i % 3]} for i in range(n)]


def model_outputs(root, model, records, preds_per_seed, task="xnli"):
    gold = write_gold(root, task, "es", records)
    files = [write_eval(root, model, s, gold, records, p) for s, p in enumerate(preds_per_seed, start=1)]
    return read_seed_outputs(files, "es")


# ---- XNLI and QA: seed-averaged paired t-test ----------------------------------------------------


def test_identical_models_give_p_one_and_no_mark(tmp_path):
    recs = xnli_records(12)
    preds = [[r["label"] if i % 4 else "neutral" for i, r in enumerate(recs)] for _ in range(3)]
    a = model_outputs(tmp_path, "a", recs, preds)
    b = model_outputs(tmp_path, "b", recs, preds)
    assert a.values.shape == (3, 12) and a.metric == "accuracy" and a.seeds == (1, 2, 3)
    r = compare_outputs(a, b)
    # every difference is 0: SciPy's ttest_rel answers NaN (0 / 0); paired_ttest answers
    # statistic 0, p = 1 (no evidence of a difference), so no mark
    assert r["pvalue"] == 1.0 and r["statistic"] == 0.0 and r["difference"] == 0.0
    assert significance_mark(r["pvalue"], "*") == ""


def test_a_model_right_wherever_the_other_is_wrong_is_marked(tmp_path):
    recs = xnli_records(20)
    right = [r["label"] for r in recs]
    half = [lab if i % 2 else "neutral" if lab != "neutral" else "entailment" for i, lab in enumerate(right)]
    a = model_outputs(tmp_path, "adjusted", recs, [right, right])
    b = model_outputs(tmp_path, "original", recs, [half, half])
    r = compare_outputs(a, b)
    # A: 100 everywhere; B: 100 on odd examples, 0 on even -> mean 50, difference 50
    assert (r["a"], r["b"], r["difference"], r["n"]) == (100.0, 50.0, 50.0, 20)
    assert r["pvalue"] < 0.05 and r["statistic"] > 0
    assert significance_mark(r["pvalue"], "*") == "*"
    # seed means are what is tested: B right on even examples in one seed only -> per-example
    # means 50 / 100 and the same one-sided pattern, still marked
    b2 = model_outputs(tmp_path, "b2", recs, [half, right])
    assert compare_outputs(a, b2)["pvalue"] < 0.05


def test_seed_averaged_ttest_averages_seeds_first():
    # seed means of A: [1, 2, 3.5]; of B: [0, 1, 2] -> t = 7 (tests/test_metrics.py's hand case)
    r = seed_averaged_ttest([[0, 2, 3], [2, 2, 4]], [[0, 1, 2]])
    assert r["statistic"] == approx(7.0) and r["difference"] == approx(13 / 6 - 1)
    with pytest.raises(XltError, match=r"shaped \(seeds, examples\)"):
        seed_averaged_ttest([1, 2, 3], [[1, 2, 3]])


def test_qa_scores_are_per_question_f1(tmp_path):
    recs = [{"id": f"q{i}", "context": "c", "question": "q", "answers": {"text": ["the cat sat"], "answer_start": [0]}}
            for i in range(4)]
    # normalised gold "cat sat": "cat" -> P 1, R 1/2, F1 2/3; "cat sat" -> 1; "dog" -> 0
    preds = ["cat", "The cat sat.", "dog", "cat sat"]
    out = model_outputs(tmp_path, "a", recs, [preds], task="qa")
    assert out.metric == "f1" and out.values[0] == approx([200 / 3, 100, 0, 100])
    assert qa_example_scores([["x"]], ["x"]).values == approx([100.0])
    # wrong on every question: differences [66.7, 100, 0, 100], t = 2.83 on 3 df, p = 0.066 (4 questions
    # are few); the same questions three times over: p < 0.05
    recs3 = [{**r, "id": f"q{k}{r['id']}"} for k in range(3) for r in recs]
    r = compare_outputs(model_outputs(tmp_path / "3", "a", recs3, [preds * 3], task="qa"),
                        model_outputs(tmp_path / "3", "b", recs3, [["dog"] * 12], task="qa"))
    assert r["difference"] == approx(800 / 12) and r["pvalue"] < 0.05


# ---- NER: permutation test over the sentences of all seeds ---------------------------------------

NER_GOLD = [["B-PER", "I-PER", "O"], ["O", "B-LOC"], ["B-ORG", "O", "B-PER"], ["O", "O"], ["B-LOC", "I-LOC"]]


def ner_records(golds):
    return [{"id": f"s{i}", "tokens": ["w"] * len(g), "tags": g} for i, g in enumerate(golds)]


def test_span_counts_rebuild_seqeval_span_f1():
    rng = np.random.default_rng(3)
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    golds = [list(rng.choice(tags, rng.integers(1, 8))) for _ in range(40)]
    preds = [[t if rng.random() < 0.7 else str(rng.choice(tags)) for t in g] for g in golds]  # invalid BIO too
    counts = ner_span_counts(golds, preds)
    assert counts.metric == "span_f1" and counts.values.shape == (40, 3)
    assert float(f1_of_counts(counts.values)) == approx(ner_metrics(golds, preds)["span_f1"])
    # gold [B-PER I-PER O] vs pred [B-PER O O]: 0 correct of 1 predicted, 1 gold
    assert ner_span_counts([NER_GOLD[0]], [["B-PER", "O", "O"]]).values.tolist() == [[0, 1, 1]]
    assert f1_of_counts(np.zeros((2, 3))) == 0.0  # no span anywhere: 0, as ner_metrics


def test_ner_identical_models_p_one_and_a_better_model_marked(tmp_path):
    recs = ner_records(NER_GOLD * 4)  # 20 sentences
    gold = [r["tags"] for r in recs]
    miss = [["O"] * len(g) if i % 2 else g for i, g in enumerate(gold)]  # B finds half the sentences' spans
    a = model_outputs(tmp_path, "a", recs, [gold, gold], task="ner")
    b = model_outputs(tmp_path, "b", recs, [miss, miss], task="ner")
    same = compare_outputs(b, model_outputs(tmp_path, "b_again", recs, [miss, miss], task="ner"))
    assert same["pvalue"] == 1.0 and same["difference"] == 0.0 and same["n"] == 40  # 2 seeds x 20 sentences
    r = compare_outputs(a, b, rounds=1000, seed=0)
    assert r["a"] == 100.0 and r["pvalue"] < 0.05 and significance_mark(r["pvalue"], "**") == "**"
    assert compare_outputs(a, b, rounds=1000, seed=0) == r  # seeded: same seed, same p
    assert 1 / 1001 <= r["pvalue"]  # the observed assignment counts in the null distribution


def test_permutation_test_agrees_with_exact_enumeration():
    golds = NER_GOLD + [["B-PER"]]
    pa = [["B-PER", "I-PER", "O"], ["O", "B-LOC"], ["B-ORG", "O", "O"], ["O", "O"], ["B-LOC", "O"], ["B-PER"]]
    pb = [["B-PER", "O", "O"], ["O", "O"], ["B-ORG", "O", "B-PER"], ["B-PER", "O"], ["O", "O"], ["O"]]
    observed = ner_metrics(golds, pa)["span_f1"] - ner_metrics(golds, pb)["span_f1"]
    hits = 0
    for swap in itertools.product([False, True], repeat=len(golds)):  # all 2**6 = 64 assignments, seqeval each
        sa = [b if s else a for a, b, s in zip(pa, pb, swap)]
        sb = [a if s else b for a, b, s in zip(pa, pb, swap)]
        d = ner_metrics(golds, sa)["span_f1"] - ner_metrics(golds, sb)["span_f1"]
        hits += abs(d) >= abs(observed) - 1e-9
    exact = hits / 64
    ca, cb = ner_span_counts(golds, pa).values, ner_span_counts(golds, pb).values
    r = f1_permutation_test(ca, cb, rounds=1000)  # 64 <= 1000: SciPy enumerates the 64 assignments
    assert r["difference"] == approx(observed) and r["pvalue"] == approx(exact)
    # sampled rounds (12 units, 4096 assignments > 2000 rounds) land near the exact answer
    hits12 = 0
    ca2, cb2 = np.concatenate([ca, ca]), np.concatenate([cb, cb])
    for swap in itertools.product([False, True], repeat=12):
        s = np.array(swap)[:, None]
        d = f1_of_counts(np.where(s, cb2, ca2)) - f1_of_counts(np.where(s, ca2, cb2))
        hits12 += abs(d) >= abs(observed) - 1e-9
    sampled = f1_permutation_test(ca2, cb2, rounds=2000, seed=5)["pvalue"]
    assert sampled == approx(hits12 / 4096, abs=0.03)
    assert f1_permutation_test(ca2, cb2, rounds=2000, seed=5)["pvalue"] == sampled
    with pytest.raises(XltError, match="counts_a has 6 units but counts_b has 12"):
        f1_permutation_test(ca, cb2)


# ---- reading the files fails loudly --------------------------------------------------------------


def test_mismatched_examples_fail_naming_both_files(tmp_path):
    recs = xnli_records(6)
    preds = [r["label"] for r in recs]
    a = model_outputs(tmp_path, "a", recs, [preds])
    other = xnli_records(7)
    b = model_outputs(tmp_path / "other", "b", other[1:], [[r["label"] for r in other[1:]]])
    with pytest.raises(XltError, match=r"a/seed1/test\.tgt\.predictions\.jsonl vs .*b/seed1/test\.tgt\.predictions\.jsonl"):
        compare_outputs(a, b)
    # predictions whose ids are not the gold file's
    gold = write_gold(tmp_path, "xnli", "es", recs)
    bad = write_eval(tmp_path, "c", 1, gold, recs, preds, ids=[f"y{i}" for i in range(6)])
    with pytest.raises(XltError, match=r"c/seed1/test\.tgt\.predictions\.jsonl \(es\) and .*es/test\.jsonl"):
        read_seed_outputs([bad], "es")
    # seeds of one model that are not the same examples
    short = write_eval(tmp_path / "short", "a", 2, write_gold(tmp_path / "short", "xnli", "es", recs[:5]), recs[:5], preds[:5])
    with pytest.raises(XltError, match="different examples or order"):
        read_seed_outputs([tmp_path / "eval/a/seed1/test.tgt.json", short], "es")
    # seeds paired by number
    b2 = model_outputs(tmp_path / "b2", "b", recs, [preds, preds])
    with pytest.raises(XltError, match=r"seeds \[1\] vs \[1, 2\]"):
        compare_outputs(a, b2)


def test_changed_gold_or_wrong_scores_fail(tmp_path):
    recs = xnli_records(6)
    preds = [r["label"] for r in recs]
    gold = write_gold(tmp_path, "xnli", "es", recs)
    ev = write_eval(tmp_path, "a", 1, gold, recs, preds)
    with pytest.raises(XltError, match="no metrics for 'ru'"):
        read_seed_outputs([ev], "ru")
    write_jsonl(gold, [{**r, "label": "neutral"} for r in recs])  # gold edited after the evaluation
    with pytest.raises(XltError, match="changed since .*test.tgt.json was evaluated"):
        read_seed_outputs([ev], "es")
    write_jsonl(gold, recs)
    write_jsonl(predictions_file(ev), [{"lang": "es", "id": r["id"], "prediction": "neutral"} for r in recs])
    with pytest.raises(XltError, match="per-example scores give accuracy 33.333333, .* says 100.0"):
        read_seed_outputs([ev], "es")


# ---- marks in the tables -------------------------------------------------------------------------


def test_marks_follow_the_values_in_the_cells():
    keys = ["model", "lang"]
    ours = pd.DataFrame({"model": ["original", "original", "adjusted", "adjusted"], "lang": ["es"] * 4,
                         "seed": [1, 2, 1, 2], "value": [74.0, 74.4, 75.0, 75.2]})
    published = pd.DataFrame({"model": ["original", "adjusted"], "lang": ["es", "es"], "value": [74.20, 74.82],
                              "significant": [False, True]})
    table = paper_vs_ours(ours, published, keys)
    tests = pd.DataFrame({"model": ["adjusted"], "lang": ["es"], "pvalue": [0.01]})
    marked = add_marks(table, keys, {"adjusted": "*", "adjusted_continual": "**"}, "model", published, tests)
    assert marked["paper_mark"].tolist() == ["", "*"] and marked["ours_mark"].tolist() == ["", "*"]
    assert math.isnan(marked["pvalue"][0]) and marked["pvalue"][1] == 0.01
    assert cell_text(marked.iloc[1]) == ("74.82*", "75.10* ± 0.14", "+0.28")
    assert cell_text(marked.iloc[0]) == cell_text(table.iloc[0]) == ("74.20", "74.20 ± 0.28", "+0.00")
    not_significant = add_marks(table, keys, {"adjusted": "*"}, "model", tests=tests.assign(pvalue=0.05))
    assert cell_text(not_significant.iloc[1])[1] == "75.10 ± 0.14"  # p < 0.05 is the threshold
    with pytest.raises(XltError, match="tests for cells the table lacks"):
        add_marks(table, keys, {"adjusted": "*"}, "model", tests=tests.assign(lang="ru"))
