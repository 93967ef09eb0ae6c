"""dlfa's plan: its settings and recipes (the DLFA recipe tag), what each table reads, and the data
sizes the bill counts (no pandas: the workflow reads it when it builds the DAG)."""

from __future__ import annotations

import functools

from xlt.errors import XltError
from xlt.paperkit.base import DataSize
from xlt.paperkit.published import load_published
from xlt.dag.targets import Recipe, dataset_name, eval_file, model_dir, paper_language_set

SLUG = "dlfa"
BRANCH_SUFFIX = {"both": "", "global": "_g", "local": "_l"}
# the extra's options (xlt.papers.dlfa.recipe.DLFA), here without torch: the DAG reads tags
READINGS = ("weight", "gated")  # Eq. 3 read as w = σ(…) (the AFF module's) or w = W ⊙ σ(…)
BRANCHES = ("both", "global", "local")  # AIF as the paper builds it, or two branches of one kind (Table V's ablation)


# ---- recipe tags: the extra in the recipe's path --------------------------------------------

TAG_GRAMMAR = "dlfa<layer>[-global|-local][-gated]"


def dlfa_tag(layer: int, branches: str = "both", reading: str = "weight") -> str:
    """The short name of a DLFA setting in a recipe's hparams (`<profile>-<tag>`), e.g.
    `dlfa8`, `dlfa8-global`, `dlfa8-gated`: the path names the extra, so each is trained once."""
    return "-".join([f"dlfa{layer}"] + [v for v, default in ((branches, "both"), (reading, "weight")) if v != default])


def extra_of_tag(tag: str) -> dict | None:
    """The extra a tag names (`dlfa_tag`'s inverse): {"name": "dlfa", "layer": …, …non-defaults};
    None for a tag that is not dlfa's."""
    head, *options = tag.split("-")
    if not head.startswith("dlfa"):
        return None
    if not head[4:].isdigit():
        raise XltError(f"extra tag {tag!r}: expected {TAG_GRAMMAR}")
    extra = {"name": "dlfa", "layer": int(head[4:])}
    for option in options:
        key = "branches" if option in BRANCHES else "reading" if option in READINGS else None
        if key is None or key in extra:
            raise XltError(f"extra tag {tag!r}: option {option!r}; allowed: one of global, local and/or gated")
        extra[key] = option
    if dlfa_tag(extra["layer"], extra.get("branches", "both"), extra.get("reading", "weight")) != tag:
        raise XltError(f"extra tag {tag!r}: not in its one spelling ({TAG_GRAMMAR})")
    return extra


def data_sizes() -> list[DataSize]:
    """Table I's English train / dev / test sizes as every language's (rank 2), and for the NER
    and POS test sets of XTREME's other languages, whose range only it prints, its largest (an
    upper bound, rank 3)."""
    rows = load_published(SLUG, "table1").itertuples()
    where = f"published {SLUG} table1"
    return [DataSize(r.task, None, "test" if r.stat == "test_max" else r.stat, int(r.value),
                     where + (", largest test set (upper bound)" if r.stat == "test_max" else ""),
                     3 if r.stat == "test_max" else 2)
            for r in rows if r.stat in ("train", "dev", "test", "test_max")]


# ---- settings and recipes ------------------------------------------------------------------


def setting_recipe(p: dict, setting: str) -> Recipe:
    """The recipe of a setting: `baseline`, `d<X>`, `d<X>_g`, `d<X>_l` (papers.dlfa = p)."""
    if setting == "baseline":
        return Recipe((p["source"],), p["hparams"])
    layer, _, suffix = setting[1:].partition("_")
    branches = {v[1:]: k for k, v in BRANCH_SUFFIX.items() if v}.get(suffix, "both")
    return Recipe((p["source"],), f"{p['hparams']}-{dlfa_tag(int(layer), branches, p['reading'])}")


def setting_of(recipe: Recipe) -> str:
    """`setting_recipe`'s inverse: the table's model name of a recipe."""
    _, _, tag = recipe.hparams.partition("-")
    if not tag:
        return "baseline"
    extra = extra_of_tag(tag)
    return f"d{extra['layer']}{BRANCH_SUFFIX[extra.get('branches', 'both')]}"


def trained(p: dict) -> list[str]:
    """The tasks whose models are trained (Tables II-VII); Table I counts every task."""
    return [t for t in p["tasks"] if t in p.get("train_tasks", p["tasks"])]


def sweep(p: dict) -> list[str]:
    """Table II's settings: the baseline, every swept layer, the last-layer control."""
    return ["baseline", *(f"d{x}" for x in p["layers"]), f"d{p['control']}"]


def _evals(cfg: dict, encoder: str, task: str, settings: list[str]) -> list[str]:
    p = cfg["papers"][SLUG]
    dataset = dataset_name(cfg, SLUG, task)
    return [eval_file(cfg, encoder, "pretrained", dataset, setting_recipe(p, s).name, seed, "test",
                      paper_language_set(p, task))
            for s in settings for seed in p["seeds"]]


def models(cfg: dict, encoder: str, task: str, settings: list[str], seed: int) -> list[str]:
    p = cfg["papers"][SLUG]
    return [model_dir(cfg, encoder, "pretrained", dataset_name(cfg, SLUG, task), setting_recipe(p, s).name, seed)
            for s in settings]


# ---- Table II: the layer sweep --------------------------------------------------------------


