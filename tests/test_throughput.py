"""FLOP accounting, GPU peaks and length profiles (xlt.dag.throughput)."""

import pytest
from transformers import BertConfig, BertModel

from xlt.errors import XltError
from xlt.dag.throughput import LENGTHS, SHAPES, eval_flops, length_profile, mfu, peak_tflops, train_flops


def test_non_embedding_params_match_a_real_bert_of_that_shape():
    s = SHAPES["small"]
    model = BertModel(BertConfig(num_hidden_layers=s.layers, hidden_size=s.hidden, num_attention_heads=s.heads,
                                 intermediate_size=s.intermediate, vocab_size=s.vocab,
                                 max_position_embeddings=s.max_positions), add_pooling_layer=False)
    assert s.non_embedding_params() == sum(p.numel() for p in model.encoder.parameters())
    assert 84e6 < SHAPES["mbert"].non_embedding_params() < 86e6  # mBERT: 178M, of which 92M embeddings


def test_flops_are_6_n_l_plus_attention_and_ignore_nothing_but_padding():
    s = SHAPES["mbert"]
    n = s.non_embedding_params()
    assert train_flops(s, [128]) == pytest.approx(6 * n * 128 + 12 * 12 * 768 * 128**2)
    assert train_flops(s, [100, 28]) < train_flops(s, [128])  # attention is quadratic per sequence
    assert train_flops(s, [64, 64]) == pytest.approx(3 * eval_flops(s, [64, 64]))


def test_peaks_by_device_name_and_mfu():
    assert peak_tflops("NVIDIA H100 80GB HBM3") == 989.0
    assert peak_tflops("NVIDIA H100 PCIe") == 756.0
    assert peak_tflops("NVIDIA H200") == 989.0
    assert peak_tflops("NVIDIA A100-SXM4-80GB") == 312.0
    assert peak_tflops("Some Future GPU") is None
    assert mfu(989e12 * 0.5, 1.0, 989.0) == pytest.approx(0.5)
    assert mfu(1e12, 1.0, None) is None


def test_length_profiles_are_deterministic_clipped_and_ordered():
    p = length_profile("pawsx")
    a, b = p.sample(1000, seed=3), p.sample(1000, seed=3)
    assert a == b and min(a) >= p.lo and max(a) <= p.hi
    assert LENGTHS["ner"].mean() < LENGTHS["xnli"].mean() < LENGTHS["pawsx"].mean() <= 128
    with pytest.raises(XltError, match="no length profile for task 'nope'; known: ner"):
        length_profile("nope")
