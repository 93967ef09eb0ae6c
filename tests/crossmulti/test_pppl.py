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
    tokenize_texts,
)

# "¤", "Ω" and "ж" are outside the tiny WordPiece vocabulary's alphabet: they become [UNK], as
# real text does under mBERT's vocabulary.
TEXTS = ["ka lo mi ten", "mi ¤ ten", "lo lo ka ka mi ten ka Ω", "ten Berlin Anna ka lo ж"]


def brute_force_pll(hf, seq: list[int], mask_id: int) -> float:
    """One masked copy per forward pass of every position between the tokenizer's [CLS] (first)
    and [SEP] (last), whatever id it holds."""
    total = 0.0
    with torch.no_grad():
        for p in range(1, len(seq) - 1):
            ids = torch.tensor([seq])
            ids[0, p] = mask_id
            total += torch.log_softmax(hf(input_ids=ids).logits[0, p].double(), -1)[seq[p]].item()
    return total


def test_masked_copies_skip_only_what_the_tokenizer_added():
    assert masked_copies([[1, 0, 0, 1], [1, 0, 1]]) == [(0, 1), (0, 2), (1, 1)]


def test_unknown_and_special_looking_text_tokens_are_scored(tiny_encoder):
    """An [UNK] (and a literal "[SEP]") in the text is scored; only [CLS] and [SEP] added by the
    tokenizer are not; a text cut to nothing of its own is dropped."""
    _, tok = load_scorer(str(tiny_encoder))
    ids, added = tokenize_texts(tok, ["ka ¤ lo [SEP]", "", "mi ten"], 64)
    assert tok.unk_token_id in ids[0] and len(ids) == 2
    assert added[0] == [1] + [0] * (len(ids[0]) - 2) + [1]
    assert [i for (s, p) in masked_copies(added) for i in [ids[s][p]] if s == 0].count(tok.unk_token_id) == 1


@pytest.mark.parametrize("batch_size", [1, 3, 256])
def test_pooled_equals_one_mask_at_a_time(tiny_encoder, batch_size):
    torch.manual_seed(0)
    mlm, tok = load_scorer(str(tiny_encoder))
    seqs, added = tokenize_texts(tok, TEXTS, 64)
    assert sum(s.count(tok.unk_token_id) for s in seqs) == 3  # the test sees [UNK]
    pll, counts = pseudo_log_likelihoods(mlm, seqs, added, tok.mask_token_id, tok.pad_token_id, batch_size)
    expected = [brute_force_pll(mlm.mlm.eval(), s, tok.mask_token_id) for s in seqs]
    assert pll.tolist() == pytest.approx(expected, rel=1e-5, abs=1e-6)
    assert pll_one_copy_per_forward(mlm.mlm, seqs, added, tok.mask_token_id) == pytest.approx(expected, rel=1e-9)
    assert counts.tolist() == [len(s) - 2 for s in seqs]  # every token but [CLS] and [SEP], [UNK] too
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
