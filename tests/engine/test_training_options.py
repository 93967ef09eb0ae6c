"""The fine-tuning options every recipe shares (TrainConfig.sampler, max_grad_value,
eval_steps / evals_per_epoch): what each does, alone and in a pack, that the defaults change nothing, and that a
job using all three, killed with SIGKILL mid-epoch, resumes bit-identical."""

import json
import signal
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from tests.conftest import REPO
from xlt.engine.batching import epoch_batches, length_grouped_batches, one_language_batches, random_batches
from xlt.engine.recipes.finetune import feature_languages, train
from xlt.engine.streams import Stream
from xlt.engine.train_config import TrainConfig
from xlt.errors import XltError
from xlt.stages.finetune import evaluate_model, finetune
from xlt.stages.finetune_job import FinetuneJob

HP = {"lr": 1e-3, "epochs": 2, "batch_size": 8, "warmup_ratio": 0.1, "max_length": 32, "stride": 8,
      "checkpoint_every": 3, "progress": False, "precision": "fp32"}
# all three on: 96 examples in batches of 8 are 12 steps an epoch, evaluated at steps 5, 10,
# 12 (the epoch's end), 15, 20, 24
OPTIONS = {"sampler": "random", "max_grad_value": 0.05, "eval_steps": 5}


def _weights(model_dir):
    return {**load_file(model_dir / "encoder" / "model.safetensors"), **load_file(model_dir / "modules.safetensors")}


def _files(toy_data, task, langs=("en",)):
    return ([toy_data / task / lang / "train.jsonl" for lang in langs], [toy_data / task / lang / "dev.jsonl" for lang in langs])


# ---------------------------------------------------------------- samplers
def test_random_batches_are_a_seeded_shuffle_of_every_example():
    a, b = random_batches(45, 8, seed=3, epoch=0), random_batches(45, 8, seed=3, epoch=0)
    assert a == b  # a pure function of (seed, epoch): what a resumed job regenerates
    assert sorted(i for batch in a for i in batch) == list(range(45))
    assert [len(batch) for batch in a] == [8] * 5 + [5]
    assert a != random_batches(45, 8, seed=3, epoch=1) and a != random_batches(45, 8, seed=4, epoch=0)
    # not grouped by length: the order is the shuffle's, whatever the lengths
    assert epoch_batches("random", [1] * 45, 8, 3, 0) == epoch_batches("random", list(range(45)), 8, 3, 0) == a


def test_one_language_batches_keep_each_batch_in_one_language_and_interleave_them():
    groups = [0] * 30 + [1] * 21
    batches = one_language_batches(groups, 8, seed=5, epoch=0)
    assert batches == one_language_batches(groups, 8, seed=5, epoch=0)
    assert sorted(i for batch in batches for i in batch) == list(range(51))
    assert all(len({groups[i] for i in batch}) == 1 for batch in batches)
    assert len(batches) == 4 + 3  # each language cut on its own: ceil(30 / 8) + ceil(21 / 8)
    order = [groups[batch[0]] for batch in batches]
    assert order != sorted(order) and order != sorted(order, reverse=True)  # interleaved, not one language then the other
    assert batches != one_language_batches(groups, 8, seed=5, epoch=1)
    with pytest.raises(XltError, match="needs each training example's language"):
        epoch_batches("one_language_per_batch", [3] * 51, 8, 5, 0)


def test_a_stream_draws_length_grouped_batches_by_default():
    features = [{"input_ids": [1] * (3 + i % 7)} for i in range(40)]
    stream = Stream("pos", features, 8, seed=2, pad_id=0)
    assert stream.sampler == "length_grouped"
    assert stream.batches(1) == length_grouped_batches(stream.lengths, 8, stream._seed, 1)
    shuffled = Stream("pos", features, 8, seed=2, pad_id=0, sampler="random")
    assert shuffled.batches(1) == random_batches(40, 8, shuffled._seed, 1)


def test_each_feature_knows_its_training_language(toy_data):
    files = [toy_data / "pos" / "en" / "train.jsonl", toy_data / "pos" / "de" / "train.jsonl"]
    # windows of one record share its language; the cap applies per file, as load_records caps
    features = [{"example": 0}, {"example": 0}, {"example": 9}, {"example": 10}, {"example": 19}]
    assert feature_languages(features, files, cap=10) == [0, 0, 0, 1, 1]


