"""adjust's plan: its models (original, adjusted, adjusted + continual), their recipes and inits, what
each table and figure reads, and the data sizes the bill counts (no pandas: the workflow reads it
when it builds the DAG)."""

from __future__ import annotations

from xlt.align import targets as align
from xlt.paperkit.base import DataSize
from xlt.dag.targets import Recipe, dataset_name, encoder_dir, eval_file, langset_languages, model_dir, paper_language_set
from xlt.papers.adjust.inits import Adjusted, adjust_config

SLUG = "adjust"
MODELS = ("original", "adjusted", "adjusted_continual")


def targets(cfg: dict) -> list[str]:
    """The target languages: papers.adjust.targets, by default every language English is
    aligned with (config align.pairs)."""
    return list(cfg["papers"][SLUG].get("targets") or cfg["align"]["pairs"])


def _recipe(p: dict, model: str) -> str:
    base = Recipe((p["source"],), p["hparams"])
    return Recipe(base.train_langs, base.hparams, p["continual"]).name if model == "adjusted_continual" else base.name


def _init(p: dict, model: str, pair: str, seed: int, size: int | None = None, word_vectors: str = "avg",
          tokens: str = "all") -> str:
    if model == "original":
        return "pretrained"
    return Adjusted(pair, size or p["size"], seed, word_vectors, tokens).name


def _eval(cfg: dict, p: dict, task: str, model: str, pair: str | None, seed: int, testset: str | None = None,
          langset: str | None = None, split: str = "test", encoder: str | None = None, **variant) -> str:
    """A model's evaluation on its task's test set (the paper's language set), or on another
    dataset of the task (`testset`, scored on `langset`); `encoder`: another than the paper's.
    An adjusted model is scored on the language it was adjusted on alone where the set has it:
    its tables read that column only (xlt.dag.targets.langset_languages)."""
    langset = langset or paper_language_set(p, task)
    if model != "original" and pair in langset_languages(cfg, langset):
        langset = pair
    return eval_file(cfg, encoder or p["encoder"], _init(p, model, pair, seed, **variant), dataset_name(cfg, SLUG, task),
                     _recipe(p, model), seed, split, langset, testset=testset)


def _test_sets(cfg: dict, task: str) -> list[tuple[str | None, str | None, list[str]]]:
    """(test set, language set, target languages it has) of a main table's task: XNLI and its
    mixed-language set (Table 2), NER's own test set (Table 3), Table 4's QA sets."""
    p = cfg["papers"][SLUG]
    if task == "qa":
        return [(f"qa.{name}", langset, [x for x in targets(cfg) if x in cfg["language_sets"][langset]])
                for name, langset in p["qa_sets"].items()]
    own = [(None, None, targets(cfg))]
    if task == "xnli" and p.get("mixed"):
        own.append((p["mixed"]["dataset"], p["mixed"]["languages"], targets(cfg)))
    return own


# Table 4's test sets: a named set of qa (data.qa.sets) -> (question, context, published dataset)
QA_SETS = {
    "mlqa": ("target", "target", "mlqa"), "xquad": ("target", "target", "xquad"), "tydiqa": ("target", "target", "tydiqa"),
    "mlqa_q_target": ("target", "en", "mlqa"), "xquad_q_target": ("target", "en", "xquad"),
    "mlqa_q_en": ("en", "target", "mlqa"), "xquad_q_en": ("en", "target", "xquad"),
}


def table_spec(cfg: dict) -> dict:
    """The paper block, with what its builders need from the rest of the config."""
    p = cfg["papers"][SLUG]
    return {**p, "targets": targets(cfg), "aligner": cfg["align"]["backend"],
            "cut": adjust_config(cfg, Adjusted("xx", p["size"], 1).name)["max_length"],
            "continual_size": cfg["aux_sets"][p["continual"]]["size"],
            "continual_draw": cfg["aux_sets"][p["continual"]].get("draw", "adjustment")}


# ---- Tables 2 and 3: original, adjusted, adjusted + continual --------------------------------


def table_seeds(cfg: dict, table: str) -> list[int]:
    """The seeds a table runs: its own `seeds` (Tables 4-8 may run fewer of the paper's), or
    papers.adjust.seeds."""
    p = cfg["papers"][SLUG]
    return list((p.get(table) or {}).get("seeds") or p["seeds"])


