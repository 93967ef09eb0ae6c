from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from xlt.engine.biaffine import BiaffineParser, attachment_scores, chu_liu_edmonds, gather_words
from xlt.errors import XltError

H, R = 16, 5


def batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    B, W = 3, 6
    words = torch.randn(B, W, H, generator=g)
    lengths = [6, 4, 2]
    mask = torch.zeros(B, W, dtype=torch.bool)
    for b, n in enumerate(lengths):
        mask[b, :n] = True
    # Valid trees: word 1 is the root's child, each later word attaches to an earlier word.
    heads = torch.zeros(B, W, dtype=torch.long)
    for b, n in enumerate(lengths):
        for i in range(1, n):
            heads[b, i] = int(torch.randint(1, i + 1, (1,), generator=g))
    rels = torch.randint(0, R, (B, W), generator=g)
    heads[~mask] = 0
    rels[~mask] = 0
    return words, mask, heads, rels


def test_shapes_and_root_modes():
    words, mask, heads, rels = batch()
    B, W, _ = words.shape
    p = BiaffineParser(H, R, arc_dim=8, rel_dim=4, root="learned").eval()
    out = p(words, mask, heads, rels)
    assert out["arc_scores"].shape == (B, W, W + 1)
    assert out["rel_scores"].shape == (B, W, R)
    assert out["loss"].dim() == 0 and torch.isfinite(out["loss"])
    assert torch.allclose(out["loss"], out["arc_loss"] + out["rel_loss"])
    out = p(words, mask)  # no gold: no loss, rel scores at argmax heads
    assert out["loss"] is None and out["rel_scores"].shape == (B, W, R)

    q = BiaffineParser(H, R, arc_dim=8, rel_dim=4).eval()  # root="cls"
    assert not hasattr(q, "root")
    cls = torch.randn(B, H)
    assert q(words, mask, heads, rels, root=cls)["arc_scores"].shape == (B, W, W + 1)
    with pytest.raises(XltError, match="needs root"):
        q(words, mask, heads, rels)
    with pytest.raises(XltError, match="do not pass root"):
        p(words, mask, root=cls)


@pytest.fixture
def one_thread():
    """Tiny tensors: thread hand-offs cost more than the arithmetic."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def test_overfits_tiny_batch(one_thread):
    torch.manual_seed(0)
    words, mask, heads, rels = batch()
    p = BiaffineParser(H, R, arc_dim=32, rel_dim=16, dropout=0.1, root="learned")
    opt = torch.optim.Adam(p.parameters(), lr=3e-2)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        out = p(words, mask, heads, rels)
        out["loss"].backward()
        opt.step()
        losses.append(out["loss"].item())
    assert losses[-1] < 0.1 * losses[0]
    p.eval()
    out = p(words, mask)
    for method in ("argmax", "mst"):
        ph, pr = p.decode(out, mask, method=method)
        s = attachment_scores(ph, pr, heads, rels, mask)
        assert s["las"] == 1.0 and s["n"] == int(mask.sum()), method


def test_padding_never_scored_or_predicted():
    torch.manual_seed(0)
    words, mask, heads, rels = batch()
    p = BiaffineParser(H, R, arc_dim=8, rel_dim=4, root="learned")
    with torch.no_grad():  # make the biaffine weights non-zero
        for t in (p.arc_U, p.arc_u, p.rel_U):
            t.normal_()
    p.eval()
    out = p(words, mask, heads, rels)
    B, W, _ = words.shape
    head_ok = torch.cat([torch.ones(B, 1, dtype=torch.bool), mask], 1)
    arc = out["arc_scores"]
    assert torch.isneginf(arc[~head_ok.unsqueeze(1).expand(-1, W, -1)]).all()
    assert torch.isneginf(arc[:, torch.arange(W), torch.arange(W) + 1]).all()  # no self-loops

    # Garbage in the padding changes nothing that is scored.
    noisy = words.clone()
    noisy[~mask] = 1e4 * torch.randn(int((~mask).sum()), H)
    out2 = p(noisy, mask, heads, rels)
    real = mask.unsqueeze(-1) & head_ok.unsqueeze(1)
    assert torch.equal(arc[real], out2["arc_scores"][real])
    assert torch.equal(out["loss"], out2["loss"])
    for method in ("argmax", "mst"):
        ph, pr = p.decode(out2, mask, method=method)
        assert (ph[~mask] == -1).all() and (pr[~mask] == -1).all()
        assert head_ok.gather(1, ph.clamp(min=0))[mask].all()
        assert (ph[mask] != torch.arange(1, W + 1).expand(B, W)[mask]).all()


def test_bad_gold_raises():
    words, mask, heads, rels = batch()
    p = BiaffineParser(H, R, arc_dim=8, rel_dim=4, root="learned")
    bad = heads.clone()
    bad[2, 1] = 4  # sentence 2 has two words: 4 is padding
    with pytest.raises(XltError, match="sentence 2, word 2"):
        p(words, mask, bad, rels)
    bad = heads.clone()
    bad[0, 3] = 4  # word 4 heading itself
    with pytest.raises(XltError, match="sentence 0, word 4"):
        p(words, mask, bad, rels)
    bad = rels.clone()
    bad[1, 0] = R
    with pytest.raises(XltError, match="rel 5"):
        p(words, mask, heads, bad)


def _brute_force(S, single_root):
    n = S.shape[0] - 1
    best, best_heads = -np.inf, None
    for hs in itertools.product(range(n + 1), repeat=n):
        heads = (-1,) + hs
        if any(heads[d] == d for d in range(1, n + 1)):
            continue
        if single_root and sum(h == 0 for h in hs) != 1:
            continue
        ok = True
        for d in range(1, n + 1):  # every word reaches ROOT
            seen, v = set(), d
            while v != 0 and v not in seen:
                seen.add(v)
                v = heads[v]
            ok &= v == 0
        if ok:
            score = sum(S[heads[d], d] for d in range(1, n + 1))
            if score > best:
                best, best_heads = score, heads
    return best, best_heads


@pytest.mark.parametrize("single_root", [False, True])
def test_chu_liu_edmonds_is_optimal(single_root):
    rng = np.random.default_rng(0)
    for trial in range(60):
        n = 2 + trial % 4
        S = rng.normal(size=(n + 1, n + 1))
        if trial % 3 == 0:  # force cycles in the greedy choice
            S[1, 2] = S[2, 1] = 5.0
        heads = chu_liu_edmonds(S, single_root=single_root)
        best, _ = _brute_force(S, single_root)
        score = sum(S[heads[d], d] for d in range(1, n + 1))
        assert score == pytest.approx(best), (trial, heads)
        assert heads[0] == -1
        if single_root:
            assert (heads[1:] == 0).sum() == 1


def test_gather_words_and_scores():
    hidden = torch.arange(2 * 5 * 2, dtype=torch.float).view(2, 5, 2)
    idx = torch.tensor([[1, 3], [1, 0]])
    mask = torch.tensor([[True, True], [True, False]])
    out = gather_words(hidden, idx, mask)
    assert torch.equal(out[0], hidden[0, [1, 3]])
    assert torch.equal(out[1, 1], torch.zeros(2))
    s = attachment_scores(torch.tensor([[0, 1]]), torch.tensor([[2, 3]]), torch.tensor([[0, 2]]),
                          torch.tensor([[2, 0]]), torch.tensor([[True, True]]))  # fmt: skip
    assert (s["uas"], s["las"], s["n"]) == (0.5, 0.5, 2)
