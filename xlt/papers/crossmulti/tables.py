"""crossmulti's tables: 1 (data sizes), 2 (cross vs multi), 6 (+FA, +DA, +combined), and the analyses
of Table 2's models, 3 (model probing), 4 (head probing) and 5 (PPPL), from the CSVs its analysis
rules write."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from xlt.errors import XltError
from xlt.paperkit import datasize
from xlt.papers.crossmulti.plan import SLUG
from xlt.paperkit.published import load_published
from xlt.tables import (COLLAPSE_NOTE, ORACLE_LEGEND, ORACLE_NOTE, SEEDS_LEGEND, TASK_LABELS, account, account_tasks, add_marks, add_oracle,
                        cell_text, eval_rows, oracle_cell, oracle_off_note, oracle_rows, paper_vs_ours, render_grid)
from xlt.dag.targets import Recipe


def table2(spec: dict, inputs: list[str]) -> tuple[pd.DataFrame, str, str]:
    source = spec["source"]
    setting_of = lambda r: "cross" if r.train_langs == (source,) else "multi"  # noqa: E731
    evals = [f for f in inputs if f.endswith(".json")]
    ours = eval_rows(evals, spec["metric"], setting_of)
    keys = ["task", "setting", "lang"]
    table = paper_vs_ours(ours, load_published(SLUG, "table2"), keys)
    table = account_tasks(table, spec["tasks"], f"papers.{SLUG}.tasks")
    if spec.get("oracle"):  # the inputs beside the evaluation files: the models, with their oracle.json
        table = add_oracle(table, oracle_rows([f for f in inputs if f not in evals], spec["metric"], setting_of), keys)
    seeds = sorted(ours["seed"].unique().tolist())
    notes = [
        "Metric (×100): " + ", ".join(f"{t} {m}" for t, m in spec["metric"].items() if t in spec["tasks"])
        + f". Encoder: {spec['encoder']}. Seeds: {seeds}.",
        "cross = fine-tuned on the source language only; multi = on all four languages.",
        select_note(spec),
        (ORACLE_NOTE if spec.get("oracle") else oracle_off_note(SLUG)),
        COLLAPSE_NOTE,
    ]
    md, tex = render_grid(table, ["task", "setting"], "lang", "crossmulti Table 2: cross- vs multi-lingual fine-tuning", notes,
                          cell=oracle_cell if spec.get("oracle") else cell_text,
                          legend=ORACLE_LEGEND if spec.get("oracle") else SEEDS_LEGEND)
    return table, md, tex


def select_note(spec: dict) -> str:
    """Which epoch is kept (the paper is silent: fidelity `selection`)."""
    select = spec.get("select", "best")
    which = ("the epoch with the best dev score, averaged over the training languages' dev sets (cross: EN "
             "dev only; multi: the four)" if select == "best" else "the last epoch")
    return f"Checkpoint: {which} (hparams profile {spec.get('hparams', '?')}, select: {select})."


def table1(spec: dict, inputs: list[str]) -> tuple[pd.DataFrame, str, str]:
    ours, published = datasize.counts(SLUG, spec, inputs)
    ours = ours[ours["split"].isin(published["split"].unique())]  # the paper prints train and test
    table = datasize.counts_vs_paper(ours, published, ["task", "split", "lang"], spec)
    notes = [
        "UD ES: the paper's 14,035 training sentences beside AnCora's test size (1,721) read as "
        "AnCora's 14,305 with two digits swapped (docs/papers.md).",
        "MARC: the mteb/amazon_reviews_multi mirror (the original was withdrawn).",
    ]
    md, tex = datasize.render(table, ["task", "split"], "lang", "crossmulti Table 1: training and test set sizes", spec, notes)
    return table, md, tex


def table6_setting(eval_path: str) -> str:
    """cross / fa / da / combined from an evaluation file's path (…/{init}/{task}/{recipe}/seed{s}/…)."""
    parts = Path(eval_path).parts
    adapted, aux = parts[-5] != "pretrained", Recipe.parse(parts[-3]).aux is not None
    return {(False, False): "cross", (False, True): "fa", (True, False): "da", (True, True): "combined"}[(adapted, aux)]


