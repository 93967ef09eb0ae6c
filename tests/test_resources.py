"""What jobs ask SLURM for (xlt.dag.resources): GPUs per job kind, DDP processes, the launcher."""

import json

import pytest

from xlt.dag import resources as R
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


def shared_cfg(gpus: int = 1, ddp: bool = False) -> dict:
    c = cfg(gpus, ddp)
    c["encoders"]["xlmr-large"] = {"hub": "FacebookAI/xlm-roberta-large"}
    c["compute"]["jobs"]["finetune"].update(runtime=60, jobs_per_gpu={"base": 4, "large": 2})
    c["compute"]["jobs"]["evaluate"] = {"jobs_per_gpu": 8}
    return c


class Large:
    encoder = "xlmr-large"


def test_gpu_sharing_asks_for_shards_of_one_gpu_per_kind_and_size():
    env = {"XLT_SLURM_GPU_SHARDS": "8", "XLT_SLURM_GPU_MODEL": "h200"}
    res = R.job_resources(shared_cfg(), "finetune", env=env)
    assert "gpu" not in res and "gpu_model" not in res  # --gpus would take a whole GPU besides
    assert res["gres"](W, 1) == "shard:2" and res["gres"](Large, 1) == "shard:4"  # 4 and 2 jobs to a GPU
    assert [res["runtime"](W, a) for a in (1, 2)] == [240, 480]  # time-sliced: N times the limit
    assert R.job_resources(shared_cfg(), "evaluate", env=env)["gres"](W, 1) == "shard:1"
    grid = R.job_resources(shared_cfg(), "grid", env=env)  # no jobs_per_gpu: a whole GPU
    assert grid["gpu"] == 1 and "gres" not in grid


def test_without_shards_on_the_cluster_or_under_ddp_jobs_take_whole_gpus():
    plain = R.job_resources(shared_cfg(), "finetune", env={})
    assert plain["gpu"] == 1 and "gres" not in plain and plain["runtime"](W, 1) == 60
    ddp = R.job_resources(shared_cfg(4, True), "finetune", env={"XLT_SLURM_GPU_SHARDS": "8"})
    assert ddp["gpu"] == 4 and "gres" not in ddp
    assert "gres" not in R.job_resources(shared_cfg(0), "finetune", env={"XLT_SLURM_GPU_SHARDS": "8"})


@pytest.mark.parametrize("env, jobs_per_gpu, says", [
    ({"XLT_SLURM_GPU_SHARDS": "eight"}, 4, "XLT_SLURM_GPU_SHARDS='eight'"),
    ({"XLT_SLURM_GPU_SHARDS": "2"}, 4, r"compute.jobs.finetune.jobs_per_gpu=4: .* from 1 to XLT_SLURM_GPU_SHARDS=2"),
])
def test_bad_sharing_settings_are_refused_by_name(env, jobs_per_gpu, says):
    c = shared_cfg()
    c["compute"]["jobs"]["finetune"]["jobs_per_gpu"] = jobs_per_gpu
    with pytest.raises(XltError, match=says):
        R.job_resources(c, "finetune", env=env)["gres"](W, 1)


def test_a_runtime_request_never_passes_the_cap_and_grows_on_retry_up_to_it():
    c = cfg(1, False)
    c["compute"].update(max_runtime_hours={"gpu": 10, "cpu": 2}, runtime_growth=2.0)
    c["compute"]["jobs"]["finetune"]["runtime"] = 200
    c["compute"]["jobs"]["prepare"] = {"runtime": 100}
    gpu = R.job_resources(c, "finetune", env={})["runtime"]
    assert [gpu(W, a) for a in (1, 2, 3, 4)] == [200, 400, 600, 600]  # 10 h cap
    cpu = R.job_resources(c, "prepare", env={})["runtime"]
    assert [cpu(W, a) for a in (1, 2, 3)] == [100, 120, 120]  # the cpu partition's 2 h


def test_a_priced_job_asks_for_its_priced_time_times_the_margin(tmp_path, monkeypatch):
    c = cfg(1, False)
    c["compute"].update(time_margin=1.5, max_runtime_hours=48)
    table = tmp_path / "runtimes.json"
    table.write_text(json.dumps({"fingerprint": R.config_fingerprint(c),
                                 "minutes": {"finetune": {"base": {"*": 100.0, "ner": 40.0}},
                                             "finetune_pack": {"base": {"*": 1000.0}}}}))
    monkeypatch.setattr(R, "RUNTIMES", table)
    rt = R.job_resources(c, "finetune", env={})["runtime"]
    assert rt(Task("xnli"), 1, rulename="finetune") == 150 and rt(Task("ner"), 1, rulename="finetune") == 60
    assert rt(Task("ner"), 2, rulename="finetune") == 120
    assert rt(Task("ner"), 1, rulename="finetune_pack_1_2") == 1500
    assert rt(Task("ner"), 1) == 30  # no rule named: the kind's runtime (its default here)
    # the table priced another config: the kind's runtime
    other = {**c, "seeds": [9]}
    assert R.job_resources(other, "finetune", env={})["runtime"](Task("ner"), 1, rulename="finetune") == 30


class Task:
    encoder = "mbert"

    def __init__(self, task):
        self.task = task


def test_the_full_scale_configs_largest_request_is_within_its_cap():
    """config.yaml's GPU jobs, priced by `make bill` (slurm/runtimes.json), on every attempt and
    with or without GPU sharing, ask for no more than compute.max_runtime_hours."""
    from xlt.workflow.bill import rule_kinds
    from xlt.workflow.config import load_configs

    full = load_configs([])
    priced = R.priced_minutes(full)
    assert priced, "slurm/runtimes.json prices another config: run `make bill`"
    kinds = rule_kinds()
    cap = R.max_runtime_minutes(full, True)
    for env in ({}, {"XLT_SLURM_GPU_SHARDS": "8"}):
        asked = []
        for rule, sizes in priced.items():
            rt = R.job_resources(full, kinds["finetune" if rule == "finetune_pack" else rule], env=env)["runtime"]
            name = "finetune_pack_1_2_3_4" if rule == "finetune_pack" else rule
            for size, datasets in sizes.items():
                enc = next(e for e in full["encoders"] if R.size_class(full, e) == size)
                for d in datasets:
                    w = type("W", (), {"encoder": enc, "task": d})
                    asked += [rt(w, a, rulename=name) for a in (1, 2, 3, 4)]
        assert max(asked) <= cap and max(asked) > 60
