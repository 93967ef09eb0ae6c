"""Packed fine-tunes (xlt.engine.packed): K models trained in one step equal each model trained
alone, within fp32 rounding (batched products sum in another order than one model's); a pack
stopped and resumed equals one that ran through, bit for bit."""

import copy

import pytest
import torch

from xlt.engine.kinds import kind_of
from xlt.engine.loop import Loop
from xlt.engine.model import ModelSpec, build_model
from xlt.engine.objectives import Objective, task_term
from xlt.engine.packed import Dropper, PackedLoop, PackedModel, pack_batches
from xlt.engine.runtime import Checkpointer, Dist, Preempted, build_optimizer, build_scheduler
from xlt.engine.streams import Stream
from xlt.registry import get_task

K, STEPS, BATCH = 3, 6, 8
# Largest weight difference after STEPS AdamW steps at lr 1e-3: a tenth of one step. Adam divides
# by the gradient's root mean square, so where a gradient is ~0 a rounding difference in it
# moves the weight by up to a step's size (measured: 3.6e-5 on an embedding row, ~1e-7 elsewhere)
TOL = 1e-4


def bench():
    import importlib.util

    from tests.conftest import REPO

    spec = importlib.util.spec_from_file_location("gpu_throughput", REPO / "benchmarks" / "gpu_throughput.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def setup(task_name: str, classifier: str = "dense"):
    from xlt.dag.throughput import SHAPES

    g = bench()
    shape = SHAPES["small"]
    task = get_task(task_name)
    kind = kind_of(task)
    models = []
    for s in range(K):
        torch.manual_seed(s)
        models.append(build_model(ModelSpec(task=task_name, dropout=0.1, classifier=classifier), g.build_encoder(shape, s)))
    feats = g.make_features(task_name, 44, shape.vocab, 1, True)  # 44 = 5 batches of 8 and one of 4
    streams = [Stream(task_name, feats, BATCH, 10 + s, 0, kind.pad_values, kind.scalars) for s in range(K)]
    return task, kind, models, streams


def train_alone(task, kind, model, stream, seed, tmp):
    opt = build_optimizer(model, 1e-3, 0.01)
    sched = build_scheduler(opt, STEPS, 0.1)
    torch.manual_seed(seed)  # its dropout draws
    Loop(model=model, raw_model=model, optimizer=opt, scheduler=sched, streams={task.name: stream}, primary=task.name,
         objective=Objective([task_term(task, kind)]), device=torch.device("cpu"), dist=Dist(),
         checkpointer=Checkpointer(tmp), max_steps=STEPS, checkpoint_every=None, checkpoint_minutes=None,
         progress=False, precision="fp32").run()
    return model


def packed_loop(task, kind, models, streams, tmp, **kw):
    packed = PackedModel(models)
    opt = build_optimizer(None, 1e-3, 0.01, named=packed.optimizer_params())
    sched = build_scheduler(opt, STEPS, 0.1)
    gens = [torch.Generator().manual_seed(100 + k) for k in range(K)]
    return packed, PackedLoop(packed=packed, models=models, streams=streams, optimizer=opt, scheduler=sched,
                              device=torch.device("cpu"), checkpointer=Checkpointer(tmp), generators=gens,
                              max_steps=STEPS, checkpoint_every=None, checkpoint_minutes=None, precision="fp32", **kw)


@pytest.mark.parametrize("task_name,classifier", [("ner", "dense"), ("xnli", "pooler"), ("xnli", "dense")])
def test_forward_equals_each_model_alone_with_its_own_dropout(task_name, classifier):
    task, kind, models, streams = setup(task_name, classifier)
    batches = [s.collate(s.next_indices()) for s in streams]
    batch, own = pack_batches(batches, kind, 0)
    packed = PackedModel(models).train()
    out = packed(batch, Dropper([torch.Generator().manual_seed(100 + k) for k in range(K)], own, True))
    for k, m in enumerate(models):
        torch.manual_seed(100 + k)
        alone = m.train()(batches[k])["logits"]
        rows, width = own[k]
        mine = out[k][:rows, :width] if alone.dim() == 3 else out[k][:rows]
        assert (mine - alone).abs().max() < 1e-5
        torch.manual_seed(999)  # another draw of masks differs: the comparison can fail
        assert (mine - m(batches[k])["logits"]).abs().max() > 1e-3


@pytest.mark.parametrize("task_name", ["ner", "xnli"])
def test_pack_trains_each_model_as_alone(task_name, tmp_path):
    task, kind, models, streams = setup(task_name)
    s = streams[0]
    alone = [train_alone(task, kind, copy.deepcopy(m), copy.deepcopy(s), 100 + k, tmp_path / f"a{k}")
             for k, (m, s) in enumerate(zip(models, streams))]
    packed, loop = packed_loop(task, kind, models, streams, tmp_path / "pack")
    loop.run()
    for k, ref in enumerate(alone):
        for name, p in ref.named_parameters():
            assert (packed.p(name)[k] - p).abs().max() < TOL, (k, name)
    dev = [s.collate(list(range(i, min(i + 8, 44)))) for i in range(0, 44, 8)]
    for k, ref in enumerate(alone):  # predictions identical (fp32, no dropout) on fixed batches of the data
        packed.unstack_into(k, models[k])
        for b in dev:
            assert torch.equal(models[k].eval()(b)["logits"].argmax(-1), ref.eval()(b)["logits"].argmax(-1))
    # the models did move apart (own seeds, batches and masks): not one model K times
    assert (packed.p("heads." + task.name + ".out.weight")[0] - packed.p("heads." + task.name + ".out.weight")[1]).abs().max() > 1e-3


def test_pack_stopped_and_resumed_equals_one_run(tmp_path):
    task, kind, models, streams = setup("ner")
    through, loop = packed_loop(task, kind, copy.deepcopy(models), copy.deepcopy(streams), tmp_path / "through")
    loop.run()
    _, first = packed_loop(task, kind, copy.deepcopy(models), copy.deepcopy(streams), tmp_path / "cut", stop_after_steps=2)
    with pytest.raises(Preempted):
        first.run()
    resumed, second = packed_loop(task, kind, copy.deepcopy(models), copy.deepcopy(streams), tmp_path / "cut")
    state = second.run()
    assert state["models"][0]["resumed_from"] == [2]
    for a, b in zip(through.stacked, resumed.stacked):
        assert torch.equal(a, b)