def table6(spec: dict, inputs: list[str]) -> tuple[pd.DataFrame, str, str]:
    ours = pd.concat([eval_rows([path], spec["metric"], lambda r, s=table6_setting(path): s) for path in inputs],
                     ignore_index=True)
    published = load_published(SLUG, "table6")
    table = paper_vs_ours(ours, published, ["task", "setting", "lang"])
    table = account(table, lambda r: None if r["task"] in spec["table6"]["tasks"] else (
        f"{', '.join(TASK_LABELS[t] for t in dict.fromkeys(published['task']) if t not in spec['table6']['tasks'])}: "
        f"not run (papers.{SLUG}.table6.tasks: {', '.join(spec['table6']['tasks'])}); the paper's values only."))
    notes = [
        f"Seeds: {spec['table6']['seeds']}. cross = Table 2's cross models; fa = + auxiliary task streams on EN data "
        f"(aux set {spec['table6']['fa']}: one batch of each auxiliary task per step, loss weight from the aux set); "
        "da = MLM on the task's training text in the four languages (adapt.mlm), then EN fine-tuning; "
        "combined = da then fa. POS has no auxiliary tasks (no fa / combined).",
        *([da_note(spec["mlm"])] if "mlm" in spec else []),
        COLLAPSE_NOTE,
    ]
    md, tex = render_grid(table, ["task", "setting"], "lang", "crossmulti Table 6: +FA, +DA, +combined", notes)
    return table, md, tex


def da_note(mlm: dict) -> str:
    return f"+DA's MLM: {mlm['steps']:,} steps of {mlm['batch_size']} sequences, lr {mlm['lr']:g}, 15% masking (adapt.mlm)."


def analysis_table(name: str):
    """An analysis table's builder (3, 4 or 5), with the notes and reasons the config adds."""

    def build(spec: dict, inputs: list[str]):
        table, md, tex = {"table3": table3, "table4": table4, "table5": table5}[name](spec, inputs)
        if name in ("table3", "table4") and "probe" in spec.get("analysis", {}):
            md += f"- {probe_note(spec['analysis']['probe'])}\n"
        if name == "table4":  # ρ over fewer than 3 shared heads is undefined (the table's notes say so)
            table = account(table, lambda r: RHO_UNDEFINED if r["metric"] == "spearman" else None)
        return table, md, tex

    return build


RHO_UNDEFINED = "ρ undefined: fewer than 3 shared heads in the cell (see the notes)."


def probe_note(probe: dict) -> str:
    """What the probes of this run trained and tested on, from its config (the paper: the EN
    training sets, all of them, and the four test sets; Sect. 3.2)."""
    cap, test = probe.get("max_train_examples"), probe.get("max_test_examples")
    train = f"at most {cap:,} EN training examples" if cap else "every EN training example"
    return (f"Probes train on {train} ({probe.get('epochs', '?')} epochs; analysis.probe.max_train_examples) and "
            f"test on {f'{test:,}' if test else 'all'} test examples per language (analysis.probe.max_test_examples).")


VANILLA = "vanilla"  # the pretrained encoder; the paper's "mBERT" rows


def read_csvs(inputs: list[str]) -> pd.DataFrame:
    frames = []
    for path in inputs:
        try:
            frames.append(pd.read_csv(path))
        except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as e:
            raise XltError(f"{path}: not a readable CSV ({e.__class__.__name__}: {e})") from None
    return pd.concat(frames, ignore_index=True)


def in_paper_order(table: pd.DataFrame, tasks: list[str], keys: list[str]) -> pd.DataFrame:
    """Rows sorted by the tasks' order in the config (task and probe_task columns) and, where
    `keys` hold it, cross before multi (a cross model is not compared with itself, so its task's
    first rows would otherwise be multi's), stable otherwise: the rendered grid's rows and
    columns follow the paper (POS, NER, PI, SA; cross, multi)."""
    rank = {t: i for i, t in enumerate(tasks)}
    cols = [k for k in ("task", "setting", "probe_task") if k in keys]
    order = {"setting": {s: i for i, s in enumerate(("cross", "multi"))}}
    return table.sort_values(cols, key=lambda c: c.map(lambda t: order.get(c.name, rank).get(t, len(rank))),
                             kind="stable").reset_index(drop=True)


