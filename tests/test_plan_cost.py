"""The plan's money and time (xlt.workflow.plan.render): GPU-hours on the named GPU, measured and
estimated, GPU sharing as configured with the other setting's price, the wall-clock at N GPUs, the
time limits. Fast: a few jobs, no Snakemake."""

import pytest

from tests.conftest import REPO
from xlt.workflow import plan as L
from xlt.workflow.config import load_configs

CFG = load_configs([])
MODEL = "results/models/mbert/pretrained/ner/en.underspec/seed{}"
JOBS = [("finetune", [MODEL.format(1)]), ("finetune", [MODEL.format(2)]),
        ("evaluate", [MODEL.format(1).replace("models", "eval") + "/test.underspec.json"]),
        ("prepare_task", ["results/data/ner"])]  # fmt: skip


def _plan(env: dict, gpus: int = 8) -> tuple[list[str], dict]:
    bill = L.bill_of(CFG, JOBS, "all_tables", "config.yaml", env)
    times = L.time_limits(CFG, JOBS, env, bill["gpu"])
    return L.render("all_tables", "config.yaml", JOBS, bill, [], "NEXT", times=times, gpus=gpus), bill


def _total_row(lines):
    (row,) = [line.split() for line in lines if line.startswith("  total ")]
    return [float(x.replace(",", "")) for x in row[2:]]


def test_sharing_on_and_off_each_with_the_others_price():
    off, bill_off = _plan({})
    on, bill_on = _plan({"XLT_SLURM_GPU_SHARDS": "8"})
    h_off, h_on = bill_off["papers"]["total"]["ours"], bill_on["papers"]["total"]["ours"]
    assert h_on < h_off
    i = next(i for i, line in enumerate(off) if line.startswith("  - GPU sharing off (XLT_SLURM_GPU_SHARDS unset)"))
    assert off[i + 1].strip().startswith("with sharing") and off[i + 1].endswith(f": {L._hours(h_on)} GPU-hours")
    i = next(i for i, line in enumerate(on) if line.startswith("  - GPU sharing on: XLT_SLURM_GPU_SHARDS=8"))
    assert on[i + 1].strip().startswith("without sharing") and on[i + 1].endswith(f": {L._hours(h_off)} GPU-hours")


def test_the_gpu_is_named_and_measured_plus_estimated_is_the_total():
    lines, bill = _plan({})
    gpu = bill["gpu"]
    assert gpu and f"GPU-hours on the {gpu} (" in lines[0]
    total, measured, estimated = _total_row(lines)
    t = bill["papers"]["total"]
    assert measured + estimated == pytest.approx(total, rel=0.02)
    assert t["measured_ours"] + (t["ours"] - t["measured_ours"]) == pytest.approx(t["ours"])
    stages = [line.split() for line in lines if line.startswith("  ") and len(line.split()) == 5
              and line.split()[0] not in ("stage", "total") and line.split()[2] != "–"]  # fmt: skip
    assert sum(float(s[3]) for s in stages) == pytest.approx(measured, rel=0.05, abs=0.01)


def test_the_wall_clock_at_n_gpus_and_the_time_limits_are_printed():
    lines, bill = _plan({}, gpus=2)
    text = "\n".join(lines)
    assert "Wall-clock on 2 GPUs (make plan GPUS=N): about" in text
    assert "at most 48 h (compute.max_runtime_hours)" in text and "Largest request:" in text
    assert "resumes from its checkpoint (fine-tuning and MLM checkpoint)" in text
    assert max(map(len, lines)) <= 200
