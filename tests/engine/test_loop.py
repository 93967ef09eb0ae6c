"""The one loop: several named streams, kill -9 resumption, damaged checkpoints, warmup,
zero-weighted terms, MLM on the same loop."""

import json
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from tests.conftest import REPO
from xlt.engine.train_config import TrainConfig
from xlt.engine.runtime import Checkpointer, warmup_factor

HP = {"lr": 1e-3, "epochs": 2, "batch_size": 8, "warmup_ratio": 0.1, "max_length": 32, "stride": 8,
      "checkpoint_every": 3, "progress": False}

# Runs the recipe in a child process, so that kill_after_steps can SIGKILL it for real.
TWO_STREAMS = """
import json, sys
from xlt.engine.train_config import TrainConfig
from xlt.engine.recipes.finetune import train
a = json.loads(sys.argv[1])
cfg = TrainConfig.from_dict({**a["hp"], "task": "pos", "encoder": a["encoder"], "seed": 3})
train(cfg, [a["data"] + "/pos/en/train.jsonl"], [a["data"] + "/pos/en/dev.jsonl"], a["out"], a["ckpt"],
      aux=[{"task": "marc", "files": [a["data"] + "/marc/en/train.jsonl"], "weight": 0.5, "batch_size": 4}],
      kill_after_steps=a.get("kill"))
"""


def _two_streams(tiny_encoder, toy_data, out, ckpt, kill=None):
    arg = {"hp": HP, "encoder": str(tiny_encoder), "data": str(toy_data), "out": str(out), "ckpt": str(ckpt), "kill": kill}
    return subprocess.run([sys.executable, "-c", TWO_STREAMS, json.dumps(arg)], capture_output=True, text=True,
                          timeout=300, cwd=REPO)


def _weights(model_dir):
    return {**load_file(model_dir / "encoder" / "model.safetensors"), **load_file(model_dir / "modules.safetensors")}


def test_two_stream_job_killed_with_sigkill_resumes_bit_identical(tiny_encoder, toy_data, tmp_path):
    clean = _two_streams(tiny_encoder, toy_data, tmp_path / "clean", tmp_path / "ck_clean")
    assert clean.returncode == 0, clean.stderr
    killed = _two_streams(tiny_encoder, toy_data, tmp_path / "resumed", tmp_path / "ck", kill=5)
    assert killed.returncode == -9
    state = json.loads((tmp_path / "ck" / "last" / "state.json").read_text())
    assert set(state["cursors"]) == {"pos", "marc"}  # every stream's cursor is in the checkpoint
    again = _two_streams(tiny_encoder, toy_data, tmp_path / "resumed", tmp_path / "ck")
    assert again.returncode == 0, again.stderr
    assert "resuming from step 3" in again.stderr
    meta = {n: json.loads((tmp_path / n / "xlt_model.json").read_text()) for n in ("clean", "resumed")}
    assert meta["resumed"]["train"]["resumed_from"] == [3]
    assert meta["resumed"]["train"]["history"] == meta["clean"]["train"]["history"]
    assert meta["clean"]["spec"]["aux_tasks"] == ["marc"]
    wc, wr = _weights(tmp_path / "clean"), _weights(tmp_path / "resumed")
    assert any(k.startswith("heads.marc.") for k in wc)
    assert all(torch.equal(wc[k], wr[k]) for k in wc)


