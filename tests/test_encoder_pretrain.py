"""Building an encoder is deterministic: the same corpus gives the same tokenizer and weights."""

from __future__ import annotations

import random

import torch
from safetensors.torch import load_file

from xlt.engine.recipes.mlm import SPECIALS, EncoderShape, MLMConfig, train_mlm, train_wordpiece

WORDS = ["lo", "ka", "mi", "ten", "sor", "bal", "ura", "quo", "nen", "pil", "lok", "kam", "mit", "tens"]


def _texts(n: int = 300) -> list[str]:
    rng = random.Random(0)
    return [" ".join(rng.choice(WORDS) + rng.choice(["", "a", "an", "o"]) for _ in range(rng.randint(3, 9))) for _ in range(n)]


def test_wordpiece_numbers_its_tokens_the_same_way_every_time(tmp_path):
    """The trainer's own ids follow a hash map's order, which changes from call to call."""
    texts = _texts()
    first = train_wordpiece(texts, 120, tmp_path / "a")
    second = train_wordpiece(texts, 120, tmp_path / "b")
    assert first.get_vocab() == second.get_vocab()
    assert (tmp_path / "a" / "tokenizer.json").read_bytes() == (tmp_path / "b" / "tokenizer.json").read_bytes()
    assert [first.convert_ids_to_tokens(i) for i in range(len(SPECIALS))] == SPECIALS


def test_mlm_pretraining_is_bit_identical_on_two_threads(tmp_path):
    torch.set_num_threads(2)
    texts = _texts()
    train_wordpiece(texts, 120, tmp_path / "tok")
    shape = EncoderShape(layers=1, hidden=32, heads=2, intermediate=64, max_positions=64)
    for name in ("a", "b"):
        train_mlm(texts, tmp_path / name, tmp_path / f"ckpt{name}", MLMConfig(steps=6, batch_size=16, checkpoint_every=4),
                  tokenizer_dir=tmp_path / "tok", shape=shape, progress=False)
    a, b = load_file(tmp_path / "a" / "model.safetensors"), load_file(tmp_path / "b" / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
