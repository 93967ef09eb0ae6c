"""Shared fixtures: a tiny encoder built once per session, small normalised datasets."""

from __future__ import annotations

import getpass
import os
import random
import socket
import tempfile
from pathlib import Path

import pytest

from xlt.process.network import OFFLINE_VARIABLES

# The suite sees the offline variables `make test` sets (the Makefile: HF_HUB_OFFLINE=1,
# HF_DATASETS_OFFLINE=1), whatever the user's shell says: TRANSFORMERS_OFFLINE=1, common on
# clusters, would switch huggingface_hub off too (it reads it as HF_HUB_OFFLINE), and a test
# that needs the (emulated) Hub drops every one of OFFLINE_VARIABLES. Set before
# huggingface_hub is imported: it reads them once.
os.environ.pop("TRANSFORMERS_OFFLINE", None)
os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")

from xlt.process.cli import quiet_libraries  # noqa: E402
from xlt.io import write_jsonl  # noqa: E402
from xlt.process.zygote import start_server  # noqa: E402

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


# --- running in parallel (pytest-xdist; `make test`: cores + 1 workers, --dist loadgroup) ---------
# A module-scoped fixture (a whole workflow run, say) is built by the worker that runs its tests;
# so that it is built once, every test of a module that uses one goes to the same worker. The
# test SLURM is one per worker (its own name, ports and state dir): each SLURM test module goes to
# one worker. The long units start first (the SLURM modules, then the workflow runs marked
# `slow`), so that none of them is the tail.


def _shares_a_costly_fixture(item: pytest.Item) -> str | None:
    if "slurm_cluster" in item.fixturenames:  # a worker's cluster serves the modules it is given
        return f"slurm:{item.module.__name__.rsplit('.', 1)[-1]}"
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    if any(d.scope == "module" for fixturedefs in defs.values() for d in fixturedefs):
        return item.module.__name__
    return None


def _start_order(item: pytest.Item) -> int:
    return 0 if "slurm_cluster" in item.fixturenames else 1 if item.get_closest_marker("slow") else 2


def pytest_configure(config):
    # torch sets TORCHINDUCTOR_CACHE_DIR in os.environ the first time some code asks for its cache
    # (its default, /tmp/torchinductor_<user>): mid-session, so processes started before and after
    # would differ in it, and a fork server refuses jobs whose import-time environment differs.
    # Set to the same default from the start, it never changes.
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(tempfile.gettempdir(), f"torchinductor_{getpass.getuser()}"))
    # The parallel workers start more threads than there are cores: an OpenMP thread that waits
    # sleeps rather than spins (a job with two threads was several times slower on a busy core).
    # Where threads wait, not what they compute: results are unchanged.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def pytest_itemcollected(item):
    # here, not in pytest_collection_modifyitems: xdist tags grouped tests in that hook, and marks
    # added during collection are there whichever hook runs first (`_fixtureinfo`: pytest's own)
    if group := _shares_a_costly_fixture(item):
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(autouse=True)
def _figures_checked(monkeypatch):
    """Every figure a test draws in this process is checked: text inside the canvas, panel
    letters used once (xlt.figures.layout_problems); a problem fails the drawing."""
    monkeypatch.setattr("xlt.figures.STRICT", True)


def pytest_collection_modifyitems(config, items):
    items.sort(key=_start_order)  # stable: collection order within each class


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
    from xlt.world.schema import default_config

    world = World(default_config(seed=13))
    raw = tmp_path_factory.mktemp("raw")
    manifest = world.write(raw)
    return world, raw, manifest


@pytest.fixture(scope="session")
def zygote(tmp_path_factory) -> dict:
    """A fork server (xlt/process/zygote.py) for this test process's workflow runs: their jobs run as
    under `make tables`, forked with torch and transformers already imported, instead of paying
    ~4 s of imports each (~4x less time on a shrunk DAG; outputs identical, tests/test_zygote.py).
    The value is the environment to run Snakemake with: the server's own (a job whose import-time
    environment differs from it runs in its own process) and XLT_ZYGOTE, its socket."""
    path = str(tmp_path_factory.mktemp("zygote") / "socket")
    # PYTHONPATH: scripts run from a temporary folder import this checkout's xlt
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}, "PYTHONPATH": str(REPO), "XLT_ZYGOTE": path}
    server, ready = start_server(path, env=env, cwd=str(REPO))
    assert ready, "the test session's fork server did not start"
    yield env
    server.terminate()
    server.wait(timeout=60)


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
