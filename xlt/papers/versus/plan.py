"""versus's plan: the rows (the zero-shot baseline, each method alone, their combinations), how each
row's models are composed from the other plugins' recipes (an encoder init, an extra tag, an aux
set, translated training data), and what the table and figure read (no pandas: the workflow reads
it when it builds the DAG).

A row is a set of methods, spelt `a+b` (`baseline`: none). Each method adds one part to the
fine-tuning recipe of the baseline (papers.versus.hparams, English training):

    adjusted  the encoder init `adjust-<xx>-n<size>-seed<seed>`: the encoder adjusted on en-<xx>
              aligned pairs (one encoder per target language and seed; the model is scored on <xx>)
    da        the encoder init `mlm-<dataset>-<language set>`: MLM on the task's training text in
              the comparison's languages (domain adaptation)
    fa        the aux set papers.versus.fa: auxiliary English tasks (feature augmentation, MTL)
    dlfa      the extra tag `dlfa<layer>` (DLFA fusing that layer with the last)
    xmixup    the extra tag `xmixup<layer>[-tagging|-qa]` on the task's translate-train set (English
              and every target language); scored on its translate-test set

A combination takes every part of its methods. Two methods that give the same part (two inits,
two extra tags) cannot be composed by the engine: the row is `not expressible` and says why.
"""

from __future__ import annotations

from dataclasses import dataclass

from xlt.errors import XltError
from xlt.dag.targets import Recipe, dataset_name, encoder_dir, eval_file, model_dir, paper_language_set

SLUG = "versus"
METHODS = ("adjusted", "da", "fa", "dlfa", "xmixup")
BASELINE = "baseline"
LABELS = {"baseline": "zero-shot baseline", "adjusted": "cross-lingual adjustment", "da": "domain adaptation (MLM)",
          "fa": "feature augmentation (MTL)", "dlfa": "DLFA", "xmixup": "X-Mixup"}
# which part of a recipe each method gives: two methods giving the same part do not compose
PART = {"adjusted": "init", "da": "init", "fa": "aux", "dlfa": "tag", "xmixup": "tag"}
WHY_PART = {
    "init": ("an encoder init is one adaptation of the released encoder (`adjust-…` and `mlm-…` both start from "
             "`pretrained`, xlt.dag.targets.Init): inits do not chain"),
    "tag": ("a recipe spells one extra tag (`<profile>-<tag>`, xlt.dag.targets.hparams): the two extras are not "
            "composed in one recipe path"),
    "aux": "a recipe names one aux set",
}
TAGGING = ("ner", "pos")
XMIXUP_FLAG = {"ner": "-tagging", "pos": "-tagging", "qa": "-qa"}  # the tag's task type (X-Mixup's Table 10)


def methods_of(row: str) -> tuple[str, ...]:
    """The methods of a row name (`baseline`: none), checked."""
    if row == BASELINE:
        return ()
    parts = tuple(row.split("+"))
    if bad := [m for m in parts if m not in METHODS]:
        raise XltError(f"config key papers.{SLUG}.rows: row {row!r}: unknown method(s) {', '.join(bad)}; "
                       f"allowed: {', '.join(METHODS)} joined by '+', or {BASELINE}")
    if len(set(parts)) != len(parts):
        raise XltError(f"config key papers.{SLUG}.rows: row {row!r} names a method twice")
    return parts


def label(row: str) -> str:
    return " + ".join(LABELS[m] for m in methods_of(row)) or LABELS[BASELINE]


def components(row: str) -> list[str]:
    """The rows a combination is compared against: each of its methods alone (none for a single
    method or the baseline)."""
    ms = methods_of(row)
    return list(ms) if len(ms) > 1 else []


@dataclass(frozen=True)
class Model:
    """One fine-tune of a row: its init, dataset and recipe, and where it is scored."""

    init: str
    dataset: str
    recipe: str
    seed: int
    langset: str  # the evaluation's language set (one target language for an adjusted encoder)
    testset: str | None = None  # another dataset of the task it is scored on (X-Mixup: translate-test)


def _p(cfg: dict) -> dict:
    return cfg["papers"][SLUG]


def targets(cfg: dict, task: str) -> list[str]:
    """The target languages of a task: its language set but the source."""
    p = _p(cfg)
    return [x for x in cfg["language_sets"][paper_language_set(p, task)] if x != p["source"]]


def why_not(cfg: dict, row: str, task: str) -> str | None:
    """Why a row has no models for a task (None: it has): a combination the engine cannot express,
    or a method without the data it needs for this task."""
    p = _p(cfg)
    ms = methods_of(row)
    for part in ("init", "tag", "aux"):
        same = [m for m in ms if PART[m] == part]
        if len(same) > 1:
            return f"not expressible: {' and '.join(LABELS[m] for m in same)}: {WHY_PART[part]}"
    if "xmixup" in ms and task not in (p["xmixup"].get("translate_train") or {}):
        return (f"not run: X-Mixup trains on translations of the task's training set (papers.{SLUG}.xmixup."
                f"translate_train); none is configured for {task}" + (
                    " (XTREME ships no translate-train data for tagging)" if task in TAGGING else ""))
    if "adjusted" in ms and not [x for x in targets(cfg, task) if x in cfg["align"]["pairs"]]:
        return f"not run: no target language of {task} is aligned with English (align.pairs)"
    if "fa" in ms and not (cfg["aux_sets"][p["fa"]]["tasks"].get(task)):
        return f"not run: the aux set {p['fa']} gives {task} no auxiliary task (aux_sets.{p['fa']}.tasks)"
    return None


