"""versus's check of its config block (papers.versus): what the schema cannot express."""

from __future__ import annotations

from xlt.errors import XltError
from xlt.papers.versus.plan import SLUG, methods_of, row_list, targets


def check(cfg: dict, p: dict) -> None:
    """Every row's methods are known; each method a row uses has its settings for every task; an
    adjusted row's target languages are all aligned with English (its average is then over the
    same languages as every other row's)."""
    used = {m for row in row_list(p) for m in methods_of(row)}
    for task in p["tasks"]:
        for key, method in (("dlfa_layer", "dlfa"), ("da", "da")):
            if method in used and task not in p[key]:
                raise XltError(f"config key papers.{SLUG}.{key}: no entry for task {task} (rows use {method})")
        if "xmixup" in used and task in (p["xmixup"].get("translate_train") or {}) and task not in p["xmixup"]["layer"]:
            raise XltError(f"config key papers.{SLUG}.xmixup.layer: no layer for task {task}")
        if "adjusted" in used:
            unaligned = [x for x in targets(cfg, task) if x not in cfg["align"]["pairs"]]
            if unaligned:
                raise XltError(f"config key papers.{SLUG}.languages.{task}: target languages {unaligned} are not aligned "
                               f"with English (align.pairs: {', '.join(cfg['align']['pairs'])}): the adjusted rows would "
                               "average over fewer languages than the others")
    if "fa" in used and p["fa"] not in (cfg.get("aux_sets") or {}):
        raise XltError(f"config key papers.{SLUG}.fa: unknown aux set {p['fa']!r}; allowed: {', '.join(sorted(cfg.get('aux_sets') or {}))}")
    if "adjusted" in used and p["adjust_size"] not in cfg["align"]["samples"]["sizes"]:
        raise XltError(f"config key papers.{SLUG}.adjust_size: {p['adjust_size']} is not a sample size of the alignment "
                       f"stage (align.samples.sizes: {cfg['align']['samples']['sizes']})")
    if "adjusted" in used and (bad := [s for s in p["seeds"] if s not in cfg["align"]["samples"]["seeds"]]):
        raise XltError(f"config key papers.{SLUG}.seeds: seeds {bad} have no aligned sample (align.samples.seeds)")
