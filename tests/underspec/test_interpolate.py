from __future__ import annotations

import math

import pytest
import torch

from tests.underspec.tiny import TinyModel
from xlt.errors import XltError
from xlt.papers.underspec.interpolate import (
    Interpolator,
    alpha_axis,
    alpha_grid_1d,
    alpha_grid_2d,
    delta_geometry,
    prefix_filter,
)


def assert_state(model, expected, names=None):
    sd = model.state_dict()
    for k in names if names is not None else sd:
        assert torch.equal(sd[k], expected[k].to(sd[k].dtype)), k


def float_names(model):
    return [k for k, v in model.state_dict().items() if v.is_floating_point()]


# --------------------------------------------------------------------------- grids


def test_alpha_grid_1d_exact_values():
    g = alpha_grid_1d()
    assert len(g) == 21 + 12
    assert g == sorted(g) and len(set(g)) == len(g)
    assert g[0] == -0.5 and g[-1] == 1.5
    for literal in (-0.4, -0.1, 0.0, 0.3, 0.7, 1.0, 1.3, 0.025, 0.175, 0.825, 0.975):
        assert literal in g
    assert 0.30000000000000004 not in g
    assert all(float(repr(v)) == v and len(repr(v)) <= 6 for v in g)


def test_alpha_grid_2d():
    g = alpha_grid_2d("0.1")
    assert len(g) == 21 * 21
    for corner in ((0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (-0.5, 1.5), (0.3, 0.6)):
        assert corner in g
    assert alpha_axis(0.25) == [-0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5]
    with pytest.raises(XltError, match="does not divide"):
        alpha_axis(0.3)
    with pytest.raises(XltError, match="misses"):
        alpha_axis(0.2, lo=-0.5, hi=1.5)


# --------------------------------------------------------------------------- 1D / 2D


def test_1d_endpoints_exact_all_parameters(model, endpoints):
    bi, src, tgt = endpoints
    params_before = {n: id(p) for n, p in model.named_parameters()}
    it = Interpolator(model, bi, src, tgt)
    assert_state(model, bi)  # construction leaves the model at θ_bi
    for other, theta in (("src", src), ("tgt", tgt)):
        it.set_1d(0.37, other)
        it.set_1d(0.0, other)
        assert_state(model, theta)
        it.set_1d(1.0, other)
        assert_state(model, bi)
    # Still the same live parameters, still trainable.
    assert {n: id(p) for n, p in model.named_parameters()} == params_before
    assert all(p.requires_grad for p in model.parameters())


def test_1d_interior_matches_formula(model, endpoints):
    bi, src, tgt = endpoints
    it = Interpolator(model, bi, src, tgt)
    for alpha in (-0.5, 0.025, 0.3, 0.975, 1.5):
        it.set_1d(alpha, "tgt")
        sd = model.state_dict()
        for k in float_names(model):
            assert torch.allclose(sd[k], alpha * bi[k] + (1 - alpha) * tgt[k], atol=1e-6), (alpha, k)
    assert it.point == ("1d", "tgt", 1.5)


def test_2d_corners_exact_and_interior(model, endpoints):
    bi, src, tgt = endpoints
    it = Interpolator(model, bi, src, tgt)
    for (a1, a2), theta in (((0, 0), bi), ((1, 0), src), ((0, 1), tgt), ((0.0, 0.0), bi)):
        it.set_2d(0.4, -0.3)
        it.set_2d(a1, a2)
        assert_state(model, theta)
    for a1, a2 in ((0.5, 0.5), (-0.5, 1.5), (0.3, 0.0), (0.0, 0.7)):
        it.set_2d(a1, a2)
        sd = model.state_dict()
        for k in float_names(model):
            want = bi[k] + a1 * (src[k] - bi[k]) + a2 * (tgt[k] - bi[k])
            assert torch.allclose(sd[k], want, atol=1e-6), (a1, a2, k)
    # The 2D axis α2 = 0 is the 1D src path with α = 1 − α1.
    it.set_2d(0.25, 0.0)
    a = {k: v.clone() for k, v in model.state_dict().items()}
    it.set_1d(0.75, "src")
    for k in float_names(model):
        assert torch.allclose(model.state_dict()[k], a[k], atol=1e-7)


def test_forward_at_endpoint_equals_loaded_model(model, endpoints):
    bi, src, tgt = endpoints
    ids = torch.randint(0, 40, (3, 10), generator=torch.Generator().manual_seed(0))
    ref = TinyModel().eval()
    ref.load_state_dict(src)
    it = Interpolator(model, bi, src, tgt)
    it.set_1d(0.5)
    it.set_1d(0.0, "src")
    with torch.inference_mode():
        assert torch.equal(model(ids), ref(ids))


def test_set_inside_inference_mode(model, endpoints):
    bi, src, tgt = endpoints
    it = Interpolator(model, bi, src, tgt)
    with torch.inference_mode():
        it.set_1d(0.0)
        it.set_2d(0.2, 0.2)
        it.set_2d(0, 1)
    assert_state(model, tgt)


# --------------------------------------------------------------------------- filters / hold


def test_encoder_only_hold_bi(model, endpoints):
    bi, src, tgt = endpoints
    it = Interpolator(model, bi, src, tgt, param_filter=model.bert)
    head = ["head.weight", "head.bias", "temperature"]
    enc = [k for k in float_names(model) if k.startswith("bert.")]
    assert set(it.held_names) == set(head)
    assert "lm.weight" not in it.names and "bert.embeddings.word.weight" in it.names  # tied: once
    for step in (lambda: it.set_1d(0.0), lambda: it.set_1d(0.6, "tgt"), lambda: it.set_2d(1, 0), lambda: it.set_2d(0.3, 0.9)):
        step()
        assert_state(model, bi, head)  # held at θ_bi everywhere
    it.set_1d(0.0)
    assert_state(model, src, enc)
    it.set_2d(0, 1)
    assert_state(model, tgt, enc)


def test_encoder_only_by_prefix_matches_submodule(model, endpoints):
    bi, src, tgt = endpoints
    a = Interpolator(model, bi, src, tgt, param_filter=("bert.",))
    names_a, held_a = list(a.names), list(a.held_names)
    b = Interpolator(model, bi, src, tgt, param_filter=prefix_filter("bert.embeddings.", "bert.encoder."))
    assert names_a == b.names and held_a == b.held_names
    # A callable matching only the tied alias still selects the shared tensor.
    c = Interpolator(model, bi, src, tgt, param_filter=lambda n: n == "lm.weight")
    assert c.names == ["bert.embeddings.word.weight"]


def test_select_switches_filter_as_a_fresh_interpolator_would(model, endpoints):
    """One Interpolator re-selected (all -> encoder -> all) writes every point bit for bit as
    an Interpolator built with that filter, and moves no endpoint again."""
    bi, src, tgt = endpoints
    it = Interpolator(model, bi, src, tgt)
    placed = {which: [t.data_ptr() for t in ts] for which, ts in it._ends.items()}
    fresh_model = TinyModel().eval()
    for encoder_only in (True, False):
        it.select(model.bert if encoder_only else "all")
        assert_state(model, bi)  # left at θ_bi
        fresh = Interpolator(fresh_model, bi, src, tgt, param_filter=fresh_model.bert if encoder_only else "all")
        assert (it.names, it.held_names) == (fresh.names, fresh.held_names)
        for step in (lambda i: i.set_1d(0.3, "src"), lambda i: i.set_1d(-0.5, "tgt"), lambda i: i.set_2d(0.4, 0.7)):
            step(it)
            step(fresh)
            assert_state(model, fresh_model.state_dict())
        assert it.geometry() == fresh.geometry()
    assert {which: [t.data_ptr() for t in ts] for which, ts in it._ends.items()} == placed
    with pytest.raises(XltError, match="not a submodule"):
        it.select(TinyModel().bert)


def test_encoder_only_hold_other(model, endpoints):
    bi, src, tgt = endpoints
    head = ["head.weight", "head.bias", "temperature"]
    it = Interpolator(model, bi, src, tgt, param_filter=model.bert, hold="other")
    it.set_1d(0.0, "src")
    assert_state(model, src)  # the whole model is θ_src
    it.set_1d(0.5, "tgt")
    assert_state(model, tgt, head)
    it.set_1d(1.0, "tgt")
    assert_state(model, tgt, head)
    with pytest.raises(XltError, match="2D"):
        it.set_2d(0.1, 0.1)


def test_float_buffers_can_be_held(model, endpoints):
    bi, src, tgt = endpoints
    it = Interpolator(model, bi, src, tgt, include_float_buffers=False)
    assert it.held_names == ["temperature"]
    it.set_1d(0.0)
    assert torch.equal(model.temperature, bi["temperature"])


def test_non_float_buffer_copied_from_bi_and_checked(model, endpoints):
    bi, src, tgt = endpoints
    model.bert.embeddings.position_ids.zero_()
    it = Interpolator(model, bi, src, tgt)
    assert torch.equal(model.bert.embeddings.position_ids, bi["bert.embeddings.position_ids"])
    it.set_2d(0.5, 0.5)
    assert torch.equal(model.bert.embeddings.position_ids, bi["bert.embeddings.position_ids"])
    bad = dict(tgt)
    bad["bert.embeddings.position_ids"] = bad["bert.embeddings.position_ids"] + 1
    with pytest.raises(XltError, match="position_ids differs"):
        Interpolator(model, bi, src, bad)


def test_endpoint_aliasing_live_parameters(model, endpoints):
    _, src, tgt = endpoints
    live_bi = model.state_dict()  # tensors sharing memory with the live parameters
    snapshot = {k: v.clone() for k, v in live_bi.items()}
    it = Interpolator(model, live_bi, src, tgt)
    it.set_1d(0.0)
    it.set_1d(1.0)
    assert_state(model, snapshot)


def test_mismatched_endpoints_raise(model, endpoints):
    bi, src, tgt = endpoints
    missing = {k: v for k, v in src.items() if k != "head.bias"}
    with pytest.raises(XltError, match="theta_src lacks head.bias"):
        Interpolator(model, bi, missing, tgt)
    wrong = dict(tgt)
    wrong["head.weight"] = torch.zeros(5, 16)
    with pytest.raises(XltError, match=r"theta_tgt\[head.weight\] has shape"):
        Interpolator(model, bi, src, wrong)
    it = Interpolator(model, bi, src)
    with pytest.raises(XltError, match="no theta_tgt"):
        it.set_2d(0.5, 0.5)
    with pytest.raises(XltError):
        it.set_1d(0.5, "both")
    with pytest.raises(XltError):
        Interpolator(model, bi, src, param_filter=lambda n: False)


def test_dtype_follows_model(endpoints):
    bi, src, tgt = endpoints
    model = TinyModel().to(torch.float64)
    it = Interpolator(model, bi, src, tgt)
    it.set_1d(0.0)
    assert model.head.weight.dtype == torch.float64
    assert_state(model, src)
    assert all(t.dtype == torch.float64 for t in it._ends["src"])


# --------------------------------------------------------------------------- geometry


def test_delta_geometry_hand_computed():
    bi = {"a.w": torch.tensor([1.0, 1.0]), "a.b": torch.tensor([0.0]), "head.w": torch.tensor([5.0]),
          "ids": torch.tensor([1, 2])}  # fmt: skip
    src = {"a.w": torch.tensor([3.0, 1.0]), "a.b": torch.tensor([0.0]), "head.w": torch.tensor([6.0]),
           "ids": torch.tensor([1, 2])}  # fmt: skip
    tgt = {"a.w": torch.tensor([2.0, 2.0]), "a.b": torch.tensor([0.0]), "head.w": torch.tensor([5.0]),
           "ids": torch.tensor([1, 2])}  # fmt: skip
    # Encoder only: δ_src = (2, 0, 0), δ_tgt = (1, 1, 0): norms 2 and √2, 45°.
    g = delta_geometry(bi, src, tgt, param_filter=("a.",))
    assert g["norm_src"] == pytest.approx(2.0)
    assert g["norm_tgt"] == pytest.approx(math.sqrt(2))
    assert g["ratio"] == pytest.approx(math.sqrt(2))
    assert g["cosine"] == pytest.approx(math.sqrt(0.5))
    assert g["angle_deg"] == pytest.approx(45.0)
    assert g["n_params"] == 3
    # All: δ_src = (2, 0, 0, 1), δ_tgt = (1, 1, 0, 0): cos = 2 / (√5·√2).
    g = delta_geometry(bi, src, tgt)
    assert g["cosine"] == pytest.approx(2 / math.sqrt(10))
    assert g["angle_deg"] == pytest.approx(math.degrees(math.acos(2 / math.sqrt(10))))
    with pytest.raises(XltError, match="δ_tgt is zero"):
        delta_geometry(bi, src, tgt, param_filter=("head.",))


def test_interpolator_geometry_matches_function(model, endpoints):
    bi, src, tgt = endpoints
    it = Interpolator(model, bi, src, tgt, param_filter=model.bert)
    g1 = it.geometry()
    g2 = delta_geometry(bi, src, tgt, param_filter=("bert.",))
    for k in ("norm_src", "norm_tgt", "ratio", "cosine", "angle_deg", "n_params"):
        assert g1[k] == pytest.approx(g2[k], rel=1e-6), k
    # Endpoints are init + independent equal-size noise, so δ_src and δ_tgt share −noise_bi:
    # cos = 1/2, 60°, and equal norms.
    assert g1["angle_deg"] == pytest.approx(60, abs=3)
    assert g1["ratio"] == pytest.approx(1, abs=0.05)