def test_an_auxiliary_stream_with_zero_weight_changes_nothing(tiny_encoder, toy_data, tmp_path):
    from xlt.engine.recipes.finetune import train

    cfg = TrainConfig.from_dict({**HP, "task": "pos", "encoder": str(tiny_encoder), "seed": 2})
    files = ([toy_data / "pos" / "en" / "train.jsonl"], [toy_data / "pos" / "en" / "dev.jsonl"])
    plain = train(cfg, *files, tmp_path / "plain", tmp_path / "c1")
    zero = train(cfg, *files, tmp_path / "zero", tmp_path / "c2",
                 aux=[{"task": "marc", "files": [toy_data / "marc" / "en" / "train.jsonl"], "weight": 0.0}])
    assert plain["history"] == zero["history"]
    wp, wz = _weights(tmp_path / "plain"), _weights(tmp_path / "zero")
    assert all(torch.equal(wp[k], wz[k]) for k in wp)  # the auxiliary head is extra, the rest equal
    assert set(wz) - set(wp) and all(k.startswith("heads.marc.") for k in set(wz) - set(wp))
    # a non-zero weight does change the model (the test above could not fail otherwise)
    train(cfg, *files, tmp_path / "half", tmp_path / "c3",
          aux=[{"task": "marc", "files": [toy_data / "marc" / "en" / "train.jsonl"], "weight": 0.5}])
    wh = _weights(tmp_path / "half")
    assert not all(torch.equal(wp[k], wh[k]) for k in wp)


@pytest.mark.parametrize("cadence, clock_step, expect", [
    ({"checkpoint_every": None, "checkpoint_minutes": 10.0}, 0.0, "epochs"),  # a frozen clock: epoch ends only
    ({"checkpoint_every": None, "checkpoint_minutes": 10.0}, 11 * 60.0, "every step"),  # 11 minutes a step
    ({"checkpoint_every": 2, "checkpoint_minutes": None}, 11 * 60.0, "every 2"),  # the clock is off
])
def test_checkpoints_follow_the_clock_and_the_step_count(tiny_encoder, toy_data, tmp_path, monkeypatch, cadence,
                                                          clock_step, expect):
    import itertools

    import xlt.engine.loop as loop_mod
    from xlt.engine.recipes.finetune import train

    ticks = itertools.count()
    monkeypatch.setattr(loop_mod.time, "monotonic", lambda: next(ticks) * clock_step)
    saved = []
    real_save = Checkpointer.save
    monkeypatch.setattr(Checkpointer, "save", lambda self, m, o, s, state, *a: (saved.append(state["global_step"]),
                                                                                real_save(self, m, o, s, state, *a)))
    cfg = TrainConfig.from_dict({**HP, **cadence, "task": "pos", "encoder": str(tiny_encoder), "seed": 2})
    summary = train(cfg, [toy_data / "pos" / "en" / "train.jsonl"], [toy_data / "pos" / "en" / "dev.jsonl"],
                    tmp_path / "m", tmp_path / "c")
    ends = [h["step"] for h in summary["history"]]
    steps = range(1, summary["global_steps"] + 1)
    want = {"epochs": ends, "every step": list(steps),
            "every 2": sorted({s for s in steps if s % 2 == 0} | set(ends))}[expect]
    assert sorted(set(saved)) == want and ends[-1] > 2


def test_a_damaged_checkpoint_is_never_loaded(tmp_path):
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.AdamW(model.parameters())
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    messages = []
    ck = Checkpointer(tmp_path, log=messages.append)
    ck.save(model, opt, sched, {"global_step": 1})
    assert ck.load()[1] == {"global_step": 1}
    # a write cut mid-file: the weights no longer match the manifest
    weights = tmp_path / "last" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-7])
    assert ck.load() == (None, None)
    assert "model.safetensors does not match its checksum" in messages[-1]
    # a newest checkpoint without its manifest, beside the one before it (a crash while the
    # new one was put in place): the previous checkpoint is used instead
    import shutil

    ck.save(model, opt, sched, {"global_step": 2})
    shutil.copytree(tmp_path / "last", tmp_path / "keep")
    ck.save(model, opt, sched, {"global_step": 3})
    (tmp_path / "keep").rename(tmp_path / "last.old")
    (tmp_path / "last" / "manifest.json").unlink()
    where, state = ck.load()
    assert where == tmp_path / "last.old" and state == {"global_step": 2}
    assert "no manifest" in messages[-1]


