"""The GPU benchmark's CPU mode runs end to end and produces every column for every side
(of every workload, span QA included) and the profile of ours."""

import json
import subprocess
import sys

from tests.conftest import REPO


def test_small_mode_produces_every_column(tmp_path):
    out, prof = tmp_path / "bench.json", tmp_path / "profile.txt"
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_throughput.py"), "--small", "--steps", "4",
                          "--dev-examples", "16", "--threads", "1", "--json", str(out), "--profile-ours", str(prof),
                          "--profile-steps", "2"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(out.read_text())
    rows = result["rows"]
    assert result["complete"] is True and result["errors"] == []
    assert {(r["workload"], r["side"]) for r in rows} == {(w, s) for w in ("tagging", "pair", "qa")
                                                         for s in ("ours", "hf_default", "hf_best")}
    for r in rows:
        assert set(result["columns"]) <= set(r), r
        assert r["samples_per_s"] > 0 and r["tokens_per_s"] > 0 and r["eval_tokens_per_s"] > 0
        assert 0 <= r["dev_accuracy"] <= 100
        assert r["mfu"] is None and r["peak_mem_gib"] is None  # CPU: n/a, never a made-up GPU figure
    assert result["gpu"] is False and "CPU run" in run.stdout
    table = [line for line in run.stdout.splitlines() if line.startswith("| small")]
    assert len(table) == 9 and all(line.count("|") == 11 for line in table), run.stdout
    assert "small / qa / hf_best: done" in run.stderr  # progress lines
    profile = prof.read_text()
    sections = profile.split("=== ")[1:]
    assert [s.splitlines()[0] for s in sections] == [f"small / {w} / ours ===" for w in ("pair", "qa", "tagging")]
    for section in sections:
        for phase in ("xlt/collate", "xlt/forward", "xlt/backward", "xlt/optimizer"):
            assert phase in section.split("top 15 ops")[0], section
        assert "aten::" in section.split("top 15 ops")[1]


def test_trainer_predictions_come_back_in_dataset_order(tmp_path):
    """hf_best's group_by_length makes the Trainer predict in a length-grouped order: its dev
    accuracy must equal the accuracy of the same weights evaluated in order by xlt."""
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location("gpu_throughput", REPO / "benchmarks" / "gpu_throughput.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    from xlt.engine.features import Encoded
    from xlt.engine.kinds import kind_of
    from xlt.engine.model import ModelSpec, build_model
    from xlt.engine.predict import eval_batches, run_batches
    from xlt.registry import get_task
    from xlt.dag.throughput import SHAPES

    args = bench.parse_args(["--small", "--steps", "3", "--dev-examples", "48", "--eval-batch-size", "8"])
    shape, device = SHAPES["small"], torch.device("cpu")
    for task_name in ("ner", "qa"):
        task = get_task(task_name)
        kind = kind_of(task)
        train = bench.make_features(task_name, 24, shape.vocab, 1, True)
        dev = bench.make_features(task_name, 48, shape.vocab, 2, True)
        model = build_model(ModelSpec(task=task_name, dropout=0.1), bench.build_encoder(shape, 1))
        r = bench.run_hf(model, task, train, dev, args, device, tmp_path, best=True)
        outs = run_batches(model, eval_batches(Encoded(dev, [len(f["input_ids"]) for f in dev]), kind, bench.PAD, 8),
                           len(dev), device, keys=kind.decode_keys)
        assert abs(r["dev_accuracy"] - bench.accuracy(task, dev, [o["logits"] for o in outs])) < 1e-9, task_name


def test_tf32_switch_after_the_trainer_set_it_through_the_new_api():
    """The Trainer (transformers 5) sets TF32 through torch's fp32_precision API; the legacy
    `allow_tf32` flags then raise when read. The benchmark's and the engine's switch (the new
    API only) must work in either order and put back what it found."""
    import torch
    from transformers.utils.import_utils import enable_tf32

    from xlt.engine.runtime import set_tf32, tf32, tf32_state

    before = tf32_state()
    try:
        enable_tf32(True)  # what TrainingArguments(tf32=True / bf16=True) does on a GPU
        with tf32(False):
            assert torch.backends.cuda.matmul.fp32_precision == "ieee"
            assert torch.backends.cudnn.conv.fp32_precision == "ieee"
        assert torch.backends.cuda.matmul.fp32_precision == "tf32"
        with tf32(True):
            assert torch.backends.cuda.matmul.fp32_precision == "tf32"
        enable_tf32(False)  # the Trainer after ours
        assert torch.backends.fp32_precision == "ieee"
    finally:
        set_tf32(before)
    assert tf32_state() == before
