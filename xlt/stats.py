"""Significance tests and seed aggregation used by the papers (SciPy / NumPy underneath)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from xlt.errors import XltError


def _sps():
    """scipy.stats, imported on first use: the workflow imports this module (through the
    tables) to build its DAG, where scipy's half a second of import buys nothing."""
    from scipy import stats

    return stats


__all__ = ["paired_ttest", "permutation_test", "mean_std", "confidence_interval_95"]


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

    idx_a = np.arange(n)
    idx_b = np.arange(n, 2 * n)
    observed = diff(idx_a, idx_b)
    res = _sps().permutation_test(
        (idx_a, idx_b),
        lambda x, y: abs(diff(x, y)),
        permutation_type="samples",
        vectorized=False,
        n_resamples=rounds,
        alternative="greater",
        batch=min(rounds, 100),
        rng=np.random.default_rng(seed),
    )
    return {"difference": observed, "pvalue": float(res.pvalue)}


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
