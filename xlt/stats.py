"""Significance tests and seed aggregation used by the papers (SciPy / NumPy underneath)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from xlt.errors import XltError
from xlt.io import sha256_file
from xlt.io import read_json, read_jsonl
from xlt.registry import get_task


def _sps():
    """scipy.stats, imported on first use: the workflow imports this module (through the
    tables) to build its DAG, where scipy's half a second of import buys nothing."""
    # deferred: loads scipy only when this runs
    from scipy import stats

    return stats


__all__ = [
    "paired_ttest",
    "permutation_test",
    "f1_permutation_test",
    "seed_averaged_ttest",
    "significance_mark",
    "SeedOutputs",
    "read_seed_outputs",
    "predictions_file",
    "compare_outputs",
    "mean_std",
    "confidence_interval_95",
]


def _values(values, name: str = "values", min_n: int = 1) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise XltError(f"{name} must be a flat list of numbers, got shape {arr.shape}")
    if arr.size < min_n:
        raise XltError(f"{name}: needs at least {min_n} value(s), got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise XltError(f"{name}: contains NaN or infinite values")
    return arr


def paired_ttest(scores_a: Sequence[float], scores_b: Sequence[float]) -> dict[str, float]:
    """Two-sided paired t-test (``scipy.stats.ttest_rel``) of per-example scores.

    The caller passes one score per example for each system (averaged over seeds when
    there are several). Returns ``{"statistic", "pvalue"}``. SciPy returns NaN when the
    differences have zero variance; we answer instead: all differences 0 -> statistic 0,
    p-value 1 (no evidence of a difference); a constant non-zero difference -> statistic
    ±inf, p-value 0.
    """
    a = _values(scores_a, "scores_a", min_n=2)
    b = _values(scores_b, "scores_b", min_n=2)
    if a.size != b.size:
        raise XltError(f"scores_a has {a.size} values but scores_b has {b.size}; must be paired")
    d = a - b
    if np.all(d == d[0]):
        if d[0] == 0:
            return {"statistic": 0.0, "pvalue": 1.0}
        return {"statistic": math.copysign(math.inf, d[0]), "pvalue": 0.0}
    res = _sps().ttest_rel(a, b)
    return {"statistic": float(res.statistic), "pvalue": float(res.pvalue)}


def permutation_test(
    golds: Sequence,
    preds_a: Sequence,
    preds_b: Sequence,
    metric_fn: Callable[[list, list], float],
    rounds: int = 1000,
    seed: int = 0,
) -> dict[str, float]:
    """Paired approximate randomisation test of ``metric_fn(golds, preds_a)`` against
    ``metric_fn(golds, preds_b)``.

    Null hypothesis: the two systems are exchangeable. Each round swaps every example's
    pair of predictions between the systems with probability 1/2 and recomputes the
    corpus-level difference; the p-value is the share of rounds whose absolute difference
    reaches the observed one (two-sided).

    Implemented with ``scipy.stats.permutation_test(permutation_type="samples")``, whose
    paired resampling is exactly this per-example swap. Predictions can be any objects
    (tag lists, strings), so SciPy permutes example *indices* - system A's example ``i`` is
    ``i``, system B's is ``n + i`` - and the statistic looks the predictions up. The
    statistic is ``|metric(A') - metric(B')|`` with ``alternative="greater"``. SciPy counts
    the observed assignment in the null distribution (p = (k + 1) / (rounds + 1)), so
    identical systems give p = 1, and p is never 0. When 2**n <= rounds SciPy enumerates all
    2**n swaps instead (an exact test). ``seed`` seeds a NumPy Generator.

    Returns ``{"difference": metric(A) - metric(B), "pvalue"}``.
    """
    n = len(golds)
    if len(preds_a) != n or len(preds_b) != n:
        raise XltError(
            f"permutation_test: golds has {n} examples, preds_a {len(preds_a)}, "
            f"preds_b {len(preds_b)}; all must be aligned"
        )
    if n == 0:
        raise XltError("permutation_test: nothing to compare (0 examples)")
    if rounds < 1:
        raise XltError(f"permutation_test: rounds must be >= 1, got {rounds}")
    golds = list(golds)
    pool = list(preds_a) + list(preds_b)

    def diff(ia: np.ndarray, ib: np.ndarray) -> float:
        return float(metric_fn(golds, [pool[j] for j in ia])) - float(
            metric_fn(golds, [pool[j] for j in ib])
        )

    observed = diff(np.arange(n), np.arange(n, 2 * n))
    pvalue = _swap_test(n, lambda x, y: abs(diff(x, y)), rounds, seed, batch=min(rounds, 100))
    return {"difference": observed, "pvalue": pvalue}


def _swap_test(n: int, statistic, rounds: int, seed: int, batch: int, vectorized: bool = False) -> float:
    """p-value of SciPy's paired swap test on example indices (see `permutation_test`): A's
    example ``i`` is ``i``, B's is ``n + i``; `statistic(x, y[, axis])` reads them."""
    res = _sps().permutation_test(
        (np.arange(n), np.arange(n, 2 * n)),
        statistic,
        permutation_type="samples",
        vectorized=vectorized,
        n_resamples=rounds,
        alternative="greater",
        batch=batch,
        rng=np.random.default_rng(seed),
    )
    return float(res.pvalue)


def f1_permutation_test(counts_a, counts_b, rounds: int = 1000, seed: int = 0) -> dict[str, float]:
    """`permutation_test` of an F1 built from per-unit counts, vectorised.

    ``counts_a`` / ``counts_b``: one row ``(true positives, predicted, gold)`` per unit (e.g.
    per sentence: ``xlt.metrics.ner_span_counts``), paired by row. F1 = 2 tp / (predicted +
    gold) of the column sums (``xlt.metrics.f1_of_counts``; percent), so a round is one
    matrix product (which units swap) x (B's counts - A's), not a re-run of seqeval. Same
    test, p-value convention (exact enumeration when 2**n <= rounds) and seeding as
    `permutation_test`. 1,000 rounds over 50,000 units: ~10 s on one core, ~8 of them
    SciPy's drawing of the swaps.

    Returns ``{"difference": F1(A) - F1(B), "pvalue"}``.
    """
    from xlt.metrics import f1_of_counts, f1_of_sums  # deferred: the DAG imports this module, not scikit-learn

    a, b = (np.asarray(c, dtype=float) for c in (counts_a, counts_b))
    for name, c in (("counts_a", a), ("counts_b", b)):
        if c.ndim != 2 or c.shape[1] != 3:
            raise XltError(f"f1_permutation_test: {name} must have one (tp, predicted, gold) row per unit, got shape {c.shape}")
    if a.shape != b.shape:
        raise XltError(f"f1_permutation_test: counts_a has {len(a)} units but counts_b has {len(b)}; must be paired")
    if len(a) == 0:
        raise XltError("f1_permutation_test: nothing to compare (0 units)")
    if rounds < 1:
        raise XltError(f"f1_permutation_test: rounds must be >= 1, got {rounds}")
    n, sum_a, sum_b, moved = len(a), a.sum(axis=0), b.sum(axis=0), b - a

    def stat(x, y, axis=-1):  # x: A's side after the swaps, as indices ((batch, n) or (n,)); n + i = B's row i
        delta = (np.moveaxis(x, axis, -1) >= n).astype(float) @ moved  # what the swapped rows move from B to A
        return np.abs(f1_of_sums(sum_a + delta) - f1_of_sums(sum_b - delta))

    observed = float(f1_of_counts(a) - f1_of_counts(b))
    batch = max(1, min(rounds, 4_000_000 // n))  # SciPy's index arrays of a batch: ~32 MB at most
    return {"difference": observed, "pvalue": _swap_test(n, stat, rounds, seed, batch, vectorized=True)}


def seed_averaged_ttest(scores_a, scores_b) -> dict[str, float]:
    """The adjust paper's XNLI / QA test: each example's score averaged over seeds, then
    `paired_ttest` over examples (zero-variance differences answered, not NaN: identical
    systems p = 1).

    ``scores_a`` / ``scores_b``: shape (seeds, examples), the same examples in the same order
    (the seeds need not be as many on both sides). Returns `paired_ttest`'s dict plus
    ``difference`` = mean(A) - mean(B).
    """
    a, b = (np.asarray(s, dtype=float) for s in (scores_a, scores_b))
    for name, s in (("scores_a", a), ("scores_b", b)):
        if s.ndim != 2 or s.shape[0] < 1:
            raise XltError(f"seed_averaged_ttest: {name} must be shaped (seeds, examples), got shape {s.shape}")
    ma, mb = a.mean(axis=0), b.mean(axis=0)
    return {**paired_ttest(ma, mb), "difference": float(ma.mean() - mb.mean())}


def significance_mark(pvalue: float, mark: str = "*", alpha: float = 0.05) -> str:
    """`mark` when ``pvalue < alpha``, else "" (NaN, i.e. no test, gives ""). Two-sided: a
    significant drop is marked too, as the adjust paper marks them (Table 3, es)."""
    return mark if pvalue is not None and not math.isnan(pvalue) and pvalue < alpha else ""


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof=1) of per-seed scores.

    A single value has no sample std: NaN (tables print "(1 seed)", never a spread of 0).
    """
    arr = _values(values)
    std = float(np.std(arr, ddof=1)) if arr.size > 1 else float("nan")
    return float(np.mean(arr)), std


def confidence_interval_95(values: Sequence[float]) -> tuple[float, float]:
    """Two-sided 95% confidence interval of the mean, Student t with n-1 degrees of freedom.

    Needs at least two values (one value gives no spread to estimate: XltError). Equal
    values give the degenerate interval (mean, mean).
    """
    arr = _values(values, min_n=2)
    mean = float(np.mean(arr))
    sem = float(_sps().sem(arr))
    if sem == 0.0:
        return mean, mean
    lo, hi = _sps().t.interval(0.95, df=arr.size - 1, loc=mean, scale=sem)
    return float(lo), float(hi)


# ---- per-example outputs of evaluated models (the adjust paper's significance marks) ---------


@dataclass(frozen=True)
class SeedOutputs:
    """One model's per-example scores on one language's test set, every seed.

    ``values``: shape (seeds, examples) for a metric that is a mean over examples (reduce
    "mean": XNLI accuracy, QA F1), (seeds, examples, 3) for an F1 of counts (reduce "f1": NER
    span F1, one ``(tp, predicted, gold)`` row per sentence); see xlt.metrics.ExampleScores.
    """

    task: str
    lang: str
    split: str
    metric: str
    reduce: str
    seeds: tuple[int, ...]
    ids: tuple
    values: np.ndarray
    files: tuple[str, ...]  # the predictions files, one per seed (for messages)


def predictions_file(eval_json: str | Path) -> Path:
    """`{split}.{langset}.predictions.jsonl` beside the evaluation JSON `{split}.{langset}.json`."""
    p = Path(eval_json)
    if p.suffix != ".json":
        raise XltError(f"{p}: not an evaluation JSON (…/{{split}}.{{langset}}.json)")
    return p.with_suffix(".predictions.jsonl")


def _gold_file(eval_json: Path, report: dict, lang: str) -> Path:
    """The test file the evaluation read for `lang`, from its provenance, checked unchanged."""

    recorded = report.get("provenance", {}).get("data_sha256", {})
    hits = [k for k in recorded if Path(k).parent.name == lang and Path(k).name == f"{report['split']}.jsonl"]
    if len(hits) != 1:
        raise XltError(f"{eval_json}: provenance.data_sha256 names {len(hits)} {report['split']} file(s) of {lang!r} "
                       f"(files: {', '.join(recorded) or 'none'}); expected one")
    gold = Path(hits[0])
    if not gold.exists():
        raise XltError(f"{eval_json}: its test file {gold} is missing (paths are relative to the workflow directory)")
    if sha256_file(gold) != recorded[hits[0]]:
        raise XltError(f"{gold}: changed since {eval_json} was evaluated on it (sha256 differs)")
    return gold


def _seed_scores(eval_json: Path, lang: str, answer_lang: str | None):
    """(report, ids, ExampleScores) of one seed's evaluation of `lang`."""
    # deferred: loads sklearn, torch only when this runs
    from xlt.engine.kinds import kind_of
    from xlt.metrics import reduce_example_scores

    report = read_json(eval_json)
    if lang not in report.get("metrics", {}):
        raise XltError(f"{eval_json}: no metrics for {lang!r}; has {', '.join(report.get('metrics', {})) or 'none'}")
    task = get_task(report["task"])
    kind = kind_of(task)
    pred_file = predictions_file(eval_json)
    rows = [r for r in read_jsonl(pred_file) if r["lang"] == lang]
    gold_file = _gold_file(eval_json, report, lang)
    records = read_jsonl(gold_file)
    ids = [r["id"] for r in rows]
    if ids != [r.get("id") for r in records]:
        raise XltError(f"{pred_file} ({lang}) and {gold_file}: different examples or order "
                       f"({len(ids)} vs {len(records)} examples)")
    if answer_lang is None:  # the evaluation's own: MLQA's answer language where it recorded one
        answer_lang = (report.get("answer_languages") or {}).get(lang)
    scores = kind.example_scores(task, [kind.gold(task, r) for r in records], [r["prediction"] for r in rows],
                                 answer_lang)
    ours, theirs = reduce_example_scores(scores), report["metrics"][lang].get(scores.metric)
    if theirs is None or not math.isclose(ours, theirs, rel_tol=1e-9, abs_tol=1e-6):
        raise XltError(f"{pred_file} ({lang}): per-example scores give {scores.metric} {ours:.6f}, "
                       f"{eval_json} says {theirs}; predictions and gold do not match the evaluation")
    return report, tuple(ids), scores


def read_seed_outputs(eval_jsons: Sequence[str | Path], lang: str, answer_lang: str | None = None) -> SeedOutputs:
    """Per-example scores of one model (one evaluation JSON per seed) on `lang`.

    Reads what the workflow's `evaluate` rule wrote: each ``…/seed{s}/{split}.{langset}.json``
    (task, split, seed, metrics; its provenance names the test files and their sha256) and
    the predictions beside it (one line ``{"lang", "id", "prediction"}`` per example:
    a label for classification, a tag list for tagging, an answer string for span QA); the
    gold comes from the test file the evaluation read, checked unchanged. Each seed's scores
    must rebuild the metric in its JSON (accuracy, f1, span_f1), and every seed must hold
    the same examples in the same order (ids): else XltError naming the files.
    `answer_lang`: QA answer normalisation (None: the evaluation's own, i.e. the MLQA answer
    language its report records (`answer_languages`, a set declaring MLQA's normalisation),
    else SQuAD v1.1's).
    """
    if not eval_jsons:
        raise XltError(f"read_seed_outputs: no evaluation JSONs for {lang!r}")
    seen = [_seed_scores(Path(p), lang, answer_lang) for p in eval_jsons]
    (first, ids0, sc0), files = seen[0], tuple(str(predictions_file(p)) for p in eval_jsons)
    for (report, ids, sc), f in zip(seen[1:], files[1:]):
        if (report["task"], report["split"]) != (first["task"], first["split"]):
            raise XltError(f"{f}: {report['task']}/{report['split']}, but {files[0]}: {first['task']}/{first['split']}")
        if ids != ids0:
            raise XltError(f"{f} and {files[0]} ({lang}): different examples or order")
    seeds = tuple(int(r["seed"]) for r, _, _ in seen)
    if len(set(seeds)) != len(seeds):
        raise XltError(f"read_seed_outputs: seed(s) repeated in {', '.join(files)}: {seeds}")
    return SeedOutputs(first["task"], lang, first["split"], sc0.metric, sc0.reduce, seeds, ids0,
                       np.stack([sc.values for _, _, sc in seen]), files)


def compare_outputs(a: SeedOutputs, b: SeedOutputs, rounds: int = 1000, seed: int = 0) -> dict:
    """The adjust paper's significance test of model `a` against model `b` (Sect. 5):

    - a metric that is a mean over examples (XNLI accuracy, QA F1): `seed_averaged_ttest`;
    - NER span F1: the seeds' per-sentence counts concatenated (seed after seed, sentence
      ``i`` of seed ``s`` of A paired with the same of B), `f1_permutation_test` with
      `rounds` rounds seeded by `seed`; the unit swapped is a sentence, as the authors saved
      predictions per sentence and a span cannot be split between models.

    Seeds are paired by number: both sides must have the same seeds and the same examples
    in the same order (ids), else XltError naming both sides' files.
    Returns ``{"test", "metric", "a", "b", "difference", "pvalue", "n"}`` (+ ``"statistic"``
    for the t-test); ``a`` / ``b``: the metric over all seeds (mean, or the pooled F1).
    """
    # deferred: loads sklearn only when this runs
    from xlt.metrics import f1_of_counts

    where = f"{a.files[0]} vs {b.files[0]}"
    if (a.task, a.lang, a.split, a.metric) != (b.task, b.lang, b.split, b.metric):
        raise XltError(f"{where}: not the same test set ({a.task}/{a.split}/{a.lang} {a.metric} vs "
                       f"{b.task}/{b.split}/{b.lang} {b.metric})")
    if a.ids != b.ids:
        raise XltError(f"{where}: different examples or order ({a.lang}: {len(a.ids)} vs {len(b.ids)} examples)")
    if sorted(a.seeds) != sorted(b.seeds):
        raise XltError(f"{where}: seeds {sorted(a.seeds)} vs {sorted(b.seeds)}; paired by seed, they must agree")
    va, vb = a.values[np.argsort(a.seeds)], b.values[np.argsort(b.seeds)]
    if a.reduce == "mean":
        t = seed_averaged_ttest(va, vb)
        return {"test": "paired t-test over examples (seed means)", "metric": a.metric, "a": float(va.mean()),
                "b": float(vb.mean()), "n": len(a.ids), **t}
    ca, cb = va.reshape(-1, 3), vb.reshape(-1, 3)
    r = f1_permutation_test(ca, cb, rounds=rounds, seed=seed)
    return {"test": f"paired permutation test, {rounds} rounds, sentences of all seeds", "metric": a.metric,
            "a": float(f1_of_counts(ca)), "b": float(f1_of_counts(cb)), "n": len(ca), **r}
