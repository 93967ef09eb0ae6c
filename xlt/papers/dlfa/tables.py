"""dlfa's tables (I-VII): ours beside the paper's, with the reason for every cell we do not run."""

from __future__ import annotations

import pandas as pd

from xlt.paperkit import datasize
from xlt.papers.dlfa.plan import RANKED, SLUG, paper_best, ranked_tasks, setting_of, sweep, table7_settings, trained
from xlt.paperkit.published import load_published
from xlt.stats import mean_std, paired_ttest
from xlt.tables import (COLLAPSE_NOTE, ORACLE_LEGEND, ORACLE_NOTE, SEEDS_LEGEND, TASK_LABELS, account, account_tasks, add_oracle, cell_text,
                        collapse_mark, eval_rows, oracle_cell, oracle_off_note, oracle_rows, paper_vs_ours, render_grid)
import math

ENF = ("en", "de")  # Table III's English family
STATS = ("train", "dev", "test", "test_min", "test_max", "langs")


def table1(spec: dict, inputs: list[str]) -> tuple[pd.DataFrame, str, str]:
    """XTREME statistics: English train / dev / test, the range of test sizes, #languages."""
    counts, published = datasize.counts(SLUG, spec, inputs)
    rows = []
    for task, group in counts.groupby("task", sort=False):
        english = group[group["lang"] == "en"].set_index("split")["value"]
        tests = group[group["split"] == "test"]["value"]
        stats = {s: english.get(s) for s in ("train", "dev", "test")}
        stats.update(test_min=tests.min(), test_max=tests.max(), langs=len(tests))
        rows += [{"task": task, "stat": k, "value": v} for k, v in stats.items() if not pd.isna(v)]
    ours = pd.DataFrame(rows, columns=["task", "stat", "value"])
    ours = ours.merge(published[["task", "stat"]], on=["task", "stat"])  # the statistics the paper prints
    table = datasize.counts_vs_paper(ours, published, ["task", "stat"], spec)
    table = table.sort_values("stat", key=lambda c: c.map(STATS.index), kind="stable")
    notes = [
        "Train / dev / test: English; test min / max and langs: over the languages of the task "
        "that have a test set (" + "; ".join(f"{t} {len(s['languages'])}" for t, s in spec["tasks"].items()) + " configured).",
        "XNLI train: MultiNLI (data.xnli.train_source).",
    ]
    md, tex = datasize.render(table, ["task"], "stat", "dlfa Table I: XTREME dataset statistics", spec, notes,
                              labels={**TASK_LABELS, **datasize.STAT_LABELS})  # fmt: skip
    return table, md, tex


# ---- per-seed language averages ------------------------------------------------------------


def scores(spec: dict, inputs: list[str]) -> pd.DataFrame:
    """Per-seed, per-language scores (evaluation files hold ×100 values) with columns task,
    model, lang, seed, value, collapsed."""
    return eval_rows(inputs, spec["metric"], setting_of).rename(columns={"setting": "model"})


def averages(ours: pd.DataFrame, by_family: bool = False) -> pd.DataFrame:
    """Per-seed means over languages: `avg` (every language, EN included), or with
    `by_family` `avg_enf` (the English family, ENF) and `avg_noenf` (the other languages)."""
    enf = ours["lang"].isin(ENF)
    subsets = {"avg_enf": enf, "avg_noenf": ~enf} if by_family else {"avg": pd.Series(True, index=ours.index)}
    keys = ["task", "model", "seed"]
    return pd.concat(
        [ours[rows].groupby(keys, sort=False).agg(value=("value", "mean"), collapsed=("collapsed", "max"))
         .reset_index().assign(lang=name) for name, rows in subsets.items()],
        ignore_index=True,
    )[["task", "model", "lang", "seed", "value", "collapsed"]]


def ranked_layers(avg: pd.DataFrame, task: str, settings: list[str]) -> list[str]:
    """The swept settings of `task` from best to worst (mean over seeds of the language average)."""
    part = avg[(avg["task"] == task) & (avg["lang"] == "avg") & avg["model"].isin(settings)]
    means = part.groupby("model", sort=False)["value"].mean()
    return sorted(means.index, key=lambda m: (-means[m], settings.index(m)))


