"""Interpolation grids of the underspec paper: every grid point scored on two dev sets.

One grid job is one setting (encoder, task, source, target, seed); it scores every grid the
setting needs, each a variant (`all` parameters or the `encoder` only) and a kind (`1d`: Eq. 1
and Eq. 2; `2d`: Eq. 3):

    job = GridJob.load(bi_dir, src_dir, tgt_dir, "all", device)         # θ_bi live, θ_src / θ_tgt as endpoints
    evalsets = job.eval_sets(data_dir, {"source": "en", "target": "de"})  # encoded once
    rows = job.run(grid_points("1d", spec), evalsets, metric, setting)  # long-form rows
    job.set_variant("encoder")                                          # nothing loaded or moved again
    rows = job.run(grid_points("1d", spec), evalsets, metric, setting)

The three models are loaded once; θ_bi becomes the live model and `interpolate.Interpolator`
writes each grid point into its parameters in place. The dev sets are encoded and collated
once (`xlt.engine.evalset.EvalSet`), so a point costs one in-place interpolation plus one
evaluation per dev set. Rows have the columns `aggregate` reads (see `COLUMNS`).
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Annotated

import torch

from xlt.errors import XltError
from xlt.papers.underspec.alpha import alpha_axis
from xlt.papers.underspec.interpolate import Interpolator
from xlt.engine.train_config import TrainConfig
from xlt.engine.evalset import EvalSet, load_records, max_positions
from xlt.stages.finetune import split_file
import pandas as pd
from xlt.engine.evaluation import eval_mode
from xlt.stages.finetune import is_collapsed
from xlt.io import sha256_file, write_json, write_text
from xlt.provenance import provenance

__all__ = ["COLUMNS", "GridJob", "GridSpec", "grid_points", "parse_grid_name", "run_grid_job"]

COLUMNS = ("encoder", "variant", "task", "metric", "source", "target", "seed",
           "direction", "alpha", "alpha1", "alpha2", "eval_lang", "score")  # fmt: skip
NAN = float("nan")
VARIANTS = ("all", "encoder")
KINDS = ("1d", "2d")


@dataclass(frozen=True)
class GridSpec:
    """The α values: 1D (Eq. 1 and 2) and the axis of α1 and α2 in 2D (Eq. 3)."""

    alpha_1d: tuple[float, ...]
    axis_2d: tuple[float, ...]

    @classmethod
    def from_config(cls, grid: dict) -> "GridSpec":
        """From a `papers.underspec.grid` block: {alpha_1d: {lo, hi, step, extra}, alpha_2d: {lo, hi, step}}."""

        g1, g2 = grid["alpha_1d"], grid["alpha_2d"]
        one = set(alpha_axis(g1["step"], g1["lo"], g1["hi"])) | {float(Decimal(str(a))) for a in g1.get("extra", [])}
        return cls(tuple(sorted(one)), tuple(alpha_axis(g2["step"], g2["lo"], g2["hi"])))


def grid_points(kind: str, spec: GridSpec) -> list[tuple[str, float, float, float]]:
    """(direction, alpha, alpha1, alpha2) of every point of a `1d` or `2d` grid."""
    if kind == "1d":
        return [(d, a, NAN, NAN) for d in ("src", "tgt") for a in spec.alpha_1d]
    if kind == "2d":
        return [("2d", NAN, a1, a2) for a1 in spec.axis_2d for a2 in spec.axis_2d]
    raise XltError(f"grid kind must be 1d or 2d, got {kind!r}")


def _state(model) -> dict[str, torch.Tensor]:
    return model.state_dict()


class GridJob:
    """θ_bi as the live model, θ_src and θ_tgt as endpoints of an in-place `Interpolator`."""

    def __init__(self, model, tokenizer, metas: dict[str, dict], endpoints: dict[str, dict], variant: str,
                 device: torch.device):

        self.model, self.tokenizer, self.metas, self.device = model, tokenizer, metas, device
        self.task = model.task
        self.precision: str | None = None  # of every evaluation if set, else each EvalSet's own (its mode's)
        self.interp = Interpolator(model, endpoints["bi"], endpoints["src"], endpoints["tgt"],
                                   param_filter=self._interpolated(variant), hold="bi")
        self.variant = variant

    def _interpolated(self, variant: str):
        """The Interpolator's param_filter of a variant."""
        if variant not in VARIANTS:
            raise XltError(f"grid variant must be 'all' or 'encoder', got {variant!r}")
        return self.model.encoder if variant == "encoder" else "all"

    def set_variant(self, variant: str) -> None:
        """Interpolate the parameters of `variant` from now on; the endpoints stay where they are
        (on the device), the model is left at θ_bi: a grid then scores exactly as in a job
        loaded with this variant."""
        self.interp.select(self._interpolated(variant))
        self.variant = variant

    @classmethod
    def load(cls, bi: str | Path, src: str | Path, tgt: str | Path, variant: str = "all",
             device: str | torch.device = "cpu") -> "GridJob":
        """Load the three models (one architecture, one task, one seed, one initial encoder)."""
        # deferred: loads safetensors only when this runs
        from xlt.engine.model import load_model

        device = torch.device(device)
        model, tokenizer, meta_bi = load_model(bi, device)
        metas, endpoints = {"bi": meta_bi}, {"bi": {k: v.detach().clone() for k, v in _state(model).items()}}
        for which, path in (("src", src), ("tgt", tgt)):
            m, _, meta = load_model(path, "cpu")
            metas[which] = meta
            endpoints[which] = _state(m)
        _check_same_origin({"bi": bi, "src": src, "tgt": tgt}, metas)
        return cls(model, tokenizer, metas, endpoints, variant, device)

    @property
    def seed(self) -> int:
        return int(self.metas["bi"]["provenance"]["seed"])

    def eval_sets(self, data_dir: str | Path, langs: dict[str, str], split: str = "dev", mode=None) -> dict:
        """{eval_lang: EvalSet} for e.g. {"source": "en", "target": "de"}, encoded once with
        θ_bi's evaluation settings (max_length, stride, batch size, parse limit); `mode`: the
        precision and batching of the forwards (xlt.engine.evaluation.eval_mode; default fp32)."""

        cfg = TrainConfig.from_dict(self.metas["bi"]["train_config"])
        positions = max_positions(self.model, self.tokenizer)
        out = {}
        for role, lang in langs.items():
            path = split_file(data_dir, lang, split)
            out[role] = EvalSet.build(self.task, load_records([path]), self.tokenizer, cfg, positions, name=str(path),
                                      mode=mode)
        return out

    def set_point(self, direction: str, alpha: float, alpha1: float, alpha2: float) -> None:
        if direction in ("src", "tgt"):
            self.interp.set_1d(alpha, direction)
        elif direction == "2d":
            self.interp.set_2d(alpha1, alpha2)
        else:
            raise XltError(f"grid direction must be src, tgt or 2d, got {direction!r}")

    def launch(self, evalsets: dict) -> dict:
        """Queue the live model's forward passes on each eval set (EvalSet.launch)."""
        return {role: ev.launch(self.model, self.device, self.precision) for role, ev in evalsets.items()}

    def finish(self, evalsets: dict, launched: dict, metric: str) -> dict[str, float]:
        """The metric on each eval set of a `launch`."""
        out = {}
        for role, ev in evalsets.items():
            metrics = ev.finish(launched[role], self.device)[1]
            if metric not in metrics:
                raise XltError(f"task {self.task.name}: no metric {metric!r}; has {', '.join(metrics)}")
            out[role] = metrics[metric]
        return out

    def score(self, evalsets: dict, metric: str) -> dict[str, float]:
        """The metric of the live model on each eval set."""
        return self.finish(evalsets, self.launch(evalsets), metric)

    def run(self, points, evalsets: dict, metric: str, setting: dict, progress=None) -> list[dict]:
        """Score every point on every eval set; one row per (point, eval set).

        Pipelined: the next point's weights (written in place on the device) and forward
        passes are queued before this point's outputs are decoded and scored on the host, so
        on a GPU the device never waits for the host between points. The device runs the
        queue in order, so each point's outputs are those of its own weights; on a CPU the
        order of work, and every score, is as one point after the other."""
        rows: list[dict] = []
        done = 0
        pending = None

        def score(point, launched) -> None:
            nonlocal done
            direction, alpha, a1, a2 = point
            for role, value in self.finish(evalsets, launched, metric).items():
                rows.append({**setting, "direction": direction, "alpha": alpha, "alpha1": a1, "alpha2": a2,
                             "eval_lang": role, "score": value})
            done += 1
            if progress:
                progress(done, len(points))

        for point in points:
            self.set_point(*point)
            launched = self.launch(evalsets)
            if pending is not None:
                score(*pending)
            pending = (point, launched)
        if pending is not None:
            score(*pending)
        self.interp.set_endpoint("bi")
        return rows

    def geometry(self) -> dict:
        """‖δ_src‖, ‖δ_tgt‖, their ratio and angle over the interpolated parameters (Fig. 4)."""
        return self.interp.geometry()