def _published(table: str) -> pd.DataFrame:
    return load_published(SLUG, table)


# ---- Table 3: model probing -------------------------------------------------------------------


PROBE_COLLAPSE_NOTE = ("† here also counts a seed whose probe learned nothing, the fine-tuned model's or the "
                       "vanilla encoder's on that probing task: its predictions on the test examples of its training language "
                       "(English) not clearly better than "
                       "predicting the majority label everywhere, by the collapse rule of the fine-tuned models "
                       "(config collapse: nearly all one label, at most min_gain points over the majority label's "
                       "share, or a one-sided exact binomial test at alpha) on each word's tag for tagging (token "
                       "accuracy: an all-O tagger's F1 says nothing of what it learned) and each example's label for "
                       "classification; each probe job's JSON keeps the verdicts and their numbers (verdicts)")


def probe_flags(probes: pd.DataFrame, rows: pd.DataFrame, keys: list[str]) -> pd.Series:
    """Per row of `rows`: whether the model collapsed (its fine-tuning's verdict), its probe
    learned nothing, or the vanilla encoder's probe of the same `keys` (probe task, and layer
    and head for a head's probe) learned nothing - what its score is taken over."""
    flag = rows["collapsed"].eq(True) if "collapsed" in rows else pd.Series(False, index=rows.index)
    if "probe_collapsed" not in probes:  # a probe CSV from before the verdicts: the model's flag alone
        return flag
    vanilla = probes[(probes["setting"] == VANILLA)].set_index(keys)["probe_collapsed"].eq(True)
    base = vanilla.reindex(pd.MultiIndex.from_frame(rows[keys]) if len(keys) > 1 else rows[keys[0]]).to_numpy()
    return flag | rows["probe_collapsed"].eq(True) | pd.Series(base == True, index=rows.index)  # noqa: E712 (NaN: no)


def table3_rows(probes: pd.DataFrame) -> pd.DataFrame:
    """ceiling − probe per (model, seed, probing task), a model's own task left out; `collapsed`
    where the model collapsed or its probe or the vanilla encoder's learned nothing (`probe_flags`)."""
    model = probes[probes["unit"] == "model"]
    vanilla = model[model["setting"] == VANILLA].set_index("probe_task")["value"]
    if vanilla.empty:
        raise XltError("Table 3: no probe of the vanilla encoder among the inputs")
    ft = model[(model["setting"] != VANILLA) & (model["task"] != model["probe_task"])].copy()
    flagged = "collapsed" in model or "probe_collapsed" in model
    cols = ["task", "setting", "probe_task", "seed", "value"] + (["collapsed"] if flagged else [])
    if ft.empty:  # a single task: no model is probed on another task, every cell –
        return pd.DataFrame(columns=cols)
    ft["value"] = ft["value"].astype(float) - ft["probe_task"].map(vanilla).astype(float)
    if flagged:
        ft["collapsed"] = probe_flags(model, ft, ["probe_task"])
    return ft[cols]


def table3(spec: dict, inputs: list[str]):
    ours = table3_rows(read_csvs(inputs))
    table = paper_vs_ours(ours, _published("table3"), ["task", "setting", "probe_task"])
    table = account_tasks(table, spec["tasks"], f"papers.{SLUG}.tasks")
    table = in_paper_order(table, spec["tasks"], ["task", "probe_task"])
    notes = [f"Ceiling − probe ({', '.join(f'{t} {m}' for t, m in spec['metric'].items() if t in spec['tasks'])}, ×100) "
             "on the four test sets concatenated; probe = linear layer on the frozen pretrained encoder's last layer, "
             "ceiling = the same on the frozen fine-tuned encoder, both trained on the EN training data.",
             f"Encoder: {spec['encoder']}. Seeds: {sorted(ours['seed'].unique().tolist())} (papers.crossmulti.analysis.seeds).",
             COLLAPSE_NOTE, PROBE_COLLAPSE_NOTE]
    md, tex = render_grid(table, ["task", "setting"], "probe_task", "crossmulti Table 3: model probing", notes,
                          columns=spec["tasks"])
    return table, md, tex