def test_one_language_per_batch_trains_on_batches_of_one_language(tiny_encoder, toy_data, tmp_path, monkeypatch):
    drawn = []
    original = Stream.next_indices

    def spy(self, cycle=False):
        idx = original(self, cycle)
        drawn.append({self.groups[i] for i in idx})
        return idx

    monkeypatch.setattr(Stream, "next_indices", spy)
    cfg = TrainConfig.from_dict({**HP, "epochs": 1, "sampler": "one_language_per_batch", "task": "pos",
                                 "encoder": str(tiny_encoder), "seed": 1})
    train(cfg, *_files(toy_data, "pos", ("en", "de")), tmp_path / "m", tmp_path / "ck")
    assert drawn and all(len(langs) == 1 for langs in drawn)
    assert {next(iter(langs)) for langs in drawn} == {0, 1}


# ---------------------------------------------------------------- gradient value clipping
def test_max_grad_value_clips_every_gradient_before_the_norm(tiny_encoder, toy_data, tmp_path, monkeypatch):
    import xlt.engine.loop as loop

    seen = []
    norm_clip = loop.clip_grad_norm

    def spy(params, max_norm):
        seen.append(max(p.grad.abs().max().item() for p in params if p.grad is not None))
        return norm_clip(params, max_norm)

    monkeypatch.setattr(loop, "clip_grad_norm", spy)
    base = {**HP, "epochs": 1, "task": "marc", "encoder": str(tiny_encoder), "seed": 1}
    train(TrainConfig.from_dict(base), *_files(toy_data, "marc"), tmp_path / "off", tmp_path / "ck0")
    bound = 2.0 ** -10  # a float32 value: the clipped gradients reach it exactly
    assert max(seen) > bound  # unclipped, some gradient value exceeds it
    seen.clear()
    train(TrainConfig.from_dict({**base, "max_grad_value": bound}), *_files(toy_data, "marc"), tmp_path / "on", tmp_path / "ck1")
    assert len(seen) == 12 and max(seen) == bound
    assert not all(torch.equal(a, b) for a, b in zip(_weights(tmp_path / "off").values(), _weights(tmp_path / "on").values()))
    # a bound no gradient reaches changes nothing, bit for bit
    train(TrainConfig.from_dict({**base, "max_grad_value": 1e9}), *_files(toy_data, "marc"), tmp_path / "loose", tmp_path / "ck2")
    w0, w2 = _weights(tmp_path / "off"), _weights(tmp_path / "loose")
    assert all(torch.equal(w0[k], w2[k]) for k in w0)


def test_packed_value_clipping_is_each_models_own():
    from xlt.engine.packed import PackedModel

    grads = torch.randn(3, 4, 5)
    stacked = torch.nn.Parameter(torch.zeros(3, 4, 5))
    stacked.grad = grads.clone()
    PackedModel.clip_grad_values(type("P", (), {"stacked": [stacked]})(), 0.5)
    for k in range(3):
        alone = torch.nn.Parameter(torch.zeros(4, 5))
        alone.grad = grads[k].clone()
        torch.nn.utils.clip_grad_value_([alone], 0.5)
        assert torch.equal(stacked.grad[k], alone.grad)


# ---------------------------------------------------------------- evaluation every N steps
def test_eval_steps_evaluates_between_epochs_and_selects_the_best_evaluation(tiny_encoder, toy_data, tmp_path):
    cfg = TrainConfig.from_dict({**HP, "eval_steps": 5, "task": "pos", "encoder": str(tiny_encoder), "seed": 5})
    summary = train(cfg, *_files(toy_data, "pos"), tmp_path / "m", tmp_path / "ck")
    assert [(h["epoch"], h["step"]) for h in summary["history"]] == [(1, 5), (1, 10), (1, 12), (2, 15), (2, 20), (2, 24)]
    metric = summary["select_metric"]
    scores = [h[metric] for h in summary["history"]]
    assert len(set(scores)) > 2  # the model learns: the evaluations differ
    best = scores.index(max(scores))  # ties keep the earlier evaluation
    assert summary["selected_dev_score"] == scores[best]
    assert (summary["selected_epoch"], summary["selected_step"]) == (summary["history"][best]["epoch"],
                                                                     summary["history"][best]["step"])
    # with this seed the best evaluation is mid-epoch (later ones tie with it): one that
    # evaluating at epoch ends alone would not see
    assert summary["selected_step"] == 15
    # the saved model is the selected evaluation's: its dev score is the selected one
    evaluate_model(str(tmp_path / "m"), str(toy_data / "pos"), "dev", ["en"], tmp_path / "dev.json", tmp_path / "dev.jsonl")
    assert json.loads((tmp_path / "dev.json").read_text())["metrics"]["en"][metric] == pytest.approx(scores[best])
    # off: epoch ends only, and no selected_step in the summary (the model's metadata as before)
    plain = train(TrainConfig.from_dict({**HP, "task": "pos", "encoder": str(tiny_encoder), "seed": 5}),
                  *_files(toy_data, "pos"), tmp_path / "p", tmp_path / "ckp")
    assert [h["step"] for h in plain["history"]] == [12, 24] and "selected_step" not in plain


