"""Head updates pick each head's rows of Q/K/V (weights and biases) and its columns of O."""

from __future__ import annotations

import numpy as np
import pytest
import torch


def bert_state(layers=2, heads=2, hidden=8, seed=0) -> dict[str, torch.Tensor]:
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=30, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                     intermediate_size=16, max_position_embeddings=16)
    return {k: v.clone() for k, v in BertModel(cfg, add_pooling_layer=False).state_dict().items()}


def test_a_change_lands_on_its_head_only():
    from xlt.papers.crossmulti.head_updates import head_updates

    pre = bert_state()
    ft = {k: v.clone() for k, v in pre.items()}
    d = 4  # hidden 8 / 2 heads
    ft["encoder.layer.0.attention.self.key.weight"][d:2 * d, :] += 0.5  # layer 0, head 1: rows 4-7 of K
    ft["encoder.layer.0.attention.self.value.bias"][d:2 * d] -= 0.25
    ft["encoder.layer.1.attention.output.dense.weight"][:, 0:d] += 1.0  # layer 1, head 0: columns 0-3 of O
    ft["encoder.layer.1.attention.output.dense.bias"] += 3.0  # O's bias: shared by all heads, owned by none
    ft["encoder.layer.1.intermediate.dense.weight"] += 3.0  # not attention
    upd = head_updates(pre, ft, layers=2, heads=2)
    assert np.count_nonzero(upd) == 2
    assert upd[0, 1] == pytest.approx(0.5 * d * 8 + 0.25 * d)  # the absolute (L1) change
    assert upd[1, 0] == pytest.approx(1.0 * 8 * d)


def test_slices_are_the_heads_rows_and_columns():
    from xlt.papers.crossmulti.head_updates import head_slices

    pre = bert_state()
    q, qb, k, kb, v, vb, o = head_slices(pre, 1, 1, 4)
    assert torch.equal(q, pre["encoder.layer.1.attention.self.query.weight"][4:8])
    assert torch.equal(vb, pre["encoder.layer.1.attention.self.value.bias"][4:8])
    assert torch.equal(o, pre["encoder.layer.1.attention.output.dense.weight"][:, 4:8])
    assert q.shape == (4, 8) and o.shape == (8, 4)


def test_figure1_compares_shares_so_a_longer_run_does_not_colour_every_head():
    """A multi model that moved every head 4× as far as its cross twin, but in another pattern:
    raw, multi − cross is positive everywhere; as shares of each model's total, both signs
    appear and the diff sums to 0."""
    import pandas as pd

    from xlt.papers.crossmulti.figures import head_update_maps

    cross = np.array([4.0, 3.0, 2.0, 1.0])
    multi = 4 * np.array([1.5, 2.0, 3.0, 4.0])
    rows = [{"task": "pos", "setting": s, "seed": 1, "layer": h // 2, "head": h % 2, "update": v}
            for s, values in (("cross", cross), ("multi", multi)) for h, v in enumerate(values)]
    maps, _ = head_update_maps(pd.DataFrame(rows))
    assert (multi - cross > 0).all()
    assert maps["cross"].sum() == pytest.approx(1.0) and maps["multi"].sum() == pytest.approx(1.0)
    assert (maps["diff"] > 0).any() and (maps["diff"] < 0).any() and maps["diff"].sum() == pytest.approx(0.0)
    assert maps.sort_values(["layer", "head"])["cross"].to_numpy() == pytest.approx(cross / cross.sum())