# ---- Table 4: attention-head probing -----------------------------------------------------------


def scaled_k(k: int, heads_total: int, of: int) -> int:
    """The paper's K of `of` heads, as the same share of `heads_total` heads (at least 2)."""
    return max(2, min(heads_total, round(k * heads_total / of)))


def top_heads(scores: np.ndarray, k: int) -> np.ndarray:
    """The heads (indices) among the top k whatever the heads' numbering: a head scoring the same
    as the head just past the cut-off is left out with it ("at most k"). Ties at the cut-off are
    common (a probe that learned nothing scores exactly 0.0), and any rule that breaks them by
    index lets the numbering choose which of them count."""
    scores = np.asarray(scores, dtype=float)
    if k >= len(scores):
        return np.arange(len(scores))
    cut = np.sort(scores)[::-1][k]  # the best score not in the top k
    return np.flatnonzero(scores > cut)


EXACT_MAX_N = 7  # up to 7! = 5,040 pairings the permutation test enumerates them all (8!: 45 ms a cell)
PERMUTATIONS = 9_999  # beyond: a seeded Monte Carlo permutation test, p ≥ 1/10,000
RHO_TEST = (f"a two-sided permutation test of Spearman's ρ (scipy.stats.permutation_test over the pairings: "
            f"exact, every pairing, up to {EXACT_MAX_N} shared heads; else {PERMUTATIONS:,} seeded random "
            "pairings), so ρ = 1.00 over 3 heads has p = 1/3, not the t approximation's 0")