def test_evals_per_epoch_evaluates_k_times_an_epoch_at_multiples_of_the_derived_steps(tiny_encoder, toy_data, tmp_path):
    base = {**HP, "task": "pos", "encoder": str(tiny_encoder), "seed": 5}
    # 12 steps an epoch, 4 evaluations an epoch: every 3 steps, the 4th at the epoch's end
    summary = train(TrainConfig.from_dict({**base, "evals_per_epoch": 4}), *_files(toy_data, "pos"), tmp_path / "m", tmp_path / "ck")
    assert [(h["epoch"], h["step"]) for h in summary["history"]] == [(e, s) for e, s in zip([1] * 4 + [2] * 4, range(3, 25, 3))]
    metric = summary["select_metric"]
    best = max(summary["history"], key=lambda h: h[metric])  # ties keep the earlier evaluation
    assert summary["selected_step"] == best["step"] in range(3, 25, 3) and summary["selected_epoch"] == best["epoch"]
    # 10 steps an epoch (batches of 10), k = 3: every floor(10 / 3) = 3 steps counted over the
    # run, not reset at an epoch's start (epoch 2: 12, 15, 18, not 13, 16, 19), plus epoch ends
    odd = train(TrainConfig.from_dict({**base, "batch_size": 10, "evals_per_epoch": 3}), *_files(toy_data, "pos"),
                tmp_path / "o", tmp_path / "cko")
    assert odd["global_steps"] == 20
    assert [(h["epoch"], h["step"]) for h in odd["history"]] == [(1, 3), (1, 6), (1, 9), (1, 10), (2, 12), (2, 15), (2, 18), (2, 20)]


def test_a_pack_with_evals_per_epoch_evaluates_each_model_k_times_an_epoch(tiny_encoder, toy_data, tmp_path):
    seeds = [1, 2]
    hp = {**HP, "evals_per_epoch": 4}
    packed = finetune(FinetuneJob(task="pos", encoder=str(tiny_encoder), data=toy_data / "pos", train_langs=["en"], hparams=hp,
                                  seeds=seeds, outs=[tmp_path / f"pack{s}" for s in seeds],
                                  checkpoint_dirs=[tmp_path / f"ck{s}" for s in seeds], pack_checkpoint_dir=tmp_path / "ck_pack"))
    for summary in packed:
        assert summary["pack"] == seeds
        assert [(h["epoch"], h["step"]) for h in summary["history"]] == [(e, s) for e, s in zip([1] * 4 + [2] * 4, range(3, 25, 3))]
        metric = summary["select_metric"]
        best = max(summary["history"], key=lambda h: h[metric])
        assert summary["selected_step"] == best["step"] and summary["selected_dev_score"] == best[metric]


def test_options_bounds_are_checked():
    base = {"task": "marc", "encoder": "x"}
    for bad, match in (({"sampler": "sorted"}, "sampler='sorted'; allowed: length_grouped, random"),
                       ({"max_grad_value": 0}, "max_grad_value=0 must be positive"),
                       ({"eval_steps": 0}, "eval_steps=0 must be at least 1"),
                       ({"evals_per_epoch": 0}, "evals_per_epoch=0 must be at least 1"),
                       ({"eval_steps": 100, "evals_per_epoch": 4}, "eval_steps=100 and evals_per_epoch=4 both set")):
        with pytest.raises(XltError, match=match):
            TrainConfig.from_dict({**base, **bad})


