"""crossmulti's analysis tables (3–5) and figures (1, A1–A4), from the CSVs its analysis rules write."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from xlt.errors import XltError
from xlt.papers.crossmulti import SLUG
from xlt.papers.published import load_published
from xlt.tables import TASK_LABELS, account_tasks, add_marks, paper_vs_ours, render_grid

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


def table3_rows(probes: pd.DataFrame) -> pd.DataFrame:
    """ceiling − probe per (model, seed, probing task), a model's own task left out."""
    model = probes[probes["unit"] == "model"]
    vanilla = model[model["setting"] == VANILLA].set_index("probe_task")["value"]
    if vanilla.empty:
        raise XltError("Table 3: no probe of the vanilla encoder among the inputs")
    ft = model[(model["setting"] != VANILLA) & (model["task"] != model["probe_task"])].copy()
    cols = ["task", "setting", "probe_task", "seed", "value"] + (["collapsed"] if "collapsed" in model else [])
    if ft.empty:  # a single task: no model is probed on another task, every cell –
        return pd.DataFrame(columns=cols)
    ft["value"] = ft["value"].astype(float) - ft["probe_task"].map(vanilla).astype(float)
    return ft[cols]


def table3(spec: dict, inputs: list[str]):
    ours = table3_rows(read_csvs(inputs))
    table = paper_vs_ours(ours, _published("table3"), ["task", "setting", "probe_task"])
    table = account_tasks(table, spec["tasks"], f"papers.{SLUG}.tasks")
    table = in_paper_order(table, spec["tasks"], ["task", "probe_task"])
    notes = [f"Ceiling − probe ({', '.join(f'{t} {m}' for t, m in spec['metric'].items() if t in spec['tasks'])}, ×100) "
             "on the four test sets concatenated; probe = linear layer on the frozen pretrained encoder's last layer, "
             "ceiling = the same on the frozen fine-tuned encoder, both trained on the EN training data.",
             f"Encoder: {spec['encoder']}. Seeds: {sorted(ours['seed'].unique().tolist())} (papers.crossmulti.analysis.seeds)."]
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


def topk_compare(model: np.ndarray, base: np.ndarray, k: int) -> tuple[int, float, float]:
    """Overlap of the top-k heads (`top_heads`: ties at the cut-off left out) and Spearman ρ (and
    its two-sided p; tied scores get average ranks) of both models' scores over the overlap."""
    shared = np.intersect1d(top_heads(model, k), top_heads(base, k))
    if len(shared) < 3:
        return len(shared), math.nan, math.nan
    rho, p = spearmanr(model[shared], base[shared])
    return len(shared), float(rho), float(p)


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
    return tuned


def head_scores(probes: pd.DataFrame) -> dict[tuple, np.ndarray]:
    """(task, setting, seed, probe_task) -> the heads' scores over the vanilla encoder's
    (`over_vanilla`), layer-major."""
    heads = over_vanilla(probes).sort_values(["layer", "head"], kind="stable")
    return {key: g["value"].to_numpy() for key, g in heads.groupby(["task", "setting", "seed", "probe_task"], sort=False)}


