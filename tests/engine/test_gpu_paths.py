"""The loop's CUDA-only paths, exercised on a CPU: batch widths in buckets, the compiled layer
stack (traced with dynamo's "eager" backend: seconds, no C++ compiler) and its fallback, and
the deferred finite-loss check. A CPU run takes none of them unless asked."""

import pytest
import torch
from transformers import BertConfig, BertModel

from xlt.engine import fastpath
from xlt.engine.batching import collate
from xlt.engine.loop import Loop
from xlt.engine.objectives import Objective, Term
from xlt.engine.runtime import Checkpointer, Dist, build_scheduler
from xlt.engine.streams import Stream
from xlt.errors import XltError


@pytest.fixture
def fresh_compile(monkeypatch):
    """Each test compiles afresh and leaves no compiled stack behind."""
    for name, value in (("fn", None), ("failed", None), ("shapes", set())):
        monkeypatch.setattr(fastpath._Compile, name, value)
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def tiny_bert(dropout: float = 0.0) -> BertModel:
    torch.manual_seed(0)
    cfg = BertConfig(num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=64, vocab_size=100,
                     max_position_embeddings=64, hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout,
                     attn_implementation="sdpa")
    return BertModel(cfg, add_pooling_layer=False).train()


def batch(n: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 100, (4, n), generator=g)
    mask = torch.ones(4, n, dtype=torch.long)
    mask[1, n // 2:] = 0
    return ids, mask


def forward_and_grads(encoder, ids, mask):
    encoder.zero_grad()
    out = fastpath.lean_forward(encoder, ids, mask)
    out.square().mean().backward()
    return out.detach(), {n: p.grad.clone() for n, p in encoder.named_parameters() if p.grad is not None}


def test_collate_rounds_widths_up_to_the_multiple_and_masks_the_padding():
    feats = [{"input_ids": [1, 7, 8, 2], "labels": [-100, 3, 4, -100]}, {"input_ids": [1, 9, 2], "labels": [-100, 5, -100]}]
    pads = {"input_ids": None, "labels": -100}
    plain = collate(feats, 0, pads)
    assert plain["input_ids"].shape == (2, 4)  # the default: the longest in the batch, as before
    wide = collate(feats, 0, pads, pad_multiple=16)
    assert wide["input_ids"].shape == wide["labels"].shape == wide["attention_mask"].shape == (2, 16)
    assert torch.equal(wide["input_ids"][:, :4], plain["input_ids"]) and not wide["input_ids"][:, 4:].any()
    assert (wide["labels"][:, 4:] == -100).all() and wide["attention_mask"].sum().item() == 7


def test_the_loop_turns_the_gpu_paths_on_for_cuda_only():
    def loop(device, **kw):
        streams = {"s": Stream("s", [{"input_ids": [1, 2]}], 1, 0, 0, {"input_ids": None})}
        term = Term("s", "s", 1.0, lambda m, b, s: torch.zeros(()))
        opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
        return Loop(model=torch.nn.Linear(1, 1), raw_model=None, optimizer=opt, scheduler=build_scheduler(opt, 1, 0.0),
                    streams=streams, primary="s", objective=Objective([term]), device=torch.device(device),
                    checkpointer=None, max_steps=1, **{"dist": Dist(), **kw}), streams["s"]

    cpu, s = loop("cpu")
    assert (cpu.compile_on, cpu.defer_finite_check, s.pad_multiple) == (False, False, 1)
    cuda, s = loop("cuda")  # nothing touches the device before `run`
    assert (cuda.compile_on, cuda.defer_finite_check, s.pad_multiple) == (True, True, 16)
    assert cuda.compile_graphs and not cpu.compile_graphs  # CUDA graphs by default on a GPU
    layers, _ = loop("cuda", compile="on")
    assert (layers.compile_on, layers.compile_graphs) == (True, False)
    two_gpus = Dist()
    two_gpus.world = 2  # a torchrun rank: each layer compiled, no CUDA graphs unless asked for
    ddp, _ = loop("cuda", dist=two_gpus)
    assert (ddp.compile_on, ddp.compile_graphs) == (True, False)
    assert loop("cuda", dist=two_gpus, compile="graphs")[0].compile_graphs


@pytest.mark.parametrize("graphs", [False, True], ids=["each-layer", "whole-stack"])
def test_the_compiled_layer_stack_gives_the_eager_outputs_and_gradients(fresh_compile, graphs):
    encoder = tiny_bert()
    torch._dynamo.utils.counters.clear()
    with fastpath.compiling(True, backend="eager", graphs=graphs):
        fastpath.lean_forward(encoder, *batch(16))
    ids, mask = batch(32, 1)  # a second length, the same graph (the length dimension is dynamic)
    eager = forward_and_grads(encoder, ids, mask)
    with fastpath.compiling(True, backend="eager", graphs=graphs):
        compiled = forward_and_grads(encoder, ids, mask)
    torch.testing.assert_close(compiled[0], eager[0])
    assert compiled[1].keys() == eager[1].keys()
    for name, g in eager[1].items():
        torch.testing.assert_close(compiled[1][name], g, msg=lambda m: f"{name}: {m}")
    assert fastpath.compile_status() == "on" and fastpath._Compile.shapes == {(4, 16), (4, 32)}
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1


def test_the_compiled_stack_traces_dropout_without_graph_breaks(fresh_compile):
    encoder = tiny_bert(dropout=0.1)
    torch._dynamo.utils.counters.clear()
    with fastpath.compiling(True, backend="eager"):
        for n in (17, 40):  # lengths off the buckets too: still one graph
            fastpath.lean_forward(encoder, *batch(n)).sum().backward()
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1
    assert not torch._dynamo.utils.counters["graph_break"]


def broken(gm, example_inputs):
    raise RuntimeError("no compiler here")


def broken_backward():  # the forward compiles, the backward does not
    from torch._dynamo.backends.common import aot_autograd

    return aot_autograd(fw_compiler=lambda gm, example_inputs: gm, bw_compiler=broken)


@pytest.mark.parametrize("backend", [broken, broken_backward], ids=["forward", "backward"])
def test_a_compile_failure_logs_one_line_and_runs_eager(fresh_compile, capsys, backend):
    if backend is broken_backward:
        backend = broken_backward()
    encoder = tiny_bert()
    ids, mask = batch(16)
    eager = fastpath.lean_forward(encoder, ids, mask)
    with fastpath.compiling(True, backend=backend):
        first = fastpath.lean_forward(encoder, ids, mask)
        first.sum().backward()  # the failure surfaces in the forward, where the fallback is
        second = fastpath.lean_forward(encoder, ids, mask)
    assert torch.equal(first, eager) and torch.equal(second, eager)
    assert fastpath.compile_status().startswith("failed: ")
    err = capsys.readouterr().err
    assert err.count("torch.compile of the lean forward failed") == 1 and "running eager" in err


def test_the_deferred_finite_check_names_the_step_and_saves_nothing_from_it(tmp_path):
    model = torch.nn.Linear(2, 1)
    streams = {"s": Stream("s", [{"input_ids": [1, 2]}] * 8, 1, 0, 0, {"input_ids": None})}

    def fn(m, b, step):
        loss = m(b["input_ids"].float()).square().mean()
        return loss * float("nan") if step == 2 else loss  # the third step

    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    ck = Checkpointer(tmp_path / "ck")
    loop = Loop(model=model, raw_model=model, optimizer=opt, scheduler=build_scheduler(opt, 8, 0.0), streams=streams,
                primary="s", objective=Objective([Term("s", "s", 1.0, fn)]), device=torch.device("cpu"), dist=Dist(),
                checkpointer=ck, max_steps=8, checkpoint_every=2, checkpoint_minutes=None, progress=False,
                defer_finite_check=True)
    with pytest.raises(XltError, match=r"non-finite loss \(nan\) at step 3 \(epoch 1, batch 3/8\); terms: s=nan"):
        loop.run()
    _, state = ck.load()
    assert state["global_step"] == 2  # the checkpoint before the bad step; none after it