# ---------------------------------------------------------------- resume and packs
def test_kill_9_mid_epoch_with_every_option_resumes_bit_identical(tiny_encoder, toy_data, tmp_path):
    """SIGKILL after 7 steps: the checkpoint of step 6 (checkpoint_every 3) holds the
    selection of step 5's evaluation; the rerun ends with the clean run's weights and history."""
    hp = {**HP, **OPTIONS}

    def cli(out, ckpt, *extra):
        return subprocess.run(
            [sys.executable, str(REPO / "workflow_scripts" / "finetune.py"), "--job",
             FinetuneJob.of_seed("pos", str(tiny_encoder), toy_data / "pos", ["en", "de"], hp, 3, out, ckpt, threads=1).to_json(),
             *extra],
            capture_output=True, text=True, timeout=300,
        )

    clean = cli(tmp_path / "clean", tmp_path / "ck_clean")
    assert clean.returncode == 0, clean.stderr
    killed = cli(tmp_path / "resumed", tmp_path / "ck_resumed", "--kill-after-steps", "7")
    assert killed.returncode == -signal.SIGKILL
    state = json.loads((tmp_path / "ck_resumed" / "last" / "state.json").read_text())
    assert state["global_step"] == 6 and [h["step"] for h in state["history"]] == [5] and state["best_step"] == 5
    again = cli(tmp_path / "resumed", tmp_path / "ck_resumed")
    assert again.returncode == 0, again.stderr
    assert "resuming from step 6" in again.stderr
    clean_train, resumed_train = (json.loads((tmp_path / n / "xlt_model.json").read_text())["train"] for n in ("clean", "resumed"))
    assert resumed_train["resumed_from"] == [6]
    assert resumed_train["history"] == clean_train["history"]
    assert resumed_train["selected_step"] == clean_train["selected_step"]
    wc, wr = _weights(tmp_path / "clean"), _weights(tmp_path / "resumed")
    assert all(torch.equal(wc[k], wr[k]) for k in wc)


def test_a_pack_with_every_option_selects_what_each_model_selects_alone(tiny_encoder, toy_data, tmp_path):
    seeds = [1, 2]
    hp = {**HP, **OPTIONS}
    outs = [tmp_path / f"pack{s}" for s in seeds]
    packed = finetune(FinetuneJob(task="pos", encoder=str(tiny_encoder), data=toy_data / "pos", train_langs=["en"], hparams=hp,
                                  seeds=seeds, outs=outs, checkpoint_dirs=[tmp_path / f"ck{s}" for s in seeds],
                                  pack_checkpoint_dir=tmp_path / "ck_pack"))
    for seed, out, summary in zip(seeds, outs, packed):
        [alone] = finetune(FinetuneJob.of_seed("pos", str(tiny_encoder), toy_data / "pos", ["en"], hp, seed, tmp_path / f"alone{seed}",
                                               tmp_path / f"cka{seed}"))
        assert summary["pack"] == seeds
        assert [h["step"] for h in summary["history"]] == [h["step"] for h in alone["history"]] == [5, 10, 12, 15, 20, 24]
        assert (summary["selected_epoch"], summary["selected_step"]) == (alone["selected_epoch"], alone["selected_step"])
        wp, wa = _weights(out), _weights(tmp_path / f"alone{seed}")
        assert max((wp[k] - wa[k]).abs().max().item() for k in wa) < 1e-5, seed


def test_kill_9_of_a_pack_with_every_option_resumes_every_model(tiny_encoder, toy_data, tmp_path):
    """As alone: SIGKILL after 7 steps, the rerun resumes both models from step 6 with the
    selection of step 5's evaluation and ends bit-identical to a pack that ran through."""
    seeds = [1, 2]
    hp = {**HP, **OPTIONS}

    def cli(name, *extra):
        return subprocess.run(
            [sys.executable, str(REPO / "workflow_scripts" / "finetune.py"), "--job",
             FinetuneJob(task="pos", encoder=str(tiny_encoder), data=toy_data / "pos", train_langs=["en"], hparams=hp, seeds=seeds,
                         outs=[tmp_path / name / f"seed{s}" for s in seeds],
                         checkpoint_dirs=[tmp_path / f"ck_{name}" / f"seed{s}" for s in seeds],
                         pack_checkpoint_dir=tmp_path / f"ck_{name}" / "pack", threads=1).to_json(), *extra],
            capture_output=True, text=True, timeout=300,
        )

    clean = cli("clean")
    assert clean.returncode == 0, clean.stderr
    killed = cli("resumed", "--kill-after-steps", "7")
    assert killed.returncode == -signal.SIGKILL
    state = json.loads((tmp_path / "ck_resumed" / "pack" / "last" / "state.json").read_text())
    assert state["global_step"] == 6 and all(m["best_step"] == 5 for m in state["models"])
    again = cli("resumed")
    assert again.returncode == 0, again.stderr
    assert "resuming the pack of 2 from step 6" in again.stderr
    for s in seeds:
        meta_clean, meta_res = (json.loads((tmp_path / n / f"seed{s}" / "xlt_model.json").read_text())["train"]
                                for n in ("clean", "resumed"))
        assert meta_res["history"] == meta_clean["history"] and meta_res["selected_step"] == meta_clean["selected_step"]
        wc, wr = _weights(tmp_path / "clean" / f"seed{s}"), _weights(tmp_path / "resumed" / f"seed{s}")
        assert all(torch.equal(wc[k], wr[k]) for k in wc), s