def _check_same_origin(paths: dict, metas: dict) -> None:
    bi = metas["bi"]
    for which in ("src", "tgt"):
        m = metas[which]
        for what, get in (("task", lambda x: x["task"]), ("seed", lambda x: x["provenance"]["seed"]),
                          ("initial encoder", lambda x: x["train_config"]["encoder"]), ("labels", lambda x: x.get("labels"))):
            if get(m) != get(bi):
                raise XltError(
                    f"{paths[which]}: {what} {get(m)!r} differs from θ_bi's ({paths['bi']}: {get(bi)!r}); "
                    "the three models of a grid must share task, seed and initialisation"
                )


def parse_grid_name(name: str) -> tuple[str, str]:
    """(variant, kind) of a grid's name (`xlt.papers.underspec.plan.grid_name`: `all.1d`)."""
    variant, _, kind = name.partition(".")
    if variant not in VARIANTS or kind not in KINDS:
        raise XltError(f"grid {name!r}: expected <variant>.<kind>, variant one of {', '.join(VARIANTS)}, "
                       f"kind one of {', '.join(KINDS)}")
    return variant, kind


def run_grid_job(bi: str, src: str, tgt: str, data_dir: str, encoder: str, source: str, target: str,
                 grids: Annotated[list[str], "the grids to score, <variant>.<kind> each: all.1d encoder.1d all.2d"],
                 grid: dict, metric: str, out_dir: Annotated[str, "writes <variant>.<kind>.csv and .json here"],
                 device: str = "auto", kill_after_points: int | None = None, evaluation: dict | None = None) -> dict:
    """The grids of one setting end to end: load the three models and encode the two dev sets
    once, then per grid (`grids`, in order) switch variant, score every point and make the
    long-form CSV and a JSON with the provenance, the δ geometry and the timing.

    A grid job keeps no state between points: the models on disk are never changed and every
    file is written atomically once all grids are scored, so a job killed anywhere leaves
    nothing behind and its rerun scores every point again, exactly. Each grid's numbers are
    those of a job that scored that grid alone (tests/underspec/test_grid.py). `evaluation`:
    the config's block (precision, batch_tokens; xlt.engine.evaluation). `kill_after_points`
    (testing aid) SIGKILLs this process after that many points of the job."""

    # deferred: loads safetensors only when this runs
    from xlt.engine.runtime import pick_device

    plan = [parse_grid_name(name) for name in grids]
    if len(set(grids)) < len(grids):
        raise XltError(f"grids {' '.join(grids)}: a grid is named twice")
    t0 = time.perf_counter()
    dev = pick_device(device)
    mode = eval_mode(evaluation, dev)
    job = GridJob.load(bi, src, tgt, plan[0][0], dev)
    t_load = time.perf_counter()
    evalsets = job.eval_sets(data_dir, {"source": source, "target": target}, mode=mode)
    t_encode = time.perf_counter()
    spec = GridSpec.from_config(grid)
    models = {"bi": bi, "src": src, "tgt": tgt}
    done_before = 0

    def killer(done: int, total: int) -> None:
        if kill_after_points is not None and done_before + done >= kill_after_points:
            os.kill(os.getpid(), signal.SIGKILL)

    written = {}
    for name, (variant, kind) in zip(grids, plan):
        job.set_variant(variant)
        points = grid_points(kind, spec)
        setting = {"encoder": encoder, "variant": variant, "task": job.task.name, "metric": metric,
                   "source": source, "target": target, "seed": job.seed}
        t_start = time.perf_counter()
        rows = job.run(points, evalsets, metric, setting, progress=killer)
        t_grid = time.perf_counter()
        done_before += len(points)
        frame = pd.DataFrame(rows, columns=list(COLUMNS))
        written[name] = (frame.to_csv(index=False, float_format="%.10g"), {
            "setting": setting,
            "kind": kind,
            "points": len(points),
            "evaluations": len(points) * len(evalsets),
            "eval_sets": {role: {"path": ev.name, "examples": len(ev.records)} for role, ev in evalsets.items()},
            "interpolated": {"tensors": len(job.interp.names), "held": len(job.interp.held_names),
                             "parameters": sum(t.numel() for t in job.interp._live)},
            "geometry": job.geometry(),
            # load and encode: once for the whole job (`job_grids`)
            "seconds": {"load": round(t_load - t0, 3), "encode": round(t_encode - t_load, 3),
                        "grid": round(t_grid - t_start, 3), "per_point": round((t_grid - t_start) / len(points), 4)},
            "job_grids": list(grids),
            "device": str(dev),
            "evaluation": mode.describe(),
            "models": {which: {"path": str(p), "seed": job.metas[which]["provenance"]["seed"],
                               "selected_epoch": job.metas[which]["train"]["selected_epoch"],
                               # it collapsed (xlt.stages.finetune.is_collapsed; the figures count it)
                               "collapsed": is_collapsed(job.metas[which]),
                               "modules_sha256": sha256_file(Path(p) / "modules.safetensors")}
                       for which, p in models.items()},
            "provenance": provenance({"grid": grid, "kind": kind, "variant": variant, "metric": metric, "models": models},
                                     job.seed, [ev.name for ev in evalsets.values()]),
        })
    for name, (csv, report) in written.items():
        write_text(Path(out_dir) / f"{name}.csv", csv)
        write_json(Path(out_dir) / f"{name}.json", report)
    return {name: report for name, (_, report) in written.items()}
