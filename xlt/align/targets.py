"""The alignment stage's paths and target lists (the workflow reads them; tested).

    {results}/align/en-{xx}/pool.{tsv,json}                                 the pool and its counts
    {results}/align/en-{xx}/{backend}/raw/                                  the backend's Pharaoh files
    {results}/align/en-{xx}/{backend}/links.pharaoh, align.json             final 1-to-1 links
    {results}/align/en-{xx}/{backend}/samples/n{size}.seed{seed}.{jsonl,json}
    {results}/align/en-{xx}/{backend}/aer.json                              vs gold (the world)
    {results}/align/en-{xx}/{backend}/l2/{encoder}.{csv,json}               word-pair distances
    {results}/tables/align/aer.{md,csv}
    {results}/align/en-{xx}/subword-{encoder}/pool.{tsv,json}               the pool in the encoder's subwords
    {results}/align/en-{xx}/subword-{encoder}/{backend}/...                 raw/, links, samples/ as above

The distances are the original-model rows of adjust's Figures 1-2 (its plugin draws them).
"""

from __future__ import annotations

from xlt.dag import targets as T
from xlt.align.backends import BACKENDS, get_backend
from xlt.errors import XltError
from xlt.stages.prepare import raw_patterns
from xlt.world.datasets import alignment_file
from dataclasses import fields
from xlt.world.schema import resolve

WILDCARDS = {"xx": r"[a-z]{2,3}", "backend": "|".join(BACKENDS), "size": r"\d+"}
AER_FORMATS = ("md", "csv")
# The index's title and caption of the stage's table: no paper plugin declares them. {readers}:
# the papers whose models read the aligned pairs (Paper.reads_alignment), filled in by the index.
TITLES = {"align": "Word alignment (the bitext of {readers}, aligned and scored)"}
CAPTIONS = {
    ("align", "aer"): "Alignment error rate (precision, recall, AER %) of each configured aligner and stage of its "
                      "links against the world's gold links, per language pair.",
}


def spec(cfg: dict) -> dict:
    return cfg["align"]


def pairs(cfg: dict) -> list[str]:
    return list(spec(cfg)["pairs"])


def pair_dir(cfg: dict, xx: str) -> str:
    return f"{cfg['results']}/align/en-{xx}"


def backend_dir(cfg: dict, xx: str, backend: str | None = None) -> str:
    return f"{pair_dir(cfg, xx)}/{backend or spec(cfg)['backend']}"


def subword_dir(cfg: dict, xx: str, encoder: str) -> str:
    """The subword branch of a pair (xlt.align.subword): the pool in `encoder`'s subwords and
    its alignment. An adjusted init ending in `-subword` reads its samples."""
    return f"{pair_dir(cfg, xx)}/subword-{encoder}"


def bitext_sources(cfg: dict) -> dict[str, list[str]]:
    """The catalog sources of every configured pair's bitext (WikiMatrix), with the pairs'
    languages: what the stage downloads (`prefetch` fetches them too); none with the world."""
    if cfg.get("world") or not cfg.get("align"):
        return {}
    # deferred: loads requests, yaml only when this runs
    from xlt.sources.catalog import providers

    out: dict[str, list[str]] = {}
    for xx in pairs(cfg):
        for pattern in raw_patterns("bitext", xx, "train"):
            found = providers(pattern, xx)
            if len(found) != 1:
                raise XltError(f"config key align.pairs: {xx!r}: {len(found)} catalog sources deliver {pattern} "
                               "(xlt/sources/catalog.yaml); expected one")
            (source, lang), = found
            out.setdefault(source.name, []).extend([lang] if lang else [])
    return out


def bitext_inputs(cfg: dict) -> list[str]:
    """What the pool job waits for: the world, or the bitext's downloads."""
    if cfg.get("world"):
        return [f"{cfg['results']}/world/manifest.json"]
    return [T.download_manifest(cfg, source) for source in bitext_sources(cfg)]


def bitext_file(cfg: dict, xx: str) -> str:

    return f"{cfg['raw_root']}/{raw_patterns('bitext', xx, 'train')[0]}"