def seed_test(avg: pd.DataFrame, task: str, best: str) -> str:
    """Is `best` better than the baseline beyond the seed spread? Paired t-test over seeds."""
    part = avg[(avg["task"] == task) & (avg["lang"] == "avg")].set_index(["model", "seed"])["value"]
    seeds = sorted(set(part[best].index) & set(part["baseline"].index))
    a, b = [part[best][s] for s in seeds], [part["baseline"][s] for s in seeds]
    if len(seeds) < 2:
        return f"{TASK_LABELS[task]} {best} vs baseline: one seed, no test"
    t = paired_ttest(a, b)
    diff, spread = mean_std([x - y for x, y in zip(a, b)])
    verdict = "beyond" if t["pvalue"] < 0.05 and diff > 0 else "not beyond"
    return (f"{TASK_LABELS[task]} {best} − baseline = {diff:+.2f} ± {spread:.2f} over seeds {seeds}: paired t = "
            f"{t['statistic']:.2f}, p = {t['pvalue']:.3f} ({verdict} the seed spread at p < 0.05)")


# ---- why a published cell has no ours (xlt.tables.account), from the config -------------------


def untrained(spec: dict, task: str) -> str | None:
    """The reason a published task has no ours: it is not trained in this run (None: it is)."""
    if task in trained(spec):
        return None
    return (f"Tasks not trained in this run (papers.{SLUG}.train_tasks: {', '.join(trained(spec))}, of papers.{SLUG}.tasks: "
            f"{', '.join(spec['tasks'])}): the paper's values only.")


def unswept(spec: dict, model: str) -> str | None:
    """The reason a published layer dX has no ours: X is not in the sweep (papers.dlfa.layers)."""
    layer = model[1:].partition("_")[0]
    if not (model.startswith("d") and layer.isdigit()) or int(layer) in spec["layers"]:
        return None
    if int(layer) >= spec["control"]:  # one reason for all of them: the encoder is shallower
        return (f"d{spec['control']}–d11: the encoder {spec['encoder']} has {spec['control']} layers (its last, the "
                "control, fused with itself); rows are matched to the paper by layer number, so the paper's values only.")
    return f"d{layer}: not in papers.{SLUG}.layers ({', '.join(map(str, spec['layers']))}); the paper's values only."


def unranked(spec: dict, model: str) -> str | None:
    """The reason a rank row (best / second) has no ours: the sweep has fewer layers."""
    if model not in RANKS or RANKS.index(model) < len(spec["layers"]):
        return None
    return (f"{model}: the sweep has {len(spec['layers'])} layer(s) (papers.{SLUG}.layers: "
            f"{', '.join(map(str, spec['layers']))}); the paper's values only.")


def unlisted_language(spec: dict, task: str, lang: str) -> str:
    return (f"{lang.upper()}: not among the {TASK_LABELS.get(task, task)} test languages of this run "
            f"(language set {spec['languages'][task]}); the paper's values only.")


def _notes(spec: dict, ours: pd.DataFrame, encoder: str, extra: list[str], scores: bool = True) -> list[str]:
    seeds = sorted(ours["seed"].unique().tolist())
    what = ("Scores ×100, averaged over all test languages of the task, EN included: "
            + ", ".join(f"{TASK_LABELS[t]} {m}" for t, m in spec["metric"].items() if t in trained(spec)) + ". ") if scores else ""
    return [
        f"{what}Encoder: {encoder}. Seeds: {seeds} (mean ± std of the per-seed averages).",
        *extra,
        *([COLLAPSE_NOTE] if scores else []),
    ]


def recipe_note(spec: dict) -> str:
    """This run's fine-tuning profile, from the config; where each value comes from (paper,
    XTREME's scripts) and every deviation: the ledger's notes below."""
    p = spec.get("profile") or {}
    values = [f"{label} {p[key]:g}" if isinstance(p[key], float) else f"{label} {p[key]}"
              for key, label in (("lr", "lr"), ("epochs", "epochs"), ("batch_size", "batch"), ("warmup_ratio", "warmup ratio"),
                                 ("weight_decay", "weight decay"), ("max_length", "max subwords"), ("select", "checkpoint"),
                                 ("classifier", "classifier")) if key in p]
    return (f"Fine-tuning: hparams profile {spec['hparams']}" + (f" ({', '.join(values)}; model selection on English dev)" if values else "")
            + f": the paper's values where it gives them, XTREME's scripts' where it is silent (xlt/papers/{SLUG}/fidelity.yaml). "
            "POS is scored as XTREME scores it: seqeval's span F1 over the tag sequences (seqeval_f1), not token accuracy.")


