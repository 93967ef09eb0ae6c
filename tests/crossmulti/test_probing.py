"""Probing: all heads' probes trained as one batched layer equal each probe trained alone; the
captured context vectors are the input of each layer's attention output projection."""

from __future__ import annotations

import pytest
import torch

from xlt.papers.crossmulti.probing import ProbeConfig, capture, predict_probes, train_probes


def toy_features(n=300, probes=5, d=6, classes=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, classes, (n,), generator=g)
    x = torch.randn(n, probes, d, generator=g)
    x[:, :, 0] += y[:, None].float() * torch.arange(probes)[None, :]  # probe k sees the label k-strongly
    return x, y


def test_batched_probes_equal_probes_trained_one_by_one():
    x, y = toy_features()
    cfg = ProbeConfig(epochs=4, lr=0.05, batch_size=64, seed=3)
    w, b = train_probes(x, y, 3, cfg)
    for k in range(x.shape[1]):
        wk, bk = train_probes(x[:, k : k + 1], y, 3, cfg)
        torch.testing.assert_close(w[k], wk[0], rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(b[k], bk[0], rtol=1e-4, atol=1e-5)
    acc = (predict_probes(x, w, b) == y[:, None]).float().mean(0)
    assert acc[-1] > 0.7 and acc[0] < 0.5  # the informative probe learnt, the blind one (chance 1/3) did not


def test_capture_is_the_input_of_the_output_projection(tiny_encoder):
    from xlt.engine.model import load_encoder

    enc, tok = load_encoder(str(tiny_encoder), dropout=0.0)
    enc.eval()
    batch = {k: torch.tensor(v) for k, v in tok(["ka lo mi ten", "mi ten ka lo"]).items()}
    seen = []
    hook = enc.encoder.layer[1].attention.output.dense.register_forward_hook(lambda m, a, o: seen.append(a[0]))
    with torch.no_grad():
        last, heads = capture(enc, batch)
        ref = enc(**batch).last_hidden_state
    hook.remove()
    cfg = enc.config
    d = cfg.hidden_size // cfg.num_attention_heads
    assert heads.shape == (*batch["input_ids"].shape, cfg.num_hidden_layers, cfg.num_attention_heads, d)
    torch.testing.assert_close(last, ref)
    torch.testing.assert_close(heads[:, :, 1, 1], seen[0][..., d : 2 * d])  # layer 1, head 1


def test_probe_task_on_toy_pos(tiny_encoder, toy_data):
    from xlt.engine.evalset import load_records
    from xlt.engine.model import load_encoder
    from xlt.papers.crossmulti.probing import probe_task
    from xlt.registry import get_task

    enc, tok = load_encoder(str(tiny_encoder), dropout=0.0)
    train = load_records([toy_data / "pos" / "en" / "train.jsonl"])
    test = load_records([toy_data / "pos" / lang / "test.jsonl" for lang in ("en", "de")])
    res = probe_task(enc, tok, get_task("pos"), train, test, "accuracy", ProbeConfig(epochs=3), 32)
    assert res["heads"].shape == (enc.config.num_hidden_layers, enc.config.num_attention_heads)
    assert 0 <= res["heads"].min() and res["model"] <= 100
    assert res["model"] > 30  # the toy POS is learnable from the last layer
    verdict = res["model_verdict"]  # judged on the words' tags: its accuracy is the task's metric here
    assert verdict["measure"] == "token accuracy" and verdict["dev_score"] == pytest.approx(res["model"], abs=1e-4)
    assert verdict["collapsed"] == (verdict["dev_score"] <= verdict["majority_baseline"] or verdict["chance_p"] >= 0.01)
    assert len(res["head_verdicts"]) == res["heads"].size


def test_probe_verdicts_read_the_training_languages_test_examples_only(tiny_encoder, toy_data):
    """What a probe scores on another language is transfer: its verdict reads the English rows."""
    from xlt.engine.evalset import load_records
    from xlt.engine.model import load_encoder
    from xlt.papers.crossmulti.probing import probe_task
    from xlt.registry import get_task

    enc, tok = load_encoder(str(tiny_encoder), dropout=0.0)
    train = load_records([toy_data / "pos" / "en" / "train.jsonl"])
    en, de = (load_records([toy_data / "pos" / lang / "test.jsonl"]) for lang in ("en", "de"))
    cfg = ProbeConfig(epochs=3)
    judged = probe_task(enc, tok, get_task("pos"), train, en + de, "accuracy", cfg, 32, judged=list(range(len(en))))
    alone = probe_task(enc, tok, get_task("pos"), train, en, "accuracy", cfg, 32)
    assert judged["model_verdict"]["n"] == alone["model_verdict"]["n"] == sum(len(r["tokens"]) for r in en)
    assert judged["model_verdict"]["n_correct"] == alone["model_verdict"]["n_correct"]


def test_a_probe_learns_a_signal_that_varies_little_around_a_large_mean():
    """The tiny encoder's [CLS] features: each dimension near a large constant, the label in a
    small spread (benchmarks/probe_steps.json). On raw features 10 Adam steps of lr 1e-2 barely
    move the logits apart (the loop before standardising: 50%, one class everywhere); on
    standardised ones they learn, and the returned weights score the raw features."""
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, 2, (200,), generator=g)
    x = torch.randn(200, 1, 8, generator=g)
    x[:, 0, 0] += 5 * y  # separable along one dimension, seven of noise
    x = 10.0 + 0.05 * x  # row norm ~28, per-dimension std ~0.05
    cfg = ProbeConfig(epochs=10, lr=1e-2, batch_size=256)
    w, b = train_probes(x, y, 2, cfg)
    acc = (predict_probes(x, w, b)[:, 0] == y).float().mean()
    assert acc > 0.75


