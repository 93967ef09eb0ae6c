"""world.noise.unknown_chars: a share of the test splits' sentences gets one word with a letter no
world language writes; the tiny tokenizer reads that word as [UNK] and PPPL scores it; every other
file of the world stays byte-identical."""

import json
import math
import unicodedata

import pytest

from xlt.errors import XltError
from xlt.stages.prepare import prepare_split
from xlt.registry import get_task
from xlt.world import World, pretraining_text
from xlt.world.schema import SCRIPTS, default_config, resolve
from xlt.world.datasets import UNKNOWN_LETTERS

SIZES = {"train": 4, "dev": 4, "test": 16, "bitext": {"train": 4}, "qa": {"train": 4}}
TEXT = ("tokens", "text", "text_pair", "context", "question")  # record fields a misspelling may touch


def _configs(share: float, **kw) -> tuple[dict, dict]:
    off = default_config(seed=5, sizes=SIZES, **kw)
    return off, dict(off, noise={"unknown_chars": share})


def _test_keys(world: World) -> list[tuple]:
    """The tasks' own test splits (not the translations, MLQA or TyDiQA read through overrides)."""
    return [k for k in world.keys() if len(k) == 3 and k[2] == "test"]


def _labels(record: dict) -> dict:
    """What a misspelling must leave: every field but the text (of QA's answers, the starts)."""
    out = {k: v for k, v in record.items() if k not in TEXT}
    if "answers" in out:
        out["answers"] = out["answers"]["answer_start"]
    return out


def _letters(x) -> int:
    return sum(c in UNKNOWN_LETTERS for c in json.dumps(x, ensure_ascii=False))


def test_only_the_test_splits_change_and_only_in_their_chosen_sentences(tmp_path):
    off, on = map(World, _configs(0.3))
    a, manifest = off.write(tmp_path / "off")["files"], on.write(tmp_path / "on")
    b = manifest["files"]
    test_files = {u.path for u in on.units() if set(u.records) & set(_test_keys(on))}
    changed = {p for p in a if a[p]["sha256"] != b[p]["sha256"]}
    assert a.keys() == b.keys() and changed <= test_files  # train, dev, bitext, translations: same bytes
    assert {k[0] for u in on.units() if u.path in changed for k in u.records} == {k[0] for k in _test_keys(on)}
    ud = [0, 0]
    for key in _test_keys(on):
        assert prepare_split(*key, tmp_path / "on", manifest["source_cfg"]) == on.records(*key)
        for r0, r1 in zip(off.records(*key), on.records(*key), strict=True):
            assert _labels(r0) == _labels(r1)
            x, y = (json.dumps(r, ensure_ascii=False) for r in (r0, r1))
            assert len(x) == len(y) and {c for c, d in zip(y, x) if c != d} <= set(UNKNOWN_LETTERS)  # letters replaced
            if key[0] == "pos":  # a sentence: one word respelt, or none
                assert sum(s != t for s, t in zip(r0["tokens"], r1["tokens"])) == _letters(r1) <= 1
                ud = [ud[0] + _letters(r1), ud[1] + 1]
    assert 0.2 < ud[0] / ud[1] < 0.4  # the share asked for (0.3)


def test_the_tiny_tokenizer_reads_them_as_unk_and_pppl_scores_them(tmp_path):
    import numpy as np
    import torch
    from transformers import BertConfig, BertForMaskedLM

    from xlt.engine.recipes.mlm import MLMModel, task_texts, train_wordpiece
    from xlt.papers.crossmulti.pppl import pseudo_log_likelihoods, tokenize_texts

    tasks = ["pos", "ner", "pawsx", "marc"]  # crossmulti's, whose test text PPPL reads
    langs = {c: p for c, p in default_config()["languages"].items() if c in ("en", "de")}
    cfg_off, cfg_on = _configs(0.3, languages=langs, tasks=tasks, ud={})
    text = pretraining_text(cfg_off, 300)
    assert text == pretraining_text(cfg_on, 300)
    tok = train_wordpiece([s for lang in sorted(text) for s in text[lang]], 1000, tmp_path / "tok")
    off, on = World(cfg_off), World(cfg_on)
    clean = [t for k in _test_keys(off) for t in task_texts(get_task(k[0]), off.records(*k))]
    noisy = [t for k in _test_keys(on) for t in task_texts(get_task(k[0]), on.records(*k))]
    ids_off, _ = tokenize_texts(tok, clean, 64)
    ids, added = tokenize_texts(tok, noisy, 64)
    unk = tok.unk_token_id
    assert not any(unk in s for s in ids_off)  # the vocabulary holds every character of the world's text
    assert [s.count(unk) for s in ids] == [_letters(t) for t in noisy]  # a respelt word is one [UNK]
    assert sum(_letters(t) > 0 for t in noisy) > 10
    torch.manual_seed(0)
    hf = BertForMaskedLM(BertConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                    intermediate_size=32, max_position_embeddings=64))
    pick = [i for i, s in enumerate(ids) if unk in s]
    pll, counts = pseudo_log_likelihoods(MLMModel(hf), [ids[i] for i in pick], [added[i] for i in pick],
                                         tok.mask_token_id, tok.pad_token_id)
    assert counts.tolist() == [len(ids[i]) - 2 for i in pick]  # every token but [CLS] and [SEP]: [UNK] too
    assert np.isfinite(pll).all()


def test_config_default_and_bad_values():
    assert resolve(default_config())["noise"]["unknown_chars"] == 0.0  # off unless asked
    for bad in (1.5, -0.1, math.nan, "2%", True):
        with pytest.raises(XltError, match=r"world\.noise\.unknown_chars: expected a number in \[0, 1\]"):
            resolve(default_config(noise={"unknown_chars": bad}))
    # a script of its own: no world language can write these letters
    assert "georgian" not in SCRIPTS and all(unicodedata.name(c).startswith("GEORGIAN LETTER") for c in UNKNOWN_LETTERS)