def table2(spec: dict, inputs: list[str]) -> tuple[pd.DataFrame, str, str]:
    evals = [f for f in inputs if f.endswith(".json")]
    ours = scores(spec, evals)
    avg = averages(ours)
    tests = [seed_test(avg, t, ranked_layers(avg, t, sweep(spec)[1:-1])[0]) for t in trained(spec)]
    # the control is the last layer fused with itself: D_12 of mBERT, d<control> here
    control = load_published(SLUG, "text_d12").replace({"model": {"d12": "control"}})
    published = pd.concat([load_published(SLUG, "table2"), control], ignore_index=True)
    table = paper_vs_ours(avg.replace({"model": {f"d{spec['control']}": "control"}}), published, ["task", "model", "lang"])
    table = account(table, lambda r: untrained(spec, r["task"]) or unswept(spec, r["model"]))
    if spec.get("oracle"):  # the inputs beside the evaluation files: the models, with their oracle.json
        oracle = oracle_rows([f for f in inputs if f not in evals], spec["metric"], setting_of).rename(columns={"setting": "model"})
        oracle = averages(oracle.assign(collapsed=False)).replace({"model": {f"d{spec['control']}": "control"}})
        table = add_oracle(table, oracle, ["task", "model", "lang"])
    notes = _notes(spec, ours, spec["encoder"], [
        f"dX = DLFA fusing layer X with the last layer (Eq. 3 reading: {spec['reading']}); rows are matched to the "
        f"paper by layer number. control = the last layer fused with itself: ours d{spec['control']}, the paper's "
        "D_12 (given in the prose of Sect. V-A; XNLI not reported).",
        control_note(spec),
        recipe_note(spec),
        (ORACLE_NOTE + " Here per language, then averaged as the headline." if spec.get("oracle") else oracle_off_note(SLUG)),
        "Best DLFA layer vs baseline, paired over seeds: " + "; ".join(tests) + ".",
    ])
    md, tex = render_grid(table, ["model"], "task", "dlfa Table II: the layer sweep (language averages)", notes,
                          cell=oracle_cell if spec.get("oracle") else cell_text,
                          legend=ORACLE_LEGEND if spec.get("oracle") else SEEDS_LEGEND)
    return table, md, tex


# ---- Tables III and IV: the two best layers ------------------------------------------------

def control_note(spec: dict) -> str:
    """What the control row is, true for this run's profile (its weight decay)."""
    decay = (spec.get("profile") or {}).get("weight_decay")
    still = ("with no weight decay (this profile's), never move" if decay == 0 else
             "move by weight decay only" if decay else "move by weight decay only, if the profile has any")
    return ("The control row fuses the last layer with itself: out = h·w + h·(1 − w), whose gradient in w cancels "
            f"exactly, so the gate's parameters get zero gradients and, {still} (tested); the output is h up to the "
            "rounding of that sum (coarser in bf16), which training can amplify. The control and the baseline differ by "
            "that arithmetic only: run-to-run noise of the same function, not a finding.")


RANKS = ("best", "second")


def _best_two(spec: dict, inputs: list[str], task: str) -> tuple[pd.DataFrame, dict[str, str]]:
    """Per-seed scores of `task` for the baseline and the two best swept layers, renamed
    `best` / `second`, and which layers those are."""
    ours = scores(spec, inputs)
    ours = ours[ours["task"] == task]
    layers = ranked_layers(averages(ours), task, [f"d{x}" for x in spec["layers"]])[:2]
    chosen = dict(zip(RANKS, layers))
    ours = ours[ours["model"].isin(["baseline", *layers])]
    return ours.assign(model=ours["model"].map({"baseline": "baseline", **{v: k for k, v in chosen.items()}})), chosen


def _published_ranks(table_id: str, tasks: list[str]) -> pd.DataFrame:
    """The paper's rows of `tasks`, its two best layers (paper_best) renamed `best` / `second`."""
    published = load_published(SLUG, table_id)
    published = published[published["task"].isin(tasks)]
    ranks = {(t, m): r for t in tasks for r, m in zip(RANKS, paper_best(t))}
    return published.assign(model=[ranks.get((t, m), m) for t, m in zip(published["task"], published["model"])])


