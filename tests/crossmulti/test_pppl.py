"""Pseudo-perplexity: the pooled, length-batched scorer equals masking one token per forward pass."""

from __future__ import annotations

import math

import pytest
import torch

from xlt.papers.crossmulti.pppl import (
    corpus_pppl,
    load_scorer,
    masked_copies,
    pll_one_copy_per_forward,
    pseudo_log_likelihoods,
    score_texts,
)

TEXTS = ["ka lo mi ten", "mi ten", "lo lo ka ka mi ten ka", "ten Berlin Anna ka lo"]


def test_masked_copies_skip_specials():
    assert masked_copies([[2, 7, 8, 3], [2, 9, 3]], {2, 3}) == [(0, 1), (0, 2), (1, 1)]


@pytest.mark.parametrize("batch_size", [1, 3, 256])
def test_pooled_equals_one_mask_at_a_time(tiny_encoder, batch_size):
    torch.manual_seed(0)
    mlm, tok = load_scorer(str(tiny_encoder))
    seqs = tok(TEXTS)["input_ids"]
    special = set(tok.all_special_ids)
    pll, counts = pseudo_log_likelihoods(mlm, seqs, tok.mask_token_id, special, tok.pad_token_id, batch_size)
    expected = pll_one_copy_per_forward(mlm.mlm.eval(), seqs, tok.mask_token_id, special)
    assert pll.tolist() == pytest.approx(expected, rel=1e-5, abs=1e-6)
    assert counts.tolist() == [len(s) - 2 for s in seqs]  # every token but [CLS] and [SEP]
    assert corpus_pppl(pll, counts) == pytest.approx(math.exp(-sum(expected) / sum(len(s) - 2 for s in seqs)))
    assert score_texts(mlm, tok, TEXTS, 64, batch_size)["pppl"] == pytest.approx(corpus_pppl(pll, counts))


def test_finetuned_encoder_with_the_pretrained_head(tiny_encoder, tmp_path):
    """The fine-tuned encoder's weights, every one, under the pretrained MLM head."""
    from transformers import AutoModel

    enc = AutoModel.from_pretrained(tiny_encoder, add_pooling_layer=False)
    with torch.no_grad():
        enc.encoder.layer[0].attention.self.query.weight.add_(1.0)
    enc.save_pretrained(tmp_path / "encoder")
    pre, _ = load_scorer(str(tiny_encoder))
    ft, _ = load_scorer(str(tiny_encoder), str(tmp_path / "encoder"))
    q = "encoder.layer.0.attention.self.query.weight"
    assert torch.equal(ft.mlm.base_model.state_dict()[q], enc.state_dict()[q])
    assert not torch.equal(ft.mlm.base_model.state_dict()[q], pre.mlm.base_model.state_dict()[q])
    assert torch.equal(ft.mlm.cls.predictions.transform.dense.weight, pre.mlm.cls.predictions.transform.dense.weight)
