"""Evaluation in bf16 and in token-budget batches (xlt.engine.evaluation): a trained tiny
model's score (its task's first metric) in bf16 stays within 0.1 point of fp32; batches by token budget give each
record its own prediction back; `auto` on a CPU is today's fp32 evaluation."""

from __future__ import annotations

import random

import pytest
import torch

from tests.conftest import _sentence, _upos
from xlt.engine.train_config import TrainConfig
from xlt.engine.evalset import EvalSet, max_positions
from xlt.engine.evaluation import CUDA_BATCH_TOKENS, EvalMode, eval_mode
from xlt.engine.model import load_model
from xlt.errors import XltError
from xlt.stages.finetune import finetune
from xlt.stages.finetune_job import FinetuneJob
from xlt.registry import get_task

HP = {"lr": 1e-3, "epochs": 2, "batch_size": 8, "warmup_ratio": 0.1, "max_length": 32, "stride": 8, "progress": False}
# a model that is right and wrong on many records (neither one class everywhere nor all right)
EPOCHS = {"marc": 8, "pos": 2}
LR = {"marc": 3e-3, "pos": 1e-3}
# enough records that 0.1 point is a few predictions (one of 2,000 sentences: 0.05 point)
N_EVAL = 2000


def _records(task: str, n: int) -> list[dict]:
    rng = random.Random(5)
    sents = [_sentence(rng) for _ in range(n)]
    if task == "pos":
        return [{"id": str(i), "tokens": s, "upos": [_upos(w) for w in s]} for i, s in enumerate(sents)]
    return [{"id": str(i), "text": " ".join(s), "label": "5" if "ka" in s else "1"} for i, s in enumerate(sents)]


@pytest.fixture(scope="module")
def trained(tiny_encoder, toy_data, tmp_path_factory):
    """A tiny model per task, trained as the workflow trains one."""
    out = {}
    for task in ("marc", "pos"):
        root = tmp_path_factory.mktemp(task)
        finetune(FinetuneJob.of_seed(task, str(tiny_encoder), toy_data / task, ["en", "de"],
                                     {**HP, "epochs": EPOCHS[task], "lr": LR[task]}, 3, root / "m", root / "ck"))
        out[task] = root / "m"
    return out


def _evalset(model_dir, task_name: str, mode: EvalMode) -> tuple:
    model, tokenizer, meta = load_model(model_dir, "cpu")
    cfg = TrainConfig.from_dict(meta["train_config"])
    ev = EvalSet.build(get_task(task_name), _records(task_name, N_EVAL), tokenizer, cfg, max_positions(model, tokenizer),
                       kind=model.kind, mode=mode)
    return model, ev


@pytest.mark.parametrize("task_name", ["marc", "pos"])
def test_bf16_scores_within_a_tenth_of_a_point_of_fp32(trained, task_name):
    if not torch.ops.mkldnn._is_mkldnn_bf16_supported():
        pytest.skip("torch reports no bf16 support on this CPU (torch.ops.mkldnn._is_mkldnn_bf16_supported())")
    model, ev = _evalset(trained[task_name], task_name, EvalMode())
    fp32 = ev.launch(model, "cpu", "fp32")
    bf16 = ev.launch(model, "cpu", "bf16")
    # bf16 really ran: the logits moved, by bf16's rounding and not more
    a = torch.cat([o["logits"].flatten() for _, o in fp32])
    b = torch.cat([o["logits"].flatten() for _, o in bf16])
    assert not torch.equal(a, b)
    assert (a - b).abs().max() < 0.1 * a.abs().max()
    m32, m16 = ev.finish(fp32, "cpu")[1], ev.finish(bf16, "cpu")[1]
    print(f"\n{task_name}: fp32 {m32} bf16 {m16}")
    # the task's first metric: what its tables show and dev selection reads. The others of a
    # barely trained model move more (pos at 89% accuracy: f1_macro 0.12, seqeval_f1 0.30 point)
    metric = get_task(task_name).metrics[0]
    assert abs(m32[metric] - m16[metric]) <= 0.1, (metric, m32[metric], m16[metric])


@pytest.mark.parametrize("task_name", ["marc", "pos"])
def test_token_budget_batches_put_every_prediction_back_in_place(trained, task_name):
    model, by_count = _evalset(trained[task_name], task_name, EvalMode())
    _, by_tokens = _evalset(trained[task_name], task_name, EvalMode(max_tokens=512, pad_multiple=8))
    sizes = [len(idx) for idx, _ in by_tokens.batches]
    assert max(sizes) > min(sizes)  # short sentences many to a batch, long ones few
    assert all(b["input_ids"].numel() <= 512 and b["input_ids"].shape[1] % 8 == 0 for _, b in by_tokens.batches)
    assert by_tokens.predict(model, "cpu") == by_count.predict(model, "cpu")


def test_auto_is_fp32_by_sentence_count_on_a_cpu_and_bf16_by_tokens_on_a_gpu(monkeypatch):
    assert eval_mode(None, torch.device("cpu")) == EvalMode("fp32", None, 1)
    assert eval_mode({"precision": "bf16", "batch_tokens": 4096}, torch.device("cpu")) == EvalMode("bf16", 4096, 1)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    gpu = eval_mode({"precision": "auto", "batch_tokens": "auto"}, torch.device("cuda"))
    assert (gpu.precision, gpu.max_tokens) == ("bf16", CUDA_BATCH_TOKENS) and gpu.pad_multiple > 1
    assert eval_mode({"precision": "fp32", "batch_tokens": None}, torch.device("cuda")).max_tokens is None


@pytest.mark.parametrize("block, says", [({"precision": "half"}, "evaluation.precision='half'; allowed: auto, fp32, bf16"),
                                         ({"batch_tokens": 0}, "evaluation.batch_tokens=0; allowed: auto, null"),
                                         ({"batch_size": 8}, "evaluation: unknown batch_size")])
def test_a_bad_evaluation_block_names_the_key(block, says):
    with pytest.raises(XltError, match=says.replace("(", r"\(").replace(".", r"\.")):
        eval_mode(block, torch.device("cpu"))