def table3(spec: dict, inputs: list[str]) -> tuple[pd.DataFrame, str, str]:
    parts, named, claims = [], [], []
    for task in ranked_tasks(spec):
        ours, chosen = _best_two(spec, inputs, task)
        parts.append(averages(ours, by_family=True))
        named.append(f"{TASK_LABELS[task]}: ours {' / '.join(chosen.values())}, paper {' / '.join(paper_best(task))}")
        claims.append(_family_claim(task, parts[-1], chosen))
    avg = pd.concat(parts, ignore_index=True)
    table = paper_vs_ours(avg, _published_ranks("table3", list(RANKED)), ["task", "model", "lang"])
    table = account(table, lambda r: untrained(spec, r["task"]) or unranked(spec, r["model"]))
    notes = _notes(spec, avg, spec["encoder"], [
        f"avg_enf = mean over {', '.join(ENF)}; avg_noenf = mean over the task's other test languages.",
        "best / second = the two best layers of the Table II sweep (mean over seeds): " + "; ".join(named) + ".",
        "The paper's claim, lower-layer fusion helps the distant languages (noenf) most and upper-layer fusion "
        "the related ones (enf): " + "; ".join(claims) + ".",
    ])
    md, tex = render_grid(table, ["task", "model"], "lang", "dlfa Table III: English family vs the other languages", notes)
    return table, md, tex


def _family_claim(task: str, family: pd.DataFrame, chosen: dict[str, str]) -> str:
    """Gains over the baseline of the lower and the upper of the two best layers, per subset."""
    means = family.groupby(["model", "lang"])["value"].mean()
    gain = {(rank, lang): means[(rank, lang)] - means[("baseline", lang)] for rank in chosen for lang in ("avg_enf", "avg_noenf")}
    if len(chosen) < 2:
        return f"{TASK_LABELS[task]}: one swept layer, no comparison"
    lower, upper = sorted(chosen, key=lambda r: int(chosen[r][1:]))
    holds = gain[(lower, "avg_noenf")] > gain[(upper, "avg_noenf")] and gain[(upper, "avg_enf")] > gain[(lower, "avg_enf")]
    return (f"{TASK_LABELS[task]} lower {chosen[lower]} enf {gain[(lower, 'avg_enf')]:+.2f} / noenf "
            f"{gain[(lower, 'avg_noenf')]:+.2f}, upper {chosen[upper]} enf {gain[(upper, 'avg_enf')]:+.2f} / noenf "
            f"{gain[(upper, 'avg_noenf')]:+.2f}: {'holds' if holds else 'does not hold'} here")


def swap_note() -> str:
    """The paper's Table IV baseline row, read from its published CSV: its fr and es look swapped."""
    t = load_published(SLUG, "table4")
    base = t[t["model"] == "baseline"].set_index("lang")["value"]
    return (f"The paper's baseline fr ({base['fr']:.2f}) and es ({base['es']:.2f}) look swapped: the row is XTREME's "
            "mBERT PAWS-X result (Hu et al. 2020, the paper's [16]), which has them the other way round; kept as printed.")


def table4(spec: dict, inputs: list[str]) -> tuple[pd.DataFrame, str, str]:
    ours, chosen = _best_two(spec, inputs, "pawsx")
    table = paper_vs_ours(ours, _published_ranks("table4", ["pawsx"]), ["task", "model", "lang"])
    table = account(table, lambda r: unranked(spec, r["model"]) or unlisted_language(spec, r["task"], r["lang"]))
    notes = _notes(spec, ours, spec["encoder"], [
        f"best / second = the two best PAWS-X layers of the sweep: ours {' / '.join(chosen.values())}, "
        f"paper {' / '.join(paper_best('pawsx'))}.",
        swap_note(),
    ])
    md, tex = render_grid(table, ["model"], "lang", "dlfa Table IV: PAWS-X accuracy per language", notes)
    return table, md, tex


ABLATION_RANKS = ("first", "second")  # Table V's rows: the ablated layers in the order listed


def ablated_layers(published: pd.DataFrame) -> dict[str, list[int]]:
    """The paper's ablated layers per task, in the order it prints them (its two best per task)."""
    out: dict[str, list[int]] = {}
    for task, model in zip(published["task"], published["model"]):
        layer = int(model[1:].partition("_")[0]) if model.startswith("d") else None
        if layer is not None and layer not in out.setdefault(task, []):
            out[task].append(layer)
    return out