def probe_preds(gold: list[int], right: float, seed: int = 0) -> torch.Tensor:
    """A probe's predictions (N, 1): `right` of the rows its gold label, the others another label."""
    g = torch.Generator().manual_seed(seed)
    gold = torch.tensor(gold)
    wrong = torch.rand(len(gold), generator=g) >= right
    return torch.where(wrong, (gold + 1) % int(gold.max() + 1), gold)[:, None]


@pytest.mark.parametrize("task_name, gold", [
    ("ner", [0] * 300 + [1] * 50 + [2] * 50),  # tags of words, mostly O (label 0)
    ("pawsx", [0] * 110 + [1] * 90),  # examples' labels
])
def test_probe_verdicts_mark_a_probe_that_learned_nothing(task_name, gold):
    from xlt.papers.crossmulti.probing import probe_verdicts
    from xlt.registry import get_task

    task = get_task(task_name)
    majority = torch.zeros(len(gold), 1, dtype=torch.long)  # the majority label everywhere (an all-O tagger)
    learned, unlearned, chance = (probe_verdicts(task, torch.tensor(gold), pred)[0]
                                  for pred in (probe_preds(gold, 0.95), majority, probe_preds(gold, 0.5)))
    assert learned["collapsed"] is False and learned["dev_score"] > learned["majority_baseline"]
    assert unlearned["collapsed"] is True and {"baseline", "chance"} <= set(unlearned["by"])
    assert unlearned["dev_score"] == unlearned["majority_baseline"] == pytest.approx(100 * gold.count(0) / len(gold))
    assert chance["collapsed"] is True  # right half the time: below the majority label's share
    assert learned["measure"] == ("token accuracy" if task_name == "ner" else "accuracy")
    # the rule's numbers kept beside the verdict: what the probe job's JSON records
    assert {"n_correct", "n", "gold_majority_share", "chance_p", "rule"} <= set(learned)
    assert probe_verdicts(task, torch.tensor(gold), majority, {"alpha": 0.01, "min_gain": 0.0, "max_share": 1.1})[0]["by"] \
        == ["baseline", "chance"]  # the config's rule is the one applied
