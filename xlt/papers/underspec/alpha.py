"""The interpolation coefficients α of the underspec paper's grids (Eq. 1-3): pure arithmetic,
no torch, so that checking a config (xlt.workflow.config, and Snakemake reading the rules) does not
import torch (~1 s of every `make tables` before its first job)."""

from __future__ import annotations

from decimal import Decimal

from xlt.errors import XltError

# Extra 1D points next to the endpoints (the paper's footnote 5).
ALPHA_EXTRA = ("0.025", "0.05", "0.075", "0.125", "0.15", "0.175",
               "0.825", "0.85", "0.875", "0.925", "0.95", "0.975")  # fmt: skip


def alpha_axis(step: float | str = "0.1", lo: float | str = "-0.5", hi: float | str = "1.5") -> list[float]:
    """lo, lo+step, …, hi as the floats nearest their exact decimal values.

    Computed in `Decimal`, so 0.3 is 0.3 and not 0.30000000000000004. The axis must hit 0
    and 1 (the endpoints every result is normalised by) and land on `hi` exactly.
    """
    d_step, d_lo, d_hi = (Decimal(str(v)) for v in (step, lo, hi))
    if d_step <= 0 or d_hi < d_lo:
        raise XltError(f"alpha axis: need step > 0 and lo <= hi, got step={step}, lo={lo}, hi={hi}")
    n = (d_hi - d_lo) / d_step
    if n != n.to_integral_value():
        raise XltError(f"alpha axis: step {step} does not divide [{lo}, {hi}] evenly")
    values = [float(d_lo + i * d_step) for i in range(int(n) + 1)]
    for must in (0.0, 1.0):
        if d_lo <= Decimal(int(must)) <= d_hi and must not in values:
            raise XltError(f"alpha axis: step {step} from {lo} misses α = {must:g}")
    return values


def alpha_grid_1d() -> list[float]:
    """The paper's 1D grid: {−0.5, −0.4, …, 1.5} ∪ ALPHA_EXTRA, sorted (33 values)."""
    return sorted(set(alpha_axis("0.1", "-0.5", "1.5")) | {float(Decimal(a)) for a in ALPHA_EXTRA})


def alpha_grid_2d(step: float | str = "0.1", lo: float | str = "-0.5", hi: float | str = "1.5") -> list[tuple[float, float]]:
    """All (α1, α2) pairs of `alpha_axis(step, lo, hi)` × itself, α1 major."""
    axis = alpha_axis(step, lo, hi)
    return [(a1, a2) for a1 in axis for a2 in axis]