def _main_inputs(cfg: dict, task: str) -> list[str]:
    p = cfg["papers"][SLUG]
    if task not in p["tasks"]:
        return []
    seeds = table_seeds(cfg, "table4") if task == "qa" else p["seeds"]
    out = []
    for testset, langset, langs in _test_sets(cfg, task):
        out += [_eval(cfg, p, task, "original", None, seed, testset, langset) for seed in seeds]
        out += [_eval(cfg, p, task, model, xx, seed, testset, langset) for model in MODELS[1:] for xx in langs
                for seed in seeds]
    return out


def table2_inputs(cfg: dict) -> list[str]:
    return _main_inputs(cfg, "xnli")


def table3_inputs(cfg: dict) -> list[str]:
    return _main_inputs(cfg, "ner")


def table4_inputs(cfg: dict) -> list[str]:
    return _main_inputs(cfg, "qa")


# ---- Table 8: monolingual QA (SQuAD dev; MLQA after training on translated SQuAD) ----------


def table8_inputs(cfg: dict) -> list[str]:
    p = cfg["papers"][SLUG]
    if "qa" not in p["tasks"]:
        return []
    t8 = p["table8"]
    out = []
    for seed in table_seeds(cfg, "table8"):
        out.append(_eval(cfg, p, "qa", "original", None, seed, split="dev", langset=t8["source_languages"]))
        out += [_eval(cfg, p, "qa", "adjusted", xx, seed, split="dev", langset=t8["source_languages"]) for xx in targets(cfg)]
        for xx in t8_langs(cfg):  # trained on SQuAD translated into xx, scored on MLQA xx
            for model in ("original", "adjusted"):
                out.append(eval_file(cfg, p["encoder"], _init(p, model, xx, seed), t8["train"], Recipe((xx,), p["hparams"]).name,
                                     seed, "test", t8["test_languages"], testset=t8["test"]))
    return out


def t8_langs(cfg: dict) -> list[str]:
    t8 = cfg["papers"][SLUG]["table8"]
    return [x for x in targets(cfg) if x in cfg["language_sets"][t8["test_languages"]]]


# ---- Table 9 (an option): an encoder with a larger Hindi vocabulary, original vs adjusted -----


def table9_inputs(cfg: dict) -> list[str]:
    """Off unless `papers.adjust.table9` names the encoder (the paper's: Wang et al. 2020's
    extended mBERT, a TensorFlow checkpoint outside the Hub, converted to a local Hugging Face
    directory: `encoders.<name>.path`)."""
    p = cfg["papers"][SLUG]
    t9 = p.get("table9")
    if not t9:
        return []
    pair, out = t9["pair"], []
    for task in p["tasks"]:
        sets = [(None, None)] if task != "qa" else [(f"qa.{n}", p["qa_sets"][n]) for n in t9["qa_sets"]]
        for testset, langset in sets:
            for seed in p["seeds"]:
                out.append(_eval(cfg, p, task, "original", None, seed, testset, langset, encoder=t9["encoder"]))
                out += [_eval(cfg, p, task, "adjusted", pair, seed, testset, langset, encoder=t9["encoder"], size=n)
                        for n in t9["sizes"]]
    return out


# ---- Tables 5-7: gains over the original by sample size, subword vectors, aligned tokens ------


def _variant_inputs(cfg: dict, table: str) -> list[str]:
    p = cfg["papers"][SLUG]
    t = p.get(table)
    if not t:
        return []
    out = []
    for task in t["tasks"]:
        for seed in table_seeds(cfg, table):  # a table may run fewer of the paper's seeds
            out.append(_eval(cfg, p, task, "original", None, seed))
            for variant in _variants(cfg, table):
                out.append(_eval(cfg, p, task, "adjusted", t["pair"], seed, **variant))
    return list(dict.fromkeys(out))


def _variants(cfg: dict, table: str) -> list[dict]:
    t = cfg["papers"][SLUG][table]
    if table == "table5":
        return [{"size": n} for n in t["sizes"]]
    if table == "table6":
        return [{"word_vectors": m} for m in t["modes"]]
    return [{"tokens": k} for k in t["tokens"]]
VARIANT_KEY = {"table5": "sizes", "table6": "modes", "table7": "tokens"}


# ---- Figures 1-2: L2 distances of related vs unrelated word pairs, per model ----------------
# A row's distances: the original encoder's are the alignment stage's (rules/align.smk); every
# other row's are computed by rule adjust_l2 from that row's encoder, one seed's models:
#     results/adjust/l2/en-{xx}/{row}.seed{seed}.{csv,json}
# row = adjusted | <task>.finetuned | <task>.adjusted_finetuned | <task>.adjusted_continual
ROW_KINDS = ("finetuned", "adjusted_finetuned", "adjusted_continual")
WILDCARDS = {"row": r"adjusted|[a-z]+\.(" + "|".join(ROW_KINDS) + ")"}


