"""The tiny encoder's WordPiece vocabulary is a pure function of its corpus, in any process."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections import Counter

import pytest

from tests.conftest import REPO
from xlt.engine.recipes.mlm import SPECIALS, train_wordpiece
from xlt.engine.vocab import CONTINUATION, alphabet, wordpiece_vocab
from xlt.errors import XltError


def tie_rich_texts() -> list[str]:
    """400 random words over 20 letters: many pairs of letters are exactly as frequent as
    others, the case where `tokenizers`' WordPieceTrainer learnt another vocabulary in each
    process (6 of 6 processes differed at vocab sizes 200 and 400)."""
    rng = random.Random(0)
    letters = "abcdefghijklmnopqrst"
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(3, 7))) for _ in range(400)]
    return [" ".join(rng.choice(words) for _ in range(8)) for _ in range(300)]


TRAIN_IN_A_FRESH_PROCESS = """
import sys
from tests.test_vocab import tie_rich_texts
from xlt.engine.recipes.mlm import train_wordpiece
train_wordpiece(tie_rich_texts(), 300, sys.argv[1])
"""


def test_two_processes_learn_the_same_tokenizer_byte_for_byte(tmp_path):
    for name, hash_seed in (("a", "1"), ("b", "2")):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(REPO)}
        subprocess.run([sys.executable, "-c", TRAIN_IN_A_FRESH_PROCESS, str(tmp_path / name)],
                       check=True, env=env, cwd=REPO, timeout=300)
    first, second = ((tmp_path / n / "tokenizer.json").read_bytes() for n in ("a", "b"))
    assert first == second


def test_the_vocabulary_is_bert_like_and_covers_the_corpus(tmp_path):
    texts = tie_rich_texts()
    tok = train_wordpiece(texts, 300, tmp_path / "tok")
    vocab = tok.get_vocab()
    assert len(vocab) == 300
    assert [tok.convert_ids_to_tokens(i) for i in range(len(SPECIALS))] == SPECIALS
    merged = [t for t in vocab if len(t.removeprefix(CONTINUATION)) >= 2]
    assert any(t.startswith(CONTINUATION) for t in merged) and any(not t.startswith(CONTINUATION) for t in merged)
    ids = tok(texts, add_special_tokens=False)["input_ids"]
    assert all(tok.unk_token_id not in sentence for sentence in ids)
    # Greedy longest-match with the learnt pieces: a frequent word is fewer pieces than letters.
    word, _ = Counter(w for t in texts for w in t.split()).most_common(1)[0]
    pieces = tok.tokenize(word)
    assert 1 <= len(pieces) < len(word) and tok.convert_tokens_to_string(pieces) == word


def test_the_alphabet_has_each_character_where_words_use_it():
    assert alphabet(Counter({"ab": 3, "ba": 1, "c": 2})) == ["a", "b", "c", "##a", "##b"]


def test_the_most_frequent_merges_come_first():
    counts = Counter({"low": 10, "lower": 5, "newest": 6, "widest": 3})
    vocab = wordpiece_vocab(counts, 30, SPECIALS)
    assert len(vocab) == 30 and vocab[:len(SPECIALS)] == SPECIALS
    learnt = vocab[len(SPECIALS) + len(alphabet(counts)):]
    # "low" is in 15 words: its pieces come first; at equal counts the shorter piece, then the
    # smaller string ("lo" before "ow" and "\u2581l"); "es" (9) before "est" and the rarer rest.
    assert learnt[:5] == ["##lo", "##low", "low", "##es", "##est"]
    assert learnt.index("lower") < learnt.index("widest")  # 5 before 3

def test_a_vocabulary_smaller_than_the_alphabet_is_refused():
    with pytest.raises(XltError, match=r"vocab_size 8 is smaller than .*encoders\.\*\.build\.vocab_size"):
        wordpiece_vocab(Counter({"abcdef": 1}), 8, SPECIALS)