def test_a_full_disk_leaves_no_half_checkpoint(tmp_path, monkeypatch):
    import xlt.engine.runtime as runtime

    model = torch.nn.Linear(3, 2)
    opt = torch.optim.AdamW(model.parameters())
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    ck = Checkpointer(tmp_path)
    ck.save(model, opt, sched, {"global_step": 1})

    def enospc(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(runtime.torch, "save", enospc)
    with pytest.raises(OSError, match="No space"):
        ck.save(model, opt, sched, {"global_step": 2})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last"]  # no temp dir left behind
    assert ck.load()[1] == {"global_step": 1}


def test_linear_warmup_starts_from_zero():
    assert warmup_factor(0, total=100, warmup=10, schedule="linear") == 0.0
    assert warmup_factor(5, total=100, warmup=10, schedule="linear") == 0.5
    assert warmup_factor(10, total=100, warmup=10, schedule="linear") == 1.0
    assert warmup_factor(55, total=100, warmup=10, schedule="linear") == 0.5
    assert warmup_factor(50, total=100, warmup=10, schedule="constant") == 1.0
    assert warmup_factor(0, total=100, warmup=0, schedule="linear") == 1.0


MLM = """
import json, sys
from xlt.engine.recipes.mlm import MLMConfig, train_mlm
a = json.loads(sys.argv[1])
texts = open(a["corpus"]).read().splitlines()
train_mlm(texts, a["out"], a["ckpt"], MLMConfig(steps=12, batch_size=16, checkpoint_every=4, seed=5),
          init_from=a["encoder"], progress=False, kill_after_steps=a.get("kill"))
"""


def test_mlm_adaptation_killed_with_sigkill_resumes_bit_identical(tiny_encoder, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"Anna ka lo {i} mi ten sor bal ura" for i in range(200)))

    def run(out, ckpt, kill=None):
        arg = {"corpus": str(corpus), "encoder": str(tiny_encoder), "out": str(out), "ckpt": str(ckpt), "kill": kill}
        return subprocess.run([sys.executable, "-c", MLM, json.dumps(arg)], capture_output=True, text=True,
                              timeout=300, cwd=REPO)

    assert run(tmp_path / "clean", tmp_path / "c1").returncode == 0
    assert run(tmp_path / "resumed", tmp_path / "c2", kill=6).returncode == -9
    again = run(tmp_path / "resumed", tmp_path / "c2")
    assert again.returncode == 0, again.stderr
    assert "resuming from step 4" in again.stderr
    a, b = (load_file(tmp_path / n / "model.safetensors") for n in ("clean", "resumed"))
    assert all(torch.equal(a[k], b[k]) for k in a)
    start = load_file(tiny_encoder / "model.safetensors")
    assert not all(torch.equal(a[k], start[k]) for k in start)  # it did train
    meta = json.loads((tmp_path / "resumed" / "xlt_encoder.json").read_text())
    assert meta["resumed_from"] == [4] and meta["init_from"] == str(tiny_encoder)


def test_precision_resolves_per_device_and_refuses_unknown_values():
    from xlt.engine.runtime import native_bf16, resolve_precision
    from xlt.errors import XltError

    cpu = torch.device("cpu")
    assert resolve_precision("fp32", cpu) == "fp32"
    assert resolve_precision("bf16", cpu) == "bf16"
    assert resolve_precision("auto", cpu) == ("bf16" if native_bf16(cpu) else "fp32")
    with pytest.raises(XltError, match="precision='fp16'; allowed: auto, bf16, fp32"):
        resolve_precision("fp16", cpu)
    with pytest.raises(XltError, match="precision='half'; allowed: auto, bf16, fp32"):
        TrainConfig.from_dict({"task": "pos", "encoder": "x", "precision": "half"})


def test_bf16_training_steps_change_the_numbers_but_stay_deterministic():
    """The bf16 autocast path really runs in bf16 (its loss differs from fp32's) and two runs
    of it are bit-identical on a CPU."""
    from xlt.engine.runtime import autocast

    def losses(precision):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 3))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        x, y = torch.randn(64, 32), torch.randint(0, 3, (64,))
        out = []
        for _ in range(5):
            with autocast(torch.device("cpu"), precision):
                loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            out.append(loss.item())
        return out

    assert losses("bf16") == losses("bf16")
    assert losses("bf16") != losses("fp32")
