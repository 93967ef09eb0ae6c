"""underspec's prices in the full-scale bill (xlt.workflow.bill): the interpolation grids."""

from __future__ import annotations

import re

from xlt.paperkit.base import BillRule, PaperBill
from xlt.papers.underspec.plan import grid_job_grids
from xlt.dag.work import Work, workload_of


def paper_bill(slug: str) -> PaperBill:
    """The bill rules of the paper `slug` (its config block: papers.<slug>)."""

    def grids(cfg: dict, w: dict, ex) -> list[Work]:
        """No training; every point of every grid of the setting's job (all its variants and
        kinds) scored on the source and the target dev set."""
        from xlt.papers.underspec.grid import GridSpec, grid_points, parse_grid_name  # torch: only when a bill prices grids

        spec = GridSpec.from_config(cfg["papers"][slug]["grid"])
        points = sum(len(grid_points(parse_grid_name(name)[1], spec))
                     for name in grid_job_grids(cfg, w["dataset"], w["source"], w["target"]))
        return [Work(workload_of(w["dataset"]), infer=points * ex.tokens(w["dataset"], [w["source"], w["target"]], "dev"))]

    # a grid job's priced output (one per job: the first grid's CSV), relative to the results folder
    output = re.compile(rf"{slug}/grids/(?P<encoder>[^/]+)/(?P<dataset>[^/]+)/(?P<source>[a-z]+)-(?P<target>[a-z]+)/"
                        r"seed(?P<seed>\d+)/[a-z]+\.[12]d\.csv$")
    # its grid points are scored by xlt.engine's evaluation path (config `evaluation`); the 2D
    # settings' jobs are rule underspec_grid_2d (rules/underspec.smk)
    return PaperBill(rules=tuple(BillRule(rule, output, grids, engine_eval=True)
                                 for rule in (f"{slug}_grid", f"{slug}_grid_2d")))
