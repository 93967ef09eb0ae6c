"""crossmulti's plan: its recipes, what each table and figure reads, and the analyses' file paths (no
pandas: the rules and the config check read it)."""

from __future__ import annotations

from pathlib import Path

from xlt.errors import XltError
from xlt.dag.targets import Init, Recipe, aux_streams, data_dir, dataset_name, eval_file, model_dir, task_of
from xlt.stages.finetune import model_collapse_flag

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


def with_profile(cfg: dict) -> dict:
    """The paper's block and what its notes state of the fine-tuning profile and of +DA's MLM."""
    p = cfg["papers"][SLUG]
    return {**p, "select": cfg["hparams"][p["hparams"]].get("select", "best"), "mlm": cfg["adapt"]["mlm"]}


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
        streams = aux_streams(cfg, fa.name, dataset, kinds={})  # +FA's set: task streams, no paper's kind
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


def analysis_spec(cfg: dict) -> dict:
    """The paper's block and the encoder's head count (Table 4 scales K by it)."""
    return {**cfg["papers"][SLUG], "heads_total": encoder_heads(cfg)}


def encoder_heads(cfg: dict) -> int:
    """Attention heads of the paper's encoder: layers × heads (a built encoder's shape, else mBERT's 144)."""
    enc = cfg["encoders"][cfg["papers"][SLUG]["encoder"]]
    shape = (enc.get("build") or {}).get("shape")
    return shape["layers"] * shape["heads"] if shape else enc.get("heads_total", 144)
