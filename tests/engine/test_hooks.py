"""Layer hooks (xlt.engine.hooks) in both forwards: a hook that only reads changes nothing, a
replacement at k changes hidden states k… and nothing before, both forwards agree with hooks."""

import pytest
import torch

from tests.engine.test_speed import _batch, _tiny_encoder
from xlt.engine.fastpath import encode
from xlt.engine.hooks import LayerHooks
from xlt.errors import XltError

LAYERS = 2  # _tiny_encoder's


def _run(enc, ids, mask, hooks, seed=7):
    torch.manual_seed(seed)  # the lean forward's dropout draws: the same in every run
    return encode(enc, ids, mask, hooks=hooks)


def _every_hook_reading(seen: list) -> LayerHooks:
    hooks = LayerHooks()
    for k in range(LAYERS + 1):
        hooks.at(k, lambda v: seen.append(("hidden", v.index)))
        hooks.at(k, lambda v: v.hidden)  # returning the very tensor is no replacement
    for k in range(LAYERS):
        hooks.at_context(k, lambda v: seen.append(("context", v.index)))
        hooks.at_attended(k, lambda v: seen.append(("attended", v.index)))
    return hooks


@pytest.mark.parametrize("training", [True, False], ids=["lean-train", "hf-eval"])
def test_hooks_that_only_read_leave_the_output_and_gradients_bit_identical(training):
    enc = _tiny_encoder("bert", dropout=0.1)
    enc.train(training)
    ids, mask = _batch()
    plain = _run(enc, ids, mask, None)
    seen = []
    hooked = _run(enc, ids, mask, _every_hook_reading(seen))
    assert torch.equal(plain, hooked)
    assert sorted(set(seen)) == sorted({("hidden", k) for k in range(LAYERS + 1)} | {("context", k) for k in range(LAYERS)}
                                       | {("attended", k) for k in range(LAYERS)})
    if training:
        g_plain = torch.autograd.grad(_run(enc, ids, mask, None).sum(), list(enc.parameters()))
        g_hooked = torch.autograd.grad(_run(enc, ids, mask, _every_hook_reading([])).sum(), list(enc.parameters()))
        assert all(torch.equal(a, b) for a, b in zip(g_plain, g_hooked))


@pytest.mark.parametrize("training", [True, False], ids=["lean-train", "hf-eval"])
@pytest.mark.parametrize("k", range(LAYERS + 1))
def test_a_replacement_at_k_changes_hidden_states_k_and_later_only(training, k):
    enc = _tiny_encoder("bert", dropout=0.1)
    enc.train(training)
    ids, mask = _batch()

    def states(replace: bool) -> dict:
        hooks = LayerHooks()
        if replace:
            hooks.at(k, lambda v: v.hidden * 2 + 1)
        recorded = hooks.record(range(LAYERS + 1))  # added after the replacement: they see it
        recorded["out"] = _run(enc, ids, mask, hooks)
        return recorded

    before, after = states(False), states(True)
    for i in range(LAYERS + 1):
        assert torch.equal(before[i], after[i]) == (i < k), f"hidden state {i}, replaced at {k}"
    assert not torch.equal(before["out"], after["out"])
    assert torch.equal(after[LAYERS], after["out"])


def test_the_hugging_face_forward_reports_the_replaced_states_in_its_own_hidden_states():
    enc = _tiny_encoder("xlm-roberta", dropout=0.0).eval()
    ids, mask = _batch()
    from xlt.engine.hooks import installed

    hooks = LayerHooks().at(1, lambda v: v.hidden + 1)
    recorded = hooks.record([1])
    with installed(enc, hooks, mask):
        out = enc(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    assert torch.equal(out.hidden_states[1], recorded[1])


@pytest.mark.parametrize("model_type", ["bert", "xlm-roberta"])
def test_both_forwards_agree_with_a_replacing_hook_and_a_context_hook(model_type):
    enc = _tiny_encoder(model_type, dropout=0.0)
    ids, mask = _batch()
    real = mask.bool()

    def hooks():
        h = LayerHooks().at(1, lambda v: v.hidden.flip(-1) * v.attention_mask.unsqueeze(-1))
        h.at_attended(1, lambda v: v.hidden.roll(1, -1))  # before the second layer's feed-forward
        return h.at_context(0, lambda v: v.hidden * 0.5)

    views = []
    lean = encode(enc.train(), ids, mask, hooks=hooks().at(1, views.append))
    hf = encode(enc.eval(), ids, mask, hooks=hooks().at(1, views.append))
    torch.testing.assert_close(lean[real], hf[real], rtol=1e-5, atol=1e-6)
    # a hook sees the layer that reads its states next, the mask and the whole encoder
    assert all(v.layer is enc.encoder.layer[1] and v.encoder is enc and torch.equal(v.attention_mask, mask) for v in views)


def test_hook_indices_are_checked_and_negative_ones_count_from_the_end():
    enc = _tiny_encoder("bert", dropout=0.0).eval()
    ids, mask = _batch()
    last = LayerHooks()
    got = last.record([-1])
    out = encode(enc, ids, mask, hooks=last)
    assert torch.equal(got[-1], out)  # kept under the index asked for
    with pytest.raises(XltError, match="out of range"):
        encode(enc, ids, mask, hooks=LayerHooks().at(LAYERS + 1, lambda v: None))
    with pytest.raises(XltError, match="must keep the shape"):
        encode(enc, ids, mask, hooks=LayerHooks().at(0, lambda v: v.hidden[:, :1]))
