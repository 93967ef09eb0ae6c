"""Which of a paper's findings hold: its claims as data, each decided on the table and figure
CSVs the workflow made, rendered as one page (results/claims.md and .csv).

A paper's claims live in its folder (`xlt/papers/<slug>/claims.yaml`, registered by its plugin's
`Paper.claims`): the sentence quoted with its section, the cells it compares (a table or figure
CSV, filters on its columns), the direction and size it states, and the test that decides it:

    difference   mean of the A cells minus mean of the B cells, per seed (paired where both sides
                 list their seeds: the table CSV's `per_seed`), its 95 % interval over seeds
    count        one such comparison per group of `per`; how many are significant in the stated
                 direction (by the seeds' interval, or by the paper's own test: `significance:
                 pvalue`, the table's column of it, computed by xlt.stats), against `at_least` /
                 `at_most`
    equivalence  the difference's 95 % interval inside ±`margin` (a claim of "equally" / "flat")
    correlation  Pearson's or Spearman's r of two columns across the rows, its sign and p-value

Verdicts: holds (significant in the stated direction), contradicted (significant the other way),
inconclusive (the interval spans the line: with the seeds needed to decide it, from the observed
variance), not run (no cell of ours). Each claim is decided again without its collapsed seeds
(the `†` of the tables: `per_seed` marks them), and shows the spread of its per-seed differences.

    spec = parse_claims(yaml.safe_load(text), "xlt/papers/<slug>/claims.yaml")
    table = evaluate(slug, spec.claims, {"tables/table2": "results/tables/<slug>/table2.csv"}, reflects)
    markdown = render(table, {slug: title}, {slug: spec.left_out})
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from xlt.errors import XltError
from xlt.io import write_text

TESTS = ("difference", "count", "equivalence", "correlation")
DIRECTIONS = {"difference": ("greater", "less"), "count": ("greater", "less"), "equivalence": (),
              "correlation": ("positive", "negative")}
VERDICTS = ("holds", "contradicted", "inconclusive", "not run")
ALPHA = 0.05
MAX_SEEDS = 1000  # seeds-to-decide beyond this: "more than 1000"
# the columns of a table CSV (xlt.tables.paper_vs_ours) a sample reads; a figure's claim names its own
TABLE_COLUMNS = {"mean": "ours_mean", "std": "ours_std", "n": "n_seeds", "per_seed": "per_seed", "paper": "paper"}
COLUMNS = (  # results/claims.csv, one row per claim
    "paper", "claim", "section", "quote", "source", "test", "stated", "paper_value", "ours", "ci_low", "ci_high",
    "n_seeds", "verdict", "seeds_to_decide", "spread", "n_collapsed", "ours_without_collapsed",
    "verdict_without_collapsed", "reflects", "detail")
_KEYS = {"id", "quote", "section", "source", "test", "stated", "where", "between", "a", "b", "match", "per", "direction",
         "at_least", "at_most", "margin", "significance", "x", "y", "method", "columns", "note"}


@dataclass(frozen=True)
class Claim:
    id: str
    quote: str  # the paper's sentence, verbatim
    section: str  # where it says so, e.g. "Abstract", "6 Conclusion"
    kind: str  # "table" or "figure"
    item: str  # the table or figure id, e.g. "table2"
    test: str  # one of TESTS
    stated: str  # the direction and size as the paper states them, e.g. "+1.5 points"
    where: dict = field(default_factory=dict)  # a filter every row of the claim passes
    between: dict = field(default_factory=dict)  # column -> [low, high]: rows within (numeric, inclusive)
    a: dict = field(default_factory=dict)  # the cells of the claimed-better side
    b: dict = field(default_factory=dict)  # the cells it is compared with
    match: tuple[str, ...] = ()  # columns whose values an A cell and a B cell share (e.g. lang)
    per: tuple[str, ...] = ()  # count: one comparison per value of these columns
    direction: str = ""
    at_least: int | None = None
    at_most: int | None = None
    margin: float | None = None
    significance: str | None = None  # count/difference: a column holding the paper's own test's p-value on A's rows
    x: str | None = None  # correlation: the columns correlated (y: default the mean column)
    y: str | None = None
    method: str = "pearson"
    columns: dict = field(default_factory=dict)  # overrides of TABLE_COLUMNS (a figure CSV's mean/std/n)
    note: str = ""  # what differs from the paper's own comparison

    @property
    def key(self) -> str:
        """The item as results/ names it: tables/<id> or figures/<id>."""
        return f"{self.kind}s/{self.item}"

    @property
    def source(self) -> str:
        return f"{self.item}" + (" (figure CSV)" if self.kind == "figure" else "")

    def column(self, name: str) -> str | None:
        return {**TABLE_COLUMNS, **self.columns}.get(name)


@dataclass(frozen=True)
class ClaimsFile:
    claims: list[Claim]
    left_out: list[dict]  # {finding, why}: the findings of the abstract and conclusion not tested
    # table -> {column: [values]}: rows a built table shows beyond its published cells (e.g. a
    # control run the paper gives in its prose), which the claims may name
    beyond_published: dict


TOP_KEYS = ("claims", "left_out", "beyond_published")


def parse_claims(data: Mapping, where: str) -> ClaimsFile:
    """The claims, the left-out findings ({finding, why}) and the rows beyond the published
    cells of one claims file; XltError naming `where` and the claim for a missing or unknown
    key, a test or direction not allowed."""
    if not isinstance(data, Mapping) or "claims" not in data:
        raise XltError(f"{where}: expected a mapping with `claims:` (and `left_out:`)")
    unknown_top = set(data) - set(TOP_KEYS)
    if unknown_top:
        raise XltError(f"{where}: unknown key(s) {sorted(unknown_top)}; allowed: {', '.join(TOP_KEYS)}")
    claims, seen = [], set()
    for i, c in enumerate(data["claims"] or []):
        at = f"{where}: claims[{i}]" + (f" ({c.get('id')})" if isinstance(c, Mapping) and c.get("id") else "")
        if not isinstance(c, Mapping):
            raise XltError(f"{at}: expected a mapping")
        if bad := set(c) - _KEYS:
            raise XltError(f"{at}: unknown key(s) {sorted(bad)}; allowed: {', '.join(sorted(_KEYS))}")
        for key in ("id", "quote", "section", "source", "test", "stated"):
            if not c.get(key):
                raise XltError(f"{at}: `{key}` is required")
        if c["id"] in seen:
            raise XltError(f"{at}: id {c['id']!r} repeated")
        seen.add(c["id"])
        if c["test"] not in TESTS:
            raise XltError(f"{at}: test {c['test']!r}; allowed: {', '.join(TESTS)}")
        src = c["source"]
        if not (isinstance(src, Mapping) and len(src) == 1 and next(iter(src)) in ("table", "figure")):
            raise XltError(f"{at}: source must be {{table: <id>}} or {{figure: <id>}}, got {src!r}")
        kind, item = next(iter(src.items()))
        allowed = DIRECTIONS[c["test"]]
        if allowed and c.get("direction") not in allowed:
            raise XltError(f"{at}: direction {c.get('direction')!r}; allowed for {c['test']}: {', '.join(allowed)}")
        needs = {"difference": ("a", "b"), "count": ("a", "b", "per"), "equivalence": ("a", "b", "margin"),
                 "correlation": ("x",)}[c["test"]]
        for key in needs:
            if c.get(key) in (None, {}, []):
                raise XltError(f"{at}: test {c['test']} needs `{key}`")
        if c["test"] == "count" and (c.get("at_least") is None) == (c.get("at_most") is None):
            raise XltError(f"{at}: test count needs exactly one of `at_least`, `at_most`")
        if c.get("method", "pearson") not in ("pearson", "spearman"):
            raise XltError(f"{at}: method {c['method']!r}; allowed: pearson, spearman")
        claims.append(Claim(
            id=c["id"], quote=" ".join(str(c["quote"]).split()), section=c["section"], kind=kind, item=str(item),
            test=c["test"], stated=str(c["stated"]), where=dict(c.get("where") or {}),
            between={k: tuple(v) for k, v in (c.get("between") or {}).items()}, a=dict(c.get("a") or {}),
            b=dict(c.get("b") or {}), match=tuple(c.get("match") or ()), per=tuple(c.get("per") or ()),
            direction=c.get("direction", ""), at_least=c.get("at_least"), at_most=c.get("at_most"),
            margin=c.get("margin"), significance=c.get("significance"), x=c.get("x"), y=c.get("y"),
            method=c.get("method", "pearson"), columns=dict(c.get("columns") or {}),
            note=" ".join(str(c.get("note", "")).split())))
    left_out = list(data.get("left_out") or [])
    for j, lo in enumerate(left_out):
        if not (isinstance(lo, Mapping) and set(lo) == {"finding", "why"}):
            raise XltError(f"{where}: left_out[{j}] must be {{finding: …, why: …}}")
    beyond = dict(data.get("beyond_published") or {})
    return ClaimsFile(claims, left_out, beyond)


def filters(claim: Claim) -> list[tuple[str, dict]]:
    """(name, filter) of every filter a claim applies: where, a, b."""
    return [("where", claim.where), ("a", claim.a), ("b", claim.b)]


def check_references(claim: Claim, columns: list[str], rows: pd.DataFrame, where: str, beyond: Mapping = {}) -> None:
    """Every column a claim names is one of `columns`, every value it filters on occurs in `rows`
    (e.g. the paper's published table, whose every cell the built table keeps) or in `beyond`
    (column -> values the built table shows beyond them)."""
    named = [*claim.match, *claim.per, *claim.between] + [k for _, f in filters(claim) for k in f]
    if bad := [c for c in named if c not in columns]:
        raise XltError(f"{where}: claim {claim.id}: column(s) {bad} not in {claim.item} (columns: {', '.join(columns)})")
    for name, f in filters(claim):
        for col, want in f.items():
            have = set(rows[col].astype(str)) | {str(v) for v in beyond.get(col, [])}
            if missing := [v for v in _as_list(want) if str(v) not in have]:
                raise XltError(f"{where}: claim {claim.id}: {name}.{col} value(s) {missing} not in {claim.item} "
                               f"(has: {', '.join(sorted(have))})")
    if claim.test == "count" and claim.at_least is not None and not beyond:
        groups = {tuple(r) for r in select(_rows(claim, rows), claim.a)[list(claim.per)].astype(str).values.tolist()}
        if len(groups) < claim.at_least:
            raise XltError(f"{where}: claim {claim.id}: at_least {claim.at_least}, but {claim.item} has "
                           f"{len(groups)} comparison(s) per {', '.join(claim.per)}: it could never hold")


# ---- samples: one cell's seeds, or its mean, std and count -----------------------------------


@dataclass(frozen=True)
class Sample:
    mean: float
    std: float  # NaN: one value, or not known
    n: int
    seeds: dict | None = None  # seed -> value, where the CSV lists them
    collapsed: frozenset = frozenset()  # seeds marked † (collapsed)


def parse_per_seed(text) -> tuple[dict, frozenset]:
    """`1=71.2000 2=70.1000†` -> ({1: 71.2, 2: 70.1}, {2})."""
    values, collapsed = {}, set()
    for part in str(text).split():
        seed, _, value = part.partition("=")
        if value.endswith("†"):
            value = value[:-1]
            collapsed.add(seed)
        values[seed] = float(value)
    return values, frozenset(collapsed)


def _sample(row, claim: Claim) -> Sample | None:
    mean = row.get(claim.column("mean"))
    if mean is None or pd.isna(mean):
        return None
    std_col, n_col, seed_col = claim.column("std"), claim.column("n"), claim.column("per_seed")
    std = row.get(std_col) if std_col else None
    n = row.get(n_col) if n_col else None
    seeds, collapsed = (None, frozenset())
    if seed_col and isinstance(row.get(seed_col), str) and row.get(seed_col).strip():
        seeds, collapsed = parse_per_seed(row[seed_col])
    n = int(n) if n is not None and not pd.isna(n) else (len(seeds) if seeds else 1)
    return Sample(float(mean), float(std) if std is not None and not pd.isna(std) else math.nan, n, seeds, collapsed)


def _combine(samples: list[Sample], drop: frozenset = frozenset()) -> Sample | None:
    """The mean of several cells, per seed where every cell lists its seeds (their common seeds
    less `drop`), else of their means (std: as if the cells were independent)."""
    if not samples:
        return None
    if all(s.seeds is not None for s in samples):
        common = set.intersection(*(set(s.seeds) for s in samples)) - set(drop)
        if not common:
            return None
        per = {k: float(np.mean([s.seeds[k] for s in samples])) for k in sorted(common, key=_seed_key)}
        vals = list(per.values())
        std = float(np.std(vals, ddof=1)) if len(vals) > 1 else math.nan
        return Sample(float(np.mean(vals)), std, len(vals), per)
    if drop:
        return None  # which seeds collapsed is not in the CSV
    stds = [s.std for s in samples]
    std = math.sqrt(sum(x * x for x in stds)) / len(samples) if not any(math.isnan(x) for x in stds) else math.nan
    return Sample(float(np.mean([s.mean for s in samples])), std, min(s.n for s in samples))


def _seed_key(seed):
    return (0, int(seed)) if str(seed).isdigit() else (1, str(seed))


# ---- the statistics ---------------------------------------------------------------------------


def _t(df: float) -> float:
    # deferred: loads scipy only when this runs
    from scipy import stats

    return float(stats.t.ppf(1 - ALPHA / 2, df))


@dataclass(frozen=True)
class Diff:
    value: float
    low: float  # NaN: no interval (fewer than 2 seeds)
    high: float
    n: int  # seeds (per side)
    paired: bool
    per_seed: tuple = ()  # the per-seed differences, where paired
    sd: float = math.nan  # of the per-seed differences (paired), or the pooled per-side sd

    def seeds_needed(self, bound: float = 0.0) -> int | None:
        """Seeds (per side) at which the observed difference's 95 % interval, at the observed
        variance, would exclude `bound` (0, or a margin); None: the difference is on the line."""
        gap = abs(self.value - bound) if bound == 0 else bound - abs(self.value)
        if not gap > 0 or math.isnan(self.sd):
            return None
        if self.sd == 0:
            return 2
        for n in range(2, MAX_SEEDS + 1):
            df = n - 1 if self.paired else 2 * n - 2
            if _t(df) * self.sd * math.sqrt((1 if self.paired else 2) / n) < gap:
                return n
        return MAX_SEEDS + 1


def difference(a: Sample, b: Sample) -> Diff:
    """A − B with its 95 % interval: paired over the seeds both list, else Welch's."""
    if a.seeds is not None and b.seeds is not None and set(a.seeds) == set(b.seeds):
        d = [a.seeds[k] - b.seeds[k] for k in sorted(a.seeds, key=_seed_key)]
        mean = float(np.mean(d))
        if len(d) < 2:
            return Diff(mean, math.nan, math.nan, len(d), True, tuple(d))
        sd = float(np.std(d, ddof=1))
        half = _t(len(d) - 1) * sd / math.sqrt(len(d))
        return Diff(mean, mean - half, mean + half, len(d), True, tuple(d), sd)
    mean, n = a.mean - b.mean, min(a.n, b.n)
    if a.n < 2 or b.n < 2 or math.isnan(a.std) or math.isnan(b.std):
        return Diff(mean, math.nan, math.nan, n, False)
    va, vb = a.std ** 2 / a.n, b.std ** 2 / b.n
    se = math.sqrt(va + vb)
    if se == 0:
        return Diff(mean, mean, mean, n, False, sd=0.0)
    df = (va + vb) ** 2 / (va ** 2 / (a.n - 1) + vb ** 2 / (b.n - 1))
    half = _t(df) * se
    return Diff(mean, mean - half, mean + half, n, False, sd=math.sqrt((a.std ** 2 + b.std ** 2) / 2))


def side_of(d: Diff) -> int:
    """+1 / -1: the interval lies above / below 0; 0: it spans 0 or there is none."""
    if math.isnan(d.low):
        return 0
    return 1 if d.low > 0 else -1 if d.high < 0 else 0


# ---- one claim against its CSV ---------------------------------------------------------------


def _as_list(v) -> list:
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _isin(column: pd.Series, wanted: list) -> pd.Series:
    """Numbers compared as numbers (alpha 0 matches 0.0), anything else as text."""
    if pd.api.types.is_numeric_dtype(column):
        try:
            return column.isin([float(v) for v in wanted])
        except (TypeError, ValueError):
            pass
    return column.astype(str).isin([str(v) for v in wanted])


def select(df: pd.DataFrame, *fs: dict) -> pd.DataFrame:
    """The rows passing every filter (column -> value or list of values; compared as text)."""
    if df.empty and not len(df.columns):  # a table with no rows at all (nothing of it run): nothing passes
        return df
    keep = pd.Series(True, index=df.index)
    for f in fs:
        for col, want in f.items():
            if col not in df:
                raise XltError(f"filter on column {col!r}: not in the CSV (columns: {', '.join(df.columns)})")
            keep &= _isin(df[col], _as_list(want))
    return df[keep]


def _rows(claim: Claim, df: pd.DataFrame) -> pd.DataFrame:
    """The rows passing the claim's `where` and `between`."""
    rows = select(df, claim.where)
    for col, (lo, hi) in claim.between.items():
        if col not in rows:
            raise XltError(f"between on column {col!r}: not in the CSV (columns: {', '.join(df.columns)})")
        v = pd.to_numeric(rows[col], errors="coerce")
        rows = rows[(v >= lo) & (v <= hi)]
    return rows


def _pairs(claim: Claim, df: pd.DataFrame, value: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The A and B rows that have `value` and whose `match` columns occur on both sides."""
    rows = _rows(claim, df)
    a, b = select(rows, claim.a), select(rows, claim.b)
    a, b = (s[s[value].notna()] if value in s else s.iloc[:0] for s in (a, b))
    if claim.match:
        keys_a = set(map(tuple, a[list(claim.match)].astype(str).values.tolist()))
        keys_b = set(map(tuple, b[list(claim.match)].astype(str).values.tolist()))
        both = keys_a & keys_b
        a = a[[tuple(r) in both for r in a[list(claim.match)].astype(str).values.tolist()]]
        b = b[[tuple(r) in both for r in b[list(claim.match)].astype(str).values.tolist()]]
    return a, b


def _diff_of(claim: Claim, a_rows: pd.DataFrame, b_rows: pd.DataFrame, without_collapsed: bool) -> Diff | None:
    sa = [s for s in (_sample(r, claim) for _, r in a_rows.iterrows()) if s]
    sb = [s for s in (_sample(r, claim) for _, r in b_rows.iterrows()) if s]
    drop = frozenset()
    if without_collapsed:
        if not all(s.seeds is not None for s in sa + sb):
            return None  # which seeds collapsed: not in the CSV (no per_seed column)
        drop = frozenset().union(*(s.collapsed for s in sa + sb))
    ca, cb = _combine(sa, drop), _combine(sb, drop)
    if ca is None or cb is None:
        return None
    return difference(ca, cb)


def _paper_diff(claim: Claim, df: pd.DataFrame) -> float:
    paper = claim.column("paper")
    if paper not in df:
        return math.nan
    a, b = _pairs(claim, df, paper)
    if a.empty or b.empty:
        return math.nan
    return float(a[paper].mean() - b[paper].mean())


def _fmt(x, digits=2, sign=True) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def _digits(df: pd.DataFrame, claim: Claim) -> int:
    col = claim.column("mean")
    vals = df[col].dropna().abs() if col in df else pd.Series(dtype=float)
    return 4 if len(vals) and vals.max() <= 1.5 else 2


def _seeds_text(n: int | None) -> str:
    if n is None:
        return "no number of seeds (the observed difference is 0)"
    return f"more than {MAX_SEEDS} seeds" if n > MAX_SEEDS else f"{n} seeds"


def _verdict_of_diff(claim: Claim, d: Diff | None) -> tuple[str, str]:
    """(verdict, seeds to decide) of a difference or equivalence claim."""
    if d is None:
        return "not run", ""
    if claim.test == "equivalence":
        m = claim.margin
        if math.isnan(d.low):
            return "inconclusive", "at least 2 seeds (no spread yet)"
        if -m <= d.low and d.high <= m:
            return "holds", ""
        if d.low > m or d.high < -m:
            return "contradicted", ""
        return "inconclusive", _seeds_text(d.seeds_needed(m)) if abs(d.value) < m else _seeds_text(d.seeds_needed())
    want = 1 if claim.direction == "greater" else -1
    side = side_of(d)
    if side == want:
        return "holds", ""
    if side == -want:
        return "contradicted", ""
    lean = " (ours leans the other way)" if np.sign(d.value) == -want else ""
    return "inconclusive", ("at least 2 seeds (no spread yet)" if math.isnan(d.low) else _seeds_text(d.seeds_needed())) + lean


def _spread(d: Diff | None, digits: int) -> str:
    if d is None:
        return ""
    if d.per_seed:
        lo, hi = min(d.per_seed), max(d.per_seed)
        return f"per-seed Δ {_fmt(lo, digits)} … {_fmt(hi, digits)}" + (
            f" (sd {_fmt(d.sd, digits, False)})" if not math.isnan(d.sd) else "")
    return f"sd per side {_fmt(d.sd, digits, False)} (means only)" if not math.isnan(d.sd) else "one seed: no spread"


def _n_collapsed(claim: Claim, rows: pd.DataFrame) -> int:
    seeds = set()
    col = claim.column("per_seed")
    for _, r in rows.iterrows():
        if col in r and isinstance(r[col], str):
            seeds |= parse_per_seed(r[col])[1]
        elif "n_collapsed" in r and not pd.isna(r["n_collapsed"]) and r["n_collapsed"] > 0:
            seeds.add(f"row {_}")  # a CSV without per_seed: the cell's count, not which seeds
    return len(seeds)


def _ci_text(d: Diff, digits: int) -> str:
    ci = f" [{_fmt(d.low, digits)}, {_fmt(d.high, digits)}]" if not math.isnan(d.low) else " (no interval)"
    return f"{_fmt(d.value, digits)}{ci}"


def _decide_difference(claim: Claim, df: pd.DataFrame) -> dict:
    mean = claim.column("mean")
    a, b = _pairs(claim, df, mean)
    d = _diff_of(claim, a, b, False)
    verdict, need = _verdict_of_diff(claim, d)
    if claim.significance and d is not None and claim.test == "difference":
        verdict, need = _by_pvalue(claim, a, d)
    digits = _digits(df, claim)
    out = {"paper_value": _fmt(_paper_diff(claim, df), digits), "verdict": verdict, "seeds_to_decide": need,
           "n_collapsed": _n_collapsed(claim, pd.concat([a, b]))}
    if d is None:
        return {**out, "detail": "no cell of ours (see the table's notes)"}
    dw = _diff_of(claim, a, b, True) if out["n_collapsed"] else d
    vw = _verdict_of_diff(claim, dw)[0] if claim.significance is None else (
        "–" if out["n_collapsed"] else verdict)
    return {**out, "ours": _ci_text(d, digits), "ci_low": d.low, "ci_high": d.high, "n_seeds": d.n,
            "spread": _spread(d, digits), "ours_without_collapsed": _ci_text(dw, digits) if dw else "no seed left, or the CSV lists no seeds",
            "verdict_without_collapsed": vw if dw else "not run",
            "detail": f"{len(a)} vs {len(b)} cells, {'paired by seed' if d.paired else 'means only (Welch)'}"}


def _by_pvalue(claim: Claim, a_rows: pd.DataFrame, d: Diff) -> tuple[str, str]:
    p = a_rows[claim.significance].dropna()
    if len(p) != 1:
        raise XltError(f"claim {claim.id}: significance {claim.significance!r} needs one A cell with a p-value, "
                       f"found {len(p)}")
    want = 1 if claim.direction == "greater" else -1
    if float(p.iloc[0]) >= ALPHA or d.value == 0:
        return "inconclusive", ""
    return ("holds" if np.sign(d.value) == want else "contradicted"), ""


def _decide_count(claim: Claim, df: pd.DataFrame) -> dict:
    mean = claim.column("mean")
    a_all, b_all = _pairs(claim, df, mean)
    want = 1 if claim.direction == "greater" else -1
    groups = sorted(set(map(tuple, select(_rows(claim, df), claim.a)[list(claim.per)].astype(str).values.tolist())))
    wins = losses = run = 0
    wins_kept = losses_kept = run_kept = 0
    needs, lines, collapsed_any = [], [], 0
    paper_wins = 0
    paper = claim.column("paper")
    for g in groups:
        f = dict(zip(claim.per, g))
        a, b = select(a_all, f), select(b_all, f)
        pa, pb = select(select(_rows(claim, df), claim.a), f), select(select(_rows(claim, df), claim.b), f)
        if paper in df and len(pa) and len(pb) and pa[paper].notna().all() and pb[paper].notna().all():
            pd_ = pa[paper].mean() - pb[paper].mean()
            sig = (pa["paper_mark"].fillna("").astype(str).str.len() > 0).all() if (
                claim.significance and "paper_mark" in pa) else True
            paper_wins += int(np.sign(pd_) == want and sig)
        d = _diff_of(claim, a, b, False)
        if d is None:
            continue
        run += 1
        nc = _n_collapsed(claim, pd.concat([a, b]))
        collapsed_any += nc
        if claim.significance:
            p = a[claim.significance].dropna()
            side = int(np.sign(d.value)) if len(p) == 1 and float(p.iloc[0]) < ALPHA else 0
            test = f"p={float(p.iloc[0]):.3f}" if len(p) == 1 else "no test"
        else:
            side = side_of(d)
            test = "95% interval" if not math.isnan(d.low) else "no interval"
            if side == 0:
                needs.append(d.seeds_needed())
        wins += side == want
        losses += side == -want
        if not nc:  # the comparisons without a collapsed seed
            run_kept += 1
            wins_kept += side == want
            losses_kept += side == -want
        lines.append(f"{'/'.join(g)} {_fmt(d.value, _digits(df, claim))} ({test})")
    if not run:
        return {"verdict": "not run", "paper_value": _count_text(claim, paper_wins, len(groups)),
                "detail": "no cell of ours (see the table's notes)"}

    def verdict(w, lo, n):
        if claim.at_least is not None:
            return "holds" if w >= claim.at_least else "contradicted" if n - lo < claim.at_least else "inconclusive"
        # "no significant gain": decided by the tests' outcome, as the paper decides it
        return "contradicted" if w > claim.at_most else "holds"

    # a comparison not run can still count: contradicted only when too many are significant the other way
    v = verdict(wins, losses, len(groups))
    need = ""
    if v == "inconclusive" and run < len(groups):
        need = f"the {len(groups) - run} of {len(groups)} comparisons not run"
    elif v == "inconclusive" and claim.at_least is not None and not claim.significance:
        short = claim.at_least - wins
        ordered = sorted(n for n in needs if n is not None)
        need = _seeds_text(ordered[short - 1]) if len(ordered) >= short else "no number of seeds (too few comparisons lean the stated way)"
    vw = verdict(wins_kept, losses_kept, len(groups) - (run - run_kept)) if run_kept else "not run"
    return {"paper_value": _count_text(claim, paper_wins, len(groups)),
            "ours": f"{wins} of {run} significantly {'better' if want > 0 else 'worse'}" + (
                f" ({losses} the other way)" if losses else ""),
            "n_seeds": _max_seeds(claim, a_all), "verdict": v, "seeds_to_decide": need,
            "n_collapsed": collapsed_any,
            "ours_without_collapsed": f"{wins_kept} of {run_kept} (comparisons with no collapsed seed)",
            "verdict_without_collapsed": vw if collapsed_any else v,
            "spread": "; ".join(lines),
            "detail": "the paper's own test (the table's p-values)" if claim.significance else "95% interval over seeds"}


def _count_text(claim: Claim, wins: int, groups: int) -> str:
    return f"{wins} of {groups}"


def _max_seeds(claim: Claim, rows: pd.DataFrame) -> int:
    n = claim.column("n")
    return int(rows[n].max()) if n in rows and rows[n].notna().any() else 0


def _decide_correlation(claim: Claim, df: pd.DataFrame) -> dict:
    # deferred: loads scipy only when this runs
    from scipy import stats

    y = claim.y or claim.column("mean")
    rows = _rows(claim, df)
    for col in (claim.x, y):
        if col not in rows:
            raise XltError(f"claim {claim.id}: column {col!r} not in {claim.item} (columns: {', '.join(df.columns)})")
    rows = rows[rows[claim.x].notna() & rows[y].notna()]
    if len(rows) < 3:
        return {"verdict": "not run" if rows.empty else "inconclusive", "paper_value": "",
                "seeds_to_decide": "" if rows.empty else "at least 3 points",
                "detail": f"{len(rows)} point(s) with both {claim.x} and {y}"}

    def corr(r):
        fn = stats.pearsonr if claim.method == "pearson" else stats.spearmanr
        res = fn(r[claim.x].astype(float), r[y].astype(float))
        return float(res.statistic), float(res.pvalue)

    rho, p = corr(rows)
    want = 1 if claim.direction == "positive" else -1

    def verdict(rho, p):
        if math.isnan(rho) or p >= ALPHA:
            return "inconclusive"
        return "holds" if np.sign(rho) == want else "contradicted"

    v = verdict(rho, p)
    need = ""
    if v == "inconclusive" and not math.isnan(rho) and abs(rho) < 1:
        need = f"{_points_needed(rho)} points (at this r)"
    nc_col = "n_collapsed"
    kept = rows[rows[nc_col].fillna(0) == 0] if nc_col in rows else rows
    n_coll = len(rows) - len(kept)
    vw, ow = v, ""
    if n_coll:
        if len(kept) >= 3:
            rk, pk = corr(kept)
            vw, ow = verdict(rk, pk), f"r {_fmt(rk, 3)} (p {pk:.3g}, {len(kept)} points)"
        else:
            vw, ow = "inconclusive", f"{len(kept)} points"
    name = "r" if claim.method == "pearson" else "ρ"
    return {"paper_value": "", "ours": f"{name} {_fmt(rho, 3)} (p {p:.3g})", "n_seeds": _max_seeds(claim, rows),
            "verdict": v, "seeds_to_decide": need, "n_collapsed": n_coll, "ours_without_collapsed": ow or "–",
            "verdict_without_collapsed": vw, "spread": f"{len(rows)} points",
            "detail": f"{claim.method} of {y} on {claim.x}, {len(rows)} points"}


def _points_needed(r: float) -> str:
    for n in range(4, MAX_SEEDS + 1):
        if abs(r) * math.sqrt(n - 2) / math.sqrt(1 - r * r) > _t(n - 2):
            return str(n)
    return f"more than {MAX_SEEDS}"


DECIDE = {"difference": _decide_difference, "equivalence": _decide_difference, "count": _decide_count,
          "correlation": _decide_correlation}


def decide(claim: Claim, df: pd.DataFrame | None) -> dict:
    """One claim's row of results/claims.csv (less the paper and context columns)."""
    base = {"claim": claim.id, "section": claim.section, "quote": claim.quote, "source": claim.source,
            "test": claim.test, "stated": claim.stated}
    if df is None:
        return {**base, "verdict": "not run", "detail": f"{claim.item}: not made by this configuration"}
    return {**base, **DECIDE[claim.test](claim, df)}


def evaluate(slug: str, claims: list[Claim], files: Mapping[str, str], reflects: str) -> pd.DataFrame:
    """Every claim of a paper decided on the CSVs `files` maps to (`Claim.key` -> path, e.g.
    "tables/table2"; an item not there: not made by this configuration). `reflects`: the preset and encoder, said per row."""
    frames = {key: pd.read_csv(path) for key, path in files.items()}
    rows = []
    for c in claims:
        try:
            row = decide(c, frames.get(c.key))
        except XltError as e:
            raise XltError(f"{files.get(c.key, c.key)}: {e}") from None
        if c.note:
            row["detail"] = f"{row.get('detail', '')}; {c.note}".strip("; ")
        rows.append({"paper": slug, **row, "reflects": reflects})
    return pd.DataFrame(rows, columns=list(COLUMNS))


# ---- the page ---------------------------------------------------------------------------------


def _cell(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return str(x).replace("|", "\\|").replace("\n", " ")


def render(table: pd.DataFrame, titles: Mapping[str, str], left_out: Mapping[str, list[dict]]) -> str:
    """results/claims.md: per paper, one line per claim (quote, paper, ours with its interval and
    seeds, verdict, without collapsed seeds, spread), then the findings left out and why."""
    lines = ["# Which claims hold", "",
             "Each finding of a paper's abstract and conclusion, decided on this run's tables: *holds* (our 95 % "
             "interval over seeds, or the paper's own test, lies on the stated side), *contradicted* (significant "
             "the other way), *inconclusive* (the interval spans zero: the seeds that would decide it at the "
             "observed variance), *not run* (this configuration makes no cell of ours). A verdict is about what "
             "`reflects` names — on the tiny preset, about the synthetic world and the tiny encoder, never about "
             "mBERT or XLM-R. Without collapsed: the same test with the seeds marked † in the tables left out.", ""]
    counts = table["verdict"].value_counts()
    lines += ["Verdicts: " + ", ".join(f"{v} {int(counts.get(v, 0))}" for v in VERDICTS), ""]
    for slug in dict.fromkeys(table["paper"]):
        part = table[table["paper"] == slug]
        lines += [f"## {slug}: {titles.get(slug, slug)}", "", f"Reflects: {part['reflects'].iloc[0]}.", "",
                  "| claim | paper | ours [95 % CI] | seeds | verdict | without collapsed | spread across seeds |",
                  "|---|---|---|---|---|---|---|"]
        for _, r in part.iterrows():
            claim = f"**{_cell(r['claim'])}** ({_cell(r['section'])}): “{_cell(r['quote'])}” — {_cell(r['source'])}, " \
                    f"{_cell(r['test'])}"
            paper = _cell(r["stated"]) + (f" (table: {_cell(r['paper_value'])})" if _cell(r["paper_value"]) else "")
            verdict = _cell(r["verdict"]) + (f" (decided by {_cell(r['seeds_to_decide'])})"
                                              if _cell(r["seeds_to_decide"]) else "")
            n_coll = r["n_collapsed"]
            wo = "no collapsed seed" if pd.isna(n_coll) or int(n_coll) == 0 else \
                f"{_cell(r['verdict_without_collapsed'])}: {_cell(r['ours_without_collapsed'])} ({int(n_coll)} collapsed)"
            seeds = "" if pd.isna(r["n_seeds"]) else str(int(r["n_seeds"]))
            lines.append(f"| {claim} | {paper} | {_cell(r['ours'])} | {seeds} | {verdict} | "
                         f"{wo if r['verdict'] != 'not run' else ''} | {_cell(r['spread'])} |")
        details = [f"- {r['claim']}: {_cell(r['detail'])}" for _, r in part.iterrows() if _cell(r["detail"])]
        lines += ["", "How each was decided:", "", *details]
        if left_out.get(slug):
            lines += ["", "Findings left out:", ""]
            lines += [f"- “{' '.join(str(lo['finding']).split())}”: {' '.join(str(lo['why']).split())}"
                      for lo in left_out[slug]]
        lines.append("")
    return "\n".join(lines)


def write_csv(table: pd.DataFrame, path: str) -> None:

    counts = {c: table[c].map(lambda v: "" if pd.isna(v) else str(int(v))) for c in ("n_seeds", "n_collapsed")}
    write_text(path, table.assign(**counts).to_csv(index=False, float_format="%.4f"))


NUMERIC = ("ci_low", "ci_high", "n_seeds", "n_collapsed")


def read_csv(path: str) -> pd.DataFrame:
    """A claims CSV as `write_csv` wrote it: text columns as text (a "+1.05" stays signed), the
    numeric ones as numbers; what `render` reads, so that the page is the same from memory or file."""
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    if list(table.columns) != list(COLUMNS):
        raise XltError(f"{path}: not a claims CSV (columns {', '.join(table.columns)}; expected {', '.join(COLUMNS)})")
    for col in NUMERIC:
        table[col] = pd.to_numeric(table[col].replace("", np.nan))
    return table
