"""X-Mixup (xlt.papers.xmixup.extra.XMixup, xlt.papers.xmixup.recipe): Eq. 2-4 computed by hand
inside the first layer match the engine's; λ = 0 leaves the target as it was (at identity
LayerNorms) and the source without effect; the attention entropy ignores padding; scheduled sampling follows its formula and is
seeded by the step; both forwards give one loss and gradient; a trained model reloads and
predicts identically, from both sides where a record has its source and from its own side
where not; kill -9 resumes bit-identical; bad data and kinds not built fail with one message."""

import json
import math
import random
import subprocess
import sys

import pytest
import torch
from transformers import BertConfig, BertModel

from tests.conftest import REPO, WORDS, _sentence
from xlt.engine.train_config import TrainConfig
from xlt.engine.evalset import EvalSet, load_records, max_positions
from xlt.engine.extras import build_extra
from xlt.engine.hooks import LayerView
from xlt.engine.model import ModelSpec, build_model, load_model, load_encoder, save_model
from xlt.engine.objectives import Objective
from xlt.papers.xmixup import recipe as xmixup
from xlt.errors import XltError
from xlt.io import read_json, write_jsonl

PARTNER = dict(zip(WORDS, WORDS[3:] + WORDS[:3]))  # a toy "translation": each word its partner
HP = {"lr": 1e-3, "epochs": 2, "batch_size": 8, "max_length": 32, "stride": 8, "progress": False, "seed": 3}
MIX = {"name": "xmixup", "layer": 1}


def _random_model(**params):
    """A 2-layer random BERT (LayerNorms at their identity init) with the xmixup extra, no dropout."""
    torch.manual_seed(0)
    config = BertConfig(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                        max_position_embeddings=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return build_model(ModelSpec(task="pawsx", extras=[{**MIX, **params}], dropout=0.0), BertModel(config, add_pooling_layer=False))


def _side(lengths: list[int], seed: int, width: int | None = None) -> dict:
    g = torch.Generator().manual_seed(seed)
    width = width or max(lengths)
    mask = (torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]).long()
    ids = torch.randint(5, 60, (len(lengths), width), generator=g) * mask
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}


@pytest.mark.parametrize("mode", ["eval", "lean", "hf"])
def test_lambda_zero_leaves_the_target_as_the_plain_model_computes_it(mode):
    model = _random_model(ratio="fixed", lambda0=0.0)
    model.train(mode != "eval")
    model.fast_path = mode == "lean"
    target, source = _side([7, 4, 6], 1), _side([5, 8, 3], 2)
    with torch.no_grad():
        out = model({**target, "source": source})
        plain = model(target)["logits"]
        alone = model(source)["logits"]
    # LN(h_T) of a LayerNorm's output at identity init: h_T again, up to rounding
    torch.testing.assert_close(out["target_logits"], plain, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out["source_logits"], alone, rtol=0, atol=0)  # the source runs unmixed
    mean = (plain.softmax(-1) + alone.softmax(-1)) / 2
    torch.testing.assert_close(out["logits"].exp(), mean, rtol=1e-5, atol=1e-6)  # inference: the mean distribution


def _scramble_norms(model) -> None:
    """LayerNorm weights and biases away from their identity init, so that LN(LN(x)) != LN(x)."""
    g = torch.Generator().manual_seed(11)
    with torch.no_grad():
        for m in model.encoder.modules():
            if isinstance(m, torch.nn.LayerNorm):
                m.weight.copy_(1 + 0.5 * torch.randn(m.weight.shape, generator=g))
                m.bias.copy_(0.3 * torch.randn(m.bias.shape, generator=g))


def _entropy(scores: torch.Tensor, keep_keys: torch.Tensor, keep_rows: torch.Tensor) -> torch.Tensor:
    """Eq. 5 by hand: per example, −Σ_j A log A over the kept keys, averaged over kept rows and heads."""
    out = []
    for b in range(scores.shape[0]):
        s = scores[b][:, keep_rows[b]][:, :, keep_keys[b]]  # (heads, I, J) real tokens only
        a = s.softmax(-1)
        out.append(-(a * a.log()).sum(-1).mean())
    return torch.stack(out)


