"""What jobs ask SLURM for (xlt.resources): GPUs per job kind, DDP processes, the launcher."""

import pytest

from xlt import resources as R
from xlt.errors import XltError


def cfg(gpus: int, ddp: bool, threads: int = 8) -> dict:
    return {"encoders": {"mbert": {"hub": "google-bert/bert-base-multilingual-cased"}},
            "compute": {"gpus_per_job": gpus, "ddp": ddp, "jobs": {"finetune": {"threads": threads}}}}


class W:
    encoder = "mbert"


def test_ddp_finetune_asks_for_all_gpus_and_one_task():
    c = cfg(4, True)
    res = R.job_resources(c, "finetune", env={})
    assert res["gpu"] == 4
    # `tasks` / `tasks_per_gpu` would make the plugin add --ntasks-per-gpu: N tasks, each a torchrun
    assert not {"tasks", "tasks_per_gpu", "gres"} & set(res)
    assert R.launcher(c, "finetune") == "torchrun --standalone --nnodes 1 --nproc-per-node 4"
    assert R.processes(c, "finetune") == 4 and R.process_threads(c, "finetune") == 2


@pytest.mark.parametrize("kind", ["evaluate", "grid", "build_encoder", "adapt_encoder"])
def test_single_process_jobs_get_one_gpu_under_ddp(kind):
    res = R.job_resources(cfg(4, True), kind, env={})
    assert res["gpu"] == 1
    assert R.processes(cfg(4, True), kind) == 1 and R.launcher(cfg(4, True), kind) == ""


def test_cpu_jobs_and_cpu_configs_get_no_gpu():
    assert "gpu" not in R.job_resources(cfg(2, True), "prepare", env={})
    assert "gpu" not in R.job_resources(cfg(0, False), "finetune", env={})
    assert R.launcher(cfg(1, True), "finetune") == "" and R.process_threads(cfg(1, True), "finetune") == 8


def test_several_gpus_without_ddp_is_refused():
    with pytest.raises(XltError, match=r"compute.gpus_per_job=2 needs compute.ddp: true"):
        R.job_resources(cfg(2, False), "finetune", env={})


def test_cluster_settings_and_runtime_growth_come_through():
    c = cfg(2, True)
    c["compute"]["jobs"]["finetune"].update(runtime={"base": 60, "large": 600}, mem_mb=1000)
    env = {"XLT_SLURM_ACCOUNT": "acc", "XLT_SLURM_PARTITION": "cpu", "XLT_SLURM_GPU_PARTITION": "gpu",
           "XLT_SLURM_GPU_MODEL": "h100"}
    res = R.job_resources(c, "finetune", env=env)
    assert (res["slurm_account"], res["slurm_partition"], res["gpu_model"]) == ("acc", "gpu", "h100")
    assert [res["runtime"](W, attempt) for attempt in (1, 2, 3)] == [60, 120, 240]
    assert R.job_resources(c, "prepare", env=env)["slurm_partition"] == "cpu"
