"""versus's tables: the methods side by side (`methods`) and a verdict per combination (`verdicts`).

`methods` reads every row's evaluation JSONs, its models' recorded configs (`xlt_model.json`:
the extras, aux tasks and training time) and its adapted encoders' (`xlt_encoder.json`). Its long
CSV has one line per (task, row, language), `avg` the mean over the target languages of each
seed; the `avg` lines carry the paired difference against the baseline and against each
component alone (xlt.claims.difference: paired by seed, 95 % interval; scipy's paired t-test
for the p-value) and the row's training cost. A row without results says why in `why`.

`verdicts` reads that CSV: per combination and task, the combination against its best part
(the component alone with the highest mean): `stacks` (the interval lies above 0), `worse`
(below 0), else `no better than the best part`, with the seeds that would decide it
(xlt.claims.Diff.seeds_needed, at the observed spread), as the claims page decides a difference.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from xlt.claims import MAX_SEEDS, Sample, difference, parse_per_seed, side_of
from xlt.io import read_json
from xlt.stats import mean_std, paired_ttest
from xlt.tables import PM_TEX, TASK_LABELS
from xlt.papers.versus.plan import BASELINE, METHODS

MODEL_META = "xlt_model.json"
ENCODER_META = "xlt_encoder.json"
COLUMNS = ["task", "row", "lang", "mean", "std", "n_seeds", "per_seed", "n_collapsed", "delta", "ci_low", "ci_high",
           "pvalue", "seeds_to_decide", "vs_parts", "train_seconds", "extras", "why"]


# ---- what a model is: read back from its path and its recorded config -------------------------


def row_methods(init: str, recipe: str) -> frozenset:
    """The methods a trained model carries, from its init and recipe (plan.models' inverse)."""
    ms = set()
    if init.startswith("adjust-"):
        ms.add("adjusted")
    elif init.startswith("mlm-"):
        ms.add("da")
    _, _, rest = recipe.partition(".")
    hparams, _, aux = rest.partition(".")
    if aux:
        ms.add("fa")
    tag = hparams.partition("-")[2]
    if tag.startswith("dlfa"):
        ms.add("dlfa")
    elif tag.startswith("xmixup"):
        ms.add("xmixup")
    return frozenset(ms)


def recorded_methods(meta: dict) -> frozenset:
    """The methods a model's recorded config (xlt_model.json) shows active: its extras, aux tasks
    and the encoder it started from."""
    spec = meta.get("spec") or {}
    names = {e.get("name") for e in spec.get("extras") or []}
    ms = {m for m in ("dlfa", "xmixup") if m in names}
    if spec.get("aux_tasks"):
        ms.add("fa")
    name = Path(str((meta.get("train_config") or {}).get("encoder", ""))).name
    if name.startswith("adjust-"):
        ms.add("adjusted")
    elif name.startswith("mlm-"):
        ms.add("da")
    return frozenset(ms)


def _row_of(methods: frozenset, rows: list[str]) -> str:
    for r in rows:
        if frozenset(() if r == BASELINE else r.split("+")) == methods:
            return r
    raise ValueError(f"no row of {sorted(methods) or [BASELINE]} among {rows}")


def _seconds(path: str, name: str) -> float:
    f = Path(path) / name
    if not f.is_file():
        return math.nan
    meta = read_json(f)
    return float((meta.get("train") or meta).get("seconds_this_process", math.nan))


def read_runs(spec: dict, inputs: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(scores, costs): one line per (task, row, lang, seed) of the evaluations; one per (task,
    row) of training seconds (each model and adapted encoder it reads counted once)."""
    rows, cost, models = [], {}, {}
    for path in inputs:
        if not path.endswith(".json"):
            continue
        report = read_json(path)
        model = Path(report["model"])
        seed_dir, recipe, dataset, init = model.parts[-1], model.parts[-2], model.parts[-3], model.parts[-4]
        row = _row_of(row_methods(init, recipe), spec["rows"])
        task = report["task"]
        metric = spec["metric"][task]
        models.setdefault((task, row), set()).add(str(model))
        if init != "pretrained":
            models[(task, row)].add(str(model.parents[2]) + "#encoder")
        for lang, m in report["metrics"].items():
            if lang == spec["source"]:
                continue
            rows.append({"task": task, "row": row, "lang": lang, "seed": int(report["seed"]), "value": float(m[metric]),
                         "collapsed": bool(report.get("collapsed", False))})
    for key, paths in models.items():
        total = 0.0
        for p in paths:
            where, _, what = p.partition("#")
            total += _seconds(_encoder_dir(where), ENCODER_META) if what else _seconds(where, MODEL_META)
        cost[key] = total
    scores = pd.DataFrame(rows, columns=["task", "row", "lang", "seed", "value", "collapsed"])
    costs = pd.DataFrame([{"task": t, "row": r, "train_seconds": s} for (t, r), s in cost.items()],
                         columns=["task", "row", "train_seconds"])
    return scores, costs


def _encoder_dir(models_init: str) -> str:
    """results/models/<encoder>/<init> -> results/encoders/<encoder>/<init>."""
    p = Path(models_init)
    return str(p.parent.parent.parent / "encoders" / p.parent.name / p.name)


def extras_of(inputs: list[str], spec: dict) -> dict:
    """(task, row) -> the methods every one of its models' recorded configs shows active, as text."""
    out: dict = {}
    for path in inputs:
        f = Path(path) / MODEL_META
        if path.endswith(".json") or not f.is_file():
            continue
        meta = read_json(f)
        model = Path(path)
        row = _row_of(row_methods(model.parts[-4], model.parts[-2]), spec["rows"])
        task = (meta.get("spec") or {}).get("task") or model.parts[-3].partition(".")[0]
        out.setdefault((task, row), set()).add(" + ".join(sorted(recorded_methods(meta))) or "none")
    return {k: "; ".join(sorted(v)) for k, v in out.items()}


# ---- the methods table ----------------------------------------------------------------------


def _per_seed_text(values: dict) -> str:
    return " ".join(f"{k}={v:.4f}" for k, v in sorted(values.items()))


def sample_of(per_seed: str) -> Sample | None:
    if not isinstance(per_seed, str) or not per_seed.strip():
        return None
    seeds, _ = parse_per_seed(per_seed)
    vals = list(seeds.values())
    mean, std = mean_std(vals)
    return Sample(mean, std, len(vals), seeds)


def seeds_text(n: int | None) -> str:
    if n is None:
        return "none: the observed difference is 0"
    return f"more than {MAX_SEEDS}" if n > MAX_SEEDS else str(n)


def compare(a: Sample, b: Sample) -> dict:
    """A − B over the seeds both have: the difference, its 95 % interval (paired by seed), the
    paired t-test's p-value and the seeds that would decide it."""
    common = sorted(set(a.seeds) & set(b.seeds), key=int)
    a = Sample(a.mean, a.std, len(common), {k: a.seeds[k] for k in common})
    b = Sample(b.mean, b.std, len(common), {k: b.seeds[k] for k in common})
    d = difference(Sample(float(pd.Series(list(a.seeds.values())).mean()), a.std, a.n, a.seeds),
                   Sample(float(pd.Series(list(b.seeds.values())).mean()), b.std, b.n, b.seeds))
    p = paired_ttest([a.seeds[k] for k in common], [b.seeds[k] for k in common])["pvalue"] if len(common) >= 2 else math.nan
    side = side_of(d)
    if side and d.sd == 0 and d.n < 3:  # two seeds that differ by the same amount: an interval of width 0, no evidence
        return {"delta": d.value, "ci_low": d.low, "ci_high": d.high, "pvalue": p, "side": 0,
                "seeds_to_decide": "at least 3 (the seeds' differences are equal: no spread to judge)"}
    need = "" if side else ("at least 2 (no spread yet)" if math.isnan(d.low) else seeds_text(d.seeds_needed()))
    return {"delta": d.value, "ci_low": d.low, "ci_high": d.high, "pvalue": p, "seeds_to_decide": need, "side": side}


def methods_long(spec: dict, scores: pd.DataFrame, costs: pd.DataFrame, extras: dict) -> pd.DataFrame:
    out = []
    for task in spec["tasks"]:
        langs = spec["targets"][task]
        avg_of: dict[str, Sample | None] = {}
        for row in spec["rows"]:
            why = spec["why_not"][row][task]
            sub = scores[(scores["task"] == task) & (scores["row"] == row)]
            if why or sub.empty:
                out.append({"task": task, "row": row, "lang": "avg", "why": why or "no evaluation read (not run)"})
                avg_of[row] = None
                continue
            for lang in langs:
                s = sub[sub["lang"] == lang]
                if s.empty:
                    out.append({"task": task, "row": row, "lang": lang, "why": f"no model of this row was scored on {lang}"})
                    continue
                mean, std = mean_std(s["value"].tolist())
                out.append({"task": task, "row": row, "lang": lang, "mean": mean, "std": std, "n_seeds": len(s),
                            "per_seed": _per_seed_text(dict(zip(s["seed"].astype(str), s["value"]))),
                            "n_collapsed": int(s["collapsed"].sum())})
            complete = sub[sub["lang"].isin(langs)].groupby("seed").filter(lambda g: set(g["lang"]) == set(langs))
            per_seed = complete.groupby("seed")["value"].mean()
            if per_seed.empty:
                out.append({"task": task, "row": row, "lang": "avg", "why": "no seed was scored on every target language"})
                avg_of[row] = None
                continue
            mean, std = mean_std(per_seed.tolist())
            text = _per_seed_text({str(k): v for k, v in per_seed.items()})
            avg_of[row] = sample_of(text)
            cost = costs[(costs["task"] == task) & (costs["row"] == row)]["train_seconds"]
            out.append({"task": task, "row": row, "lang": "avg", "mean": mean, "std": std, "n_seeds": len(per_seed),
                        "per_seed": text, "n_collapsed": int(sub["collapsed"].sum()),
                        "train_seconds": float(cost.iloc[0]) if len(cost) else math.nan,
                        "extras": extras.get((task, row), "")})
        base = avg_of.get(BASELINE)
        for line in out:
            if line["task"] != task or line["lang"] != "avg" or line.get("why") or avg_of.get(line["row"]) is None:
                continue
            row = line["row"]
            if row != BASELINE and base is not None:
                line.update({k: v for k, v in compare(avg_of[row], base).items() if k != "side"})
            parts = []
            for part in spec["components"][row]:
                if avg_of.get(part) is None:
                    parts.append(f"{part}: no result")
                    continue
                c = compare(avg_of[row], avg_of[part])
                parts.append(f"{part}: {_signed(c['delta'])}{_ci(c)} p={_p(c['pvalue'])}")
            line["vs_parts"] = "; ".join(parts)
    return pd.DataFrame(out).reindex(columns=COLUMNS)


def _signed(x: float) -> str:
    return "–" if x is None or pd.isna(x) else f"{x:+.2f}"


def _ci(c: dict) -> str:
    return "" if pd.isna(c["ci_low"]) else f" [{c['ci_low']:+.2f}, {c['ci_high']:+.2f}]"


def _p(x: float) -> str:
    return "–" if x is None or pd.isna(x) else f"{x:.3f}"


def _cell(r) -> str:
    if isinstance(r.get("why"), str) and r["why"]:
        return "–"
    return f"{r['mean']:.1f} ± {r['std']:.1f}" if not pd.isna(r["std"]) else f"{r['mean']:.1f}"


def _cost(seconds: float, device: str) -> str:
    """The training loops' recorded seconds (each process's wall clock on the run's device)."""
    if pd.isna(seconds):
        return "–"
    return f"{seconds / 3600:.2f} h ({device})" if seconds >= 3600 else f"{seconds:.0f} s ({device})"


def render_methods(table: pd.DataFrame, spec: dict) -> tuple[str, str]:
    device = spec.get("device", "CPU")
    md = ["## Methods side by side on one encoder", "",
          f"Encoder {spec['encoder']}; fine-tuning profile `{spec['hparams']}` for every row; seeds "
          f"{', '.join(map(str, spec['seeds']))}. Each cell: mean ± std over seeds of the test score "
          "(%); avg: the mean over the target languages of each seed, then mean ± std; Δ: avg − the "
          "baseline's, paired by seed, [95 % interval], p: paired t-test (scipy); vs parts: the same against each "
          "component alone; cost: the training seconds (wall clock of each training process) recorded by the row's "
          "models and adapted encoders, all seeds.", ""]
    tex = []
    reasons = []
    for task in spec["tasks"]:
        langs = spec["targets"][task]
        sub = table[table["task"] == task]
        heads = [*langs, "avg", "Δ vs baseline", "p", "vs parts", "cost", "active in the models"]
        md += [f"### {TASK_LABELS.get(task, task)} ({spec['metric'][task]})", "",
               "| row | " + " | ".join(heads) + " |", "|---|" + "---|" * len(heads)]
        tex += [f"% {TASK_LABELS.get(task, task)}", "\\begin{tabular}{l" + "r" * (len(langs) + 3) + "}", "\\toprule",
                "row & " + " & ".join([*langs, "avg", "$\\Delta$", "cost"]) + " \\\\", "\\midrule"]
        for row in spec["rows"]:
            lines = sub[sub["row"] == row].set_index("lang")
            avg = lines.loc["avg"] if "avg" in lines.index else None
            name = spec["labels"][row]
            if avg is not None and isinstance(avg["why"], str) and avg["why"]:
                reasons.append(f"{TASK_LABELS.get(task, task)} / {name}: {avg['why']}")
                md.append(f"| {name} | " + " | ".join(["–"] * len(heads)) + " |")
                tex.append(f"{name} & " + " & ".join(["--"] * (len(langs) + 3)) + " \\\\")
                continue
            cells = [_cell(lines.loc[x]) if x in lines.index else "–" for x in langs]
            cells.append(_cell(avg) if avg is not None else "–")
            delta = "" if row == BASELINE else f"{_signed(avg['delta'])}{_ci(avg)}"
            md.append(f"| {name} | " + " | ".join([*cells, delta, "" if row == BASELINE else _p(avg["pvalue"]),
                                                   avg["vs_parts"] if isinstance(avg["vs_parts"], str) else "",
                                                   _cost(avg["train_seconds"], device), avg["extras"] or ""]) + " |")
            tex.append(f"{name} & " + " & ".join([c.replace("±", PM_TEX) for c in cells]
                                                 + [delta.replace("[", "{[}").replace("]", "{]}") or "--",
                                                    _cost(avg["train_seconds"], device)]) + " \\\\")
        md.append("")
        tex += ["\\bottomrule", "\\end{tabular}", ""]
    md += [f"- {r}" for r in reasons]
    md += [f"- {n}" for n in spec.get("notes", [])]
    return "\n".join(md) + "\n", "\n".join(tex)


def methods(spec: dict, inputs: list[str]):
    """The methods table: every row on every task, per target language and averaged."""
    scores, costs = read_runs(spec, inputs)
    table = methods_long(spec, scores, costs, extras_of(inputs, spec))
    md, tex = render_methods(table, spec)
    return table, md, tex


# ---- the verdicts ---------------------------------------------------------------------------

VERDICTS = ("stacks", "no better than the best part", "worse")
VERDICT_COLUMNS = ["task", "row", "verdict", "best_part", "combination", "best_part_mean", "delta", "ci_low", "ci_high",
                   "pvalue", "seeds_to_decide", "detail"]


def decide(table: pd.DataFrame, spec: dict) -> pd.DataFrame:
    """Per combination and task: the combination's target average against its best part's."""
    out = []
    avg = table[table["lang"] == "avg"].set_index(["task", "row"])
    for task in spec["tasks"]:
        for row in spec["rows"]:
            parts = spec["components"][row]
            if not parts:
                continue
            line = {"task": task, "row": row}
            why = avg.loc[(task, row), "why"] if (task, row) in avg.index else "no line in the methods table"
            if isinstance(why, str) and why:
                out.append({**line, "verdict": "not expressible" if why.startswith("not expressible") else "not run",
                            "detail": why})
                continue
            combo = sample_of(avg.loc[(task, row), "per_seed"])
            have = {p: sample_of(avg.loc[(task, p), "per_seed"]) for p in parts if (task, p) in avg.index}
            missing = [p for p in parts if have.get(p) is None]
            if missing:
                out.append({**line, "verdict": "not decided",
                            "detail": f"no result for {', '.join(missing)} alone (see the methods table)"})
                continue
            best = max(parts, key=lambda p: have[p].mean)
            c = compare(combo, have[best])
            verdict = VERDICTS[0] if c["side"] > 0 else VERDICTS[2] if c["side"] < 0 else VERDICTS[1]
            lean = "" if c["side"] or pd.isna(c["delta"]) else (" (leans above)" if c["delta"] > 0 else " (leans below)")
            out.append({**line, "verdict": verdict, "best_part": best, "combination": combo.mean,
                        "best_part_mean": have[best].mean, **{k: c[k] for k in ("delta", "ci_low", "ci_high", "pvalue")},
                        "seeds_to_decide": c["seeds_to_decide"],
                        "detail": f"{combo.n} seeds, paired by seed{lean}"})
    return pd.DataFrame(out).reindex(columns=VERDICT_COLUMNS)


def render_verdicts(table: pd.DataFrame, spec: dict) -> tuple[str, str]:
    md = ["## Do the methods stack?", "",
          "Each combination against its best part (the component alone with the highest target average): "
          "**stacks** where the paired 95 % interval of the difference lies above 0, **worse** where it lies below, "
          "else **no better than the best part**, with the seeds that would decide it at the observed spread "
          "(xlt.claims, as the claims page decides a difference).", "",
          "| task | combination | verdict | best part | Δ [95 % interval] | p | seeds to decide | detail |",
          "|---|---|---|---|---|---|---|---|"]
    tex = ["\\begin{tabular}{llllr}", "\\toprule", "task & combination & verdict & best part & $\\Delta$ \\\\", "\\midrule"]
    for _, r in table.iterrows():
        best = spec["labels"].get(r["best_part"], "") if isinstance(r["best_part"], str) else ""
        delta = "" if pd.isna(r["delta"]) else f"{_signed(r['delta'])}{_ci(r)}"
        md.append(f"| {TASK_LABELS.get(r['task'], r['task'])} | {spec['labels'][r['row']]} | {r['verdict']} | {best} | "
                  f"{delta} | {_p(r['pvalue'])} | {r['seeds_to_decide'] if isinstance(r['seeds_to_decide'], str) else ''} | "
                  f"{r['detail'] if isinstance(r['detail'], str) else ''} |")
        tex.append(f"{TASK_LABELS.get(r['task'], r['task'])} & {spec['labels'][r['row']]} & {r['verdict']} & {best} & "
                   f"{delta.replace('[', '{[}').replace(']', '{]}') or '--'} \\\\")
    tex += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(md) + "\n", "\n".join(tex) + "\n"


def verdicts(spec: dict, inputs: list[str]):
    """The verdicts, decided on the methods table's CSV."""
    table = decide(pd.read_csv(inputs[0], dtype={"per_seed": str}), spec)
    md, tex = render_verdicts(table, spec)
    return table, md, tex


__all__ = ["METHODS", "methods", "verdicts", "decide", "methods_long", "row_methods", "recorded_methods"]