def gold_file(cfg: dict, xx: str) -> str:
    """The world's gold links (one line per WikiMatrix row); real WikiMatrix has none."""

    return f"{cfg['raw_root']}/{alignment_file(xx)}"


def pool_config(cfg: dict) -> dict:
    wm = cfg["data"].get("wikimatrix") or {}
    out = dict(spec(cfg)["pool"])
    if "threshold" in wm:
        out["threshold"] = wm["threshold"]
    return out


def sample_sizes(cfg: dict, xx: str) -> list[int]:
    s = spec(cfg)["samples"]
    sweep = s.get("sweep") or {}
    sizes = list(s["sizes"]) + (list(sweep.get("sizes", [])) if xx in sweep.get("pairs", []) else [])
    return sorted(set(sizes))


def sample_files(cfg: dict) -> list[str]:
    return [T.aligned_pairs_file(cfg, xx, n, seed)
            for xx in pairs(cfg) for n in sample_sizes(cfg, xx) for seed in spec(cfg)["samples"]["seeds"]]  # fmt: skip


def aer_backends(cfg: dict) -> list[str]:
    """The configured AER backends that are installed here (the table names the others)."""
    return [b for b in spec(cfg)["aer_backends"] if get_backend(b).available()]


def aer_inputs(cfg: dict) -> list[str]:
    return [f"{backend_dir(cfg, xx, b)}/aer.json" for xx in pairs(cfg) for b in aer_backends(cfg)]


def aer_table(cfg: dict) -> list[str]:
    return [f"{cfg['results']}/tables/align/aer.{ext}" for ext in AER_FORMATS]


def l2_encoder(cfg: dict) -> str:
    name = spec(cfg)["l2"]["encoder"]
    if name not in cfg["encoders"]:
        raise XltError(f"config key align.l2.encoder: unknown encoder {name!r}; allowed: {', '.join(sorted(cfg['encoders']))}")
    return name


def l2_inputs(cfg: dict) -> list[str]:
    return [f"{backend_dir(cfg, xx)}/l2/{l2_encoder(cfg)}.csv" for xx in pairs(cfg)]


def align_tables(cfg: dict) -> list[str]:
    """What `all_tables` gets from this stage: the AER table when gold links exist (the tiny world)."""
    return aer_table(cfg) if cfg.get("align") and cfg.get("world") else []


def align_all(cfg: dict) -> list[str]:
    """Everything of the stage: every sample, the AER table (world) and the original encoder's
    L2 distances (adjust's figures draw them)."""
    return sample_files(cfg) + align_tables(cfg) + l2_inputs(cfg) if cfg.get("align") else []


def l2_job_config(cfg: dict) -> dict:
    """The `L2Config` fields of align.l2 (the rest: encoder, figure settings)."""

    from xlt.align.l2 import L2Config  # pandas: not when the workflow reads its rules

    names = {f.name for f in fields(L2Config)}
    return {k: v for k, v in spec(cfg)["l2"].items() if k in names}


def check(cfg: dict) -> None:
    """Cross-references of the align block the schema cannot see; one line naming the key."""
    if not cfg.get("align"):
        return
    s, allowed = spec(cfg), pairs(cfg)
    l2_encoder(cfg)
    fig1 = s["l2"].get("fig1_pair")
    if fig1 is not None and fig1 not in allowed:
        raise XltError(f"config key align.l2.fig1_pair: {fig1!r} is not an aligned pair; allowed: {', '.join(allowed)}")
    for xx in (s["samples"].get("sweep") or {}).get("pairs", []):
        if xx not in allowed:
            raise XltError(f"config key align.samples.sweep.pairs: {xx!r} is not an aligned pair; allowed: {', '.join(allowed)}")
    if cfg.get("world"):

        world = resolve(cfg["world"])
        have = [lang for lang in world["languages"] if lang != "en"] if "bitext" in world["tasks"] else []
        for xx in allowed:
            if xx not in have:
                raise XltError(f"config key align.pairs: the world writes no en-{xx} bitext; allowed: {', '.join(have) or '(none: add bitext to world.tasks)'}")
