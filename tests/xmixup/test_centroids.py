"""xmixup Figure 4's language centroids (xlt/papers/xmixup/centroids.py): the centroid, radius,
distance and 2-D PCA against hand computations, and the job (its workflow script) on a tiny
model reading tagging records."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from xlt.errors import XltError
from xlt.io import write_jsonl
from xlt.papers.xmixup.centroids import centroid_pca, centroids_job, distances_to, language_centroids, radii

REPO = Path(__file__).resolve().parents[2]


def test_centroid_radius_and_distance_by_hand():
    reps = {"en": np.array([[0.0, 0.0], [2.0, 0.0], [1.0, 3.0]]), "de": np.array([[4.0, 4.0], [6.0, 4.0]])}
    c = language_centroids(reps)
    assert c["en"].tolist() == [1.0, 1.0] and c["de"].tolist() == [5.0, 4.0]
    # en: squared distances to (1, 1) are 2, 2, 4 -> sqrt(8 / 3); de: 1 and 1 -> 1
    assert radii(reps, c) == pytest.approx({"en": np.sqrt(8 / 3), "de": 1.0})
    assert distances_to(c, "en") == pytest.approx({"de": 5.0})  # (4, 3)
    with pytest.raises(XltError, match="no fr"):
        distances_to(c, "fr")
    with pytest.raises(XltError, match="centroid of zh"):
        language_centroids({"zh": np.zeros((0, 2))})


def test_the_pca_of_centroids_in_a_plane_keeps_their_distances():
    """Four centroids in a 2-D plane of a 5-D space: the two components span the plane, so the
    projected distances are the full ones, the coordinates are centred and explain everything."""
    rng = np.random.default_rng(0)
    basis, _ = np.linalg.qr(rng.normal(size=(5, 2)))
    plane = {"en": [0.0, 0.0], "de": [3.0, 0.0], "ru": [0.0, 4.0], "zh": [3.0, 4.0]}
    centroids = {x: (basis @ np.array(p) + 7.0).tolist() for x, p in plane.items()}
    pca = centroid_pca(centroids)
    Z = {x: np.array(v) for x, v in pca["coords"].items()}
    assert list(Z) == ["en", "de", "ru", "zh"]
    for a in plane:
        for b in plane:
            assert np.linalg.norm(Z[a] - Z[b]) == pytest.approx(np.linalg.norm(np.subtract(plane[a], plane[b])))
    assert np.abs(np.mean(list(Z.values()), axis=0)).max() < 1e-9
    assert sum(pca["explained_variance_ratio"]) == pytest.approx(1.0)
    assert pca["explained_variance_ratio"][0] == pytest.approx(16 / 25)  # variance 4 along ru, 2.25 along de
    assert centroid_pca(centroids) == pca  # deterministic
    with pytest.raises(XltError, match="need at least 3"):
        centroid_pca({"en": [0.0, 1.0], "de": [1.0, 0.0]})


def tagged(lang: str, n: int) -> list[dict]:
    words = ["ka", "lo", "mi", "ten", "Anna", "Berlin", "ro", "su"]
    return [{"id": f"{lang}-{k}", "tokens": [words[(k * (2 if lang == "en" else 3) + j) % 8] for j in range(2 + k % 5)],
             "upos": ["NOUN"] * (2 + k % 5)} for k in range(n)]


@pytest.fixture(scope="module")
def tiny_model(tiny_encoder, tmp_path_factory):
    from xlt.engine.model import ModelSpec, build_model, load_encoder, save_model

    encoder, tokenizer = load_encoder(str(tiny_encoder))
    out = tmp_path_factory.mktemp("centroids") / "model"
    save_model(build_model(ModelSpec(task="xnli"), encoder), tokenizer, out, {"train_config": {"max_length": 32, "seed": 1}})
    return out


def test_the_job_averages_each_languages_sentence_representations(tiny_model, tmp_path):
    from xlt.engine.model import load_model
    from xlt.papers.xmixup.cka import sentence_representations

    data = tmp_path / "pos"
    sizes = {"en": 12, "de": 9, "ru": 7}
    for lang, n in sizes.items():
        write_jsonl(data / lang / "test.jsonl", tagged(lang, n))
    res = centroids_job(tiny_model, data, ["de", "en", "ru"], "test", tmp_path / "c.json", device="cpu", batch_size=4)
    assert list(res["centroids"]) == ["en", "de", "ru"] and res["n"] == sizes and res["max_length"] == 32
    model, tokenizer, _ = load_model(tiny_model, "cpu")
    for lang, n in sizes.items():  # by hand: every sentence encoded on its own (no padding), then the mean
        reps = np.stack([sentence_representations(model, tokenizer, [r], 32, device="cpu")[0] for r in tagged(lang, n)])
        assert np.asarray(res["centroids"][lang]) == pytest.approx(reps.mean(axis=0), abs=1e-5)
        assert res["radius"][lang] == pytest.approx(np.sqrt(((reps - reps.mean(axis=0)) ** 2).sum(axis=1).mean()), abs=1e-5)
    assert res["distance_to_source"]["de"] == pytest.approx(
        np.linalg.norm(np.subtract(res["centroids"]["de"], res["centroids"]["en"])))
    assert json.loads((tmp_path / "c.json").read_text())["centroids"] == res["centroids"]
    capped = centroids_job(tiny_model, data, ["en", "de", "ru"], "test", tmp_path / "d.json", device="cpu", max_sentences=5)
    assert capped["n"] == {"en": 5, "de": 5, "ru": 5} and capped["max_sentences"] == 5


def test_the_script_names_a_missing_language_file(tiny_model, tmp_path):
    data = tmp_path / "pos"
    for lang in ("en", "de", "fr"):
        write_jsonl(data / lang / "test.jsonl", tagged(lang, 6))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("XLT_ZYGOTE", None)
    cmd = [sys.executable, str(REPO / "workflow_scripts" / "paper_job.py"), "xmixup", "centroids", "--model-dir",
           str(tiny_model), "--data-dir", str(data), "--split", "test", "--out", str(tmp_path / "c.json"), "--max-sentences", "4", "--threads", "1", "--langs"]
    ok = subprocess.run([*cmd, "en", "de", "fr"], capture_output=True, text=True, env=env, timeout=120)
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert json.loads((tmp_path / "c.json").read_text())["n"] == {"en": 4, "de": 4, "fr": 4}
    bad = subprocess.run([*cmd, "en", "ru"], capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 1 and "ru/test.jsonl: missing" in bad.stderr