def spearman_test(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Spearman's ρ (tied scores get average ranks) and its two-sided permutation p (`RHO_TEST`):
    exact for a handful of heads, where the t approximation of scipy.stats.spearmanr calls a
    perfect ρ over 3 heads p = 0."""
    # scipy: only in the table job, not when the plan is read
    from scipy.stats import permutation_test, rankdata, spearmanr

    rx, ry = rankdata(x), rankdata(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    sy = float(np.sqrt((ry * ry).sum()))
    sx = float(np.sqrt((rx * rx).sum()))
    if sx == 0 or sy == 0:  # every score tied on a side: ρ undefined
        return math.nan, math.nan

    def rho(a, axis=-1):  # Pearson of the ranks; a pairing permutes a's ranks against y's
        return (a * ry).sum(axis=axis) / (sx * sy)

    exact = len(x) <= EXACT_MAX_N
    res = permutation_test((rx,), rho, permutation_type="pairings", vectorized=True, alternative="two-sided",
                           n_resamples=np.inf if exact else PERMUTATIONS, rng=np.random.default_rng(0))
    return float(spearmanr(x, y).statistic), float(res.pvalue)


def topk_compare(model: np.ndarray, base: np.ndarray, k: int) -> tuple[int, float, float]:
    """Overlap of the top-k heads (`top_heads`: ties at the cut-off left out) and Spearman ρ (and
    its two-sided permutation p, `spearman_test`) of both models' scores over the overlap."""
    shared = np.intersect1d(top_heads(model, k), top_heads(base, k))
    if len(shared) < 3:
        return len(shared), math.nan, math.nan
    rho, p = spearman_test(model[shared], base[shared])
    return len(shared), rho, p


def over_vanilla(probes: pd.DataFrame) -> pd.DataFrame:
    """The fine-tuned models' per-head probe rows, each score minus the vanilla (pretrained)
    encoder's probe of the same head on the same probing task: the paper probes heads "using
    the same probing method as introduced in Section 3.2", which subtracts the pretrained score."""
    heads = probes[probes["unit"] == "head"]
    vanilla = heads[heads["setting"] == VANILLA].set_index(["probe_task", "layer", "head"])["value"]
    if vanilla.empty:
        raise XltError("Table 4 / Figures A1-A4: no per-head probe of the vanilla encoder among the inputs")
    if vanilla.index.duplicated().any():
        raise XltError("Table 4 / Figures A1-A4: more than one vanilla probe of a head among the inputs")
    tuned = heads[heads["setting"] != VANILLA].copy()
    base = vanilla.reindex(pd.MultiIndex.from_frame(tuned[["probe_task", "layer", "head"]])).to_numpy(dtype=float)
    if np.isnan(base).any():
        missing = tuned.loc[np.isnan(base), ["probe_task", "layer", "head"]].iloc[0].tolist()
        raise XltError(f"Table 4 / Figures A1-A4: the vanilla encoder has no probe of (probe task, layer, head) {missing}")
    tuned["value"] = tuned["value"].to_numpy(dtype=float) - base
    # a head whose probe (this model's or the vanilla encoder's) learned nothing: `probe_flags`
    tuned["head_flag"] = probe_flags(heads, tuned.drop(columns="collapsed", errors="ignore"), ["probe_task", "layer", "head"])
    return tuned


def head_scores(probes: pd.DataFrame, column: str = "value") -> dict[tuple, np.ndarray]:
    """(task, setting, seed, probe_task) -> the heads' scores over the vanilla encoder's
    (`over_vanilla`), layer-major; `column` "head_flag": whether each head's probe learned nothing."""
    heads = over_vanilla(probes).sort_values(["layer", "head"], kind="stable")
    return {key: g[column].to_numpy() for key, g in heads.groupby(["task", "setting", "seed", "probe_task"], sort=False)}


def table4_rows(probes: pd.DataFrame, topk: list[int], heads_total: int, of: int) -> pd.DataFrame:
    """Each model vs the probing task's cross model (same seed): overlap and ρ (and its p) per
    K; `collapsed` where the model or that baseline collapsed (the probes' CSVs say which), or
    a head among either's top K has a probe that learned nothing (`over_vanilla`'s head_flag)."""
    scores, unlearned = head_scores(probes), head_scores(probes, "head_flag")
    flags = (probes.groupby(["task", "setting", "seed"])["collapsed"].any().to_dict() if "collapsed" in probes else {})
    rows = []
    for (task, setting, seed, probe), s in scores.items():
        base = scores.get((probe, "cross", seed, probe))
        if base is None or (task, setting) == (probe, "cross"):
            continue
        cell = {"task": task, "setting": setting, "probe_task": probe, "seed": seed}
        collapsed = bool(flags.get((task, setting, seed)) or flags.get((probe, "cross", seed)))
        for k in topk:
            kk = scaled_k(k, heads_total, of)
            overlap, rho, p = topk_compare(s, base, kk)
            top_unlearned = (unlearned[(task, setting, seed, probe)][top_heads(s, kk)].any()
                             or unlearned[(probe, "cross", seed, probe)][top_heads(base, kk)].any())
            cell["collapsed"] = collapsed or bool(top_unlearned)
            rows += [{**cell, "topk": k, "metric": "overlap", "value": overlap},
                     {**cell, "topk": k, "metric": "spearman", "value": rho, "p": p}]
    return pd.DataFrame(rows, columns=["task", "setting", "probe_task", "topk", "metric", "seed", "value", "p", "collapsed"])


TABLE4_ALPHA = 0.05
TOP_HEADS_RULE = ("a head is among the top k when fewer than k heads score strictly more than the best head left "
                  "out, i.e. heads tied with the (k+1)-th score are all left out (at most k; ties most often are "
                  "probes that learned nothing, scoring 0.0), so the heads' numbering never decides; ρ ranks tied "
                  "scores by their average rank.")


def rho_tests(ours: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per ρ cell of Table 4 (rows of `table4_rows`, NaN ρ dropped): the largest p over its
    seeds (`pvalue`: below α only when every seed's ρ is) and how many seeds are below α."""
    rho = ours[ours["metric"] == "spearman"]
    return (rho.groupby(keys, sort=False)["p"]
            .agg(pvalue="max", n_significant=lambda p: int((p < TABLE4_ALPHA).sum())).reset_index())


def table4(spec: dict, inputs: list[str]):
    a = spec["analysis"]
    ours = table4_rows(read_csvs(inputs), a["topk"], spec["heads_total"], a["topk_of_heads"])
    keys = ["task", "setting", "probe_task", "topk", "metric"]
    # a seed whose top-K share under three heads has no ρ: the cell averages the seeds that have one
    ours = ours.dropna(subset=["value"])
    published = _published("table4")
    table = account_tasks(paper_vs_ours(ours.drop(columns="p"), published, keys), spec["tasks"], f"papers.{SLUG}.tasks")
    tests = rho_tests(ours, keys)
    table = add_marks(table, keys, {"spearman": "*"}, by="metric", published=published, tests=tests, alpha=TABLE4_ALPHA)
    table = table.merge(tests.drop(columns="pvalue"), on=keys, how="left")
    table = in_paper_order(table, spec["tasks"], keys)
    table["column"] = table["probe_task"].map(TASK_LABELS) + " " + table["metric"].map({"overlap": "Ovlp", "spearman": "ρ"})
    ks = ", ".join(f"K={k}→{scaled_k(k, spec['heads_total'], a['topk_of_heads'])}" for k in a["topk"])
    notes = [f"Top-K heads scaled from {a['topk_of_heads']} heads (mBERT) to the encoder's {spec['heads_total']}: "
             f"{ks}. Ovlp counts shared heads of the encoder's {spec['heads_total']} (the paper's of 144, so Δ of Ovlp "
             "compares counts of different totals); ρ over fewer than 3 shared heads is –, and over a handful of heads "
             "it is coarse.",
             "Baseline of a probing task = its cross model (same seed); per-head probes: linear layers on each "
             "head's context vector, trained on the EN training data, scored on the four test sets; a head's score "
             "is its probe on the fine-tuned model minus its probe on the vanilla (pretrained) encoder, as Table 3's "
             "(the paper's Sect. 3.2 method).",
             f"Top-k heads: {TOP_HEADS_RULE}",
             f"ρ*: Spearman's ρ significant (p < {TABLE4_ALPHA}; {RHO_TEST}) in every seed "
             "of the cell; the CSV's pvalue is the largest p over those seeds, n_significant counts the seeds "
             "below α (the paper marks significant ρ with * and gives no α or test: ours).",
             f"Seeds: {sorted(ours['seed'].unique().tolist())}.",
             *(["† here: the model or its baseline (the same seed's cross model) collapsed, or a head among either's "
                "top K has a probe (its own or the vanilla encoder's of that head) that learned nothing: "
                "Table 3's rule for probes (config collapse:, on each head's test predictions)."]
               if ours["collapsed"].any() else [])]
    columns = [f"{TASK_LABELS[t]} {m}" for t in spec["tasks"] for m in ("Ovlp", "ρ")]
    md, tex = render_grid(table, ["task", "setting", "topk"], "column", "crossmulti Table 4: attention-head probing",
                          notes, labels={**TASK_LABELS, **{k: f"K={k}" for k in a["topk"]}, **{c: c for c in columns}},
                          columns=columns)
    return table, md, tex


# ---- Table 5: pseudo-perplexity ------------------------------------------------------------------


def table5(spec: dict, inputs: list[str]):
    df = read_csvs(inputs)
    df["task"] = df["task"].str.partition(".")[0]
    cols = ["task", "setting", "lang", "seed", "value"] + (["collapsed"] if "collapsed" in df else [])
    ours = df.rename(columns={"pppl": "value"})[cols].fillna({"seed": 0})
    pub = _published("table5").replace({"setting": {"mbert": VANILLA}})
    table = account_tasks(paper_vs_ours(ours, pub, ["task", "setting", "lang"]), spec["tasks"], f"papers.{SLUG}.tasks")
    notes = ["PPPL = exp(−ΣPLL/Σtokens) over each language's test text; every token but [CLS]/[SEP] masked once.",
             f"vanilla = the pretrained encoder ({spec['encoder']}; mBERT in the paper). A fine-tuned model has "
             "no MLM head: its encoder is scored with the pretrained encoder's MLM head.",
             f"Seeds: {sorted(int(s) for s in ours.loc[ours['setting'] != VANILLA, 'seed'].unique())}."]
    md, tex = render_grid(table, ["task", "setting"], "lang", "crossmulti Table 5: pseudo-perplexity", notes)
    return table, md, tex
