"""Paired streams, the frozen reference and the adjustment recipe built on them (Cao et al.
2020): pairs batched together with each side padded on its own, kill -9 resumption of both
sides, f₀ without gradient and outside the saved model, aligned words brought closer."""

import json
import random
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from tests.conftest import REPO, WORDS, _sentence
from xlt.engine.features import encode_aligned_pairs
from xlt.engine.model import load_encoder
from xlt.papers.adjust.recipe import AdjustConfig, adjust_encoder, read_aligned_pairs
from xlt.engine.reference import FrozenReference
from xlt.engine.streams import PairedStream
from xlt.errors import XltError

# a toy "translation": each word its own partner, the order reversed, every word linked
PARTNER = dict(zip(WORDS, WORDS[3:] + WORDS[:3]))


def _pairs(n: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        src = _sentence(rng)
        tgt = [PARTNER[w] for w in reversed(src)]
        out.append({"src": src, "tgt": tgt, "links": [[i, len(src) - 1 - i] for i in range(len(src))]})
    return out


@pytest.fixture(scope="module")
def pair_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("pairs") / "pairs.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in _pairs(48)))
    return path


def test_aligned_pairs_map_words_to_rows_per_mode(tiny_encoder):
    _, tok = load_encoder(str(tiny_encoder))
    pair = {"src": ["Anna", "Berlin"], "tgt": ["ka", "Berlin", "mi"], "links": [[0, 0], [1, 1]]}
    n_sub = len(tok("Berlin", add_special_tokens=False)["input_ids"])
    for mode in ("avg", "start", "end"):
        f = encode_aligned_pairs([pair], tok, 32, mode).features[0]
        rows = f["source"]["word_rows"]
        assert len(rows) == len(f["source"]["input_ids"])
        berlin = rows[-1 - n_sub:-1]  # Berlin's subwords, before [SEP]
        expected = {"avg": [2] * n_sub, "start": [2] + [-1] * (n_sub - 1), "end": [-1] * (n_sub - 1) + [2]}[mode]
        assert berlin == expected
        assert (rows[0], rows[-1]) == (0, 3)  # the specials' rows: anchored whatever is aligned
    # which tokens are aligned (Table 7): the links change, the rows do not
    links = {t: encode_aligned_pairs([pair], tok, 32, "avg", t).features[0]["links"]
             for t in ("all", "words", "cls", "cls_sep")}
    assert links == {"all": [[0, 0], [1, 1], [2, 2], [3, 4]], "words": [[1, 1], [2, 2]], "cls": [[0, 0]],
                     "cls_sep": [[0, 0], [3, 4]]}
    anna = len(tok("Anna", add_special_tokens=False)["input_ids"])
    short = encode_aligned_pairs([pair], tok, anna + 2, "avg", "words").features[0]  # [CLS] Anna [SEP]: Berlin cut
    assert short["links"] == [[1, 1]] and len(short["source"]["input_ids"]) == anna + 2
    with pytest.raises(XltError, match="allowed: start, end, avg"):
        encode_aligned_pairs([pair], tok, 32, "mean")
    with pytest.raises(XltError, match="aligned tokens='sep'; allowed: all, words, cls, cls_sep"):
        encode_aligned_pairs([pair], tok, 32, "avg", "sep")


def test_a_paired_stream_pads_each_side_on_its_own_and_keeps_one_cursor(tiny_encoder):
    _, tok = load_encoder(str(tiny_encoder))
    enc = encode_aligned_pairs(_pairs(10), tok, 32)
    stream = PairedStream("pairs", enc.features, 4, 1, tok.pad_token_id, {"input_ids": None, "word_rows": -1},
                          pair_pad_values={"links": -1})
    idx = stream.next_indices()
    batch = stream.collate(idx)
    for side in ("source", "target"):
        widths = [len(enc.features[i][side]["input_ids"]) for i in idx]
        assert batch[side]["input_ids"].shape == (len(idx), max(widths))
        assert batch[side]["attention_mask"].sum(1).tolist() == widths
    links = [enc.features[i]["links"] for i in idx]
    assert batch["links"].shape == (len(idx), max(map(len, links)), 2)
    assert (batch["links"][..., 0] >= 0).sum(1).tolist() == [len(x) for x in links]
    assert stream.cursor == [0, 1]


def test_the_frozen_reference_has_no_gradient_and_does_not_move(tiny_encoder):
    encoder, tok = load_encoder(str(tiny_encoder))
    ref = FrozenReference(encoder)
    assert all(p.requires_grad for p in encoder.parameters())  # the original stays trainable
    before = {k: v.clone() for k, v in ref.encoder.state_dict().items()}
    batch = tok(["Anna ka Berlin", "mi"], return_tensors="pt", padding=True)
    out = ref(dict(batch))
    assert not out.requires_grad and not ref.encoder.training
    assert not any(p.requires_grad for p in ref.encoder.parameters())
    assert all(torch.equal(v, before[k]) for k, v in ref.encoder.state_dict().items())


ADJUST = """
import json, sys
from xlt.papers.adjust.recipe import AdjustConfig, adjust_encoder
a = json.loads(sys.argv[1])
cfg = AdjustConfig.from_dict({"lr": 1e-3, "epochs": 2, "batch_size": 8, "checkpoint_every": 3, "progress": False,
                              "seed": 4, "max_length": 32})
adjust_encoder(cfg, a["encoder"], [a["pairs"]], a["out"], a["ckpt"], kill_after_steps=a.get("kill"))
"""


def _adjust(tiny_encoder, pair_file, out, ckpt, kill=None):
    arg = {"encoder": str(tiny_encoder), "pairs": str(pair_file), "out": str(out), "ckpt": str(ckpt), "kill": kill}
    return subprocess.run([sys.executable, "-c", ADJUST, json.dumps(arg)], capture_output=True, text=True,
                          timeout=300, cwd=REPO)


def _aligned_distance(encoder_dir, pairs) -> float:
    """Mean distance of the linked words' vectors (subword averages, last layer)."""
    from xlt.engine.objectives import word_vectors

    enc, tok = load_encoder(str(encoder_dir))
    enc.eval()
    feats = encode_aligned_pairs(pairs, tok, 32, "avg", "words").features
    stream = PairedStream("p", feats, len(feats), 0, tok.pad_token_id, {"input_ids": None, "word_rows": -1},
                          pair_pad_values={"links": -1})
    batch = stream.collate(list(range(len(feats))))
    with torch.no_grad():
        vs, _, ws = word_vectors(enc(**{k: batch["source"][k] for k in ("input_ids", "attention_mask")}).last_hidden_state,
                                 batch["source"]["word_rows"])
        vt, _, wt = word_vectors(enc(**{k: batch["target"][k] for k in ("input_ids", "attention_mask")}).last_hidden_state,
                                 batch["target"]["word_rows"])
    d = [(vs[b * ws + i] - vt[b * wt + j]).norm().item() for b, f in enumerate(feats) for i, j in f["links"]]
    return sum(d) / len(d)


def _encoder_keys(encoder_dir) -> set:
    return set(load_encoder(str(encoder_dir))[0].state_dict())


def test_adjustment_killed_with_sigkill_resumes_bit_identical_and_brings_aligned_words_closer(tiny_encoder, pair_file, tmp_path):
    clean = _adjust(tiny_encoder, pair_file, tmp_path / "clean", tmp_path / "c1")
    assert clean.returncode == 0, clean.stderr
    assert _adjust(tiny_encoder, pair_file, tmp_path / "resumed", tmp_path / "c2", kill=4).returncode == -9
    state = json.loads((tmp_path / "c2" / "last" / "state.json").read_text())
    assert state["cursors"] == {"pairs": [0, 3]}  # one cursor for both sides
    again = _adjust(tiny_encoder, pair_file, tmp_path / "resumed", tmp_path / "c2")
    assert again.returncode == 0, again.stderr
    assert "resuming from step 3" in again.stderr
    a, b = (load_file(tmp_path / n / "model.safetensors") for n in ("clean", "resumed"))
    assert a.keys() == _encoder_keys(tiny_encoder)  # the encoder alone: no f₀ in it
    assert all(torch.equal(a[k], b[k]) for k in a)
    held_out = _pairs(40, seed=9)
    assert _aligned_distance(tmp_path / "clean", held_out) < 0.8 * _aligned_distance(tiny_encoder, held_out)
    meta = json.loads((tmp_path / "resumed" / "xlt_encoder.json").read_text())
    assert meta["resumed_from"] == [3] and meta["pairs"] == 48
    assert meta["provenance"]["seed"] == 4


def test_the_checkpoint_holds_the_adjusted_encoder_only(tiny_encoder, pair_file, tmp_path):
    from xlt.engine.runtime import Preempted

    cfg = AdjustConfig.from_dict({"epochs": 1, "batch_size": 8, "progress": False, "max_length": 32})
    with pytest.raises(Preempted):
        adjust_encoder(cfg, str(tiny_encoder), [pair_file], tmp_path / "out", tmp_path / "ck", stop_after_steps=2)
    saved = load_file(tmp_path / "ck" / "last" / "model.safetensors")
    assert {k.removeprefix("encoder.") for k in saved} == _encoder_keys(tiny_encoder)
    assert not (tmp_path / "out").exists()


def test_bad_aligned_pairs_and_options_are_named(tmp_path):
    bad = tmp_path / "pairs.jsonl"
    bad.write_text(json.dumps({"src": ["a"], "tgt": ["b"], "links": [[0, 0]]}) + "\n" + '{"src": "a b"}\n')
    with pytest.raises(XltError, match=rf"{bad}:2: not an aligned pair"):
        read_aligned_pairs([bad])
    with pytest.raises(XltError, match="word_vectors='first'; allowed: start, end, avg"):
        AdjustConfig.from_dict({"word_vectors": "first"})
    with pytest.raises(XltError, match=r"unknown adjustment option\(s\) \['lr_peak'\]"):
        AdjustConfig.from_dict({"lr_peak": 1.0})


def _hand_batch():
    # one pair; source (English) subwords [CLS] a1 a2 [SEP] -> rows 0, 1, 1, 2; target [CLS] b [SEP] -> 0, 1, 2
    src_h = torch.tensor([[[1.0, 0.0], [2.0, 2.0], [4.0, 0.0], [0.0, 1.0]]])
    tgt_h = torch.tensor([[[1.0, 1.0], [3.0, 3.0], [0.0, 0.0]]])
    batch = {"source": {"word_rows": torch.tensor([[0, 1, 1, 2]])}, "target": {"word_rows": torch.tensor([[0, 1, 2]])},
             "links": torch.tensor([[[0, 0], [1, 1], [-1, -1]]])}  # [CLS]-[CLS], word-word, one padded link
    return src_h, tgt_h, batch


def test_eq1_terms_are_the_authors_mean_squared_errors():
    """Eq. 1 by hand: the align term is the mean squared difference of the linked word vectors
    (subwords averaged), the anchor term that of the English word vectors against f₀."""
    from xlt.engine.objectives import REPRESENTATIONS
    from xlt.papers.adjust.recipe import alignment_terms

    src_h, tgt_h, batch = _hand_batch()
    batch[REPRESENTATIONS] = (src_h, tgt_h)
    f0 = torch.tensor([[[1.0, 0.0], [3.0, 1.0], [4.0, 0.0], [0.0, 0.0]]])  # f₀'s English states

    class Reference:
        def __call__(self, side):
            return f0

    align, anchor = alignment_terms(Reference(), "pairs", 1.0, 1.0)
    # word 1 of the source is the average of its two subwords: (3, 1); linked to (3, 3)
    # [CLS]: (1, 0) vs (1, 1). Squared differences: (0 + 1) and (0 + 4), over 2 pairs x 2 dims
    assert align.fn(None, batch, 0).item() == pytest.approx((1 + 4) / 4)
    # English rows: [CLS] (1,0) vs (1,0); word (3,1) vs (3.5,0.5); [SEP] (0,1) vs (0,0): 0 + 0.5 + 1 over 3 x 2
    assert anchor.fn(None, batch, 0).item() == pytest.approx((0.25 + 0.25 + 1) / 6)


def test_subword_mode_moves_exactly_the_linked_subword_vectors(tiny_encoder):
    """Subword alignment (adjust Table 6): the pair's tokens are the encoder's subwords, each its
    own vector; a step's align term reads the linked subwords' states and no other."""
    from xlt.engine.model import load_tokenizer
    from xlt.engine.objectives import REPRESENTATIONS
    from xlt.papers.adjust.recipe import alignment_terms

    tok = load_tokenizer(str(tiny_encoder))

    def pieces(*words):
        return [p for w in words for p in tok.convert_ids_to_tokens(tok(w, add_special_tokens=False)["input_ids"])]

    src, tgt = pieces("lolo", "ka"), pieces("Berlin", "mi")
    assert len(src) >= 3  # lolo splits: its second subword gets a link of its own
    links = [[1, 0], [len(src) - 1, len(tgt) - 1]]
    pair = {"src": src, "tgt": tgt, "links": links, "unit": "subword"}
    f = encode_aligned_pairs([pair], tok, 32, "subword", "words").features[0]
    assert f["source"]["input_ids"][1:-1] == tok.convert_tokens_to_ids(src)  # the tokens' own ids, not re-split
    assert f["source"]["word_rows"] == list(range(len(src) + 2))  # each subword its own row
    assert f["links"] == [[i + 1, j + 1] for i, j in links]
    stream = PairedStream("pairs", [f], 1, 1, tok.pad_token_id, {"input_ids": None, "word_rows": -1},
                          pair_pad_values={"links": -1})
    batch = stream.collate([0])
    torch.manual_seed(0)
    hs = torch.randn(1, len(src) + 2, 4, requires_grad=True)
    ht = torch.randn(1, len(tgt) + 2, 4, requires_grad=True)
    batch[REPRESENTATIONS] = (hs, ht)
    align, _ = alignment_terms(None, "pairs", 1.0, 1.0)
    loss = align.fn(None, batch, 0)
    by_hand = torch.stack([hs[0, i + 1] - ht[0, j + 1] for i, j in links]).pow(2).mean()
    assert loss.item() == pytest.approx(by_hand.item())
    loss.backward()
    moved_s = [k for k in range(hs.shape[1]) if hs.grad[0, k].abs().sum() > 0]
    moved_t = [k for k in range(ht.shape[1]) if ht.grad[0, k].abs().sum() > 0]
    assert (moved_s, moved_t) == ([2, len(src)], [1, len(tgt)])  # the linked subwords' positions, nothing else
    # word pairs in subword mode, subword pairs in a word mode, a token of another vocabulary: named
    with pytest.raises(XltError, match="its tokens are words, but word vectors mode 'subword' reads subwords"):
        encode_aligned_pairs([{**pair, "unit": "word"}], tok, 32, "subword")
    with pytest.raises(XltError, match="its tokens are subwords, but word vectors mode 'avg' reads words"):
        encode_aligned_pairs([pair], tok, 32, "avg")
    with pytest.raises(XltError, match="subword 'zzzqqq' is not in the vocabulary"):
        encode_aligned_pairs([{**pair, "src": ["zzzqqq"], "links": []}], tok, 32, "subword")


def test_adjustment_without_the_alignment_term_leaves_the_encoder_unchanged(tiny_encoder, pair_file, tmp_path):
    """Align weight 0, dropout off: the anchor's gradient at f = f₀ is zero, so is every update.
    Both run the Hugging Face forward (fast_path off): the lean one agrees with it to rounding
    only, and Adam turns a rounding-sized gradient into a full step."""
    cfg = AdjustConfig.from_dict({"align_weight": 0.0, "dropout": 0.0, "lr": 1e-2, "batch_size": 8, "progress": False,
                                  "max_length": 32, "fast_path": "off"})
    adjust_encoder(cfg, str(tiny_encoder), [pair_file], tmp_path / "out", tmp_path / "ck")
    before, after = (load_encoder(str(d))[0].state_dict() for d in (tiny_encoder, tmp_path / "out"))
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    # the same run with the alignment term moves it
    adjust_encoder(AdjustConfig.from_dict({**cfg.to_dict(), "align_weight": 1.0}), str(tiny_encoder), [pair_file],
                   tmp_path / "aligned", tmp_path / "ck2")
    moved = load_encoder(str(tmp_path / "aligned"))[0].state_dict()
    assert not all(torch.equal(before[k], moved[k]) for k in before)


CONTINUAL = """
import json, sys
from xlt.engine.train_config import TrainConfig
from xlt.engine.recipes.finetune import train
import xlt.papers.adjust.recipe  # registers continual learning's fine-tune extension (aligned_pairs)
a = json.loads(sys.argv[1])
cfg = TrainConfig.from_dict({"lr": 1e-3, "epochs": 2, "batch_size": 8, "max_length": 32, "stride": 8, "checkpoint_every": 3,
                             "progress": False, "task": "pos", "encoder": a["encoder"], "seed": 3, "select": "last"})
train(cfg, [a["data"] + "/pos/en/train.jsonl"], [a["data"] + "/pos/en/dev.jsonl"], a["out"], a["ckpt"],
      aux=[{"kind": "aligned_pairs", "files": [a["pairs"]], "weight": a.get("weight", 0.01), "anchor_weight": 1.0,
            "reference": a["encoder"], "batch_size": 4, "max_length": 32}], kill_after_steps=a.get("kill"))
"""


def _continual(tiny_encoder, toy_data, pair_file, out, ckpt, **kw):
    arg = {"encoder": str(tiny_encoder), "data": str(toy_data), "pairs": str(pair_file), "out": str(out),
           "ckpt": str(ckpt), **kw}
    return subprocess.run([sys.executable, "-c", CONTINUAL, json.dumps(arg)], capture_output=True, text=True,
                          timeout=300, cwd=REPO)


def _model_weights(model_dir):
    return {**load_file(model_dir / "encoder" / "model.safetensors"), **load_file(model_dir / "modules.safetensors")}


def test_continual_learning_killed_with_sigkill_resumes_bit_identical(tiny_encoder, toy_data, pair_file, tmp_path):
    clean = _continual(tiny_encoder, toy_data, pair_file, tmp_path / "clean", tmp_path / "c1")
    assert clean.returncode == 0, clean.stderr
    killed = _continual(tiny_encoder, toy_data, pair_file, tmp_path / "resumed", tmp_path / "c2", kill=5)
    assert killed.returncode == -9
    state = json.loads((tmp_path / "c2" / "last" / "state.json").read_text())
    assert set(state["cursors"]) == {"pos", "aligned_pairs"}  # the paired stream's cursor is saved too
    again = _continual(tiny_encoder, toy_data, pair_file, tmp_path / "resumed", tmp_path / "c2")
    assert again.returncode == 0, again.stderr
    assert "resuming from step 3" in again.stderr
    wc, wr = _model_weights(tmp_path / "clean"), _model_weights(tmp_path / "resumed")
    assert wc.keys() == wr.keys() and all(torch.equal(wc[k], wr[k]) for k in wc)
    meta = json.loads((tmp_path / "clean" / "xlt_model.json").read_text())
    assert meta["train"]["streams"]["aligned_pairs"] == {"features": 48, "batch_size": 4}
    assert str(pair_file) in meta["provenance"]["data_sha256"]
    # the alignment terms act: the same job without them ends elsewhere
    plain = _continual(tiny_encoder, toy_data, pair_file, tmp_path / "zero", tmp_path / "c3", weight=1.0)
    assert plain.returncode == 0, plain.stderr
    wp = _model_weights(tmp_path / "zero")
    assert not all(torch.equal(wc[k], wp[k]) for k in wc)
