"""adjust's prices in the full-scale bill (xlt.workflow.bill): the cross-lingual adjustment of an encoder
on aligned pairs and the L2 distances of Figures 1-2 (the original encoder's from the alignment
stage's rule, the adjusted models' from the paper's own)."""

from __future__ import annotations

import re

from xlt.papers.adjust.inits import Adjusted, adjust_config
from xlt.paperkit.base import BillRule, PaperBill
from xlt.dag.work import FLOPS, Work, mean_tokens


def adjust_encoder(cfg: dict, w: dict, ex) -> list[Work]:
    """Epochs over the sampled pairs: both sides trained, the anchor reads the English side."""
    it, a = Adjusted.parse(w["init"]), adjust_config(cfg, w["init"])
    n = a.get("epochs", 1) * it.size
    return [Work(FLOPS, train=2 * n * mean_tokens("bitext"), infer=n * mean_tokens("bitext"))]


def l2(cfg: dict, w: dict, ex) -> list[Work]:
    """Both sides of the sampled sentence pairs encoded once."""
    return [Work(FLOPS, infer=2 * cfg["align"]["l2"]["sentences"] * mean_tokens("bitext"))]


BILL = PaperBill(rules=(
    # shared rules (rules/encoder.smk, rules/align.smk) that only this paper asks for
    BillRule("adjust_encoder", re.compile(r"encoders/(?P<encoder>[^/]+)/(?P<init>adjust-[^/]+)$"), adjust_encoder),
    BillRule("align_l2", re.compile(r"align/en-(?P<pair>[a-z]+)/[^/]+/l2/(?P<encoder>[^/]+)\.csv$"), l2),
    # its path names no encoder: priced as the alignment stage's L2 encoder
    BillRule("adjust_l2", re.compile(r"adjust/l2/en-(?P<pair>[a-z]+)/[^/]+\.csv$"), l2,
             encoder=lambda cfg, w: cfg["align"]["l2"]["encoder"]),
))  # fmt: skip
