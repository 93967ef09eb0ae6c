"""adjust's check of its config block (papers.adjust)."""

from __future__ import annotations

from xlt.errors import XltError, check_config_ref
from xlt.papers.adjust.plan import SLUG, figure_seed, figure_spec, targets
from xlt.dag.targets import eval_file, paper_language_set


def check(cfg: dict, p: dict) -> None:
    check_config_ref("aux set", f"papers.{SLUG}.continual", p["continual"], cfg.get("aux_sets") or {})
    tests = []  # (config key, model's dataset, test set, language set)
    if (m := p.get("mixed")) and "xnli" in p["tasks"]:
        tests.append(("mixed", "xnli", m["dataset"], m["languages"]))
    if "qa" in p["tasks"]:
        for key in ("qa_sets", "table8"):
            if key not in p:
                raise XltError(f"config key papers.{SLUG}.{key}: required when qa is one of papers.{SLUG}.tasks")
        tests += [(f"qa_sets.{name}", "qa", f"qa.{name}", langs) for name, langs in p["qa_sets"].items()]
        t8 = p["table8"]
        tests.append(("table8", t8["train"], t8["test"], t8["test_languages"]))
    for key, dataset, testset, langs in tests:
        check_config_ref("language set", f"papers.{SLUG}.{key}", langs, cfg["language_sets"])
        try:
            eval_file(cfg, p["encoder"], "pretrained", dataset, "en.x", 1, "test", langs, testset=testset)
        except XltError as e:
            raise XltError(f"config key papers.{SLUG}.{key}: {e}") from None
    if (cfg["aux_sets"][p["continual"]]).get("kind") != "aligned_pairs":
        raise XltError(f"config key papers.{SLUG}.continual: aux set {p['continual']!r} is not of kind aligned_pairs")
    sizes = set(cfg["align"]["samples"]["sizes"])
    if p["size"] not in sizes:
        raise XltError(f"config key papers.{SLUG}.size: {p['size']} is not a sample size of align.samples.sizes "
                       f"({sorted(sizes)})")
    missing = sorted(set(p["seeds"]) - set(cfg["align"]["samples"]["seeds"]))
    if missing:
        raise XltError(f"config key papers.{SLUG}.seeds: {missing} have no aligned-pairs sample (align.samples.seeds)")
    langs = cfg["language_sets"][paper_language_set(p, p["tasks"][0])]
    for xx in targets(cfg):
        if xx not in cfg["align"]["pairs"]:
            raise XltError(f"config key papers.{SLUG}.targets: {xx!r} is not aligned with English (align.pairs: "
                           f"{cfg['align']['pairs']})")
        if xx not in langs:
            raise XltError(f"config key papers.{SLUG}.targets: {xx!r} is not in the paper's language set ({langs})")
    fig1 = figure_spec(cfg)
    if fig1["fig1_pair"] not in targets(cfg):
        raise XltError(f"config key align.l2.fig1_pair: {fig1['fig1_pair']!r} is not a target of papers.{SLUG} "
                       f"(its Figure 1 shows that pair's models; targets: {targets(cfg)})")
    check_config_ref("task", f"papers.{SLUG}.figures.fig1_task", fig1["fig1_task"], p["tasks"])
    for table in ("table4", "table5", "table6", "table7", "table8"):
        if extra := sorted(set((p.get(table) or {}).get("seeds") or []) - set(p["seeds"])):
            raise XltError(f"config key papers.{SLUG}.{table}.seeds: {extra} are not among papers.{SLUG}.seeds ({p['seeds']})")
    if figure_seed(cfg) not in p["seeds"]:
        raise XltError(f"config key papers.{SLUG}.figures.seed: {figure_seed(cfg)} is not one of papers.{SLUG}.seeds "
                       f"({p['seeds']})")
    if t9 := p.get("table9"):
        check_config_ref("encoder", f"papers.{SLUG}.table9.encoder", t9["encoder"], cfg["encoders"])
        sweep = cfg["align"]["samples"].get("sweep") or {}
        have = set(cfg["align"]["samples"]["sizes"]) | (set(sweep.get("sizes", [])) if t9["pair"] in sweep.get("pairs", []) else set())
        if bad := sorted(set(t9["sizes"]) - have):
            raise XltError(f"config key papers.{SLUG}.table9.sizes: {bad} are not sampled for {t9['pair']} "
                           "(align.samples.sizes, align.samples.sweep)")
    for table in ("table5", "table6", "table7"):
        t = p.get(table)
        if t and t["pair"] not in targets(cfg):
            raise XltError(f"config key papers.{SLUG}.{table}.pair: {t['pair']!r} is not aligned (align.pairs: "
                           f"{targets(cfg)})")
        if t and table == "table5":
            sweep = cfg["align"]["samples"].get("sweep") or {}
            have = set(cfg["align"]["samples"]["sizes"]) | (set(sweep.get("sizes", [])) if t["pair"] in sweep.get("pairs", []) else set())
            if bad := sorted(set(t["sizes"]) - have):
                raise XltError(f"config key papers.{SLUG}.table5.sizes: {bad} are not sampled for {t['pair']} "
                               "(align.samples.sizes, align.samples.sweep)")
