"""The stage's subword branch (adjust Table 6's subword alignment): the pool in the encoder's
subwords, links between subwords, samples on the word sample's pairs."""

from __future__ import annotations

import json

import pytest

from tests.conftest import WORDS
from xlt.align.pool import iter_pool
from xlt.align.sample import write_sample
from xlt.align.stage import align_pool
from xlt.align.subword import build_subword_pool, subword_pieces, write_subword_sample
from xlt.engine.model import load_tokenizer
from xlt.errors import XltError
from xlt.formats.tsv import read_pharaoh, write_pharaoh
from xlt.io import write_json

# a toy translation (each word its own partner, order reversed), long words that split
PARTNER = dict(zip(WORDS, WORDS[3:] + WORDS[:3]))
LONG = ["lolo", "kaka", "mimi", "tenten"]


@pytest.fixture(scope="module")
def tokenizer(tiny_encoder):
    return load_tokenizer(str(tiny_encoder))


def _word_pool(path, n: int = 60) -> list[tuple[list[str], list[str]]]:
    import random

    rng = random.Random(3)
    pairs = []
    for _ in range(n):
        src = [rng.choice(WORDS + LONG) for _ in range(rng.randint(3, 7))]
        tgt = [PARTNER.get(w, w[::-1]) for w in reversed(src)]
        pairs.append((src, tgt))
    path.write_text("".join(f"en-xx-{k + 1}\t{' '.join(s)}\t{' '.join(t)}\n" for k, (s, t) in enumerate(pairs)))
    return pairs


def test_subword_pool_tokens_are_the_tokenizers(tokenizer, tmp_path):
    pairs = _word_pool(tmp_path / "pool.tsv", 20)
    meta = build_subword_pool(tmp_path / "pool.tsv", tokenizer, tmp_path / "sub.tsv")
    rows = list(iter_pool(tmp_path / "sub.tsv"))
    assert [r[1] for r in rows] == [f"en-xx-{k + 1}" for k in range(20)]  # same pairs, same order
    for (_, _, s, t), (src, tgt) in zip(rows, pairs, strict=True):
        for words, tokens in ((src, s), (tgt, t)):
            # each word alone through the tokenizer, as the word-level adjustment tokenises it
            ids = [i for w in words for i in tokenizer(w, add_special_tokens=False)["input_ids"]]
            assert tokens == tokenizer.convert_ids_to_tokens(ids)
            assert tokenizer.convert_tokens_to_ids(tokens) == ids  # the adjustment reads back the same ids
    assert any(len(s) > len(src) for (_, _, s, _), (src, _) in zip(rows, pairs))  # some words split
    c = meta["counts"]
    assert c["pairs"] == 20 and c["en_subwords"] > c["en_words"]
    assert meta["subwords_per_word"]["en"] == pytest.approx(c["en_subwords"] / c["en_words"], abs=1e-3)


def test_a_token_with_whitespace_cannot_enter_the_pool(tokenizer):
    class Spacey:
        name_or_path = "spacey"
        unk_token = "[UNK]"

        def __call__(self, words, add_special_tokens):
            return {"input_ids": [[1] for _ in words]}

        def convert_ids_to_tokens(self, ids):
            return ["a b"]

    with pytest.raises(XltError, match="tokenizer 'spacey' makes the token 'a b'"):
        subword_pieces(Spacey(), ["ab"])
    assert subword_pieces(tokenizer, [""]) == {"": [tokenizer.unk_token]}  # nothing: the unknown token


def test_links_index_subwords_and_a_sample_takes_the_word_samples_pairs(tokenizer, tmp_path):
    pairs = _word_pool(tmp_path / "pool.tsv")
    # the word level: hand-made links (the toy translation's), a sample of 10 pairs
    write_pharaoh(tmp_path / "words.pharaoh", [[(i, len(s) - 1 - i) for i in range(len(s))] for s, _ in pairs])
    write_json(tmp_path / "words.json", {"backend": {"name": "hand"}})
    write_sample(tmp_path / "pool.tsv", tmp_path / "words.pharaoh", tmp_path / "words.json", 10, 1,
                 tmp_path / "w.jsonl", tmp_path / "w.json")
    # the subword level: the same pool in subwords, aligned by a backend
    build_subword_pool(tmp_path / "pool.tsv", tokenizer, tmp_path / "sub.tsv")
    align_pool(tmp_path / "sub.tsv", "systran_align", tmp_path / "raw", tmp_path / "sub.pharaoh", tmp_path / "sub.json")
    sub_rows = list(iter_pool(tmp_path / "sub.tsv"))
    links = read_pharaoh(tmp_path / "sub.pharaoh")
    for (_, _, s, t), (src, _), row in zip(sub_rows, pairs, links, strict=True):
        assert all(i < len(s) and j < len(t) for i, j in row)
    # links name subword positions: some past the sentence's last word
    assert any(i >= len(src) for (_, _, s, _), (src, _), row in zip(sub_rows, pairs, links) for i, _ in row)

    meta = write_subword_sample(tmp_path / "sub.tsv", tmp_path / "sub.pharaoh", tmp_path / "sub.json",
                                tmp_path / "w.jsonl", 10, 1, tmp_path / "s.jsonl", tmp_path / "s.json")
    words = [json.loads(x) for x in (tmp_path / "w.jsonl").read_text().splitlines()]
    subs = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert [r["id"] for r in subs] == [r["id"] for r in words]  # the same sentence pairs
    by_id = {r[1]: (r[2], r[3], row) for r, row in zip(sub_rows, links)}
    for r in subs:
        assert r["unit"] == "subword" and (r["src"], r["tgt"]) == by_id[r["id"]][:2]
        assert [tuple(x) for x in r["links"]] == by_id[r["id"]][2]
    assert (meta["size"], meta["seed"], meta["unit"], meta["backend"]["name"]) == (10, 1, "subword", "systran_align")


def test_a_word_sample_from_another_pool_fails_naming_it(tokenizer, tmp_path):
    _word_pool(tmp_path / "pool.tsv", 5)
    build_subword_pool(tmp_path / "pool.tsv", tokenizer, tmp_path / "sub.tsv")
    write_pharaoh(tmp_path / "sub.pharaoh", [[(0, 0)]] * 5)
    write_json(tmp_path / "sub.json", {"backend": {"name": "hand"}})
    (tmp_path / "w.jsonl").write_text('{"id": "en-xx-1"}\n{"id": "en-xx-99"}\n')
    with pytest.raises(XltError, match=r"1 of its pairs are not in the subword pool .* \(e\.g\. en-xx-99\)"):
        write_subword_sample(tmp_path / "sub.tsv", tmp_path / "sub.pharaoh", tmp_path / "sub.json",
                             tmp_path / "w.jsonl", 2, 1, tmp_path / "s.jsonl", tmp_path / "s.json")
    assert not (tmp_path / "s.jsonl").exists() and not (tmp_path / "s.json").exists()  # no half-written sample
    with pytest.raises(XltError, match="2 pairs, but a sample of 3 is asked"):
        write_subword_sample(tmp_path / "sub.tsv", tmp_path / "sub.pharaoh", tmp_path / "sub.json",
                             tmp_path / "w.jsonl", 3, 1, tmp_path / "s.jsonl", tmp_path / "s.json")
