"""underspec's prices in the full-scale bill (xlt.workflow.bill): the interpolation grids."""

from __future__ import annotations

import re

from xlt.papers.base import BillRule, PaperBill
from xlt.dag.work import Work, workload_of


def paper_bill(slug: str) -> PaperBill:
    """The bill rules of the paper `slug` (its config block: papers.<slug>)."""

    def grid(cfg: dict, w: dict, ex) -> list[Work]:
        """No training; every grid point scored on the source and the target dev set."""
        from xlt.papers.underspec.grid import GridSpec, grid_points  # torch: only when a bill prices grids

        points = len(grid_points(w["kind"], GridSpec.from_config(cfg["papers"][slug]["grid"])))
        return [Work(workload_of(w["dataset"]), infer=points * ex.tokens(w["dataset"], [w["source"], w["target"]], "dev"))]

    # a grid job's priced output, relative to the results folder
    output = re.compile(rf"{slug}/grids/(?P<encoder>[^/]+)/(?P<dataset>[^/]+)/(?P<source>[a-z]+)-(?P<target>[a-z]+)/"
                        r"seed(?P<seed>\d+)/(?P<variant>[a-z]+)\.(?P<kind>[12]d)\.csv$")
    # its grid points are scored by xlt.engine's evaluation path (config `evaluation`)
    return PaperBill(rules=(BillRule(f"{slug}_grid", output, grid, engine_eval=True),))
