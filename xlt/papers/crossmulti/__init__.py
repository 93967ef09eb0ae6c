"""crossmulti: Enhancing Cross-Lingual Training with Knowledge Learned from Multi-Lingual Training.

Recipes: `cross` (the source language only) and `multi` (all four languages), one hparams
profile. Tables: 1 (data sizes), 2 (cross vs multi, four tasks × four languages), and the
analyses of Table 2's models (none retrained), one rule each (rules/crossmulti.smk):

    results/crossmulti/probe/{encoder}/vanilla.{csv,json}                       the pretrained encoder's probes
    results/crossmulti/probe/{encoder}/{task}/{recipe}/seed{seed}.{csv,json}    a fine-tuned model's probes
    results/crossmulti/head_updates/{encoder}.{csv,json}                        every model's head updates
    results/crossmulti/pppl/{encoder}/{task}.{csv,json}                         PPPL on a task's test text

Table 3 (model probing) and Table 4 (head probing) read the probes, Table 5 the PPPL,
Figure 1 the head updates, Figures A1–A4 (figa1 … figa4) the head probes. This module only
declares (no torch, no matplotlib): `probing`, `head_updates`, `pppl` compute, `analysis`
builds the tables and figures.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from xlt.errors import XltError
from xlt.papers import datasize
from xlt.papers.base import Figure, Paper, Table
from xlt.papers.published import load_published
from xlt.tables import (COLLAPSE_NOTE, ORACLE_LEGEND, ORACLE_NOTE, SEEDS_LEGEND, TASK_LABELS, account, account_tasks, add_oracle, cell_text,
                        eval_rows, oracle_cell, oracle_off_note, oracle_rows, paper_vs_ours, render_grid)
from xlt.targets import Init, Recipe, aux_streams, data_dir, dataset_name, eval_file, model_dir, task_of

SLUG = "crossmulti"


def recipes(cfg: dict) -> dict[str, Recipe]:
    """The two training settings: `cross` (source language only) and `multi` (all)."""
    p = cfg["papers"][SLUG]
    langs = tuple(cfg["language_sets"][p["languages"]])
    return {"cross": Recipe((p["source"],), p["hparams"]), "multi": Recipe(langs, p["hparams"])}


def model_setting(model: str) -> dict:
    """task, setting (`cross`: one training language, else `multi`) and seed of a model
    directory, from its path (…/{task}/{recipe}/seed{seed}); and whether its fine-tuning
    collapsed (its xlt_model.json, where there is one: the analysis tables mark it †)."""
    from xlt.finetune import model_collapse_flag

    path = Path(model)
    recipe = Recipe.parse(path.parent.name)
    return {"task": task_of(path.parent.parent.name), "setting": "cross" if len(recipe.train_langs) == 1 else "multi",
            "seed": int(path.name.removeprefix("seed")), **model_collapse_flag(path)}


def table2_inputs(cfg: dict) -> list[str]:
    """Table 2's evaluation files, and with papers.crossmulti.oracle its models (their oracle.json)."""
    p = cfg["papers"][SLUG]
    evals = [
        eval_file(cfg, p["encoder"], "pretrained", dataset_name(cfg, SLUG, task), recipe.name, seed, "test", p["languages"])
        for task in p["tasks"]
        for recipe in recipes(cfg).values()
        for seed in p["seeds"]
    ]
    return evals + list(oracle_models(cfg))


def oracle_models(cfg: dict) -> dict[str, list[str]]:
    """Table 2's models and the languages each also selects on (papers.crossmulti.oracle)."""
    p = cfg["papers"][SLUG]
    if not p.get("oracle"):
        return {}
    langs = list(cfg["language_sets"][p["languages"]])
    return {model_dir(cfg, p["encoder"], "pretrained", dataset_name(cfg, SLUG, task), recipe.name, seed): langs
            for task in p["tasks"] for recipe in recipes(cfg).values() for seed in p["seeds"]}


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
    """Which epoch is kept: the paper is silent (5 epochs, lr 1e-5, batch 32 only)."""
    select = spec.get("select", "best")
    which = ("the epoch with the best dev score, averaged over the training languages' dev sets (cross: EN "
             "dev only; multi: the four)" if select == "best" else "the last epoch")
    return (f"Checkpoint: {which} (hparams profile {spec.get('hparams', '?')}, select: {select}). The paper does not say; "
            "our choice (Hugging Face's Trainer, whose implementation it names, keeps the last epoch unless told otherwise).")


