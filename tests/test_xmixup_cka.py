"""xmixup's linear CKA (xlt/papers/xmixup/cka.py) and its workflow script on a tiny model."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import ortho_group

from xlt.errors import XltError
from xlt.io import write_jsonl
from xlt.papers.xmixup.cka import linear_cka, linear_cka_hsic, parallel_records, spearman

REPO = Path(__file__).resolve().parents[1]


def data(seed=0, n=60, d1=12, d2=9):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d1))
    Y = X[:, :d2] @ rng.normal(size=(d2, d2)) + 0.5 * rng.normal(size=(n, d2))  # related, not identical
    return X, Y


def test_the_feature_form_equals_the_hsic_form():
    for seed in range(3):
        X, Y = data(seed)
        assert linear_cka(X, Y) == pytest.approx(linear_cka_hsic(X, Y), rel=1e-10)
        assert 0 < linear_cka(X, Y) < 1


def test_cka_of_a_matrix_with_itself_is_one():
    X, _ = data()
    assert linear_cka(X, X) == pytest.approx(1.0, rel=1e-12)
    assert linear_cka_hsic(X, X) == pytest.approx(1.0, rel=1e-12)


def test_invariant_to_orthogonal_maps_and_isotropic_scaling_of_either_side():
    X, Y = data()
    ref = linear_cka(X, Y)
    Q1, Q2 = ortho_group.rvs(X.shape[1], random_state=1), ortho_group.rvs(Y.shape[1], random_state=2)
    assert linear_cka(X @ Q1, Y) == pytest.approx(ref, rel=1e-10)
    assert linear_cka(X, Y @ Q2) == pytest.approx(ref, rel=1e-10)
    assert linear_cka(3.7 * X, Y) == pytest.approx(ref, rel=1e-10)
    assert linear_cka(X, 0.01 * Y @ Q2) == pytest.approx(ref, rel=1e-10)
    assert linear_cka(X + 5.0, Y - 2.0) == pytest.approx(ref, rel=1e-10)  # features are centred


def test_not_invariant_to_a_general_invertible_linear_map():
    """The check that the tests above can fail: linear CKA is not invariant to every invertible map."""
    X, Y = data()
    A = np.diag(np.linspace(0.1, 10.0, X.shape[1])) @ ortho_group.rvs(X.shape[1], random_state=3)
    assert np.linalg.matrix_rank(A) == X.shape[1]
    assert abs(linear_cka(X @ A, Y) - linear_cka(X, Y)) > 1e-3


def test_rows_must_match():
    X, Y = data()
    with pytest.raises(XltError, match="60 and 59 rows"):
        linear_cka(X, Y[:-1])


def test_spearman_of_cka_and_performance():
    cka = {"de": 0.9, "fr": 0.8, "ru": 0.6, "zh": 0.5}
    res = spearman(cka, {"de": 80.0, "fr": 79.0, "ru": 70.0, "zh": 71.0, "xx": 1.0})
    assert res["rho"] == pytest.approx(0.8) and res["languages"] == ["de", "fr", "ru", "zh"] and 0 < res["p"] < 1
    with pytest.raises(XltError, match="2 languages in common"):
        spearman(cka, {"de": 1.0, "fr": 2.0})


def pair_records(lang, n, labels=("entailment", "neutral", "contradiction")):
    words = ["ka", "lo", "mi", "ten", "Anna", "Berlin", "ro", "su"]
    return [{"id": f"{lang}-test-{k}", "text": " ".join(words[(k + j) % 8] for j in range(3 + k % 4)),
             "text_pair": " ".join(words[(k * 3 + j) % 8] for j in range(2 + k % 3)) + (" lo" if lang != "en" else ""),
             "label": labels[k % 3]} for k in range(n)]


def test_parallel_records_fail_naming_the_files(tmp_path):
    for lang in ("en", "de"):
        write_jsonl(tmp_path / lang / "test.jsonl", pair_records(lang, 6))
    write_jsonl(tmp_path / "fr" / "test.jsonl", pair_records("fr", 5))
    swapped = pair_records("ru", 6)
    swapped[2]["label"], swapped[3]["label"] = swapped[3]["label"], swapped[2]["label"]
    write_jsonl(tmp_path / "ru" / "test.jsonl", swapped)
    assert [len(r) for r in parallel_records(tmp_path, ["en", "de"], "test").values()] == [6, 6]
    with pytest.raises(XltError, match=r"fr/test\.jsonl: 5 rows, not parallel to .*en/test\.jsonl \(6 rows\)"):
        parallel_records(tmp_path, ["en", "fr"], "test")
    with pytest.raises(XltError, match=r"ru/test\.jsonl: row 2 .* not parallel to .*en/test\.jsonl row 2"):
        parallel_records(tmp_path, ["en", "ru"], "test")


@pytest.fixture(scope="module")
def tiny_xnli_model(tiny_encoder, tmp_path_factory):
    """An untrained XNLI head on the tiny encoder, saved as a fine-tuned model is."""
    from xlt.engine.model import ModelSpec, build_model, load_encoder, save_model

    encoder, tokenizer = load_encoder(str(tiny_encoder))
    out = tmp_path_factory.mktemp("cka") / "model"
    save_model(build_model(ModelSpec(task="xnli"), encoder), tokenizer, out, {"train_config": {"max_length": 32, "seed": 1}})
    return out


def test_the_script_writes_cka_per_language(tiny_xnli_model, tmp_path):
    data_dir = tmp_path / "xnli"
    for lang in ("en", "de", "fr"):
        write_jsonl(data_dir / lang / "test.jsonl", pair_records(lang, 20))
    write_jsonl(data_dir / "es" / "test.jsonl", pair_records("es", 19))
    out = tmp_path / "cka.json"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("XLT_ZYGOTE", None)
    cmd = [sys.executable, str(REPO / "workflow_scripts" / "paper_job.py"), "xmixup", "cka", "--model-dir",
           str(tiny_xnli_model), "--data-dir", str(data_dir), "--split", "test", "--out", str(out), "--threads", "1", "--langs"]
    run = subprocess.run([*cmd, "de", "en", "fr"], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    res = json.loads(out.read_text())
    assert list(res["cka"]) == ["de", "fr"] and res["n"] == {"en": 20, "de": 20, "fr": 20}
    assert all(0 < v <= 1 for v in res["cka"].values()) and res["max_length"] == 32 and res["source"] == "en"
    assert set(res["provenance"]["data_sha256"]) and res["model"]["weights_sha256"]
    bad = subprocess.run([*cmd, "en", "es"], capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 1 and "es/test.jsonl: 19 rows, not parallel to" in bad.stderr


def test_the_job_writes_deterministic_pca_coordinates_beside_an_unchanged_cka_file(tiny_xnli_model, tmp_path):
    """Figure 1's sidecar: per language the first `pca_rows` rows' two coordinates, the same on a
    rerun; the CKA file is byte for byte the one written without the sidecar."""
    from xlt.papers.xmixup.cka import PCA_ROWS, cka_job

    data_dir = tmp_path / "xnli"
    for lang in ("en", "de", "fr"):
        write_jsonl(data_dir / lang / "test.jsonl", pair_records(lang, 20))
    job = {"model_dir": tiny_xnli_model, "data_dir": data_dir, "langs": ["de", "en", "fr"], "split": "test", "device": "cpu"}
    cka_job(**job, out=tmp_path / "alone.json")
    cka_job(**job, out=tmp_path / "a.json", pca_out=tmp_path / "a.pca.json", pca_rows=8)
    cka_job(**job, out=tmp_path / "b.json", pca_out=tmp_path / "b.pca.json", pca_rows=8)
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "alone.json").read_bytes()
    assert (tmp_path / "a.pca.json").read_bytes() == (tmp_path / "b.pca.json").read_bytes()
    pca = json.loads((tmp_path / "a.pca.json").read_text())
    assert sorted(pca["coords"]) == ["de", "en", "fr"] and pca["n"] == {"en": 8, "de": 8, "fr": 8}
    assert all(np.asarray(c).shape == (8, 2) for c in pca["coords"].values())
    assert pca["rows_per_language"] == 8 and len(pca["explained_variance_ratio"]) == 2
    # centred on the rows it was fitted on: the coordinates of all languages together average zero
    assert np.abs(np.concatenate([np.asarray(c) for c in pca["coords"].values()]).mean(axis=0)).max() < 1e-9
    cka_job(**job, out=tmp_path / "c.json", pca_out=tmp_path / "c.pca.json")  # fewer rows than the default cap
    full = json.loads((tmp_path / "c.pca.json").read_text())
    assert PCA_ROWS == 200 and full["rows_per_language"] == 200 and full["n"] == {"en": 20, "de": 20, "fr": 20}


@pytest.fixture(scope="module")
def tiny_xmixup_model(tiny_encoder, tmp_path_factory):
    """An untrained XNLI head with the xmixup extra (mixup in the first layer) on the tiny encoder."""
    from xlt.engine.model import ModelSpec, build_model, load_encoder, save_model

    encoder, tokenizer = load_encoder(str(tiny_encoder))
    out = tmp_path_factory.mktemp("cka-mixup") / "model"
    spec = ModelSpec(task="xnli", extras=[{"name": "xmixup", "layer": 1}])
    save_model(build_model(spec, encoder), tokenizer, out, {"train_config": {"max_length": 32, "seed": 1}})
    return out


def test_an_xmixup_model_is_read_from_its_mixed_target_states_with_the_unmixed_ones_beside(tiny_xmixup_model, tmp_path):
    """Table 7 and Figure 1 read what X-Mixup predicts from: each target with its English side
    mixed in (a record without one, English, with itself); the unmixed reading is kept apart."""
    import torch

    from xlt.engine.model import load_model
    from xlt.papers.xmixup.cka import cka_job, sentence_representations

    model, tok, _ = load_model(tiny_xmixup_model)
    en = pair_records("en", 12)
    de = [{**r, "source": {"text": e["text"], "text_pair": e["text_pair"]}} for r, e in zip(pair_records("de", 12), en)]
    mixed = sentence_representations(model, tok, de, 32, 5, "cpu", mixed=True)
    plain = sentence_representations(model, tok, de, 32, 5, "cpu")
    assert not np.allclose(mixed, plain, atol=1e-4)
    # by hand: the model's paired forward, the target's last layer mean-pooled over its real tokens
    batch = tok([r["text"] for r in de[:3]], [r["text_pair"] for r in de[:3]], padding=True, return_tensors="pt")
    src = tok([e["text"] for e in en[:3]], [e["text_pair"] for e in en[:3]], padding=True, return_tensors="pt")
    with torch.no_grad():
        h = model({**batch, "source": dict(src)})["target_features"]
    m = batch["attention_mask"].unsqueeze(-1).float()
    np.testing.assert_allclose(mixed[:3], ((h * m).sum(1) / m.sum(1)).double().numpy(), rtol=1e-5, atol=1e-6)
    itself = [{**e, "source": {"text": e["text"], "text_pair": e["text_pair"]}} for e in en]
    np.testing.assert_array_equal(sentence_representations(model, tok, en, 32, 5, "cpu", mixed=True),
                                  sentence_representations(model, tok, itself, 32, 5, "cpu", mixed=True))
    data_dir = tmp_path / "xnli.translate_test"
    write_jsonl(data_dir / "en" / "test.jsonl", itself)
    write_jsonl(data_dir / "de" / "test.jsonl", de)
    res = cka_job(tiny_xmixup_model, data_dir, ["en", "de"], "test", tmp_path / "cka.json", device="cpu")
    assert res["representations"] == "mixed" and set(res["cka"]) == set(res["cka_unmixed"]) == {"de"}
    assert res["cka"]["de"] != pytest.approx(res["cka_unmixed"]["de"])
