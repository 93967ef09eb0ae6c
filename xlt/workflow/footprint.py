"""Disk: what a run writes, and the fine-tuned models it removes once evaluated.

A fine-tuned model is a full fp32 copy of its encoder (xlt.engine.model: `encoder/` in
safetensors, the head's `modules.safetensors`, the tokenizer), so the full run's 1,261 models
hold most of its disk. A model that no rule but `evaluate` / `evaluate_on` reads is removed
once its predictions and metrics are written (Snakemake's `temp()`: rules/finetune.smk's
`finetune_temp` and packs, config `keep_models: false`, the default); a model any other rule
reads stays: interpolation grids, probes, head updates, L2 distances, CKA, similarities (each
paper's Paper.models_read), a table that reads a model itself, and the models the `zero_shot`
target reuses (English, the zero_shot recipe). Snakemake 9 does not rerun a job because its
removed output is missing while everything after it is up to date (tests/test_footprint.py).

Sizes are estimates from the encoders' shapes (xlt.dag.throughput), 4 bytes a parameter; the
tokenizer's few MB aside. Nothing here imports Snakemake.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from xlt.workflow import paper_targets as P
from xlt.dag import targets as T
from xlt.dag.throughput import encoder_shape, shape_of
from xlt.errors import XltError
from xlt.workflow.packs import wanted_seeds

BYTES_PER_PARAM = 4  # fp32: what fine-tuning and MLM adaptation save
# the vocabulary of a Hub encoder where it is not its FLOP shape's (xlm-roberta-base has mBERT's
# layers, xlt.dag.throughput.SHAPE_OF_HUB, and XLM-R's 250,002 pieces)
HUB_VOCAB = {"xlm-roberta": 250002}
# one evaluation's predictions (JSON lines, one per example) and metrics: an assumed upper
# bound (XNLI's 15 test sets, 75,150 lines of ~100 bytes, are ~7.5 MB), not measured
EVAL_BYTES = 10 * 2**20
_MODEL = re.compile(r"models/([^/]+)/([^/]+)/([^/]+)/([^/]+)/seed(\d+)")


def keep_models(cfg: dict) -> bool:
    return bool(cfg.get("keep_models", False))


def encoder_params(cfg: dict, encoder: str) -> int:
    """Parameters of an encoder (embeddings, layers, pooler), from its shape."""
    shape = encoder_shape(cfg, shape_of(cfg, encoder))
    spec = cfg["encoders"].get(encoder) or {}
    name = (spec.get("hub") or spec.get("path") or "").lower()
    vocab = next((v for key, v in HUB_VOCAB.items() if key in name), shape.vocab)
    h = shape.hidden
    embeddings = (vocab + shape.max_positions + 2) * h + 2 * h  # words, positions, 2 token types, LayerNorm
    return embeddings + shape.non_embedding_params() + h * h + h  # + the pooler


def encoder_bytes(cfg: dict, encoder: str) -> int:
    """One fp32 copy of the encoder: a fine-tuned model, an adapted encoder, a snapshot."""
    return encoder_params(cfg, encoder) * BYTES_PER_PARAM


def model_of(cfg: dict, path: str) -> tuple[str, str, str, str, int] | None:
    """(encoder, init, dataset, recipe, seed) of a fine-tuned model's directory (None: not one)."""
    results = cfg["results"].rstrip("/") + "/"
    m = _MODEL.fullmatch(path.removeprefix(results)) if path.startswith(results) else None
    return (*m.groups()[:4], int(m.group(5))) if m else None


def kept_families(cfg: dict) -> set[tuple[str, str, str, str]]:
    """The model families (encoder, init, dataset, recipe) a rule other than evaluate reads: each
    configured paper's models_read, and the models and model-named analyses (a CKA under
    …/<encoder>/<init>/<dataset>/<recipe>/seed<n>/) its tables and figures read."""
    out = set()
    results = cfg["results"].rstrip("/") + "/"
    for slug in P.configured(cfg):
        paper = P.get_paper(slug)
        readers = [*(t.inputs for t in paper.tables), *([paper.figure_inputs] if paper.figure_inputs else []),
                   *([paper.models_read] if paper.models_read else [])]
        for read in readers:
            try:
                files = read(cfg)
            except XltError:  # a table this config cannot name: asking for it says why
                continue
            for f in files:
                if f.startswith(f"{results}eval/"):
                    continue  # an evaluation's metrics: the model is read by `evaluate`
                if m := re.search(r"/([^/]+)/([^/]+)/([^/]+)/([^/]+\.[^/]+)/seed\d+(?:/|$)", f):
                    out.add(m.groups())
    return out


