"""Grid jobs on real (tiny) fine-tuned models: endpoints score exactly like the models."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch

from tests.test_config import base
from xlt.errors import XltError
from xlt.stages.finetune import evaluate_model, finetune
from xlt.stages.finetune_job import FinetuneJob
from xlt.papers.underspec.grid import COLUMNS, GridJob, GridSpec, grid_points, run_grid_job
from xlt.papers.underspec.interpolate import alpha_grid_1d
from xlt.papers.underspec.aggregate import normalise_by_bilingual

HP = {"lr": 1e-3, "epochs": 1, "batch_size": 8, "max_length": 32, "stride": 8, "progress": False}
GRID = {"alpha_1d": {"lo": 0, "hi": 1, "step": 0.5, "extra": [0.25]}, "alpha_2d": {"lo": 0, "hi": 1, "step": 1}}


@pytest.fixture(scope="module")
def models(tiny_encoder, toy_data, tmp_path_factory):
    """θ_src (en), θ_tgt (de), θ_bi (de+en) of one seed, and θ_src of another seed."""
    root = tmp_path_factory.mktemp("grid_models")
    out = {}
    for name, langs, seed in (("src", ["en"], 1), ("tgt", ["de"], 1), ("bi", ["de", "en"], 1), ("src_seed2", ["en"], 2)):
        finetune(FinetuneJob.of_seed("pos", str(tiny_encoder), toy_data / "pos", langs, HP, seed, root / name, root / f"ck_{name}"))
        out[name] = root / name
    return out


def plain_dev_scores(model_dir, toy_data, tmp_path) -> dict[str, float]:
    """The plain evaluation path (load, encode, score) that `evaluate` jobs use."""
    report = evaluate_model(str(model_dir), str(toy_data / "pos"), "dev", ["en", "de"], tmp_path / "e.json", tmp_path / "e.jsonl")
    return {"source": report["metrics"]["en"]["accuracy"], "target": report["metrics"]["de"]["accuracy"]}


def scores_at(rows, **point) -> dict[str, float]:
    out = {}
    for r in rows:
        if all((r[k] == v) for k, v in point.items()):
            out[r["eval_lang"]] = r["score"]
    assert set(out) == {"source", "target"}, point
    return out


@pytest.mark.parametrize("variant", ["all", "encoder"])
def test_grid_endpoints_score_exactly_like_the_models(variant, models, toy_data, tmp_path):
    job = GridJob.load(models["bi"], models["src"], models["tgt"], variant)
    evalsets = job.eval_sets(toy_data / "pos", {"source": "en", "target": "de"})
    spec = GridSpec.from_config(GRID)
    rows = job.run(grid_points("1d", spec) + grid_points("2d", spec), evalsets, "accuracy", {"seed": 1})
    bi = plain_dev_scores(models["bi"], toy_data, tmp_path)
    # θ(1) is θ_bi on both paths, and so is the 2D origin, in both variants
    assert scores_at(rows, direction="src", alpha=1.0) == bi
    assert scores_at(rows, direction="tgt", alpha=1.0) == bi
    assert scores_at(rows, direction="2d", alpha1=0.0, alpha2=0.0) == bi
    if variant == "all":
        src = plain_dev_scores(models["src"], toy_data, tmp_path)
        tgt = plain_dev_scores(models["tgt"], toy_data, tmp_path)
        assert scores_at(rows, direction="src", alpha=0.0) == src
        assert scores_at(rows, direction="tgt", alpha=0.0) == tgt
        assert scores_at(rows, direction="2d", alpha1=1.0, alpha2=0.0) == src
        assert scores_at(rows, direction="2d", alpha1=0.0, alpha2=1.0) == tgt
    else:  # the head stays θ_bi's: α = 0 is θ_src's encoder under θ_bi's head
        assert job.interp.held_names and all(n.startswith("heads.") for n in job.interp.held_names)
        assert not any(n.startswith("heads.") for n in job.interp.names)
    # the live model is left at θ_bi
    assert job.score(evalsets, "accuracy") == bi


def grid_job(models, toy_data, grids: list[str], out_dir, **kw) -> dict:
    return run_grid_job(str(models["bi"]), str(models["src"]), str(models["tgt"]), str(toy_data / "pos"),
                        "tiny", "en", "de", grids, GRID, "accuracy", str(out_dir), **kw)


def test_grid_job_writes_long_form_csv_and_provenance(models, toy_data, tmp_path):
    grid_job(models, toy_data, ["all.1d"], tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["all.1d.csv", "all.1d.json"]
    frame = pd.read_csv(tmp_path / "all.1d.csv")
    assert tuple(frame.columns) == COLUMNS
    assert len(frame) == 2 * 4 * 2  # directions × α (0, 0.25, 0.5, 1) × dev sets
    assert sorted(frame["alpha"].unique()) == [0.0, 0.25, 0.5, 1.0]
    assert (frame["seed"] == 1).all() and (frame["task"] == "pos").all()
    norm = normalise_by_bilingual(frame)  # the bilingual rows agree, and α = 1 normalises to 1
    assert (norm.loc[norm["alpha"] == 1.0, "norm_mean"] == 1.0).all()
    saved = json.loads((tmp_path / "all.1d.json").read_text())
    assert saved["evaluations"] == 16 and saved["points"] == 8
    g = saved["geometry"]
    assert g["norm_src"] > 0 and g["norm_tgt"] > 0 and 0 < g["angle_deg"] < 180
    assert set(saved["models"]) == {"bi", "src", "tgt"}
    assert saved["provenance"]["data_sha256"]


def _without_timings(report: dict) -> dict:
    return {k: v for k, v in report.items() if k not in ("seconds", "job_grids")}


def test_one_job_scores_each_grid_of_a_setting_exactly_as_a_job_of_its_own(models, toy_data, tmp_path):
    """The models loaded and the dev sets encoded once, the variant switched between grids
    (encoder-only first, so that the head is held then interpolated again): every CSV is the
    same text as that of a job that loaded the models for its grid alone (the jobs of one
    variant and kind each, as the workflow ran them before), and so is every JSON but for its
    timings."""
    grids = ["encoder.1d", "all.2d", "all.1d"]
    together = grid_job(models, toy_data, grids, tmp_path / "together")
    assert set(together) == set(grids)
    for name in grids:
        alone = grid_job(models, toy_data, [name], tmp_path / name)
        for ext in ("csv", "json"):
            assert (tmp_path / name / f"{name}.{ext}").exists()
        assert (tmp_path / "together" / f"{name}.csv").read_text() == (tmp_path / name / f"{name}.csv").read_text(), name
        saved = json.loads((tmp_path / "together" / f"{name}.json").read_text())
        assert _without_timings(saved) == _without_timings(alone[name]) == _without_timings(together[name])
        assert saved["job_grids"] == grids
    assert together["encoder.1d"]["interpolated"]["parameters"] < together["all.1d"]["interpolated"]["parameters"]
    rows = pd.read_csv(tmp_path / "together" / "encoder.1d.csv")
    assert (rows["variant"] == "encoder").all() and len(rows) == 2 * 4 * 2


def test_a_grid_job_refuses_a_grid_named_twice(models, toy_data, tmp_path):
    with pytest.raises(XltError, match="named twice"):
        grid_job(models, toy_data, ["all.1d", "all.1d"], tmp_path)
    assert not any(tmp_path.iterdir())


def test_models_of_different_seeds_are_refused(models):
    with pytest.raises(XltError, match="seed 2 differs from θ_bi's"):
        GridJob.load(models["bi"], models["src_seed2"], models["tgt"])


def test_grid_spec_of_the_paper():
    p = base()["papers"]["underspec"]
    spec = GridSpec.from_config(p["grid"])
    assert list(spec.alpha_1d) == alpha_grid_1d()  # 33 values: -0.5 … 1.5 and footnote 5's
    assert len(spec.axis_2d) == 21 and spec.axis_2d[0] == -0.5 and spec.axis_2d[-1] == 1.5
    assert len(grid_points("1d", spec)) == 66 and len(grid_points("2d", spec)) == 441
    with pytest.raises(XltError, match="kind"):
        grid_points("3d", spec)


def test_interpolated_point_is_written_in_place(models):
    job = GridJob.load(models["bi"], models["src"], models["tgt"])
    params = {n: p for n, p in job.model.named_parameters()}
    ptr = {n: p.data_ptr() for n, p in params.items()}
    job.set_point("src", 0.5, float("nan"), float("nan"))
    assert {n: p.data_ptr() for n, p in job.model.named_parameters()} == ptr
    name = "heads.pos.out.weight"
    assert torch.allclose(params[name], 0.5 * job.interp._ends["bi"][job.interp.names.index(name)]
                          + 0.5 * job.interp._ends["src"][job.interp.names.index(name)])


def test_grid_job_killed_with_sigkill_leaves_nothing_and_reruns_identically(models, toy_data, tmp_path):
    import subprocess
    import sys

    from tests.conftest import REPO

    grids = ["all.1d", "encoder.1d"]

    def cli(out, *extra):
        return subprocess.run(
            [sys.executable, str(REPO / "workflow_scripts" / "paper_job.py"), "underspec", "grid", "--bi", str(models["bi"]),
             "--src", str(models["src"]), "--tgt", str(models["tgt"]), "--data-dir", str(toy_data / "pos"),
             "--encoder", "tiny", "--source", "en", "--target", "de", "--grids", *grids,
             "--grid", json.dumps(GRID), "--metric", "accuracy", "--out-dir", str(out), "--threads", "1", *extra],
            capture_output=True, text=True, timeout=300)

    clean = cli(tmp_path / "clean")
    assert clean.returncode == 0, clean.stderr
    # killed in the second grid, the first one scored: still no file
    killed = cli(tmp_path / "rerun", "--kill-after-points", str(len(grid_points("1d", GridSpec.from_config(GRID))) + 3))
    assert killed.returncode == -9
    assert not (tmp_path / "rerun").exists()  # no partial CSV, no JSON, no empty folder
    again = cli(tmp_path / "rerun")
    assert again.returncode == 0, again.stderr
    for name in grids:
        assert (tmp_path / "clean" / f"{name}.csv").read_bytes() == (tmp_path / "rerun" / f"{name}.csv").read_bytes()
