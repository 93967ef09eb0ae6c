"""L2 distances: subword averaging onto the pool's words, related vs unrelated pairs, seeds."""

import numpy as np
import pandas as pd
import pytest
import torch

from xlt.align.l2 import L2Config, distances, load_encoder, word_vectors


@pytest.fixture(scope="module")
def encoder(tiny_encoder):
    return load_encoder(str(tiny_encoder))


RECORDS = [
    {"src": ["Anna", "sor", "Berlin"], "tgt": ["lo", "ka", "mi"], "links": [[0, 0], [2, 2]]},
    {"src": ["ten", "bal"], "tgt": ["ura", "quo", "nen"], "links": [[0, 1], [1, 0]]},
    {"src": ["pil", "42", "."], "tgt": ["mi", "."], "links": [[2, 1]]},
]


def test_a_words_vector_is_the_mean_of_its_subwords(encoder):
    model, tok = encoder
    words = ["lolo", "lo", "."]  # the first word splits into several subwords (lo ##l ##o)
    vec = word_vectors(model, tok, [words], max_length=32, batch_size=4)[0]
    enc = tok([words], is_split_into_words=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**enc).last_hidden_state[0].double().numpy()
    ids = enc.word_ids(0)
    first = [k for k, w in enumerate(ids) if w == 0]
    assert len(first) > 1
    np.testing.assert_allclose(vec[0], hidden[first].mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(vec[1], hidden[ids.index(1)], rtol=1e-6)
    assert vec.shape == (3, model.config.hidden_size)


def test_words_cut_off_by_max_length_have_no_vector(encoder):
    model, tok = encoder
    vec = word_vectors(model, tok, [["lo"] * 10], max_length=6, batch_size=2)[0]  # [CLS] + 4 words + [SEP]
    assert not np.isnan(vec[:4]).any() and np.isnan(vec[4:]).all()


def test_a_word_cut_in_the_middle_has_no_vector(encoder):
    """max_length keeps the first subwords of "lolo" but not all: it is treated like a word cut
    off whole (no vector, not the mean of its surviving subwords); the words before it keep theirs."""
    model, tok = encoder
    words = ["lo", "mi", "lolo", "ka"]
    ids = tok([words], is_split_into_words=True)["input_ids"][0]
    pieces = sum(1 for w in tok([words], is_split_into_words=True).word_ids(0) if w == 2)
    assert pieces > 1  # "lolo" is several subwords
    cut = word_vectors(model, tok, [words], max_length=1 + 2 + pieces, batch_size=2)[0]  # no last piece
    whole = word_vectors(model, tok, [words], max_length=len(ids), batch_size=2)[0]
    assert not np.isnan(cut[:2]).any() and np.isnan(cut[2:]).all()
    assert not np.isnan(whole).any()
    d = distances(model, tok, [{"src": words, "tgt": words, "links": [[0, 0], [2, 2]]},
                               {"src": ["mi"], "tgt": ["ka"], "links": []}], L2Config(max_length=1 + 2 + pieces))
    assert set(d["en_word"]) == {"lo"}  # the cut word's link is skipped, as a word cut off whole


def test_related_and_unrelated_pairs_share_the_english_word(encoder):
    model, tok = encoder
    d = distances(model, tok, RECORDS, L2Config(seed=1, max_length=32))
    rel, unrel = d[d.kind == "related"], d[d.kind == "unrelated"]
    assert len(rel) == len(unrel) == 5  # every link
    assert list(rel.en_word) == list(unrel.en_word)
    assert set(rel.en_word + "|" + rel.xx_word) == {"Anna|lo", "Berlin|mi", "ten|quo", "bal|ura", ".|."}
    assert (d.distance > 0).all()


def test_word_pairs_caps_the_related_pairs_and_a_seed_fixes_the_draw(encoder):
    model, tok = encoder
    a = distances(model, tok, RECORDS, L2Config(word_pairs=3, seed=5, max_length=32))
    b = distances(model, tok, RECORDS, L2Config(word_pairs=3, seed=5, max_length=32))
    assert (a.kind == "related").sum() == 3
    pd.testing.assert_frame_equal(a, b)