def reused_by_zero_shot(cfg: dict, family: tuple[str, str, str, str]) -> bool:
    """The `zero_shot` target trains and reads its English models at the papers' paths: a model
    of that recipe stays for it (xlt.zeroshot)."""
    block = cfg.get("zero_shot") or {}
    if not block.get("source") or not block.get("hparams"):
        return False
    return family[1] == T.PRETRAINED and family[3] == T.Recipe((block["source"],), block["hparams"]).name


def removed_families(cfg: dict) -> list[tuple[str, str, str, str]]:
    """The families whose models are removed once evaluated: none under keep_models: true; else
    those the configured tables read whose models no rule but evaluate reads."""
    if keep_models(cfg):
        return []
    kept = kept_families(cfg)
    return sorted(f for f in wanted_seeds(cfg) if f not in kept and not reused_by_zero_shot(cfg, f))


def encoder_constraint(families) -> str:
    """The `encoder` wildcard pattern of a rule making only these families' models: a look-ahead
    sees the whole path after `encoder` (as xlt.workflow.packs.Pack's)."""
    alternatives = "|".join(re.escape("/".join(f)) for f in sorted(families))
    return rf"(?=(?:{alternatives})/seed\d+$)[^/]+"


def removed(cfg: dict, path: str, families: set | None = None) -> bool:
    """Whether the model directory `path` is removed once evaluated."""
    m = model_of(cfg, path)
    return bool(m) and m[:4] in (set(removed_families(cfg)) if families is None else families)


def output_bytes(cfg: dict, path: str) -> int:
    """The estimated size of one output: a model or an encoder copy (its encoder's size), an
    evaluation's metrics (0: counted with its predictions, EVAL_BYTES), else 0 (data, tables: small)."""
    results = cfg["results"].rstrip("/") + "/"
    if m := model_of(cfg, path):
        return _size(cfg, m[0])
    rel = path.removeprefix(results) if path.startswith(results) else None
    if rel and rel.startswith("encoders/"):
        return _size(cfg, rel.split("/")[1])
    if rel and rel.startswith("eval/") and path.endswith(".predictions.jsonl"):
        return EVAL_BYTES
    for e in T.hub_encoders(cfg):
        if path == T.snapshot_dir(cfg, e):
            return _size(cfg, e)
    return 0


def _size(cfg: dict, encoder: str) -> int:
    try:
        return encoder_bytes(cfg, encoder)
    except (XltError, KeyError):
        return 0  # an encoder of no known shape: not estimated


def disk(cfg: dict, jobs: list[tuple[str, list[str]]], rule_stage: Mapping[str, str],
         base_rule=lambda r: r) -> dict:  # fmt: skip
    """The disk the run's jobs write: {"stages": {stage: (bytes written, bytes left at the end)}
    in include order, "written", "left", "models": fine-tuned models, "removable": those no rule
    but evaluate reads, "left_without": bytes left if they are removed, "keep": keep_models}."""
    families = set(removed_families({**cfg, "keep_models": False}))
    keep = keep_models(cfg)
    written: dict = {}
    left: dict = {}
    models = gone = gone_bytes = 0
    for rule, outputs in jobs:
        stage = rule_stage.get(base_rule(rule))
        if stage is None:
            continue
        for o in outputs:
            size = output_bytes(cfg, o)
            written[stage] = written.get(stage, 0) + size
            if model_of(cfg, o):
                models += 1
                if removed(cfg, o, families):
                    gone += 1
                    gone_bytes += size
                    if not keep:
                        continue
            left[stage] = left.get(stage, 0) + size
    order = list(dict.fromkeys(rule_stage.values()))
    stages = {s: (written[s], left.get(s, 0)) for s in order if written.get(s)}
    total = sum(written.values())
    return {"stages": stages, "written": total, "left": sum(left.values()), "models": models,
            "removable": gone, "left_without": total - gone_bytes, "keep": keep}


def gb(n: float) -> str:
    """Bytes in GB (10^9), as the plan prints them."""
    v = n / 1e9
    return f"{v:,.0f} GB" if v >= 100 else f"{v:.1f} GB" if v >= 0.1 else f"{v * 1000:.0f} MB"

