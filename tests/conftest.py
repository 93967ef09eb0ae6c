"""Shared fixtures: a tiny encoder built once per session, small normalised datasets."""

from __future__ import annotations

import random
import socket
from pathlib import Path

import pytest

from xlt.cli import quiet_libraries
from xlt.io import write_jsonl

REPO = Path(__file__).resolve().parent.parent
WORDS = ["lo", "ka", "mi", "ten", "sor", "bal", "ura", "quo", "nen", "pil", "Anna", "Berlin", "42", "."]


def _sentence(rng: random.Random) -> list[str]:
    return [rng.choice(WORDS) for _ in range(rng.randint(3, 9))]


def _upos(w: str) -> str:
    return "PROPN" if w[0].isupper() else "NUM" if w.isdigit() else "PUNCT" if w == "." else "NOUN"


TOY_RELS = {"PROPN": "nmod", "NUM": "nummod", "PUNCT": "punct", "NOUN": "dep"}


def _tree(words: list[str]) -> dict:
    """A toy dependency tree: a chain (each word heads the next), the first word the root."""
    upos = [_upos(w) for w in words]
    return {"tokens": words, "upos": upos, "head": list(range(len(words))),
            "deprel": ["root"] + [TOY_RELS[u] for u in upos[1:]]}


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory) -> Path:
    """A 2-layer BERT with a WordPiece vocabulary, MLM-trained for a few steps (seconds)."""
    import torch

    from xlt.engine.recipes.mlm import EncoderShape, MLMConfig, train_mlm, train_wordpiece

    quiet_libraries()
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("encoder")
    rng = random.Random(0)
    texts = [" ".join(_sentence(rng)) for _ in range(400)]
    train_wordpiece(texts, 200, root / "tok")
    shape = EncoderShape(layers=2, hidden=32, heads=2, intermediate=64, max_positions=64)
    train_mlm(texts, root / "enc", root / "ckpt", MLMConfig(steps=10, batch_size=32), tokenizer_dir=root / "tok",
              shape=shape, progress=False)
    return root / "enc"


@pytest.fixture(scope="session")
def toy_data(tmp_path_factory) -> Path:
    """Normalised pos / parsing / marc / qa data for two languages in the layout of results/data/<task>/."""
    root = tmp_path_factory.mktemp("data")
    rng = random.Random(1)
    for lang in ("en", "de"):
        for split, n in (("train", 96), ("dev", 32), ("test", 32)):
            sents = [_sentence(rng) for _ in range(n)]
            write_jsonl(root / "pos" / lang / f"{split}.jsonl",
                        [{"id": f"{lang}{i}", "tokens": s, "upos": [_upos(w) for w in s]} for i, s in enumerate(sents)])
            write_jsonl(root / "parsing" / lang / f"{split}.jsonl",
                        [{"id": f"{lang}{i}", **_tree(s)} for i, s in enumerate(sents)])
            write_jsonl(root / "marc" / lang / f"{split}.jsonl",
                        [{"id": f"{lang}{i}", "text": " ".join(s), "label": "5" if "ka" in s else "1"} for i, s in enumerate(sents)])
            qa = []
            for i, s in enumerate(sents):
                ctx = " ".join(s) + " Anna ten Berlin ."
                qa.append({"id": f"{lang}{i}", "context": ctx, "question": "ten ?",
                           "answers": {"text": ["Berlin"], "answer_start": [ctx.index("Berlin")]}})
            write_jsonl(root / "qa" / lang / f"{split}.jsonl", qa)
    return root


@pytest.fixture(scope="session")
def tiny_world(tmp_path_factory):
    """The default world (9 languages, all tasks, 600/150/150), written once per session."""
    from xlt.world import World
    from xlt.world.config import default_config

    world = World(default_config(seed=13))
    raw = tmp_path_factory.mktemp("raw")
    manifest = world.write(raw)
    return world, raw, manifest


@pytest.fixture
def dead_url():
    """A URL on 127.0.0.1 where nothing listens (connection refused at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def encode_with(task, records, tokenizer, max_length: int, stride: int, train: bool, parse_max_words: int = 128,
                max_positions: int | None = None):
    """Features of `records` through the task's kind, with just the settings encoding reads."""
    from types import SimpleNamespace

    from xlt.engine.kinds import kind_of

    cfg = SimpleNamespace(max_length=max_length, stride=stride, parse_max_words=parse_max_words)
    return kind_of(task).encode(task, records, tokenizer, cfg, train, max_positions)
