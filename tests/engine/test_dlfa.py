"""dlfa's fusion extra: w ≡ 1 gives layer X, w ≡ 0 the last layer; padding changes nothing
for the real tokens (mean and BatchNorm statistics are masked); both Eq. 3 readings and the
branch ablations (two branches of the kept kind, as the paper) are selectable; the control's
gate gets an exactly zero gradient; a trained DLFA model reloads and predicts identically."""

from types import SimpleNamespace

import pytest
import torch

from xlt.engine.train_config import TrainConfig
from xlt.engine.evalset import EvalSet, load_records, max_positions
from xlt.engine.extras import build_extra
from xlt.engine.model import load_model
from xlt.errors import XltError
from xlt.papers.dlfa.recipe import DLFA

CONFIG = SimpleNamespace(num_hidden_layers=3, hidden_size=16)
HP = {"lr": 1e-3, "epochs": 1, "batch_size": 8, "max_length": 32, "stride": 8, "progress": False}


def _states(batch: int, tokens: int, seed: int = 0) -> tuple:
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(batch, tokens, CONFIG.hidden_size, generator=g) for _ in range(CONFIG.num_hidden_layers + 1))


def _fixed_weight(module: DLFA, value: float) -> None:
    module.weight = lambda z, mask: torch.full_like(z, value)


@pytest.mark.parametrize("layer", [0, 1, 2])
def test_w_one_gives_layer_x_and_w_zero_the_last_layer(layer):
    states = _states(2, 5)
    batch = {"attention_mask": torch.ones(2, 5, dtype=torch.long)}
    fusion = build_extra({"name": "dlfa", "layer": layer}, CONFIG)
    _fixed_weight(fusion, 1.0)
    assert torch.equal(fusion(states[-1], states, batch), states[layer])
    _fixed_weight(fusion, 0.0)
    assert torch.equal(fusion(states[-1], states, batch), states[-1])


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("branches", DLFA.BRANCHES)
def test_padding_changes_nothing_for_the_real_tokens(training, branches):
    torch.manual_seed(0)
    fusion = build_extra({"name": "dlfa", "layer": 1, "branches": branches}, CONFIG)
    fusion.train(training)
    lengths = torch.tensor([3, 5, 2])
    short = _states(3, 5)
    mask = (torch.arange(5) < lengths[:, None]).long()
    # the same sentences with 4 more padding positions holding garbage (as a longer batch has)
    noise = _states(3, 4, seed=1)
    long = tuple(torch.cat([s, 100 * n], 1) for s, n in zip(short, noise))
    long_mask = torch.cat([mask, torch.zeros(3, 4, dtype=torch.long)], 1)
    state = {k: v.clone() for k, v in fusion.state_dict().items()}
    out_short = fusion(short[-1], short, {"attention_mask": mask})
    stats_short = {k: v.clone() for k, v in fusion.state_dict().items()}
    fusion.load_state_dict(state)
    out_long = fusion(long[-1], long, {"attention_mask": long_mask})
    real = mask.bool()
    torch.testing.assert_close(out_long[:, :5][real], out_short[real], rtol=0, atol=1e-6)
    # garbage in the padding of the short batch changes nothing either
    fusion.load_state_dict(state)
    dirty = tuple(s.masked_fill(~real.unsqueeze(-1), 1e3) for s in short)
    torch.testing.assert_close(fusion(dirty[-1], dirty, {"attention_mask": mask})[real], out_short[real], rtol=0, atol=1e-6)
    for key, value in fusion.state_dict().items():  # running statistics saw the real tokens only
        torch.testing.assert_close(value, stats_short[key], rtol=0, atol=1e-6)


def test_both_eq3_readings_are_selectable_and_differ():
    torch.manual_seed(0)
    states = _states(2, 4)
    batch = {"attention_mask": torch.ones(2, 4, dtype=torch.long)}
    weight = build_extra({"name": "dlfa", "layer": 1}, CONFIG).eval()
    gated = build_extra({"name": "dlfa", "layer": 1, "reading": "gated"}, CONFIG).eval()
    gated.load_state_dict(weight.state_dict())
    z = (states[1] + states[-1]) / 2
    w = weight.weight(z, batch["attention_mask"].bool())
    assert weight.reading == "weight" and bool(((w > 0) & (w < 1)).all())  # a sigmoid: a weight in (0, 1)
    torch.testing.assert_close(gated.weight(z, batch["attention_mask"].bool()), z * w)  # W ⊙ σ(…)
    assert not torch.equal(weight(states[-1], states, batch), gated(states[-1], states, batch))