def table2_inputs(cfg: dict) -> list[str]:
    """Table II's evaluation files, and with papers.dlfa.oracle its models (their oracle.json)."""
    p = cfg["papers"][SLUG]
    return [f for task in trained(p) for f in _evals(cfg, p["encoder"], task, sweep(p))] + list(oracle_models(cfg))


def oracle_models(cfg: dict) -> dict[str, list[str]]:
    """Table II's models and the languages each also selects on (papers.dlfa.oracle)."""
    p = cfg["papers"][SLUG]
    if not p.get("oracle"):
        return {}
    return {m: list(cfg["language_sets"][paper_language_set(p, task)])
            for task in trained(p) for seed in p["seeds"] for m in models(cfg, p["encoder"], task, sweep(p), seed)}


RANKED = ("xnli", "pawsx")  # the tasks of Tables III, IV and VI (the paper's best two layers of each)


@functools.cache
def paper_best(task: str) -> tuple[str, str]:
    """The paper's best and second-best layers of `task`, ranked by its Table II averages (the
    tables that follow print the upper layer first, not the best: PAWS-X d6 84.37 > d10 84.33).
    They must be the two layers its Table III prints."""
    sweep = load_published(SLUG, "table2")
    sweep = sweep[(sweep["task"] == task) & (sweep["lang"] == "avg") & sweep["model"].str.fullmatch(r"d\d+")]
    sweep = sweep[sweep["model"] != "d12"]  # the last-layer control, not a fused layer
    best = tuple(sweep.sort_values("value", ascending=False, kind="stable")["model"][:2])
    shown = load_published(SLUG, "table3")
    shown = set(shown.loc[(shown["task"] == task) & (shown["model"] != "baseline"), "model"])
    if len(best) != 2 or set(best) != shown:
        raise XltError(f"published {SLUG} table2: the two best {task} layers {best} are not table3's {sorted(shown)}")
    return best


def ranked_tasks(spec: dict) -> list[str]:
    return [t for t in RANKED if t in trained(spec)]


def table3_inputs(cfg: dict) -> list[str]:
    p = cfg["papers"][SLUG]
    return [f for task in ranked_tasks(p) for f in _evals(cfg, p["encoder"], task, sweep(p)[:-1])]


def table4_inputs(cfg: dict) -> list[str]:
    p = cfg["papers"][SLUG]
    return _evals(cfg, p["encoder"], "pawsx", sweep(p)[:-1]) if "pawsx" in trained(p) else []


# ---- Table V: branch ablation ---------------------------------------------------------------


def ablation_settings(p: dict, task: str) -> list[str]:
    return ["baseline"] + [f"d{x}{s}" for x in p["ablation"].get(task, []) for s in ("_g", "_l", "")]


def table5_inputs(cfg: dict) -> list[str]:
    p = cfg["papers"][SLUG]
    return [f for task in trained(p) if p["ablation"].get(task) for f in _evals(cfg, p["encoder"], task, ablation_settings(p, task))]


# ---- Table VI: cosine similarity of parallel sentences --------------------------------------


def similarity_file(cfg: dict, encoder: str, seed: int) -> str:
    return f"{cfg['results']}/dlfa/similarity/{encoder}/seed{seed}.csv"


def similarity_models(cfg: dict, encoder: str, seed: int) -> dict[str, str]:
    """What one similarity job reads: "<task>:<setting>" -> model, the swept settings of the
    ranked tasks (Table III's)."""
    p = cfg["papers"][SLUG]
    settings = sweep(p)[:-1]
    return {f"{task}:{s}": m for task in ranked_tasks(p) for s, m in zip(settings, models(cfg, encoder, task, settings, seed))}


def models_read(cfg: dict) -> list[str]:
    """The models Table VI's similarity jobs read."""
    p = cfg["papers"][SLUG]
    if not ranked_tasks(p):
        return []
    return [m for seed in p["seeds"] for m in similarity_models(cfg, p["encoder"], seed).values()]


def similarity_inputs(cfg: dict, encoder: str, seed: int) -> dict:
    return {"models": list(similarity_models(cfg, encoder, seed).values()), "data": f"{cfg['results']}/data/xnli"}


def table6_inputs(cfg: dict) -> list[str]:
    p = cfg["papers"][SLUG]
    if not ranked_tasks(p):
        return []
    return [similarity_file(cfg, p["encoder"], seed) for seed in p["seeds"]] + table3_inputs(cfg)


# ---- Table VII: a second encoder ------------------------------------------------------------


def table7_settings(p: dict) -> list[str]:
    return ["baseline", *(f"d{x}" for x in p["table7"]["layers"])]


def table7_inputs(cfg: dict) -> list[str]:
    p = cfg["papers"][SLUG]
    t7 = p["table7"]
    return [f for task in t7["tasks"] for f in _evals(cfg, t7["encoder"], task, table7_settings(p))]


# ---- what each table's builder gets ---------------------------------------------------------


def table_spec(cfg: dict) -> dict:
    """The JSON a table's builder gets: papers.dlfa and the fine-tuning profile it names
    (`profile`, for the recipe note). The ledger's notes are added to every table by the rule
    (xlt.fidelity.item_notes)."""
    block = cfg["papers"][SLUG]
    return {**block, "profile": cfg.get("hparams", {}).get(block["hparams"], {})}