def by_rank(models: pd.Series, tasks: pd.Series, layers: dict[str, list[int]]) -> list[str]:
    """dX[_g|_l] -> first[_g|_l] / second[_g|_l] by X's place in its task's `layers`."""
    out = []
    for task, model in zip(tasks, models):
        layer, sep, suffix = model[1:].partition("_")
        ranks = dict(zip(layers.get(task, []), ABLATION_RANKS))
        out.append(ranks[int(layer)] + sep + suffix if model.startswith("d") and int(layer) in ranks else model)
    return out


def table5(spec: dict, inputs: list[str]) -> tuple[pd.DataFrame, str, str]:
    ours = scores(spec, inputs)
    avg = averages(ours)
    published = load_published(SLUG, "table5")
    theirs = ablated_layers(published)
    mine = {t: list(spec["ablation"].get(t, [])) for t in trained(spec)}
    avg = avg.assign(model=by_rank(avg["model"], avg["task"], mine))
    published = published.assign(model=by_rank(published["model"], published["task"], theirs))
    table = paper_vs_ours(avg, published, ["task", "model", "lang"])

    def why(row) -> str | None:
        rank = row["model"].partition("_")[0]
        if untrained(spec, row["task"]):
            return untrained(spec, row["task"])
        if rank in ABLATION_RANKS and ABLATION_RANKS.index(rank) >= len(mine[row["task"]]):
            return (f"{TASK_LABELS[row['task']]} {rank}: papers.{SLUG}.ablation lists "
                    f"{len(mine[row['task']])} layer(s) for it, the paper ablates two; the paper's values only.")
        return None

    table = account(table, why)
    order = list(dict.fromkeys(table["task"]))  # task by task, as the paper's blocks
    table = table.sort_values("task", key=lambda c: c.map(order.index), kind="stable").reset_index(drop=True)
    named = "; ".join(f"{TASK_LABELS[t]} paper {' / '.join(f'd{x}' for x in theirs.get(t, []))}, ours "
                      f"{' / '.join(f'd{x}' for x in mine[t]) or 'none'}" for t in trained(spec))
    notes = _notes(spec, ours, spec["encoder"], [
        "first / second (+ _g / _l) = the ablated layers, matched by rank: the two layers the paper ablates per task, in "
        f"the order it prints them (not always its two best of Table II), and ours papers.{SLUG}.ablation in its order (fixed before training, not chosen "
        f"by our sweep): {named}.",
        ABLATION_READING,
    ])
    md, tex = render_grid(table, ["task", "model"], "lang", "dlfa Table V: ablation of the AIF branches", notes)
    return table, md, tex


ABLATION_READING = (
    "_g / _l = AIF as the paper's ablation builds it (Sect. V-A, Fig. 4): the local branch replaced by a second global "
    "one (_g), or the global branch by a second local one (_l); two branches of the kept kind, each its own parameters, "
    "summed before σ; the rest of DLFA (fusion with the last layer, Eq. 3's reading) unchanged.")