@pytest.mark.parametrize("lean", [True, False])
def test_eq_2_to_4_by_hand_inside_the_first_layer_match_the_engine(lean):
    """The paper's mixup at layer 1 of a two-layer encoder, written out with the layers' own
    modules: both sides' self-attention sub-layers (Eq. 2), the target attending to the source
    with the same layer's attention (Eq. 3), LN(λ·h_T|S + (1 − λ)·h_T) with that layer's
    attention LayerNorm (Eq. 4), λ = λ0·σ((H(A) + H(Aᵀ))·W + b) (Eq. 5-6), then the layer's
    feed-forward and the second layer as they are."""
    model = _random_model(layer=1)
    _scramble_norms(model)
    with torch.no_grad():
        model.source_reader.w.fill_(0.7)
        model.source_reader.b.fill_(-0.4)
    model.eval()
    model.fast_path = lean
    enc, (first, second) = model.encoder, model.encoder.encoder.layer
    target, source = _side([7, 4, 6], 1), _side([5, 8, 3], 2)
    keep_t, keep_s = target["attention_mask"].bool(), source["attention_mask"].bool()

    def ext(mask):  # HF's additive mask for BertAttention
        return (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min

    def ffn(layer, h):
        return layer.output(layer.intermediate(h), h)

    with torch.no_grad():
        e_t = enc.embeddings(input_ids=target["input_ids"], token_type_ids=target["token_type_ids"])
        e_s = enc.embeddings(input_ids=source["input_ids"], token_type_ids=source["token_type_ids"])
        h_t = first.attention(e_t, ext(target["attention_mask"]))[0]  # Eq. 2, after the sub-layer's residual + LN
        h_s = first.attention(e_s, ext(source["attention_mask"]))[0]
        sa, heads = first.attention.self, 2
        d = 32 // heads

        def split(x):
            return x.view(x.shape[0], x.shape[1], heads, d).transpose(1, 2)

        q, k, v = split(sa.query(h_t)), split(sa.key(h_s)), split(sa.value(h_s))
        scores = q @ k.transpose(-1, -2) / math.sqrt(d)
        weights = scores.masked_fill(~keep_s[:, None, None, :], float("-inf")).softmax(-1)
        ctx = (weights @ v).transpose(1, 2).reshape(3, -1, 32)
        h_ts = first.attention.output.dense(ctx)  # Eq. 3: MultiHead(h_T, h_S, h_S), W^O included
        entropy = _entropy(scores, keep_s, keep_t) + _entropy(scores.transpose(-1, -2), keep_t, keep_s)
        lam = (0.5 * torch.sigmoid(entropy * 0.7 - 0.4)).view(-1, 1, 1)
        mixed = first.attention.output.LayerNorm(lam * h_ts + (1 - lam) * h_t)  # Eq. 4, the layer's own LN
        out_t = second(ffn(first, mixed), attention_mask=ext(target["attention_mask"]))
        out_t = out_t[0] if isinstance(out_t, tuple) else out_t
        expected = model.head(out_t, target)["logits"]
        got = model({**target, "source": source})
    torch.testing.assert_close(got["target_logits"], expected, rtol=1e-5, atol=1e-5)
    assert ((lam > 0) & (lam < 0.5)).all()


def test_lambda_zero_with_trained_norms_normalises_twice_and_ignores_the_source():
    """At λ = 0 the authors' form gives LN(h_T): with LayerNorms away from their identity init
    that differs from the plain model, but no source changes the target."""
    model = _random_model(ratio="fixed", lambda0=0.0)
    _scramble_norms(model)
    model.eval()
    target = _side([7, 4, 6], 1)
    with torch.no_grad():
        a = model({**target, "source": _side([5, 8, 3], 2)})["target_logits"]
        b = model({**target, "source": _side([2, 6, 9], 7)})["target_logits"]
        plain = model(target)["logits"]
    torch.testing.assert_close(a, b, rtol=0, atol=1e-6)
    assert not torch.allclose(a, plain, atol=1e-4)


def test_mixup_changes_the_target_and_the_ablation_without_mixup_does_not():
    target, source = _side([7, 4, 6], 1), _side([5, 8, 3], 2)
    with torch.no_grad():
        mixed = _random_model().eval()({**target, "source": source})["target_logits"]
        model = _random_model(mixup=False).eval()
        unmixed = model({**target, "source": source})["target_logits"]
        plain = model(target)["logits"]
    assert not torch.allclose(mixed, plain, atol=1e-4)
    assert torch.equal(unmixed, plain)


def test_the_attention_entropy_and_the_mixup_ignore_padding():
    model = _random_model().eval()
    extra, layer = model.source_reader, model.encoder.encoder.layer[0]
    g = torch.Generator().manual_seed(5)
    lengths_t, lengths_s = [5, 3], [4, 2]
    h_t, h_s = torch.randn(2, 5, 32, generator=g), torch.randn(2, 4, 32, generator=g)
    mask_t, mask_s = _side(lengths_t, 0)["attention_mask"], _side(lengths_s, 0)["attention_mask"]
    # the same sentences with more padding (garbage states there), on both axes
    pad_t = torch.cat([h_t, 100 * torch.randn(2, 3, 32, generator=g)], 1)
    pad_s = torch.cat([h_s, 100 * torch.randn(2, 2, 32, generator=g)], 1)
    wide_t, wide_s = _side(lengths_t, 0, 8)["attention_mask"], _side(lengths_s, 0, 6)["attention_mask"]

    def ratio_and_mix(ht, mt, hs, ms):
        _, scores, log_weights = extra.cross_attention(layer, ht, hs, ms.bool())
        lam = extra.mixup_ratio(scores, log_weights, mt.bool(), ms.bool())
        return lam, extra.mix(LayerView(0, ht, mt, layer, model.encoder), hs, ms)

    with torch.no_grad():
        lam, mixed = ratio_and_mix(h_t, mask_t, h_s, mask_s)
        lam_pad, mixed_pad = ratio_and_mix(pad_t, wide_t, pad_s, wide_s)
    assert ((lam > 0) & (lam < 0.5)).all()  # λ0·σ(…): within (0, λ0)
    torch.testing.assert_close(lam_pad, lam, rtol=1e-6, atol=1e-7)
    for b, n in enumerate(lengths_t):
        torch.testing.assert_close(mixed_pad[b, :n], mixed[b, :n], rtol=1e-5, atol=1e-6)


def test_scheduled_sampling_follows_the_inverse_sigmoid_decay_and_the_step_seeds_its_coins():
    for k in (1000, 2000, 50):
        for step in (0, 1, 250, 1000, 5000, 20000):
            assert xmixup.sampling_probability(step, k) == pytest.approx(k / (k + math.exp(step / k)), rel=1e-12)
    assert xmixup.sampling_probability(10**9, 1000) < 1e-300  # no overflow far into training
    n, k = 4000, 1000
    step = round(k * math.log(k / 3))  # p = 3/4 there
    gold, bt = _side([3] * n, 1), {**_side([3] * n, 2), xmixup.HAS_BT: torch.ones(n, dtype=torch.long)}
    bt[xmixup.HAS_BT][::2] = 0  # half the pairs have no back-translation: always their gold source
    batch = {"source": gold, xmixup.SOURCE_BT: bt}
    chosen = xmixup.scheduled_source(batch, step, 3, k, 0)
    from_bt = (chosen["input_ids"] != gold["input_ids"]).any(1)
    assert not from_bt[::2].any()
    assert abs(from_bt[1::2].float().mean().item() - (1 - xmixup.sampling_probability(step, k))) < 0.03
    assert torch.equal(xmixup.scheduled_source(batch, step, 3, k, 0)["input_ids"], chosen["input_ids"])
    assert not torch.equal(xmixup.scheduled_source(batch, step + 1, 3, k, 0)["input_ids"], chosen["input_ids"])
    assert xmixup.scheduled_source({"source": gold}, step, 3, k, 0) is gold  # no back-translations: the gold source


@pytest.mark.parametrize("spec, message", [
    ({"layer": 0}, "layer=0 out of range; allowed: 1 … 2"), ({"layer": 3}, "layer=3 out of range"),
    ({"layer": 1, "ratio": "soft"}, "ratio='soft'; allowed: learned, fixed"),
    ({"layer": 1, "alpha": 1.5}, "alpha=1.5 must be a number in"), ({"layer": 1, "mixup": "yes"}, "mixup='yes' must be true"),
    ({"layer": 1, "schedule_k": 0}, "schedule_k=0 must be a positive"), ({"layer": 1, "beta": 1}, "extra xmixup: .*beta"),
])
def test_bad_parameters_name_the_allowed_values(spec, message):
    with pytest.raises(XltError, match=message):
        build_extra({"name": "xmixup", **spec}, BertConfig(num_hidden_layers=2, hidden_size=32, num_attention_heads=2))


# --- training on paired records -------------------------------------------------------------

def _records(n: int, seed: int, source: bool = True, bt_every: int = 0) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        en, en_pair = _sentence(rng), _sentence(rng)
        rec = {"id": f"x{i}", "text": " ".join(PARTNER[w] for w in reversed(en)),
               "text_pair": " ".join(PARTNER[w] for w in reversed(en_pair)), "label": "1" if "ka" in en else "0"}
        if source:
            rec["source"] = {"text": " ".join(en), "text_pair": " ".join(en_pair)}
        if bt_every and i % bt_every == 0:
            rec["source_bt"] = {"text": " ".join(en[1:] or en), "text_pair": " ".join(en_pair)}
        out.append(rec)
    return out


@pytest.fixture(scope="module")
def paired_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("xmixup")
    write_jsonl(root / "train.jsonl", _records(48, 0, bt_every=2))
    write_jsonl(root / "dev.jsonl", _records(16, 1))
    test = _records(16, 2)
    for r in test[::2]:
        del r["source"]  # half without their translation: predicted from the target alone
    write_jsonl(root / "test.jsonl", test)
    return root


TRAIN = """
import json, sys, torch
torch.set_num_threads(1)
from xlt.engine.train_config import TrainConfig
from xlt.engine.recipes.finetune import train  # imports no paper: the xmixup extra's name loads its recipe (xlt.engine.plugins)
a = json.loads(sys.argv[1])
train(TrainConfig.from_dict(a["cfg"]), [a["train"]], [a["dev"]], a["out"], a["ckpt"], kill_after_steps=a.get("kill"))
"""


def _cfg(tiny_encoder, **over) -> dict:
    return {**HP, "task": "pawsx", "encoder": str(tiny_encoder), "extras": [MIX], **over}


def _train_in_subprocess(cfg: dict, data, out, ckpt, kill=None):
    arg = {"cfg": cfg, "train": str(data / "train.jsonl"), "dev": str(data / "dev.jsonl"), "out": str(out),
           "ckpt": str(ckpt), "kill": kill}
    return subprocess.run([sys.executable, "-c", TRAIN, json.dumps(arg)], capture_output=True, text=True,
                          timeout=300, cwd=REPO)


@pytest.fixture(scope="module")
def xmixup_model(tiny_encoder, paired_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("trained")
    cfg = _cfg(tiny_encoder, checkpoint_every=3)
    done = _train_in_subprocess(cfg, paired_data, root / "m", root / "ck")
    assert done.returncode == 0, done.stderr
    return root / "m", cfg


def test_an_xmixup_model_reloads_and_predicts_identically_from_both_sides_or_its_own(xmixup_model, paired_data, tmp_path):
    model_dir, _ = xmixup_model
    model, tok, meta = load_model(model_dir)
    assert meta["spec"]["extras"] == [MIX]
    assert meta["xmixup"]["back_translated"] == 24 and "p = k / (k + exp(step / k))" in meta["xmixup"]["scheduled_sampling"]
    assert set(meta["train"]["history"][0]["dev"]) == {str(paired_data / "dev.jsonl")}
    assert model.source_reader.w.item() != 1.0 and model.source_reader.b.item() != 0.0  # the mixup ratio was trained
    save_model(model, tok, tmp_path / "again", meta)
    again, _, _ = load_model(tmp_path / "again")
    records = load_records([paired_data / "test.jsonl"])
    cfg = TrainConfig.from_dict(meta["train_config"])
    ev = EvalSet.build(model.task, records, tok, cfg, max_positions(model, tok), with_source=True)
    assert sum("source" in b for _, b in ev.batches) >= 1 and sum("source" not in b for _, b in ev.batches) >= 1
    outs = [torch.cat([m(b)["logits"].flatten() for _, b in ev.batches]) for m in (model, again)]
    assert torch.equal(outs[0], outs[1])
    # record by record: both sides where it has its source, the target alone where not
    plain = EvalSet.build(model.task, records, tok, cfg, max_positions(model, tok))
    sources = EvalSet.build(model.task, [{**r, **r["source"]} for r in records if "source" in r], tok, cfg)
    with torch.no_grad():
        logits = {i: o for (idx, b) in ev.batches for i, o in zip(idx, model(b)["logits"])}
        own = {i: o for (idx, b) in plain.batches for i, o in zip(idx, model(b)["logits"])}
        source_rows = [i for i, r in enumerate(records) if "source" in r]
        src = {source_rows[i]: o for (idx, b) in sources.batches for i, o in zip(idx, model(b)["logits"])}
    for i, r in enumerate(records):
        if "source" in r:
            assert not torch.allclose(logits[i], own[i], atol=1e-4)  # mixed and averaged with the source's
            assert not torch.allclose(logits[i], src[i], atol=1e-4)
        else:
            torch.testing.assert_close(logits[i], own[i], rtol=0, atol=1e-6)


def test_xmixup_training_killed_with_sigkill_resumes_bit_identical(xmixup_model, paired_data, tmp_path):
    model_dir, cfg = xmixup_model
    killed = _train_in_subprocess(cfg, paired_data, tmp_path / "m", tmp_path / "ck", kill=4)
    assert killed.returncode == -9, killed.stderr
    assert json.loads((tmp_path / "ck" / "last" / "state.json").read_text())["cursors"] == {"pawsx": [0, 3]}
    again = _train_in_subprocess(cfg, paired_data, tmp_path / "m", tmp_path / "ck")
    assert again.returncode == 0, again.stderr
    assert "resuming from step 3" in again.stderr
    assert read_json(tmp_path / "m" / "xlt_model.json")["weights_sha256"] == read_json(model_dir / "xlt_model.json")["weights_sha256"]


def _loss_and_grads(model, objective, batch, fast_path: bool):
    model.fast_path = fast_path
    model.train()
    model.zero_grad()
    loss, parts = objective(model, {"pawsx": dict(batch)}, 1200)
    loss.backward()
    return loss.detach(), parts, {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def test_both_forwards_give_one_xmixup_loss_and_gradient(tiny_encoder):
    from xlt.engine.recipes.finetune import build_task_model

    encoder, tok = load_encoder(str(tiny_encoder), dropout=0.0)
    cfg = TrainConfig.from_dict(_cfg(tiny_encoder, dropout=0.0))
    model = build_task_model(cfg, encoder)
    task, kind = model.task, model.kind
    stream = xmixup.paired_stream("pawsx", task, kind, _records(16, 4, bt_every=2), tok, cfg)
    assert stream.sides == ("source", "target", "source_bt")
    batch = stream.collate(stream.next_indices())
    assert batch["target"]["attention_mask"].min() == 0 and batch["source"]["attention_mask"].min() == 0
    objective = Objective(xmixup.xmixup_terms(model.source_reader, "pawsx", 1, tok.pad_token_id, kind))
    lean_loss, parts, lean = _loss_and_grads(model, objective, batch, True)
    hf_loss, _, hf = _loss_and_grads(model, objective, batch, False)
    assert set(parts) == {"src", "tgt", "mse", "kl"} and all(float(v) > 0 for v in parts.values())
    torch.testing.assert_close(lean_loss, hf_loss, rtol=1e-5, atol=1e-6)
    assert lean.keys() == hf.keys() and {"extras.0.w", "extras.0.b", "encoder.encoder.layer.0.attention.output.LayerNorm.weight"} <= lean.keys()
    for name in lean:
        torch.testing.assert_close(lean[name], hf[name], rtol=1e-4, atol=1e-5, msg=lambda m: f"{name}: {m}")


def test_xmixup_trains_with_the_hugging_face_forward_too(tiny_encoder, paired_data, tmp_path):
    from xlt.engine.recipes.finetune import train

    summary = train(TrainConfig.from_dict(_cfg(tiny_encoder, epochs=1, fast_path="off")), [paired_data / "train.jsonl"],
                    [paired_data / "dev.jsonl"], tmp_path / "m", tmp_path / "ck")
    assert summary["global_steps"] == 6 and summary["streams"] == {"pawsx": {"features": 48, "batch_size": 8}}
    # reloaded for evaluation, it keeps the Hugging Face forward (engine.fast_path off everywhere)
    from xlt.engine.model import load_model

    assert load_model(tmp_path / "m")[0].fast_path is False


def test_a_record_without_its_source_is_named_with_its_file(tiny_encoder, paired_data, tmp_path):
    from xlt.engine.recipes.finetune import train

    bad = tmp_path / "train.jsonl"
    records = _records(8, 5)
    del records[3]["source"]
    write_jsonl(bad, records)
    with pytest.raises(XltError, match=f"{bad}: record 4 \\(id 'x3'\\) has no 'source'"):
        train(TrainConfig.from_dict(_cfg(tiny_encoder)), [bad], [paired_data / "dev.jsonl"], tmp_path / "m", tmp_path / "ck")


@pytest.mark.parametrize("task, kind", [("parsing", "biaffine")])
def test_kinds_not_built_fail_before_anything_loads(task, kind, tmp_path):
    from xlt.engine.recipes.finetune import train

    cfg = TrainConfig.from_dict({**HP, "task": task, "encoder": str(tmp_path / "no-encoder"), "extras": [MIX]})
    with pytest.raises(XltError, match=f"xmixup: {kind} is not built; built for classification, tagging, span_qa"):
        train(cfg, [tmp_path / "train.jsonl"], [], tmp_path / "m", tmp_path / "ck")


def test_without_mixup_inference_predicts_from_the_target_alone_and_with_it_averages_both_sides():
    """Table 5's "w/o mixup" removes the mixup in training and inference: its paired prediction
    is the target's own; X-Mixup's averages both sides' class probabilities (§4.3)."""
    target, source = _side([7, 4, 6], 1), _side([5, 8, 3], 2)
    with torch.no_grad():
        out = _random_model(mixup=False).eval()({**target, "source": source})
        mixed = _random_model().eval()({**target, "source": source})
    assert torch.equal(out["logits"], out["target_logits"])
    both = torch.stack([mixed["source_logits"].float().softmax(-1), mixed["target_logits"].float().softmax(-1)]).mean(0)
    assert torch.allclose(mixed["logits"].float().exp(), both, atol=1e-6)
