"""Hand-computed checks of xlt.metrics and xlt.stats.

Every expected number is worked out in the comment next to it; the code under test must
reproduce the hand count, not a re-run of the same library call.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from xlt.engine.kinds import compute_metrics  # each task's kind picks its scorer
from xlt.errors import XltError
from xlt.metrics import (
    attachment_scores,
    is_mlqa_punct,
    normalize_answer,
    repair_bio,
)
from xlt.registry import TASKS
from xlt.stats import confidence_interval_95, mean_std, paired_ttest, permutation_test

approx = pytest.approx


# ----------------------------------------------------------------------------- POS tagging


def test_pos_accuracy_and_f1():
    golds = [["NOUN", "VERB", "DET", "NOUN"], ["PROPN", "VERB"]]
    preds = [["NOUN", "VERB", "NOUN", "NOUN"], ["ADJ", "VERB"]]
    # flat gold: NOUN VERB DET  NOUN PROPN VERB
    # flat pred: NOUN VERB NOUN NOUN ADJ   VERB   -> 4 of 6 right: accuracy 66.667
    # labels = union present = ADJ DET NOUN PROPN VERB (5)
    #   NOUN : gold 2, pred 3, tp 2 -> P 2/3, R 1 -> F1 0.8
    #   VERB : gold 2, pred 2, tp 2 -> F1 1
    #   DET, PROPN (gold only), ADJ (pred only) -> F1 0
    # macro = 1.8 / 5 = 36.0 (over all 17 UPOS it would be 1.8/17: not what we report)
    # micro = accuracy for single-label tags = 66.667
    m = compute_metrics("pos", golds, preds)
    assert list(m) == ["accuracy", "f1_macro", "f1_micro", "seqeval_f1"]
    assert m["accuracy"] == approx(400 / 6)
    assert m["f1_macro"] == approx(36.0)
    assert m["f1_micro"] == approx(400 / 6)


def test_pos_seqeval_f1_is_xtremes_span_reading_of_the_tags():
    # XTREME's run_tag.py scores POS with seqeval over the raw tags: a tag's first letter is its
    # chunk prefix, the rest its type, so NOUN NOUN is one span (type OUN)
    # gold spans: [NOUN NOUN] [VERB] | [DET] [NOUN]   pred: [NOUN] [VERB VERB] | [DET] [NOUN]
    # 2 of 4 spans match on each side -> P = R = F1 = 50; yet 4 of 5 tags are right
    golds = [["NOUN", "NOUN", "VERB"], ["DET", "NOUN"]]
    preds = [["NOUN", "VERB", "VERB"], ["DET", "NOUN"]]
    m = compute_metrics("pos", golds, preds)
    assert m["seqeval_f1"] == approx(50.0) and m["accuracy"] == approx(80.0)
    assert compute_metrics("pos", golds, golds)["seqeval_f1"] == approx(100.0)


def test_pos_unknown_label_and_token_mismatch():
    with pytest.raises(XltError, match="unknown predicted label 'NOUNX'"):
        compute_metrics("pos", [["NOUN"]], [["NOUNX"]])
    with pytest.raises(XltError, match=r"example 1: golds has 2 tokens but preds has 1"):
        compute_metrics("pos", [["NOUN"], ["NOUN", "VERB"]], [["NOUN"], ["NOUN"]])


# ----------------------------------------------------------------------------- NER


@pytest.mark.parametrize(
    "tags, repaired",
    [
        (["O", "B-PER", "I-PER", "O"], ["O", "B-PER", "I-PER", "O"]),  # valid: unchanged
        (["I-PER", "I-PER"], ["B-PER", "I-PER"]),  # I- at sentence start
        (["O", "I-LOC", "I-LOC"], ["O", "B-LOC", "I-LOC"]),  # I- after O
        (["B-PER", "I-ORG", "I-ORG"], ["B-PER", "B-ORG", "I-ORG"]),  # type change
        (["B-PER", "I-PER", "I-ORG", "I-PER"], ["B-PER", "I-PER", "B-ORG", "B-PER"]),
        (["B-LOC", "B-LOC", "I-LOC"], ["B-LOC", "B-LOC", "I-LOC"]),  # B after B: valid
        ([], []),
    ],
)
def test_repair_bio(tags, repaired):
    assert repair_bio(tags) == repaired


def test_repair_bio_rejects_non_bio():
    with pytest.raises(XltError, match="not a BIO tag"):
        repair_bio(["B-PER", "E-PER"])
    with pytest.raises(XltError, match="not a BIO tag"):
        repair_bio(["B-"])


def test_ner_span_f1():
    golds = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "I-ORG", "O"], ["B-PER", "O"]]
    preds = [["B-PER", "I-PER", "O", "I-LOC"], ["B-ORG", "O", "O"], ["O", "O"]]
    # after repair pred s1 is B-PER I-PER O B-LOC (the stray I-LOC opens a LOC span)
    # gold spans: PER(s1 0-1) LOC(s1 3) ORG(s2 0-1) PER(s3 0)        = 4
    # pred spans: PER(s1 0-1) LOC(s1 3) ORG(s2 0)                    = 3
    # tp = 2 (PER s1, LOC s1)  -> P 2/3, R 2/4 -> F1 = 2*(1/3)/(7/6) = 4/7 = 57.143
    # per type: PER  gold 2 pred 1 tp 1 -> P 1, R 1/2 -> 2/3
    #           LOC  1 1 1 -> 1 ;  ORG 1 1 0 -> 0    macro = (2/3 + 1 + 0)/3 = 5/9 = 55.556
    # token accuracy on raw tags: s1 3/4 (I-LOC != B-LOC), s2 2/3, s3 1/2 -> 6/9 = 66.667
    m = compute_metrics("ner", golds, preds)
    assert list(m) == ["span_f1", "span_f1_macro", "accuracy", "token_f1_macro"]
    assert m["span_f1"] == approx(400 / 7)
    assert m["span_f1_macro"] == approx(500 / 9)
    assert m["accuracy"] == approx(600 / 9)


def test_ner_type_change_is_two_spans():
    # pred B-PER I-ORG -> B-PER B-ORG: spans PER(0) ORG(1); gold PER(0) ORG(1) -> F1 100
    m = compute_metrics("ner", [["B-PER", "B-ORG"]], [["B-PER", "I-ORG"]])
    assert m["span_f1"] == approx(100.0)
    assert m["accuracy"] == approx(50.0)  # raw I-ORG != B-ORG


def test_ner_no_entities_anywhere_is_zero():
    m = compute_metrics("ner", [["O", "O"]], [["O", "O"]])
    assert m == {"span_f1": 0.0, "span_f1_macro": 0.0, "accuracy": 100.0, "token_f1_macro": 100.0}


def test_ner_token_f1_macro_is_a_tag_score():
    # crossmulti's NER "F1-macro": scikit-learn's macro F1 over the raw tags (O a class), not spans
    golds = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "I-ORG", "O"], ["B-PER", "O"]]
    preds = [["B-PER", "I-PER", "O", "I-LOC"], ["B-ORG", "O", "O"], ["O", "O"]]
    # per tag (present in gold or pred): B-PER 2/3, I-PER 1, O (P 3/5, R 1) 3/4, B-LOC 0,
    # I-LOC 0 (predicted only), B-ORG 1, I-ORG 0  -> (2/3 + 1 + 3/4 + 1) / 7 = 41/84
    m = compute_metrics("ner", golds, preds)
    assert m["token_f1_macro"] == approx(4100 / 84)
    # a span error of one token costs a span, but only a tag's share of the tag score
    golds, preds = [["B-PER", "I-PER", "I-PER", "O"]], [["B-PER", "I-PER", "O", "O"]]
    m = compute_metrics("ner", golds, preds)
    assert m["span_f1"] == 0.0 and m["token_f1_macro"] > 50


# ----------------------------------------------------------------------------- classification


def test_classification_accuracy_and_f1_macro():
    golds = ["entailment", "neutral", "contradiction", "entailment", "entailment"]
    preds = ["entailment", "contradiction", "contradiction", "entailment", "neutral"]
    # right: 1 0 1 1 0 -> 3/5 = 60.0
    # entailment    gold 3 pred 2 tp 2 -> P 1,   R 2/3 -> 0.8
    # neutral       gold 1 pred 1 tp 0 -> 0
    # contradiction gold 1 pred 2 tp 1 -> P 1/2, R 1   -> 2/3
    # macro = (0.8 + 0 + 2/3)/3 = 0.48889
    m = compute_metrics("xnli", golds, preds)
    assert m == {"accuracy": approx(60.0), "f1_macro": approx(100 * (0.8 + 2 / 3) / 3)}
    # MARC lists f1_macro first: the dict follows the registry's order
    assert list(compute_metrics("marc", ["1", "5"], ["1", "4"])) == ["f1_macro", "accuracy"]


def test_classification_errors():
    with pytest.raises(XltError, match="golds has 3 examples but preds has 2"):
        compute_metrics("xnli", ["neutral"] * 3, ["neutral"] * 2)
    with pytest.raises(XltError, match="unknown gold label 0 \\(int\\)"):
        compute_metrics("pawsx", [0, 1], ["0", "1"])
    with pytest.raises(XltError, match="Did you mean 'xnli'"):
        compute_metrics("xnl", ["neutral"], ["neutral"])
    with pytest.raises(XltError, match="0 examples"):
        compute_metrics("xnli", [], [])


# ----------------------------------------------------------------------------- QA


def test_qa_squad_em_f1_english():
    golds = [
        {"text": ["the Eiffel Tower", "Eiffel Tower"], "answer_start": [0, 4]},
        {"text": ["in 1889"], "answer_start": [10]},
        ["Paris, France"],
    ]
    preds = ["Eiffel tower!", "1889", "France"]
    # q1: "eiffel tower" == "eiffel tower"             EM 1, F1 1
    # q2: "1889" vs "in 1889": common 1, P 1, R 1/2    EM 0, F1 2/3
    # q3: "france" vs "paris france": P 1, R 1/2       EM 0, F1 2/3
    # EM = 1/3 = 33.333 ; F1 = (1 + 2/3 + 2/3)/3 = 7/9 = 77.778
    for lang in (None, "en"):
        m = compute_metrics("qa", golds, preds, lang=lang)
        assert list(m) == ["exact_match", "f1"]
        assert m["exact_match"] == approx(100 / 3)
        assert m["f1"] == approx(700 / 9)


def test_qa_f1_chinese_characters():
    # zh: characters are tokens. gold 北京大学 = 北 京 大 学, pred 北京 = 北 京
    # q1: P 2/2, R 2/4 -> F1 2/3, EM 0 ; q2: "2008年" == "2008 年" tokens -> EM 1, F1 1
    golds = [["北京大学"], ["2008年。"]]
    preds = ["北京", "2008年"]
    m = compute_metrics("qa", golds, preds, lang="zh")
    assert m["exact_match"] == approx(50.0)
    assert m["f1"] == approx(100 * (2 / 3 + 1) / 2)


def test_qa_errors():
    with pytest.raises(XltError, match="golds has 2 examples but preds has 1"):
        compute_metrics("qa", [["a"], ["b"]], ["a"])
    with pytest.raises(XltError, match="no gold answer"):
        compute_metrics("qa", [{"text": []}], ["a"])
    with pytest.raises(XltError, match="no MLQA answer normalisation for language 'ru'"):
        compute_metrics("qa", [["а"]], ["а"], lang="ru")


@pytest.mark.parametrize(
    "lang, raw, normalised",
    [
        # en: Unicode punctuation (« » are Pi/Pf) goes too, articles dropped
        ("en", "The Eiffel Tower «1889»", "eiffel tower 1889"),
        ("en", "An apple, a day.", "apple day"),
        # es: los / la are articles; "á" is a word character for \b
        ("es", "Los Ángeles, la ciudad", "ángeles ciudad"),
        ("es", "Unas islas y el mar", "islas y mar"),
        # de: whole words only - "dieser" keeps its "die"
        ("de", "Die Geschichte des Deutschen Reiches", "geschichte deutschen reiches"),
        ("de", "Dieser Mann, einem Kind", "dieser mann kind"),
        # vi
        ("vi", "Thủ đô của Việt Nam", "thủ đô việt nam"),
        # ar: every ال becomes a space, word-initial or not (MLQA's pattern)
        ("ar", "الجزائر", "جزائر"),
        ("ar", "في البيت", "في بيت"),
        ("ar", "مال", "م"),
        # hi: no articles; the danda । (Po) is punctuation
        ("hi", "भारत की राजधानी।", "भारत की राजधानी"),
        # zh: CJK characters one by one, other runs split on whitespace
        ("zh", "北京是中国的首都。", "北 京 是 中 国 的 首 都"),
        ("zh", "2008年北京奥运会", "2008 年 北 京 奥 运 会"),
        ("zh", "iPhone 手机", "iphone 手 机"),
        # SQuAD v1.1 (lang=None): ASCII punctuation only, so « » survive
        (None, "The Eiffel Tower «1889»", "eiffel tower «1889»"),
    ],
)
def test_normalize_answer(lang, raw, normalised):
    assert normalize_answer(raw, lang) == normalised


def test_mlqa_punctuation_set():
    # MLQA: {chr(i) for i in range(sys.maxunicode) if category starts with 'P'} | ASCII punct
    import string
    import sys
    import unicodedata

    mlqa = {
        chr(i) for i in range(sys.maxunicode) if unicodedata.category(chr(i)).startswith("P")
    } | set(string.punctuation)
    ours = {chr(i) for i in range(sys.maxunicode + 1) if is_mlqa_punct(chr(i))}
    assert ours == mlqa
    assert is_mlqa_punct("$") and is_mlqa_punct("।") and not is_mlqa_punct("€")


# ----------------------------------------------------------------------------- parsing

# Sentence 1: The/DET cat/NOUN sleeps/VERB ./PUNCT
S1_GOLD = {
    "head": [2, 3, 0, 3],
    "deprel": ["det", "nsubj", "root", "punct"],
    "upos": ["DET", "NOUN", "VERB", "PUNCT"],
}
S1_PRED = {"head": [2, 3, 0, 2], "deprel": ["det", "obj", "root", "punct"]}
# Sentence 2: I/PRON paid/VERB $/SYM 5/NUM !/PUNCT
S2_GOLD = {
    "head": [2, 0, 2, 3, 2],
    "deprel": ["nsubj", "root", "obj", "nummod", "punct"],
    "upos": ["PRON", "VERB", "SYM", "NUM", "PUNCT"],
}
S2_PRED = {"head": [2, 0, 4, 2, 2], "deprel": ["nsubj:pass", "root", "obj", "nummod", "punct"]}
# scored words (gold UPOS not PUNCT/SYM): The cat sleeps | I paid 5      -> 6
#   The    head ok, det ok            UAS+ LAS+
#   cat    head ok, obj != nsubj      UAS+
#   sleeps head ok, root ok           UAS+ LAS+
#   I      head ok, nsubj:pass->nsubj UAS+ LAS+
#   paid   head ok, root ok           UAS+ LAS+
#   5      head 2 != 3                -
# UAS = 5/6 = 83.333, LAS = 4/6 = 66.667
# ignored: "." head wrong, "$" head wrong, "!" head+rel right
# with nothing ignored: UAS = 6/9 = 66.667, LAS = 5/9 = 55.556


def test_attachment_scores_ignore_punct_sym():
    cols = [
        [S1_GOLD["head"], S2_GOLD["head"]],
        [S1_GOLD["deprel"], S2_GOLD["deprel"]],
        [S1_PRED["head"], S2_PRED["head"]],
        [S1_PRED["deprel"], S2_PRED["deprel"]],
        [S1_GOLD["upos"], S2_GOLD["upos"]],
    ]
    assert attachment_scores(*cols) == {"uas": approx(500 / 6), "las": approx(400 / 6)}
    assert attachment_scores(*cols, ignore_upos=()) == {
        "uas": approx(600 / 9),
        "las": approx(500 / 9),
    }
    m = compute_metrics("parsing", [S1_GOLD, S2_GOLD], [S1_PRED, S2_PRED])
    assert list(m) == ["las", "uas"]
    assert m == {"las": approx(400 / 6), "uas": approx(500 / 6)}


def test_attachment_scores_single_sentence_and_errors():
    # flat lists are one sentence: sentence 1 alone -> 3 scored, UAS 3/3, LAS 2/3
    r = attachment_scores(
        S1_GOLD["head"], S1_GOLD["deprel"], S1_PRED["head"], S1_PRED["deprel"], S1_GOLD["upos"]
    )
    assert r == {"uas": approx(100.0), "las": approx(200 / 3)}
    with pytest.raises(XltError, match="sentence 0: different numbers of words"):
        attachment_scores([1, 0], ["nsubj", "root"], [1], ["root"], ["NOUN", "VERB"])
    with pytest.raises(XltError, match="no word to score"):
        attachment_scores([0], ["punct"], [0], ["punct"], ["PUNCT"])
    with pytest.raises(XltError, match="unknown predicted label 'nsubjx'"):
        compute_metrics("parsing", [S1_GOLD], [{**S1_PRED, "deprel": ["nsubjx"] * 4}])


def test_every_task_returns_its_registry_metrics():
    samples = {
        "pos": ([["NOUN"]], [["NOUN"]]),
        "ner": ([["B-PER"]], [["B-PER"]]),
        "pawsx": (["1"], ["1"]),
        "marc": (["3"], ["3"]),
        "xnli": (["neutral"], ["neutral"]),
        "qa": ([["x"]], ["x"]),
        "parsing": ([S1_GOLD], [S1_GOLD]),
    }
    assert set(samples) == set(TASKS)
    for name, (g, p) in samples.items():
        m = compute_metrics(name, g, p)
        assert tuple(m) == TASKS[name].metrics
        assert all(v == approx(100.0) for v in m.values()), (name, m)


# ----------------------------------------------------------------------------- statistics


def _accuracy(golds, preds):
    return 100.0 * sum(g == p for g, p in zip(golds, preds)) / len(golds)


def test_permutation_test_identical_systems():
    golds = ["a", "b", "a", "b"] * 10
    preds = ["a", "a", "a", "b"] * 10
    r = permutation_test(golds, preds, list(preds), _accuracy, rounds=500, seed=0)
    # every swap leaves the difference 0 >= 0 -> p = 1
    assert r == {"difference": 0.0, "pvalue": approx(1.0)}


def test_permutation_test_very_different_systems():
    golds = ["a"] * 30
    r = permutation_test(golds, ["a"] * 30, ["b"] * 30, _accuracy, rounds=1000, seed=0)
    # observed |diff| = 100 needs all 30 swaps equal (2 of 2**30 assignments): with the
    # observed assignment counted, p = 1/1001
    assert r["difference"] == approx(100.0)
    assert r["pvalue"] < 0.05
    assert r["pvalue"] == approx(1 / 1001)


def test_permutation_test_exact_for_small_n_and_seeded():
    # n = 5 -> 2**5 = 32 <= rounds: SciPy enumerates every swap; |diff| = 100 only for
    # "no swap" and "swap all" -> p = 2/32
    r = permutation_test(["a"] * 5, ["a"] * 5, ["b"] * 5, _accuracy, rounds=1000)
    assert r["pvalue"] == approx(2 / 32)
    rng = np.random.default_rng(1)
    golds = list(rng.integers(0, 2, 60))
    pa = [g if rng.random() < 0.8 else 1 - g for g in golds]
    pb = [g if rng.random() < 0.6 else 1 - g for g in golds]
    r1 = permutation_test(golds, pa, pb, _accuracy, rounds=200, seed=7)
    r2 = permutation_test(golds, pa, pb, _accuracy, rounds=200, seed=7)
    assert r1 == r2
    assert 0.0 < r1["pvalue"] <= 1.0
    with pytest.raises(XltError, match="preds_b 3"):
        permutation_test(["a"] * 4, ["a"] * 4, ["a"] * 3, _accuracy)


def test_paired_ttest_matches_scipy():
    rng = np.random.default_rng(0)
    a = rng.normal(70, 5, 50)
    b = a - rng.normal(1.0, 2.0, 50)
    ref = sps.ttest_rel(a, b)
    r = paired_ttest(list(a), list(b))
    assert r["statistic"] == approx(float(ref.statistic))
    assert r["pvalue"] == approx(float(ref.pvalue))
    # hand case: d = [1, 1, 1.5], mean 7/6, sd = sqrt(1/12), t = (7/6)/(sqrt(1/12)/sqrt 3) = 7
    assert paired_ttest([1, 2, 3.5], [0, 1, 2])["statistic"] == approx(7.0)
    # zero-variance differences, where SciPy answers NaN
    assert paired_ttest([1, 2, 3], [1, 2, 3]) == {"statistic": 0.0, "pvalue": 1.0}
    assert paired_ttest([1, 2, 3], [0, 1, 2])["pvalue"] == 0.0
    with pytest.raises(XltError, match="scores_a has 3 values but scores_b has 2"):
        paired_ttest([1, 2, 3], [1, 2])


def test_mean_std_and_confidence_interval():
    # [1, 2, 3]: mean 2, sample var = (1 + 0 + 1)/2 = 1 -> std 1
    assert mean_std([1, 2, 3]) == (approx(2.0), approx(1.0))
    mean, std = mean_std([85.5])
    assert mean == 85.5 and math.isnan(std)  # one seed has no sample std
    # CI: sem = 1/sqrt(3) = 0.57735, t(0.975, df 2) = 4.302653 -> 2 ± 2.484138
    lo, hi = confidence_interval_95([1, 2, 3])
    assert lo == approx(2 - 2.484138, abs=1e-5)
    assert hi == approx(2 + 2.484138, abs=1e-5)
    assert confidence_interval_95([4, 4, 4]) == (4.0, 4.0)
    with pytest.raises(XltError, match="at least 2"):
        confidence_interval_95([1.0])
    with pytest.raises(XltError, match="at least 1"):
        mean_std([])