def with_profile(cfg: dict) -> dict:
    """The paper's block and what its notes state of the fine-tuning profile and of +DA's MLM."""
    p = cfg["papers"][SLUG]
    return {**p, "select": cfg["hparams"][p["hparams"]].get("select", "best"), "mlm": cfg["adapt"]["mlm"]}


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


# ---- Table 6: +FA, +DA, +combined ---------------------------------------------------------------


def table6_models(cfg: dict) -> list[tuple[str, str, str, str, int]]:
    """(setting, init, dataset, recipe, seed) of Table 6: cross (Table 2's), +FA (the aux set's
    streams; none for a task the set gives none, as POS), +DA (MLM on the task's training text in
    the paper's languages first), +combined (both)."""
    p = cfg["papers"][SLUG]
    t6 = p["table6"]
    cross = recipes(cfg)["cross"]
    fa = Recipe(cross.train_langs, cross.hparams, t6["fa"])
    out = []
    for task in t6["tasks"]:
        if task not in p["tasks"]:
            raise XltError(f"config key papers.{SLUG}.table6.tasks: {task!r} is not a task of the paper's; "
                           f"allowed: {', '.join(p['tasks'])}")
        dataset = dataset_name(cfg, SLUG, task)
        da = Init("mlm", dataset, p["languages"]).name
        streams = aux_streams(cfg, fa.name, dataset)
        for a in streams:  # an auxiliary dataset is prepared only when the paper reads its task
            if a["task"] not in p["tasks"]:
                raise XltError(f"config key aux_sets.{t6['fa']}.tasks.{task}: auxiliary task {a['task']!r} is not "
                               f"in papers.{SLUG}.tasks ({', '.join(p['tasks'])}), so its data is not prepared")
        has_aux = bool(streams)
        for setting, init, recipe in (("cross", "pretrained", cross), ("fa", "pretrained", fa), ("da", da, cross),
                                      ("combined", da, fa)):
            if recipe.aux and not has_aux:
                continue
            out += [(setting, init, dataset, recipe.name, seed) for seed in t6["seeds"]]
    return out


def table6_inputs(cfg: dict) -> list[str]:
    p = cfg["papers"][SLUG]
    return [eval_file(cfg, p["encoder"], init, dataset, recipe, seed, "test", p["languages"])
            for _, init, dataset, recipe, seed in table6_models(cfg)]


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
    return (f"+DA's MLM: {mlm['steps']:,} steps of {mlm['batch_size']} sequences, lr {mlm['lr']:g}, 15% masking "
            "(adapt.mlm). The paper gives no DA settings; our choice (config.yaml's full-scale values follow BERT's "
            "continued-pretraining defaults).")


# ---- the analyses of Table 2's models ----------------------------------------------------------


def analysed_models(cfg: dict, tasks: list[str] | None = None) -> list[str]:
    """The model directories the analyses read: every task's cross and multi model of the analysis seeds."""
    p = cfg["papers"][SLUG]
    extra = sorted(set(p["analysis"]["seeds"]) - set(p["seeds"]))
    if extra:
        raise XltError(f"config key papers.{SLUG}.analysis.seeds: {extra} are not seeds of Table 2's models; "
                       f"allowed: {p['seeds']}")
    return [model_dir(cfg, p["encoder"], "pretrained", dataset_name(cfg, SLUG, task), recipe.name, seed)
            for task in (tasks or p["tasks"]) for recipe in recipes(cfg).values() for seed in p["analysis"]["seeds"]]


def analysis_root(cfg: dict) -> str:
    return f"{cfg['results']}/{SLUG}"


def probe_file(cfg: dict, model: str | None) -> str:
    """The probes' CSV of a model directory (None: the vanilla encoder)."""
    enc = cfg["papers"][SLUG]["encoder"]
    if model is None:
        return f"{analysis_root(cfg)}/probe/{enc}/vanilla.csv"
    rel = Path(model).relative_to(Path(cfg["results"]) / "models" / enc / "pretrained")
    return f"{analysis_root(cfg)}/probe/{enc}/{rel}.csv"


def probe_files(cfg: dict) -> list[str]:
    return [probe_file(cfg, None)] + [probe_file(cfg, m) for m in analysed_models(cfg)]


def head_updates_file(cfg: dict) -> str:
    return f"{analysis_root(cfg)}/head_updates/{cfg['papers'][SLUG]['encoder']}.csv"