def table4_rows(probes: pd.DataFrame, topk: list[int], heads_total: int, of: int) -> pd.DataFrame:
    """Each model vs the probing task's cross model (same seed): overlap and ρ (and its p) per
    K; `collapsed` where the model or that baseline collapsed (the probes' CSVs say which)."""
    scores = head_scores(probes)
    flags = (probes.groupby(["task", "setting", "seed"])["collapsed"].any().to_dict() if "collapsed" in probes else {})
    rows = []
    for (task, setting, seed, probe), s in scores.items():
        base = scores.get((probe, "cross", seed, probe))
        if base is None or (task, setting) == (probe, "cross"):
            continue
        cell = {"task": task, "setting": setting, "probe_task": probe, "seed": seed,
                "collapsed": bool(flags.get((task, setting, seed)) or flags.get((probe, "cross", seed)))}
        for k in topk:
            overlap, rho, p = topk_compare(s, base, scaled_k(k, heads_total, of))
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
             f"ρ*: Spearman's ρ significant (two-sided p < {TABLE4_ALPHA}, scipy.stats.spearmanr) in every seed "
             "of the cell; the CSV's pvalue is the largest p over those seeds, n_significant counts the seeds "
             "below α (the paper marks significant ρ with * and gives no α: ours).",
             f"Seeds: {sorted(ours['seed'].unique().tolist())}.",
             *(["† here: the model or its baseline (the same seed's cross model) collapsed."]
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


# ---- figures -------------------------------------------------------------------------------------


def head_update_maps(updates: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, tuple[float, float, float]]]:
    """Seed-mean maps (task, layer, head: cross, multi, diff) and, per task, Spearman ρ between the
    cross and multi maps: its mean and std over seeds, and the largest of the seeds' two-sided
    p (scipy.stats.spearmanr): every seed's ρ has a p at most that."""
    mean = updates.groupby(["task", "setting", "layer", "head"])["update"].mean().unstack("setting").reset_index()
    mean["diff"] = mean["multi"] - mean["cross"]
    rhos = {}
    for task, g in updates.groupby("task"):
        per_seed, ps = [], []
        for _, s in g.groupby("seed"):
            w = s.pivot_table(index=["layer", "head"], columns="setting", values="update")
            rho, p = spearmanr(w["cross"], w["multi"])
            per_seed.append(rho)
            ps.append(p)
        rhos[task] = (float(np.mean(per_seed)), float(np.std(per_seed, ddof=1)) if len(per_seed) > 1 else math.nan,
                      float(np.max(ps)))
    return mean, rhos


def p_text(p: float) -> str:
    """A p-value as a figure prints it: p=0.034, p=2.1e-05."""
    return "p=–" if math.isnan(p) else f"p={p:.2g}"


def _save(fig, out_dir: str, figure: str, data: pd.DataFrame) -> None:
    """<out_dir>/<figure>.{png,pdf,csv}, the layout checked (xlt.figures.save_figure)."""
    from xlt.figures import save_figure

    Path(out_dir).mkdir(parents=True, exist_ok=True)
    save_figure(fig, Path(out_dir) / figure, data)


def _grid(values: pd.DataFrame, col: str) -> np.ndarray:
    return values.pivot(index="layer", columns="head", values=col).to_numpy()


def _head_map(ax, values: pd.DataFrame) -> None:
    """A layer × head map's axes: a tick at every layer and head, numbered as in the data
    (imshow's own locator ticks cell edges, −0.5 … 3.5)."""
    layers, heads = sorted(values["layer"].unique()), sorted(values["head"].unique())
    ax.set_yticks(range(len(layers)), [str(int(x)) for x in layers])
    ax.set_xticks(range(len(heads)), [str(int(x)) for x in heads])
    ax.set_xlabel("head")
    ax.set_ylabel("layer")


def figure1(spec: dict, updates: pd.DataFrame, out_dir: str) -> None:
    from matplotlib.figure import Figure

    from xlt.figures import fit_suptitle

    maps, rhos = head_update_maps(updates)
    tasks = [t for t in spec["tasks"] if t in set(maps["task"].str.partition(".")[0])]
    maps["task"] = maps["task"].str.partition(".")[0]
    fig = Figure(figsize=(12, 3.2 * len(tasks)), layout="constrained")
    fig.get_layout_engine().set(wspace=0.08)  # room between a colorbar's ticks and the next panel's axis label
    axes = fig.subplots(len(tasks), 3, squeeze=False)
    for r, task in enumerate(tasks):
        m = maps[maps["task"] == task]
        rho = next(v for k, v in rhos.items() if k.partition(".")[0] == task)
        for c, (col, cmap) in enumerate((("cross", "viridis"), ("multi", "viridis"), ("diff", "coolwarm_r"))):
            grid = _grid(m, col)
            ax = axes[r, c]
            if col == "diff":
                lim = float(np.abs(grid).max()) or 1.0
                im = ax.imshow(grid, cmap=cmap, vmin=-lim, vmax=lim)
            else:
                im = ax.imshow(grid, cmap=cmap)
            name = TASK_LABELS.get(task, task)
            ax.set_title(f"{name}-{col}" + (f" (ρ={rho[0]:.2f}, {p_text(rho[2])})" if col == "diff" else ""), fontsize=9)
            _head_map(ax, m)
            fig.colorbar(im, ax=ax, fraction=0.046, format="%.2g")  # no offset text ("1e−5") over the colorbar
    fit_suptitle(fig, "Relative attention-head updates; diff = multi − cross (blue: multi updates more); "
                 "ρ: Spearman, cross vs multi, seed mean; p: the largest over seeds")
    short = {k.partition(".")[0]: v for k, v in rhos.items()}
    maps["rho_cross_multi"] = maps["task"].map({k: v[0] for k, v in short.items()})
    maps["p_cross_multi"] = maps["task"].map({k: v[2] for k, v in short.items()})
    _save(fig, out_dir, "fig1", maps)


