"""xmixup's Figure 4 (its §5, Q1): language centroids of the POS test set.

A language's centroid (Rosenberg & Hirschberg 2007, as the paper cites) is the mean of its
sentences' representations; a sentence's representation is the mean over its real tokens of a
fine-tuned encoder's last layer (`cka.sentence_representations`, the one CKA and Figure 1 use),
the sentence's words given as the tagger reads them (pre-split); an X-Mixup model's, each
sentence mixed with itself (no English side: the authors' inference then mixes an input with
itself), as it predicts. The test sets need not be parallel. The job writes each language's centroid, its sentence count, its radius (the root
mean squared distance of its sentences to the centroid) and the centroid's Euclidean distance
to the source's; the figure projects one model's centroids to 2-D with a PCA fitted on those
centroids alone (`centroid_pca`), so each panel has its own axes and the distances in the
full space, beside the radii, are what compare across panels.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from xlt.errors import XltError
from xlt.io import read_json, read_jsonl, write_json
from xlt.provenance import provenance
from xlt.papers.xmixup.cka import is_mixup_model, sentence_representations

PCA_RANDOM_STATE = 0


def language_centroids(reps: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each language's mean representation (rows: its sentences)."""
    out = {}
    for lang, X in reps.items():
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] < 1:
            raise XltError(f"centroid of {lang}: expected a 2-d array with at least one row, got shape {X.shape}")
        out[lang] = X.mean(axis=0)
    return out


def radii(reps: dict[str, np.ndarray], centroids: dict[str, np.ndarray]) -> dict[str, float]:
    """Each language's root mean squared Euclidean distance of its sentences to its centroid."""
    return {lang: float(np.sqrt(((np.asarray(X, dtype=np.float64) - centroids[lang]) ** 2).sum(axis=1).mean()))
            for lang, X in reps.items()}


def distances_to(centroids: dict[str, np.ndarray], source: str) -> dict[str, float]:
    """Euclidean distance of every other language's centroid to the source's."""
    if source not in centroids:
        raise XltError(f"centroids: no {source} (the source language) among {', '.join(centroids)}")
    return {lang: float(np.linalg.norm(np.asarray(c) - np.asarray(centroids[source])))
            for lang, c in centroids.items() if lang != source}


def centroid_pca(centroids: dict[str, list[float]], random_state: int = PCA_RANDOM_STATE) -> dict:
    """One model's centroids in 2-D: sklearn's PCA (full SVD) fitted on the centroids themselves.
    {"coords": {lang: [pc1, pc2]}, "explained_variance_ratio": [r1, r2]}."""
    # deferred: loads sklearn only when this runs
    from sklearn.decomposition import PCA

    langs = list(centroids)
    if len(langs) < 3:
        raise XltError(f"centroid PCA: {len(langs)} languages ({', '.join(langs)}); need at least 3 for two components")
    X = np.asarray([centroids[lang] for lang in langs], dtype=np.float64)
    pca = PCA(n_components=2, svd_solver="full", random_state=random_state).fit(X)
    Z = pca.transform(X)
    return {"coords": {lang: Z[i].tolist() for i, lang in enumerate(langs)},
            "explained_variance_ratio": pca.explained_variance_ratio_.tolist()}


def split_records(data_dir: str | Path, langs: list[str], split: str, max_sentences: int | None = None) -> dict[str, list[dict]]:
    """Each language's first `max_sentences` records (all: None) of `split`; a missing or empty
    file raises XltError naming it."""
    out = {}
    for lang in langs:
        path = Path(data_dir) / lang / f"{split}.jsonl"
        if not path.is_file():
            raise XltError(f"{path}: missing (the centroids need each language's {split} split)")
        recs = read_jsonl(path)[:max_sentences]
        if not recs:
            raise XltError(f"{path}: no records")
        out[lang] = recs
    return out


def centroids_job(model_dir: str | Path, data_dir: str | Path, langs: list[str], split: str, out: str | Path,
                  source: str = "en", max_length: int | None = None, batch_size: int = 64, device: str = "auto",
                  max_sentences: int | None = None) -> dict:
    """One fine-tuned model's language centroids on a test set (any task's records: tagging
    words, text, text pairs); writes {"centroids": {lang: vector}, "n", "radius",
    "distance_to_source", "source", "split", "max_length", "max_sentences", "model", "provenance"}."""
    # deferred: loads safetensors, torch only when this runs
    from xlt.engine.model import load_model
    from xlt.engine.runtime import pick_device

    langs = [source, *[lang for lang in dict.fromkeys(langs) if lang != source]]
    recs = split_records(data_dir, langs, split, max_sentences)
    dev = pick_device(device)
    model, tokenizer, meta = load_model(model_dir, dev)
    max_length = max_length or (meta.get("train_config") or {}).get("max_length", 128)
    mixed = is_mixup_model(model)
    reps = {lang: sentence_representations(model, tokenizer, r, max_length, batch_size, dev, mixed) for lang, r in recs.items()}
    centroids = language_centroids(reps)
    result = {
        "representations": "mixed" if mixed else "plain",
        "centroids": {lang: c.tolist() for lang, c in centroids.items()},
        "n": {lang: len(r) for lang, r in recs.items()},
        "radius": radii(reps, centroids),
        "distance_to_source": distances_to(centroids, source),
        "source": source, "split": split, "max_length": max_length, "max_sentences": max_sentences,
        "model": {"dir": str(model_dir), "weights_sha256": read_json(Path(model_dir) / "xlt_model.json").get("weights_sha256")},
        "provenance": provenance({"model": str(model_dir), "langs": langs, "split": split, "max_length": max_length,
                                  "max_sentences": max_sentences},
                                 meta.get("train_config", {}).get("seed"),
                                 [Path(data_dir) / lang / f"{split}.jsonl" for lang in langs]),
    }
    write_json(out, result)
    return result