def pppl_files(cfg: dict) -> list[str]:
    p = cfg["papers"][SLUG]
    return [f"{analysis_root(cfg)}/pppl/{p['encoder']}/{dataset_name(cfg, SLUG, t)}.csv" for t in p["tasks"]]


def probe_jobs(cfg: dict) -> dict:
    """What every probe job probes: task -> its data folder, metric, source and languages."""
    p = cfg["papers"][SLUG]
    return {t: {"data": data_dir(cfg, dataset_name(cfg, SLUG, t)), "metric": p["metric"][t], "source": p["source"],
                "langs": list(cfg["language_sets"][p["languages"]])} for t in p["tasks"]}


def figure_inputs(cfg: dict) -> list[str]:
    return [head_updates_file(cfg)] + probe_files(cfg)  # the vanilla probe too: head scores are over it


def draw(spec: dict, inputs: list[str], out_dir: str, figure: str) -> None:
    from xlt.papers.crossmulti.analysis import draw_figure  # matplotlib: only in the figure job

    draw_figure(spec, inputs, out_dir, figure)


def _build(name: str):
    def build(spec: dict, inputs: list[str]):
        from xlt.papers.crossmulti import analysis  # torch, scipy: only in the table job

        table, md, tex = getattr(analysis, name)(spec, inputs)
        if name in ("table3", "table4") and "probe" in spec.get("analysis", {}):
            md += f"- {probe_note(spec['analysis']['probe'])}\n"
        if name == "table4":  # ρ over fewer than 3 shared heads is undefined (the table's notes say so)
            table = account(table, lambda r: RHO_UNDEFINED if r["metric"] == "spearman" else None)
        return table, md, tex

    return build


RHO_UNDEFINED = "ρ undefined: fewer than 3 shared heads in the cell (see the notes)."


def probe_note(probe: dict) -> str:
    cap = probe.get("max_train_examples")
    return (f"Probes train on at most {cap:,} EN training examples ({probe.get('epochs', '?')} epochs, "
            f"analysis.probe.max_train_examples) and test on {probe.get('max_test_examples') or 'all'} per language. The "
            "paper gives no probe training size; our choice (20,000 in config.yaml: WikiANN's training size in its "
            "Table 1, so NER probes see all of it and PAWS-X / MARC a sample).") if cap else (
            "Probes train on every EN training example (analysis.probe.max_train_examples unset).")


def _analysis_spec(cfg: dict) -> dict:
    """The paper's block and the encoder's head count (Table 4 scales K by it)."""
    return {**cfg["papers"][SLUG], "heads_total": encoder_heads(cfg)}


def encoder_heads(cfg: dict) -> int:
    """Attention heads of the paper's encoder: layers × heads (a built encoder's shape, else mBERT's 144)."""
    enc = cfg["encoders"][cfg["papers"][SLUG]["encoder"]]
    shape = (enc.get("build") or {}).get("shape")
    return shape["layers"] * shape["heads"] if shape else enc.get("heads_total", 144)


PAPER = Paper(
    SLUG,
    jobs=f"{__name__}.jobs",  # its jobs (jobs.py), run by workflow_scripts/paper_job.py
    tables=(
        datasize.table(SLUG, table1),
        Table("table2", inputs=table2_inputs, build=table2, spec=with_profile),
        Table("table3", inputs=probe_files, build=_build("table3")),
        Table("table4", inputs=probe_files, build=_build("table4"), spec=_analysis_spec),
        Table("table5", inputs=pppl_files, build=_build("table5")),
        Table("table6", inputs=table6_inputs, build=table6, spec=with_profile),
    ),
    figures=(
        Figure("fig1", "Normalised attention-head updates (relative L1 change of each head's Q/K/V rows and O "
               "columns) of the cross and multi models and multi − cross, per task; Spearman ρ cross vs multi."),
        *(Figure(f"figa{i}", f"Per-head probing on {name}: every cross and multi model's heads, the most "
                 "contributive marked green, the least red.", when=lambda p, t=task: t in p["tasks"])
          for i, (task, name) in enumerate((("pos", "POS"), ("ner", "NER"), ("pawsx", "PI"), ("marc", "SA")), 1)),
    ),
    figure_inputs=figure_inputs,
    draw=draw,
    # per language, but ES and FR POS train as printed, not re-derived from a UD release (rank 1)
    data_sizes=lambda: datasize.published_sizes(SLUG, rank=1),
    oracle_models=oracle_models,
    claims="claims.yaml",
)