def l2_rows(cfg: dict, tasks: list[str] | None = None) -> list[str]:
    p = cfg["papers"][SLUG]
    return ["adjusted"] + [f"{task}.{kind}" for task in (tasks or p["tasks"]) for kind in ROW_KINDS]


def l2_file(cfg: dict, xx: str, row: str, seed: int) -> str:
    return f"{cfg['results']}/adjust/l2/en-{xx}/{row}.seed{seed}.csv"


def l2_model(cfg: dict, xx: str, row: str, seed: int) -> str:
    """The directory made by the DAG that holds a row's encoder: the adjusted encoder, or a model."""
    p = cfg["papers"][SLUG]
    adjusted = Adjusted(xx, p["size"], int(seed)).name
    if row == "adjusted":
        return encoder_dir(cfg, p["encoder"], adjusted)
    task, kind = row.split(".")
    model = "original" if kind == "finetuned" else "adjusted_continual" if kind == "adjusted_continual" else "adjusted"
    return model_dir(cfg, p["encoder"], "pretrained" if model == "original" else adjusted, dataset_name(cfg, SLUG, task),
                     _recipe(p, model), int(seed))


def l2_encoder(cfg: dict, xx: str, row: str, seed: int) -> str:
    """A row's encoder: the adjusted encoder's directory, or a model's encoder folder."""
    where = l2_model(cfg, xx, row, seed)
    return where if row == "adjusted" else f"{where}/encoder"


def models_read(cfg: dict) -> list[str]:
    """The fine-tuned models adjust_l2 reads (the figures' rows but the adjusted encoder)."""
    seed = figure_seed(cfg)
    return [l2_model(cfg, xx, r, seed) for xx in targets(cfg) for r in l2_rows(cfg) if r != "adjusted"]


def figure_seed(cfg: dict) -> int:
    p = cfg["papers"][SLUG]
    return int((p.get("figures") or {}).get("seed", p["seeds"][0]))


def figure_inputs(cfg: dict) -> list[str]:
    seed = figure_seed(cfg)
    original = {xx: f"{align.backend_dir(cfg, xx)}/l2/{cfg['papers'][SLUG]['encoder']}.csv" for xx in targets(cfg)}
    return [f for xx in targets(cfg) for f in [original[xx]] + [l2_file(cfg, xx, r, seed) for r in l2_rows(cfg)]]


def figure_spec(cfg: dict) -> dict:
    p = cfg["papers"][SLUG]
    l2 = cfg["align"]["l2"]
    return {"targets": targets(cfg), "tasks": p["tasks"], "fig1_pair": l2.get("fig1_pair", targets(cfg)[0]),
            "fig1_task": (p.get("figures") or {}).get("fig1_task", p["tasks"][0]), "bins": l2.get("bins", 50)}


# Public sizes of the QA data the paper reads and prints no count of (the bill's counts of data not
# prepared; xlt.workflow.bill): per language as the releases give them; the cross-lingual MLQA files
# and translated SQuAD as upper bounds (their source sets' counts).
QA_SIZES = {
    ("qa", "en", "train"): 87599, ("qa", "en", "dev"): 10570,  # SQuAD v1.1
    **{("qa.xquad", x, "test"): 1190 for x in ("es", "ru", "vi", "hi")},
    **{(f"qa.{s}", x, "test"): 1190 for s in ("xquad_q_target", "xquad_q_en") for x in ("es", "ru", "vi", "hi")},
    **{("qa.mlqa", x, "test"): n for x, n in (("es", 5253), ("vi", 5495), ("hi", 4918))},  # MLQA test
    ("qa.tydiqa", "ru", "test"): 812,  # TyDiQA-GoldP dev (XTREME's test)
}


def data_sizes() -> list[DataSize]:
    out = [DataSize(d, lang, split, n, "public release sizes (xlt/papers/adjust)", 1) for (d, lang, split), n in QA_SIZES.items()]
    mlqa = {x: n for (d, x, _), n in QA_SIZES.items() if d == "qa.mlqa"}
    out += [DataSize(f"qa.{s}", x, "test", n, "upper bound: the MLQA test set of the language", 3)
            for s in ("mlqa_q_target", "mlqa_q_en") for x, n in mlqa.items()]
    out += [DataSize("qa.translated", x, split, QA_SIZES[("qa", "en", split)], "upper bound: SQuAD's count", 3)
            for x in ("es", "ru", "vi", "hi") for split in ("train", "dev")]
    return out