def figure_a(spec: dict, probes: pd.DataFrame, out_dir: str, figure: str, probe_task: str) -> None:
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    from xlt.figures import fit_suptitle

    heads = over_vanilla(probes)
    heads = heads[heads["probe_task"] == probe_task].copy()
    heads["task"] = heads["task"].str.partition(".")[0]
    mean = heads.groupby(["task", "setting", "layer", "head"], sort=False)["value"].mean().reset_index()
    n_heads = int(mean.groupby(["task", "setting"]).size().iloc[0])
    a = spec["analysis"]
    k = scaled_k(min(a["topk"]), n_heads, a["topk_of_heads"])
    models = [(t, s) for t in spec["tasks"] for s in ("cross", "multi")]
    fig = Figure(figsize=(7, 3.2 * len(spec["tasks"])), layout="constrained")
    fig.get_layout_engine().set(wspace=0.08)  # room between a colorbar's label and the next panel's axis label
    axes = fig.subplots(len(spec["tasks"]), 2, squeeze=False)
    marked = []
    for i, (task, setting) in enumerate(models):
        m = mean[(mean["task"] == task) & (mean["setting"] == setting)].sort_values(["layer", "head"]).copy()
        values = m["value"].to_numpy()
        mark = np.array([""] * len(m), dtype=object)
        mark[top_heads(values, k)], mark[top_heads(-values, k)] = "top", "bottom"
        m["mark"] = mark
        marked.append(m)
        ax = axes[i // 2, i % 2]
        grid = _grid(m, "value")
        fig.colorbar(ax.imshow(grid, cmap="Blues"), ax=ax, fraction=0.046, label=f"{spec['metric'][probe_task]} − vanilla")
        for (layer, head), mk in zip(m[["layer", "head"]].itertuples(index=False), m["mark"]):
            if mk:
                ax.add_patch(Rectangle((head - 0.5, layer - 0.5), 1, 1, fill=False, lw=2,
                                           edgecolor="green" if mk == "top" else "red"))
        ax.set_title(f"{TASK_LABELS.get(task, task)}-{setting}", fontsize=9)
        _head_map(ax, m)
    fit_suptitle(fig, f"Per-head probing on {TASK_LABELS.get(probe_task, probe_task)} "
                 f"(green: top {k}, red: bottom {k}; heads tied at the cut-off unmarked)")
    _save(fig, out_dir, figure, pd.concat(marked).assign(probe_task=probe_task))


FIGURE_A = {"figa1": "pos", "figa2": "ner", "figa3": "pawsx", "figa4": "marc"}


def draw_figure(spec: dict, inputs: list[str], out_dir: str, figure: str) -> None:
    updates = [p for p in inputs if "/head_updates/" in p]
    if figure == "fig1":
        figure1(spec, read_csvs(updates), out_dir)
    elif figure in FIGURE_A:
        figure_a(spec, read_csvs([p for p in inputs if p not in updates]), out_dir, figure, FIGURE_A[figure])
    else:
        raise XltError(f"unknown crossmulti figure {figure!r}; allowed: fig1, {', '.join(FIGURE_A)}")
