"""dlfa's prices in the full-scale bill (xlt.workflow.bill): Table VI's similarity of parallel sentences.

The plan's function that lists a similarity job's models is passed in by the paper's
declaration: this module imports nothing of the package (no import circle)."""

from __future__ import annotations

import re
from collections.abc import Callable

from xlt.dag import targets as T
from xlt.paperkit.base import BillRule, PaperBill
from xlt.dag.work import Work, mean_tokens


def paper_bill(slug: str, similarity_models: Callable[[dict, str, int], dict]) -> PaperBill:
    """The bill rules of the paper `slug`: `similarity_models(cfg, encoder, seed)` is what one
    similarity job reads (the plan's)."""

    def similarity(cfg: dict, w: dict, ex) -> list[Work]:
        """Every model encodes the parallel XNLI sentences of every language once."""
        p = cfg["papers"][slug]
        models = len(similarity_models(cfg, w["encoder"], int(w["seed"])))
        langs = T.langset_languages(cfg, p["languages"]["xnli"])
        return [Work("pair", infer=models * p["similarity"]["sentences"] * len(langs) * mean_tokens("xnli"))]

    output = re.compile(rf"{slug}/similarity/(?P<encoder>[^/]+)/seed(?P<seed>\d+)\.csv$")
    return PaperBill(rules=(BillRule(f"{slug}_similarity", output, similarity),))