def test_ablations_replace_the_removed_branch_with_one_of_the_kept_kind():
    """Table V (Sect. V-A, Fig. 4): AIF_global has two global branches, AIF_local two local
    ones, each with its own parameters, summed before σ."""
    global_only = build_extra({"name": "dlfa", "layer": 1, "branches": "global"}, CONFIG)
    local_only = build_extra({"name": "dlfa", "layer": 1, "branches": "local"}, CONFIG)
    both = build_extra({"name": "dlfa", "layer": 1}, CONFIG)
    assert global_only.local_branch is None and local_only.global_branch is None
    assert global_only.aif_kinds == ("global", "global") and local_only.aif_kinds == ("local", "local")
    for module in (global_only, local_only):
        first, second = module.aif_branches()
        assert first is not second and not torch.equal(first.down.weight, second.down.weight)
    # the same parameter count as the full AIF: two branches each
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(global_only) == count(local_only) == count(both)
    states = _states(3, 5)
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[1, 3:] = False
    z = states[-1]
    with torch.no_grad():
        global_only.train(False), local_only.train(False)
        m = mask.unsqueeze(-1).float()
        pooled = (z * m).sum(1) / m.sum(1)
        rows = torch.ones(3, dtype=torch.bool)
        g1, g2 = (b(pooled, rows).unsqueeze(1) for b in global_only.aif_branches())
        assert torch.allclose(global_only.weight(z, mask), torch.sigmoid(g1 + g2).expand_as(z))
        l1, l2 = (b(z, mask) for b in local_only.aif_branches())
        assert torch.allclose(local_only.weight(z, mask)[mask], torch.sigmoid(l1 + l2)[mask])
        # global-only: one weight per sentence, the same at every real token
        w = global_only.weight(z, mask)
        assert torch.allclose(w[:, 0], w[:, 4], rtol=1e-6, atol=0)


def test_the_controls_gate_gets_an_exactly_zero_gradient():
    """Fusing the last layer with itself (the control): out = h·w + h·(1 − w), whose gradient
    in w cancels exactly, so AIF's parameters get zero gradients and never move."""
    fusion = build_extra({"name": "dlfa", "layer": CONFIG.num_hidden_layers}, CONFIG)
    fusion.train()
    states = tuple(s.clone().requires_grad_(True) for s in _states(4, 6))
    batch = {"attention_mask": torch.ones(4, 6, dtype=torch.long)}
    fusion(states[-1], states, batch).pow(2).sum().backward()
    grads = [p.grad for p in fusion.parameters() if p.requires_grad]
    assert grads and all(g is not None and torch.count_nonzero(g) == 0 for g in grads)


@pytest.mark.parametrize("spec, message", [
    ({"layer": 4}, r"layer=4 out of range; allowed: 0 \(embeddings\) … 3"),
    ({"layer": 1, "reading": "product"}, "reading='product'; allowed: weight, gated"),
    ({"layer": 1, "branches": "left"}, "branches='left'; allowed: both, global, local"),
    ({}, "extra dlfa: .*layer"),
])
def test_bad_parameters_name_the_allowed_values(spec, message):
    with pytest.raises(XltError, match=message):
        build_extra({"name": "dlfa", **spec}, CONFIG)


@pytest.fixture(scope="module")
def dlfa_model(tiny_encoder, toy_data, tmp_path_factory):
    from xlt.engine.recipes.finetune import train

    out = tmp_path_factory.mktemp("dlfa") / "m"
    cfg = TrainConfig.from_dict({**HP, "task": "marc", "encoder": str(tiny_encoder), "seed": 1,
                                 "extras": [{"name": "dlfa", "layer": 1}]})
    train(cfg, [toy_data / "marc" / "en" / "train.jsonl"], [toy_data / "marc" / "en" / "dev.jsonl"], out, out.parent / "ck")
    return out


