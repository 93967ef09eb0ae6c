"""Evaluation metrics for every task in the registry, in percent (0-100) as the papers print.

Each task kind (``xlt.engine.kinds``) picks its scorer here; :func:`checked_metrics` returns
exactly the metrics named in ``Task.metrics``. Library code does the counting wherever a
maintained library exists:

- tagging (pos) and classification: scikit-learn (``accuracy_score``, ``f1_score``);
- NER spans: seqeval 1.2.2 (strict IOB2 after :func:`repair_bio`);
- QA (EM / F1): written here. The SQuAD v1.1 and MLQA scores only exist as the official
  evaluation *scripts* (rajpurkar/SQuAD-explorer ``evaluate-v1.1.py``,
  facebookresearch/MLQA ``mlqa_evaluation_v1.py``); neither is published as a package, and
  the one maintained library implementation (HF ``evaluate``'s ``squad`` metric) carries only
  the English SQuAD normalisation, loads its code from the Hub at run time, and has no
  per-language MLQA variant. The functions below re-implement both scripts' behaviour,
  including MLQA's quirks (see :func:`normalize_answer`);
- dependency parsing (UAS / LAS without PUNCT and SYM): a count, written here
  (:func:`attachment_scores`).

Significance tests and seed aggregation live in :mod:`xlt.stats`.

Every failure a caller can act on (length mismatch, unknown task, unknown label, malformed
gold answers) raises :class:`xlt.errors.XltError`.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from numbers import Integral
from typing import NamedTuple

import numpy as np
from sklearn.metrics import accuracy_score
from sklearn.metrics import f1_score as sk_f1_score

from xlt.errors import XltError
from xlt.registry import Task
import warnings

__all__ = [
    "checked_metrics",
    "COLLAPSE_RULE",
    "collapse_measure",
    "collapse_verdict",
    "label_collapse",
    "is_bio_labelset",
    "tagging_metrics",
    "ner_metrics",
    "classification_metrics",
    "qa_metrics",
    "parsing_metrics",
    "repair_bio",
    "normalize_answer",
    "is_mlqa_punct",
    "qa_exact_match",
    "qa_f1",
    "attachment_scores",
    "MLQA_LANGUAGES",
    "ExampleScores",
    "accuracy_example_scores",
    "qa_example_scores",
    "ner_span_counts",
    "f1_of_counts",
    "f1_of_sums",
    "reduce_example_scores",
]


# --------------------------------------------------------------------------- dispatch


def checked_metrics(task: Task, golds: list, preds: list, score: Callable[[], dict]) -> dict[str, float]:
    """Every metric the registry names for ``task``, in percent, from ``score()`` (its kind's
    scorer: ``xlt.engine.kinds``), after the checks every task shares.

    Input shapes (one entry per example, ``golds`` and ``preds`` aligned):

    - ``pos`` / ``ner`` (head ``tagging``): ``list[list[str]]`` tag names per token;
    - classification tasks: ``list[str]`` label names (``"entailment"``, ``"1"``...);
    - ``qa``: golds are answer dicts ``{"text": [str, ...], ...}`` (the normalised record's
      ``answers`` field) or plain ``list[str]``; preds are ``list[str]``. ``lang`` picks the
      answer normalisation, see :func:`normalize_answer`: ``None`` is the SQuAD v1.1 script
      (what XQuAD's and SQuAD's official evaluation use), an MLQA language code is the MLQA
      script's per-language variant;
    - ``parsing``: golds are records with ``head``, ``deprel``, ``upos`` (the normalised
      record); preds are records with ``head`` and ``deprel``.

    ``lang`` is used by QA only and ignored by the other tasks.
    """
    _check_lengths(golds, preds, what="examples")
    if len(golds) == 0:
        raise XltError(f"task {task.name}: nothing to evaluate (0 examples)")
    return _select(task, score())


def _select(task: Task, scores: dict[str, float]) -> dict[str, float]:
    missing = [m for m in task.metrics if m not in scores]
    if missing:
        raise XltError(
            f"task {task.name}: metric(s) {', '.join(missing)} named in the registry are not "
            f"computed for its kind {task.head!r}; computed: {', '.join(sorted(scores))}"
        )
    return {m: float(scores[m]) for m in task.metrics}


def is_bio_labelset(labels) -> bool:
    return bool(labels) and any(lab.startswith(("B-", "I-")) for lab in labels)


# --------------------------------------------------------------------------- checks


def _check_lengths(golds: Sequence, preds: Sequence, what: str, where: str = "") -> None:
    if len(golds) != len(preds):
        raise XltError(
            f"{where}golds has {len(golds)} {what} but preds has {len(preds)}; "
            "they must be aligned one to one"
        )


def _check_labels(values: Iterable, allowed, side: str, where: str = "") -> None:
    """Raise on the first label outside ``allowed`` (``None`` = open label set)."""
    if allowed is None:
        return
    allowed_set = set(allowed)
    for v in values:
        if v not in allowed_set:
            raise XltError(
                f"{where}unknown {side} label {v!r} ({type(v).__name__}); "
                f"allowed: {', '.join(allowed)}"
            )


def _check_sequences(golds: Sequence, preds: Sequence, labels) -> tuple[list, list]:
    """Validate per-sentence lengths and labels; return flat gold and pred tag lists."""
    flat_g: list[str] = []
    flat_p: list[str] = []
    for i, (g, p) in enumerate(zip(golds, preds, strict=True)):
        if isinstance(g, str) or isinstance(p, str):
            raise XltError(f"example {i}: expected a list of tags per sentence, got a string")
        _check_lengths(g, p, what="tokens", where=f"example {i}: ")
        _check_labels(g, labels, "gold", where=f"example {i}: ")
        _check_labels(p, labels, "predicted", where=f"example {i}: ")
        flat_g.extend(g)
        flat_p.extend(p)
    if not flat_g:
        raise XltError("nothing to evaluate: every sentence is empty")
    return flat_g, flat_p


# --------------------------------------------------------------------------- tagging / classification


def _acc_f1(gold: list[str], pred: list[str]) -> dict[str, float]:
    # Labels = the union of the label names present in gold or pred, not the registry's
    # whole label set: a class absent from both sides has no defined F1, and counting it as
    # 0 would lower F1-macro by an amount that depends on the test set's coverage. This is
    # also scikit-learn's own default (labels=None) and what the papers' sklearn/seqeval
    # based scripts compute. A class present on one side only gets F1 0 (zero_division=0).
    labels = sorted(set(gold) | set(pred))
    acc = accuracy_score(gold, pred)
    f1_macro = sk_f1_score(gold, pred, labels=labels, average="macro", zero_division=0)
    f1_micro = sk_f1_score(gold, pred, labels=labels, average="micro", zero_division=0)
    return {"accuracy": 100.0 * acc, "f1_macro": 100.0 * f1_macro, "f1_micro": 100.0 * f1_micro}


def tagging_metrics(
    golds: Sequence[Sequence[str]], preds: Sequence[Sequence[str]], labels=None
) -> dict[str, float]:
    """Token accuracy, F1-macro and F1-micro over the flattened tags of all sentences, and
    ``seqeval_f1``: XTREME's POS score (its run_tag.py), seqeval's default-mode span F1 over the
    tag sequences as they are.

    With one tag per token and every present label counted, F1-micro equals accuracy; it is
    reported because the papers print it. ``seqeval_f1`` is not a tag score: seqeval reads a
    tag's first letter as its chunk prefix and the rest as its type (NOUN: prefix N, type OUN),
    so runs of one type merge into one span, and INTJ (I…), SCONJ and SYM (S…) start or continue
    spans by their letters; a span counts when its bounds and type both match. XTREME reports
    this number as POS F1, and the papers that follow XTREME print it.
    """

    # deferred: loads seqeval only when this runs
    from seqeval.metrics import f1_score as seq_f1_score

    _check_lengths(golds, preds, what="sentences")
    flat_g, flat_p = _check_sequences(golds, preds, labels)
    with warnings.catch_warnings():  # "NOUN seems not to be NE tag": the reading above, on purpose
        warnings.simplefilter("ignore", UserWarning)
        spans = seq_f1_score([list(s) for s in golds], [list(s) for s in preds], zero_division=0)
    return {**_acc_f1(flat_g, flat_p), "seqeval_f1": 100.0 * float(spans)}


def classification_metrics(
    golds: Sequence[str], preds: Sequence[str], labels=None
) -> dict[str, float]:
    """Accuracy and F1-macro (scikit-learn) over label names (str)."""
    _check_lengths(golds, preds, what="examples")
    if len(golds) == 0:
        raise XltError("nothing to evaluate (0 examples)")
    _check_labels(golds, labels, "gold")
    _check_labels(preds, labels, "predicted")
    return _acc_f1(list(golds), list(preds))


# --------------------------------------------------------------------------- NER


def repair_bio(tags: Sequence[str]) -> list[str]:
    """Turn any BIO tag sequence into a valid IOB2 one.

    The conventional repair (conlleval's and seqeval's default-mode reading): an ``I-X``
    that does not continue an ``X`` span - first token, after ``O``, or after ``B-Y``/``I-Y``
    with ``Y != X`` - opens a new span, i.e. becomes ``B-X``. Valid sequences come back
    unchanged. Tags other than ``O``, ``B-<type>``, ``I-<type>`` raise :class:`XltError`.
    """
    out: list[str] = []
    prev_type: str | None = None  # entity type of the previous token, None after O
    for i, tag in enumerate(tags):
        if tag == "O":
            out.append(tag)
            prev_type = None
            continue
        if not isinstance(tag, str) or len(tag) < 3 or tag[:2] not in ("B-", "I-"):
            raise XltError(f"token {i}: {tag!r} is not a BIO tag (O, B-<type>, I-<type>)")
        prefix, etype = tag[0], tag[2:]
        if prefix == "I" and prev_type != etype:
            tag = f"B-{etype}"
        out.append(tag)
        prev_type = etype
    return out


def ner_metrics(
    golds: Sequence[Sequence[str]], preds: Sequence[Sequence[str]], labels=None
) -> dict[str, float]:
    """Span F1 (micro and macro over entity types, seqeval), token accuracy and token-level
    F1-macro.

    Both sides go through :func:`repair_bio` (a no-op on valid gold), then seqeval scores
    spans in strict IOB2 mode. After the repair every sequence is valid IOB2, so strict
    mode and seqeval's default conlleval-style mode find the same spans; strict is chosen
    so that the span reading is the declared IOB2 scheme rather than a heuristic, and any
    invalid sequence that slipped through would be scored by the scheme, not guessed at.

    ``span_f1_macro`` averages per-type F1 over the entity types present in gold or pred.
    With no entity at all on either side both span scores are 0.0 (conlleval's convention).
    ``accuracy`` is token accuracy on the tags as given (before repair): it measures the
    tagger's output, the repair only serves the span reading.

    ``token_f1_macro`` is a tag score, not a span score: scikit-learn's macro F1 over every
    token's tag as given (``B-PER``, ``I-PER`` … and ``O`` each a class), over the tags present
    in gold or pred (as ``f1_macro`` of POS). It is the reading of a paper's NER "F1-macro"
    that lies well above the span F1 (crossmulti's EN 92.10, docs/papers.md).
    """
    # deferred: loads seqeval only when this runs
    from seqeval.metrics import f1_score as seq_f1_score
    from seqeval.scheme import IOB2

    _check_lengths(golds, preds, what="sentences")
    flat_g, flat_p = _check_sequences(golds, preds, labels)
    rg = [repair_bio(s) for s in golds]
    rp = [repair_bio(s) for s in preds]
    has_entity = any(t != "O" for s in rg for t in s) or any(t != "O" for s in rp for t in s)
    if has_entity:
        kw = dict(mode="strict", scheme=IOB2, zero_division=0)
        span_micro = seq_f1_score(rg, rp, average="micro", **kw)
        span_macro = seq_f1_score(rg, rp, average="macro", **kw)
    else:
        span_micro = span_macro = 0.0
    return {
        "span_f1": 100.0 * float(span_micro),
        "span_f1_macro": 100.0 * float(span_macro),
        "accuracy": 100.0 * accuracy_score(flat_g, flat_p),
        "token_f1_macro": _acc_f1(flat_g, flat_p)["f1_macro"],
    }


# --------------------------------------------------------------------------- QA

# The MLQA script's punctuation: every Unicode code point of a P* category, plus ASCII
# string.punctuation (which adds the ASCII symbols $ + < = > ^ ` | ~, category S*). MLQA
# builds the set over all code points at import (~1.1M calls); testing the category per
# character is the same set without that start-up cost.
_ASCII_PUNCT = frozenset(string.punctuation)


def is_mlqa_punct(ch: str) -> bool:
    """True for a character MLQA's normalisation deletes as punctuation."""
    return ch in _ASCII_PUNCT or unicodedata.category(ch).startswith("P")


# Article patterns of mlqa_evaluation_v1.py, applied after lowercasing and punctuation
# removal; `\b` is Unicode-aware on str patterns, so Vietnamese words match whole.
_ARTICLES = {
    "en": re.compile(r"\b(a|an|the)\b"),
    "es": re.compile(r"\b(un|una|unos|unas|el|la|los|las)\b"),
    "de": re.compile(r"\b(ein|eine|einen|einem|eines|einer|der|die|das|den|dem|des)\b"),
    "vi": re.compile(r"\b(của|là|cái|chiếc|những)\b"),
    # MLQA writes '\sال^|ال'. Its first branch can never match (`^` after three characters,
    # no MULTILINE), so the pattern replaces *every* occurrence of the letters ال with a
    # space - word-initial definite article and word-internal letters alike ("مال" ->
    # "م "). We keep that behaviour: the published MLQA Arabic numbers were computed with
    # it, and a "fixed" normaliser would not reproduce them.
    "ar": re.compile("ال"),
    "hi": None,  # no articles
    "zh": None,  # no articles
}
_SQUAD_ARTICLES = re.compile(r"\b(a|an|the)\b")
MLQA_LANGUAGES = tuple(sorted(_ARTICLES))
_MIXED_SEGMENTATION = frozenset({"zh"})
_CJK = re.compile(r"[\u4e00-\u9fa5]")  # MLQA's range (CJK Unified Ideographs, GB2312-era end)


def _mixed_segmentation(text: str) -> list[str]:
    """MLQA's Chinese segmentation: each CJK character (and punctuation mark) is a token,
    runs of other characters are split on whitespace."""
    out: list[str] = []
    buf: list[str] = []
    for ch in text:
        if _CJK.match(ch) or is_mlqa_punct(ch):
            if buf:
                out.extend("".join(buf).split())
                buf = []
            out.append(ch)
        else:
            buf.append(ch)
    if buf:
        out.extend("".join(buf).split())
    return out


def normalize_answer(s: str, lang: str | None = None) -> str:
    """Normalise an answer string as the official QA evaluation scripts do.

    ``lang=None``: SQuAD v1.1 (``evaluate-v1.1.py``; also XQuAD's official evaluation):
    lowercase, drop ASCII ``string.punctuation``, drop English articles, collapse whitespace.

    ``lang`` in :data:`MLQA_LANGUAGES` (ar de en es hi vi zh): ``mlqa_evaluation_v1.py``, in
    its order - lowercase; drop every Unicode punctuation character (categories ``P*``,
    plus ASCII ``string.punctuation``); replace the language's articles by a space (en: a an
    the; es: un una unos unas el la los las; de: ein eine einen einem eines einer der die
    das den dem des; vi: của là cái chiếc những; ar: every occurrence of ال, see
    ``_ARTICLES``; hi, zh: none); tokenise - on whitespace, except zh, which uses mixed
    segmentation (each CJK character is a token, other runs are whitespace-split) - and
    join the tokens with single spaces.

    Any other language raises :class:`XltError`, as the MLQA script does: there is no
    published per-language rule for it (use ``lang=None`` for XQuAD languages such as ru).
    """
    if not isinstance(s, str):
        raise XltError(f"answer must be a string, got {type(s).__name__}: {s!r}")
    text = s.lower()
    if lang is None:
        text = "".join(ch for ch in text if ch not in _ASCII_PUNCT)
        text = _SQUAD_ARTICLES.sub(" ", text)
        return " ".join(text.split())
    _check_qa_lang(lang)
    text = "".join(ch for ch in text if not is_mlqa_punct(ch))
    pattern = _ARTICLES[lang]
    if pattern is not None:
        text = pattern.sub(" ", text)
    tokens = _mixed_segmentation(text) if lang in _MIXED_SEGMENTATION else text.split()
    return " ".join(t for t in tokens if t.strip())


def _check_qa_lang(lang: str | None) -> None:
    if lang is not None and lang not in _ARTICLES:
        raise XltError(
            f"no MLQA answer normalisation for language {lang!r}; MLQA defines "
            f"{', '.join(MLQA_LANGUAGES)}. Pass lang=None for the SQuAD v1.1 normalisation "
            "(XQuAD's official evaluation)."
        )


def _em(pred: str, gold: str, lang: str | None) -> float:
    return float(normalize_answer(pred, lang) == normalize_answer(gold, lang))


def _f1(pred: str, gold: str, lang: str | None) -> float:
    p = normalize_answer(pred, lang).split()
    g = normalize_answer(gold, lang).split()
    same = sum((Counter(p) & Counter(g)).values())
    if same == 0:  # SQuAD v1.1 / MLQA: two empty answers score F1 0 (EM still 1)
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def _gold_texts(gold, i: int) -> list[str]:
    if isinstance(gold, Mapping):
        if "text" not in gold:
            raise XltError(f"example {i}: gold answers dict has no 'text' field: {gold!r}")
        texts = gold["text"]
    else:
        texts = gold
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise XltError(f"example {i}: gold answers must be a list of strings, got {texts!r}")
    if len(texts) == 0:
        raise XltError(f"example {i}: no gold answer to compare with")
    if not all(isinstance(t, str) for t in texts):
        raise XltError(f"example {i}: gold answers must be strings, got {texts!r}")
    return list(texts)


def qa_exact_match(pred: str, gold_answers: Sequence[str], lang: str | None = None) -> float:
    """1.0 if ``pred`` matches any gold answer after normalisation, else 0.0."""
    return max(_em(pred, g, lang) for g in gold_answers)


def qa_f1(pred: str, gold_answers: Sequence[str], lang: str | None = None) -> float:
    """Bag-of-tokens F1 (0-1) of ``pred``, maximised over the gold answers."""
    return max(_f1(pred, g, lang) for g in gold_answers)


def qa_metrics(golds: Sequence, preds: Sequence[str], lang: str | None = None) -> dict[str, float]:
    """SQuAD/MLQA ``exact_match`` and ``f1``: per question the max over gold answers,
    averaged over questions, in percent."""
    _check_lengths(golds, preds, what="questions")
    if len(golds) == 0:
        raise XltError("nothing to evaluate (0 questions)")
    _check_qa_lang(lang)
    em = f1 = 0.0
    for i, (gold, pred) in enumerate(zip(golds, preds, strict=True)):
        texts = _gold_texts(gold, i)
        if not isinstance(pred, str):
            raise XltError(f"example {i}: predicted answer must be a string, got {pred!r}")
        em += qa_exact_match(pred, texts, lang)
        f1 += qa_f1(pred, texts, lang)
    n = len(golds)
    return {"exact_match": 100.0 * em / n, "f1": 100.0 * f1 / n}


# --------------------------------------------------------------------------- parsing


def _as_sentences(x, name: str) -> list[list]:
    """Accept one flat sentence or a list of sentences."""
    if isinstance(x, str) or not isinstance(x, Sequence):
        raise XltError(f"{name} must be a list (of words or of sentences), got {type(x).__name__}")
    if len(x) and all(isinstance(s, Sequence) and not isinstance(s, str) for s in x):
        return [list(s) for s in x]
    return [list(x)]


def attachment_scores(
    gold_heads,
    gold_rels,
    pred_heads,
    pred_rels,
    upos,
    ignore_upos: Iterable[str] = ("PUNCT", "SYM"),
) -> dict[str, float]:
    """Unlabelled and labelled attachment scores, in percent.

    Each argument is either one sentence (a list over words) or a list of sentences.
    A word counts when its gold UPOS is not in ``ignore_upos`` (default: PUNCT and SYM, as
    the papers report LAS). UAS: predicted head == gold head; LAS: head and relation both
    right, relations compared on their universal part (``nmod:poss`` is ``nmod``).
    """
    sents = {
        "gold_heads": _as_sentences(gold_heads, "gold_heads"),
        "gold_rels": _as_sentences(gold_rels, "gold_rels"),
        "pred_heads": _as_sentences(pred_heads, "pred_heads"),
        "pred_rels": _as_sentences(pred_rels, "pred_rels"),
        "upos": _as_sentences(upos, "upos"),
    }
    n_sent = {k: len(v) for k, v in sents.items()}
    if len(set(n_sent.values())) != 1:
        raise XltError(
            "attachment_scores: different numbers of sentences: "
            + ", ".join(f"{k}={v}" for k, v in n_sent.items())
        )
    ignore = set(ignore_upos)
    total = uas = las = 0
    for i, row in enumerate(zip(*sents.values(), strict=True)):
        lens = dict(zip(sents, map(len, row), strict=True))
        if len(set(lens.values())) != 1:
            raise XltError(
                f"sentence {i}: different numbers of words: "
                + ", ".join(f"{k}={v}" for k, v in lens.items())
            )
        for j, (gh, gr, ph, pr, pos) in enumerate(zip(*row, strict=True)):
            for h, name in ((gh, "gold"), (ph, "predicted")):
                if not isinstance(h, Integral) or isinstance(h, bool):
                    raise XltError(f"sentence {i}, word {j}: {name} head {h!r} is not an int")
            if pos in ignore:
                continue
            total += 1
            if int(gh) == int(ph):
                uas += 1
                if _base_rel(gr) == _base_rel(pr):
                    las += 1
    if total == 0:
        raise XltError(
            "attachment_scores: no word to score (every word is empty or has an ignored "
            f"gold UPOS: {', '.join(sorted(ignore))})"
        )
    return {"uas": 100.0 * uas / total, "las": 100.0 * las / total}


def _base_rel(rel: str) -> str:
    if not isinstance(rel, str):
        raise XltError(f"dependency relation must be a string, got {rel!r}")
    return rel.split(":", 1)[0]


def parsing_metrics(golds: Sequence[Mapping], preds: Sequence[Mapping], labels=None):
    """UAS / LAS (without PUNCT, SYM) from normalised records.

    golds: ``{"head": [int], "deprel": [str], "upos": [str], ...}``;
    preds: ``{"head": [int], "deprel": [str], ...}``. Relations are checked against
    ``labels`` (the registry's UD relations) after cutting subtypes.
    """
    _check_lengths(golds, preds, what="sentences")
    cols: dict[str, list] = {"gh": [], "gr": [], "ph": [], "pr": [], "upos": []}
    for i, (g, p) in enumerate(zip(golds, preds, strict=True)):
        for rec, side, keys in (
            (g, "gold", ("head", "deprel", "upos")),
            (p, "predicted", ("head", "deprel")),
        ):
            if not isinstance(rec, Mapping) or any(k not in rec for k in keys):
                raise XltError(f"example {i}: {side} record needs fields {', '.join(keys)}")
        if labels is not None:
            _check_labels(map(_base_rel, g["deprel"]), labels, "gold", where=f"example {i}: ")
            _check_labels(map(_base_rel, p["deprel"]), labels, "predicted", where=f"example {i}: ")
        cols["gh"].append(list(g["head"]))
        cols["gr"].append(list(g["deprel"]))
        cols["ph"].append(list(p["head"]))
        cols["pr"].append(list(p["deprel"]))
        cols["upos"].append(list(g["upos"]))
    return attachment_scores(cols["gh"], cols["gr"], cols["ph"], cols["pr"], cols["upos"])


# ---- collapsed runs ---------------------------------------------------------------------------


# The rule that calls a fine-tuning run collapsed, in one place: the config's `collapse:`
# section states it (schemas/config.schema.yaml gives these defaults), every verdict records it.
#  - share: its dev predictions are nearly all one label - the most predicted label's share is at
#    least MAX_SHARE (0.95: a run that collapsed rarely predicts exactly one class - the case that
#    prompted the rule was 99.8% one class - while a healthy run on a set whose gold labels are
#    not themselves ≥ 95% one label stays well under it; where the gold is, the share tells
#    nothing and only the baseline test applies);
#  - baseline: its dev score (the selection metric) is not above the majority baseline -
#    predicting the dev set's most frequent gold label everywhere - by more than MIN_GAIN
#    points (0.0: any gain over the trivial predictor is not a collapse by this test);
#  - chance: its dev predictions are not clearly better than that trivial predictor: the share
#    of labels it gets right (examples, or tokens for tagging) is not above the gold majority
#    share by a one-sided exact binomial test at level ALPHA (0.01). A margin in points would
#    mean one thing on 150 dev examples and another on 5,000; the test says "clearly" the same
#    way at every size. Tokens of one sentence are not independent, so for tagging the test is
#    lenient (it passes a tagger more easily), never stricter.
COLLAPSE_RULE = {"max_share": 0.95, "min_gain": 0.0, "alpha": 0.01}


def collapse_measure(task_name: str, values: Sequence, gold_values: Sequence | None = None,
                     score: float | None = None, baseline: float | None = None) -> dict:
    """What a collapse verdict reads, of a model's predicted labels (a class per example, a tag
    per token, a relation per dependency: the kind says which) and, where known, the same of the
    gold (`gold_values`), the model's dev score and the majority baseline's (same metric, percent).

    Returns ``{"labels_predicted", "majority", "majority_share", "n"}`` and, when given,
    ``gold_majority_share``, ``dev_score``, ``majority_baseline``.
    """
    if not values:
        raise XltError(f"task {task_name}: no predictions to check for a collapse")
    counts = Counter(values)
    majority, n_major = counts.most_common(1)[0]
    out = {"labels_predicted": len(counts), "majority": majority, "majority_share": round(n_major / len(values), 6),
           "n": len(values)}
    if gold_values:
        out["gold_majority_share"] = round(Counter(gold_values).most_common(1)[0][1] / len(gold_values), 6)
        if len(gold_values) == len(values):  # one predicted label per gold label: how many are right
            out["n_correct"] = sum(v == g for v, g in zip(values, gold_values))
    if score is not None and baseline is not None:
        out["dev_score"], out["majority_baseline"] = round(float(score), 6), round(float(baseline), 6)
    return out


def collapse_verdict(measure: dict, rule: Mapping | None = None) -> dict:
    """`measure` (`collapse_measure`) judged by `rule` (COLLAPSE_RULE's keys; missing ones take
    its defaults): ``collapsed``, ``by`` (the tests that fired: "share", "baseline") and the
    ``rule`` applied, beside the measure."""
    rule = {**COLLAPSE_RULE, **(rule or {})}
    by = []
    share, gold_share = measure.get("majority_share"), measure.get("gold_majority_share")
    if share is not None and share >= rule["max_share"] and (gold_share is None or gold_share < rule["max_share"]):
        by.append("share")
    extra = {}
    if measure.get("majority_baseline") is not None:
        if measure["dev_score"] - measure["majority_baseline"] <= rule["min_gain"]:
            by.append("baseline")
        if measure.get("n_correct") is not None and measure.get("gold_majority_share") is not None:
            extra["chance_p"] = chance_p(measure["n_correct"], measure["n"], measure["gold_majority_share"])
            if extra["chance_p"] >= rule["alpha"]:
                by.append("chance")
    return {"collapsed": bool(by), "by": by, **measure, **extra, "rule": rule}


def chance_p(n_correct: int, n: int, majority_share: float) -> float:
    """One-sided exact binomial p of getting `n_correct` of `n` labels right if the model were
    no better than predicting the majority label (right with probability `majority_share`)."""
    # deferred: scipy.stats costs ~0.2 s to import, and only a fine-tune's verdict asks
    from scipy.stats import binomtest

    return round(float(binomtest(int(n_correct), int(n), min(max(majority_share, 0.0), 1.0), alternative="greater").pvalue), 6)


def label_collapse(task_name: str, values: Sequence, gold_values: Sequence | None = None,
                   score: float | None = None, baseline: float | None = None, rule: Mapping | None = None) -> dict:
    """Whether a run collapsed (`collapse_verdict` of `collapse_measure`): its predicted labels
    nearly all one, its dev score not above the majority baseline, or not clearly better than it."""
    return collapse_verdict(collapse_measure(task_name, values, gold_values, score, baseline), rule)


# --------------------------------------------------------------------------- per-example scores


class ExampleScores(NamedTuple):
    """One model's scores per test example, from which one metric of its evaluation JSON is
    rebuilt (significance tests pair them across models, xlt.stats.compare_outputs).

    ``reduce`` says how: ``"mean"`` - ``values`` has one score per example (percent) and the
    metric is their mean (accuracy, QA F1); ``"f1"`` - ``values`` has one row
    ``(true positives, predicted, gold)`` per example and the metric is the F1 of the column
    sums, in percent (span F1: not a mean of per-sentence scores).
    """

    metric: str
    reduce: str
    values: np.ndarray


def accuracy_example_scores(golds: Sequence[str], preds: Sequence[str], labels=None) -> ExampleScores:
    """100 where the predicted label is the gold one, else 0: the mean is ``accuracy``."""
    _check_lengths(golds, preds, what="examples")
    _check_labels(golds, labels, "gold")
    _check_labels(preds, labels, "predicted")
    return ExampleScores("accuracy", "mean", 100.0 * np.array([g == p for g, p in zip(golds, preds)], dtype=float))


def qa_example_scores(golds: Sequence, preds: Sequence[str], lang: str | None = None) -> ExampleScores:
    """Each question's F1 (max over its gold answers, percent): the mean is ``qa_metrics``'s ``f1``."""
    _check_lengths(golds, preds, what="questions")
    _check_qa_lang(lang)
    return ExampleScores("f1", "mean", 100.0 * np.array([qa_f1(p, _gold_texts(g, i), lang)
                                                         for i, (g, p) in enumerate(zip(golds, preds, strict=True))]))


def ner_span_counts(
    golds: Sequence[Sequence[str]], preds: Sequence[Sequence[str]], labels=None
) -> ExampleScores:
    """Per sentence ``(correct spans, predicted spans, gold spans)``, read as :func:`ner_metrics`
    reads them (:func:`repair_bio`, then seqeval's strict IOB2 spans): the F1 of the column
    sums is ``ner_metrics``'s ``span_f1`` (micro F1 = 2 tp / (predicted + gold); 0 with no
    span on either side, as there)."""
    # deferred: loads seqeval only when this runs
    from seqeval.scheme import IOB2, Tokens

    _check_lengths(golds, preds, what="sentences")
    _check_sequences(golds, preds, labels)

    def spans(seq):
        return {e.to_tuple()[1:] for e in Tokens(repair_bio(seq), scheme=IOB2).entities}

    rows = []
    for g, p in zip(golds, preds, strict=True):
        sg, sp = spans(g), spans(p)
        rows.append((len(sg & sp), len(sp), len(sg)))
    return ExampleScores("span_f1", "f1", np.array(rows, dtype=float).reshape(-1, 3))


def f1_of_counts(counts: np.ndarray) -> np.ndarray:
    """F1 in percent of ``(tp, predicted, gold)`` rows summed over the second-to-last axis."""
    return f1_of_sums(np.asarray(counts, dtype=float).sum(axis=-2))


def f1_of_sums(sums: np.ndarray) -> np.ndarray:
    """F1 in percent of summed ``(tp, predicted, gold)`` (last axis); 0 where nothing was
    predicted or gold."""
    tp, pred, gold = np.moveaxis(np.asarray(sums, dtype=float), -1, 0)
    denom = pred + gold
    return np.where(denom > 0, 200.0 * tp / np.where(denom > 0, denom, 1.0), 0.0)


def reduce_example_scores(scores: ExampleScores) -> float:
    """The metric ``scores`` rebuild (see :class:`ExampleScores`)."""
    if scores.reduce == "mean":
        return float(np.mean(scores.values))
    if scores.reduce == "f1":
        return float(f1_of_counts(scores.values))
    raise XltError(f"unknown reduction {scores.reduce!r} of example scores; known: mean, f1")
