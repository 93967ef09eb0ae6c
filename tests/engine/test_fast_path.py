"""The fast-path switch (`engine.fast_path`): the lean forward and the Hugging Face forward give
the same loss and gradients, within fp32 rounding, for every kind of head."""

import pytest
import torch
import torch.nn.functional as F

from tests.conftest import encode_with
from xlt.engine import fastpath
from xlt.engine.batching import collate
from xlt.engine.train_config import TrainConfig
from xlt.engine.kinds import KINDS
from xlt.engine.model import load_encoder
from xlt.engine.recipes.finetune import build_task_model
from xlt.engine.recipes.mlm import MLMModel, masking
from xlt.engine.evalset import load_records
from xlt.registry import TASKS
from xlt.dag.targets import engine_options, hparams

TASK_OF_KIND = {"tagging": "pos", "classification": "marc", "span_qa": "qa", "biaffine": "parsing"}


def _loss_and_grads(model, loss_of, fast_path: bool):
    model.fast_path = fast_path
    model.train()
    model.zero_grad()
    torch.manual_seed(0)  # the same draws for any dropout the head keeps (the parser's MLPs)
    loss = loss_of(model)
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def _same(model, loss_of):
    lean_loss, lean = _loss_and_grads(model, loss_of, True)
    hf_loss, hf = _loss_and_grads(model, loss_of, False)
    torch.testing.assert_close(lean_loss, hf_loss, rtol=1e-5, atol=1e-6)
    assert lean.keys() == hf.keys() and lean
    for name in lean:  # BERT's embedding sum is reassociated in the lean forward: rounding apart
        torch.testing.assert_close(lean[name], hf[name], rtol=1e-4, atol=1e-5, msg=lambda m: f"{name}: {m}")


def test_every_kind_is_covered():
    assert set(TASK_OF_KIND) | {"mlm"} == set(KINDS)
    assert all(TASKS[t].head == k for k, t in TASK_OF_KIND.items())
    assert {t.head for t in TASKS.values()} <= set(KINDS)  # every registered task has a kind


@pytest.mark.parametrize("kind", sorted(TASK_OF_KIND))
def test_both_forwards_give_one_loss_and_gradient(kind, tiny_encoder, toy_data):
    task = TASKS[TASK_OF_KIND[kind]]
    encoder, tokenizer = load_encoder(str(tiny_encoder), dropout=0.0)
    cfg = TrainConfig(task=task.name, encoder=str(tiny_encoder), dropout=0.0, max_length=32, stride=8)
    model = build_task_model(cfg, encoder, [])
    records = load_records([toy_data / task.name / "en" / "train.jsonl"])[:8]
    enc = encode_with(task, records, tokenizer, 32, 8, train=True)
    k = KINDS[kind]
    batch = collate(enc.features[:8], tokenizer.pad_token_id, k.pad_values, k.scalars)
    assert batch["attention_mask"].min() == 0  # padding in the batch: the masks are exercised
    _same(model, lambda m: k.loss(m(batch), batch))


def test_both_forwards_give_one_mlm_loss_and_gradient(tiny_encoder):
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_encoder)
    hf = AutoModelForMaskedLM.from_pretrained(tiny_encoder, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = MLMModel(hf)
    texts = ["ka ten Berlin", "Anna ten ka ka Berlin ten ."] * 4
    feats = [{"input_ids": x} for x in tokenizer(texts)["input_ids"]]
    batch = masking(tokenizer, 0.3)(collate(feats, tokenizer.pad_token_id, KINDS["mlm"].pad_values), seed=5)
    _same(model, lambda m: KINDS["mlm"].loss(m(batch), batch))


def test_the_config_switch_reaches_every_training_job():
    cfg = {"engine": {"fast_path": "off"}, "hparams": {"p": {"lr": 1e-3}, "q": {"fast_path": "auto"}}}
    assert hparams(cfg, "en.p")["fast_path"] == "off"
    assert hparams(cfg, "en.q")["fast_path"] == "auto"  # a profile's own setting wins
    assert engine_options(cfg, {"steps": 3}) == {"fast_path": "off", "steps": 3}
    assert TrainConfig.from_dict({"task": "pos", "encoder": "x", "fast_path": "off"}).fast_path == "off"


@pytest.mark.skipif(fastpath._ONEDNN_LINEAR is None, reason="torch built without oneDNN")
@pytest.mark.parametrize("shape", [(3, 5, 16), (7, 16)], ids=["3d", "2d"])
def test_onednn_linear_gives_f_linear_values_and_gradients(shape):
    """The lean forward's fp32 CPU linear (oneDNN forward and backward) against `F.linear`, to
    fp32 rounding, bit-identical when repeated; under bf16 autocast or with oneDNN switched off
    it is `F.linear` itself."""
    torch.manual_seed(0)
    x0, w0, b0 = torch.randn(*shape), torch.randn(24, 16), torch.randn(24)
    r = torch.randn(*shape[:-1], 24)

    def run(f):
        x, w, b = (t.clone().requires_grad_() for t in (x0, w0, b0))
        y = f(x, w, b)
        (y * r).sum().backward()
        return y.detach(), x.grad, w.grad, b.grad, y.grad_fn

    *ours, fn = run(fastpath.linear)
    *ref, _ = run(F.linear)
    assert type(fn).__name__ == "_OneDnnLinearBackward"
    for a, e in zip(ours, ref):
        torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-5)
    assert all(torch.equal(a, e) for a, e in zip(ours, run(fastpath.linear)[:4]))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert run(fastpath.linear)[0].dtype == torch.bfloat16
    torch.backends.mkldnn.enabled = False
    try:
        assert type(run(fastpath.linear)[4]).__name__ != "_OneDnnLinearBackward"
    finally:
        torch.backends.mkldnn.enabled = True