def _tag(p: dict, row_methods: tuple[str, ...], task: str) -> str | None:
    if "dlfa" in row_methods:
        return f"dlfa{p['dlfa_layer'][task]}"
    if "xmixup" in row_methods:
        return f"xmixup{p['xmixup']['layer'][task]}{XMIXUP_FLAG.get(task, '')}"
    return None


def adjusted_init(p: dict, xx: str, seed: int) -> str:
    """The adjusted encoder's init (its plugin's grammar: adjust-<xx>-n<size>-seed<seed>)."""
    return f"adjust-{xx}-n{p['adjust_size']}-seed{seed}"


def da_init(cfg: dict, task: str) -> str:
    """The domain-adapted encoder's init: MLM on papers.versus.da.<task>'s training text in the
    task's comparison languages."""
    p = _p(cfg)
    return f"mlm-{p['da'][task]}-{paper_language_set(p, task)}"


def models(cfg: dict, row: str, task: str, seed: int) -> list[Model]:
    """The fine-tunes of a row for a task and seed: one, or one per aligned target language (an
    adjusted encoder); none where `why_not` says why."""
    if why_not(cfg, row, task):
        return []
    p = _p(cfg)
    ms = methods_of(row)
    langset = paper_language_set(p, task)
    dataset, langs, testset = dataset_name(cfg, SLUG, task), (p["source"],), None
    if "xmixup" in ms:  # English and every target, each target with its English original as the other side
        dataset = p["xmixup"]["translate_train"][task]
        langs = (p["source"], *targets(cfg, task))
        testset = (p["xmixup"].get("translate_test") or {}).get(task)
    tag = _tag(p, ms, task)
    recipe = Recipe(langs, p["hparams"] + (f"-{tag}" if tag else ""), p["fa"] if "fa" in ms else None).name
    if "adjusted" in ms:
        return [Model(adjusted_init(p, xx, seed), dataset, recipe, seed, xx, testset)
                for xx in targets(cfg, task) if xx in cfg["align"]["pairs"]]
    init = da_init(cfg, task) if "da" in ms else "pretrained"
    return [Model(init, dataset, recipe, seed, langset, testset)]


def model_path(cfg: dict, m: Model) -> str:
    return model_dir(cfg, _p(cfg)["encoder"], m.init, m.dataset, m.recipe, m.seed)


def eval_path(cfg: dict, m: Model) -> str:
    return eval_file(cfg, _p(cfg)["encoder"], m.init, m.dataset, m.recipe, m.seed, "test", m.langset, testset=m.testset)


def encoder_path(cfg: dict, m: Model) -> str | None:
    """The adapted encoder a model starts from (its training cost counts to the row), if any."""
    return None if m.init == "pretrained" else encoder_dir(cfg, _p(cfg)["encoder"], m.init)


def row_list(p: dict) -> list[str]:
    rows = list(p["rows"])
    return rows if BASELINE in rows else [BASELINE, *rows]


def methods_inputs(cfg: dict) -> list[str]:
    """What the methods table reads: every row's evaluations, models and adapted encoders (their
    recorded configs and training times)."""
    p = _p(cfg)
    out = []
    for row in row_list(p):
        for task in p["tasks"]:
            for seed in p["seeds"]:
                for m in models(cfg, row, task, seed):
                    out += [eval_path(cfg, m), model_path(cfg, m)] + ([e] if (e := encoder_path(cfg, m)) else [])
    return list(dict.fromkeys(out))


def methods_csv(cfg: dict) -> str:
    return f"{cfg['results']}/tables/{SLUG}/methods.csv"


def verdicts_inputs(cfg: dict) -> list[str]:
    """The verdicts are decided on the methods table's CSV (its per-seed target averages)."""
    return [methods_csv(cfg)]


def figure_inputs(cfg: dict) -> list[str]:
    return [methods_csv(cfg)]


def table_spec(cfg: dict) -> dict:
    """What the builders get: papers.versus, its rows' labels, components and reasons, the profile
    and the device the run trains on (the cost column's unit)."""
    p = _p(cfg)
    rows = row_list(p)
    return {**p, "rows": rows, "labels": {r: label(r) for r in rows}, "components": {r: components(r) for r in rows},
            "why_not": {r: {t: why_not(cfg, r, t) for t in p["tasks"]} for r in rows},
            "targets": {t: targets(cfg, t) for t in p["tasks"]}, "profile": cfg["hparams"][p["hparams"]],
            "device": "GPU" if (cfg.get("compute") or {}).get("gpus_per_job") else "CPU"}