def table6(spec: dict, inputs: list[str]) -> tuple[pd.DataFrame, str, str]:
    # deferred: loads scipy only when this runs
    from scipy.stats import spearmanr

    evals = [f for f in inputs if f.endswith(".json")]
    family = averages(scores(spec, evals), by_family=True)
    sims = pd.concat([pd.read_csv(f) for f in inputs if f.endswith(".csv")], ignore_index=True)
    # a similarity is of a fine-tuned model: it carries that model's collapse (its evaluations say)
    keys = ["task", "model", "seed"]
    flags = family.groupby(keys, sort=False)["collapsed"].any().reset_index()
    sims = sims.groupby(keys, sort=False)["value"].mean().reset_index().merge(flags, on=keys, how="left")
    noenf = family[family["lang"] == "avg_noenf"].groupby(["task", "model"])["value"].mean()
    parts, named, tracks = [sims], [], []
    for task in ranked_tasks(spec):
        _, chosen = _best_two(spec, evals, task)
        part = sims[(sims["task"] == task) & sims["model"].isin(chosen.values())]
        parts.append(part.assign(model=part["model"].map({v: k for k, v in chosen.items()})))
        named.append(f"{TASK_LABELS[task]}: ours {' / '.join(chosen.values())}, paper {' / '.join(paper_best(task))}")
        cos = sims[sims["task"] == task].groupby("model", sort=False)["value"].mean()
        if len(cos) >= 3:
            rho = spearmanr(cos.values, [noenf[(task, m)] for m in cos.index]).statistic
            tracks.append(f"{TASK_LABELS[task]} ρ = {rho:+.2f} over {len(cos)} settings")
    ours = pd.concat(parts, ignore_index=True)
    published = _published_ranks("table6", list(RANKED))
    table = paper_vs_ours(ours.assign(lang="cos"), published.assign(lang="cos"), ["task", "model", "lang"])
    table = account(table, lambda r: untrained(spec, r["task"]) or unranked(spec, r["model"]))
    notes = _notes(spec, ours, spec["encoder"], [
        "Cosine similarity (not ×100) between EN and each other XNLI test language, "
        f"{spec['similarity']['sentences']} random parallel test premises (draw seed {spec['similarity']['seed']}), "
        "sentence embedding = mean over real tokens of the fused features; mean over languages, then over seeds.",
        "best / second = the two best layers of the Table II sweep by accuracy: " + "; ".join(named)
        + "; every swept layer's own row follows (dX).",
        "Does the similarity track the noenf accuracy (Table III)? Spearman over baseline and swept layers: "
        + ("; ".join(tracks) or "too few settings") + ".",
    ], scores=False)
    md, tex = render_grid(table, ["task", "model"], "lang", "dlfa Table VI: cosine similarity of parallel sentences", notes,
                          cell=_cos_cell)
    return table, md, tex


def _cos_cell(row) -> tuple[str, str, str]:

    paper = "–" if pd.isna(row["paper"]) else f"{row['paper']:.4f}"
    ours = "–" if math.isnan(row["ours_mean"]) else f"{row['ours_mean']:.4f} ± {row['ours_std']:.4f}{collapse_mark(row)}"
    delta = "–" if pd.isna(row["delta"]) else f"{row['delta']:+.4f}"
    return paper, ours, delta


def table7(spec: dict, inputs: list[str]) -> tuple[pd.DataFrame, str, str]:
    t7 = spec["table7"]
    avg = averages(scores(spec, inputs))
    rows = []
    for task in t7["tasks"]:
        best = ranked_layers(avg, task, table7_settings(spec)[1:])[0]
        part = avg[(avg["task"] == task) & (avg["lang"] == "avg")]
        for model, name in (("baseline", "baseline"), (best, "dlfa")):
            for r in part[part["model"] == model].itertuples():
                rows.append({"task": task, "model": name, "metric": "score", "seed": r.seed, "value": r.value,
                             "collapsed": r.collapsed})
                if name == "dlfa":
                    rows.append({"task": task, "model": name, "metric": "best_layer", "seed": r.seed,
                                 "value": float(best[1:]), "collapsed": False})
    ours = pd.DataFrame(rows)
    published = load_published(SLUG, "table7").drop(columns="encoder")
    table = paper_vs_ours(ours, published, ["task", "model", "metric"])
    table.loc[table["metric"] == "best_layer", "delta"] = float("nan")  # an index: no difference to print
    table = account_tasks(table, t7["tasks"], f"papers.{SLUG}.table7.tasks")
    table.insert(0, "encoder", t7["encoder"])
    stands_in = ("" if t7["encoder"] == "xlmr_base" else
                 f" Here encoder {t7['encoder']} stands in for XLM-R base (not available in this run): "
                 "paper = XLM-R base, ours = " + t7["encoder"] + ", so Δ compares different encoders.")
    notes = _notes(spec, ours, t7["encoder"], [
        f"dlfa = DLFA at the layer of {', '.join(map(str, t7['layers']))} with the best language average "
        "(mean over seeds); best_layer is that layer (an index: printed as an integer, no Δ)." + stands_in,
    ])
    md, tex = render_grid(table, ["task", "model"], "metric", f"dlfa Table VII: DLFA on {t7['encoder']}", notes,
                          cell=_table7_cell)
    return table, md, tex


def _table7_cell(row) -> tuple[str, str, str]:
    """cell_text, but the best layer is an index: integers, no spread, no Δ."""
    if row["metric"] != "best_layer":
        return cell_text(row)

    def index(x) -> str:
        return "–" if pd.isna(x) else str(int(x))

    return index(row["paper"]), index(row["ours_mean"]), "–"