def test_a_dlfa_model_reloads_and_predicts_identically(dlfa_model, toy_data):
    model, tok, meta = load_model(dlfa_model)
    assert meta["spec"]["extras"] == [{"name": "dlfa", "layer": 1}]
    bn = model.extras[0].local_branch.bn_up
    assert int(bn.num_batches_tracked) > 0 and not torch.equal(bn.running_mean, torch.zeros_like(bn.running_mean))
    records = load_records([toy_data / "marc" / "en" / "test.jsonl"])
    ev = EvalSet.build(model.task, records, tok, TrainConfig.from_dict(meta["train_config"]), max_positions(model, tok))
    again, _, _ = load_model(dlfa_model)
    assert not again.training  # evaluation uses BatchNorm's running statistics
    outs = [torch.cat([m(b)["logits"].flatten() for _, b in ev.batches]) for m in (model, again)]
    assert torch.equal(outs[0], outs[1])
    # one batch or many: in eval mode a sentence's prediction does not depend on its batch
    single = torch.cat([model({k: v[i:i + 1] for k, v in b.items()})["logits"].flatten()
                        for _, b in ev.batches for i in range(len(b["input_ids"]))])
    torch.testing.assert_close(single, outs[0], rtol=0, atol=1e-5)


LOAD_ALONE = """
import json, sys
import torch
torch.set_num_threads(1)
from xlt.engine.model import load_model
from xlt.engine.evalset import EvalSet, load_records, max_positions
from xlt.engine.train_config import TrainConfig
assert not any(m.startswith("xlt.papers") for m in sys.modules), "the engine imported a paper"
model, tok, meta = load_model(sys.argv[1])
ev = EvalSet.build(model.task, load_records([sys.argv[2]]), tok, TrainConfig.from_dict(meta["train_config"]),
                   max_positions(model, tok))
extra = model.extras[0]
print(json.dumps({"extra": f"{type(extra).__module__}.{type(extra).__qualname__}",
                  "logits": torch.cat([model(b)["logits"].flatten() for _, b in ev.batches]).tolist()}))
"""


def test_a_saved_dlfa_model_loads_in_a_process_that_imported_no_paper(dlfa_model, toy_data):
    """A job that loads a model (evaluation, an analysis, a benchmark) imports no paper itself:
    the spec's extra name loads the papers' registrations (xlt.engine.plugins, the package's
    entry point), and the model predicts as it does here."""
    import json
    import subprocess
    import sys

    from tests.conftest import REPO

    test = toy_data / "marc" / "en" / "test.jsonl"
    run = subprocess.run([sys.executable, "-c", LOAD_ALONE, str(dlfa_model), str(test)], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["extra"] == "xlt.papers.dlfa.recipe.DLFA"
    model, tok, meta = load_model(dlfa_model)
    ev = EvalSet.build(model.task, load_records([test]), tok, TrainConfig.from_dict(meta["train_config"]), max_positions(model, tok))
    with torch.no_grad():
        here = torch.cat([model(b)["logits"].flatten() for _, b in ev.batches])
    assert torch.equal(torch.tensor(out["logits"], dtype=here.dtype), here)


def test_a_dlfa_model_trains_bit_identically_on_cpu(dlfa_model, tiny_encoder, toy_data, tmp_path):
    from xlt.engine.recipes.finetune import train
    from xlt.io import read_json

    cfg = TrainConfig.from_dict({**HP, "task": "marc", "encoder": str(tiny_encoder), "seed": 1,
                                 "extras": [{"name": "dlfa", "layer": 1}]})
    train(cfg, [toy_data / "marc" / "en" / "train.jsonl"], [toy_data / "marc" / "en" / "dev.jsonl"], tmp_path / "m", tmp_path / "ck")
    first, again = (read_json(d / "xlt_model.json")["weights_sha256"] for d in (dlfa_model, tmp_path / "m"))
    assert first == again  # encoder, extra (BatchNorm running statistics included) and head


def test_building_the_extra_draws_nothing_from_the_global_rng():
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    first = build_extra({"name": "dlfa", "layer": 1}, CONFIG)
    assert torch.equal(torch.rand(3), expected)  # the head built next starts as without the extra
    torch.manual_seed(7)
    again = build_extra({"name": "dlfa", "layer": 1}, CONFIG)
    other_seed = (torch.manual_seed(8), build_extra({"name": "dlfa", "layer": 1}, CONFIG))[1]
    w = [m.local_branch.down.weight for m in (first, again, other_seed)]
    assert torch.equal(w[0], w[1]) and not torch.equal(w[0], w[2])  # a function of the seed
