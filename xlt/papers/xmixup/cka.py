"""xmixup's representation analysis (its Section 3, Tables 2 and 7, Figure 3): linear CKA
(Kornblith et al. 2019) between English and a target language's sentence representations on a
parallel test set, and its Spearman correlation with transfer performance.

Linear CKA of X (n, d1) and Y (n, d2), rows the same n examples, features centred:

    CKA(X, Y) = ‖YᵀX‖²_F / (‖XᵀX‖_F · ‖YᵀY‖_F)

(the paper's Eq. 1 as printed squares the two norms of the denominator too; that quantity is
not invariant to scaling and CKA(X, X) ≠ 1, so we follow Kornblith et al.). A sentence's
representation is the mean over its real tokens of the fine-tuned encoder's last layer, the
pair encoded as evaluation encodes it (premise and hypothesis in one input).

An X-Mixup model's representations are the ones it predicts from (§4.3): each target sentence
run with its English side mixed in at the mixup layer (the record's "source", its translation
into English; a record without one, English included, mixed with itself, as the authors'
inference does) — `mixed`. Its unmixed representations (the target alone through the
encoder) are written beside them, labelled, as a second reading.

The same representations give Figure 1's PCA (`pca_coordinates`): one 2-D PCA per model,
fitted on the first `PCA_ROWS` rows of every language of the set together.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from xlt.errors import XltError
from xlt.io import read_json, read_jsonl, write_json
from xlt.provenance import provenance

PCA_ROWS = 200  # rows per language fitted and written (the first ones: the test sets are parallel)
PCA_RANDOM_STATE = 0


def _centred(X) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise XltError(f"CKA: expected a 2-d array (examples, features), got shape {X.shape}")
    return X - X.mean(axis=0, keepdims=True)


def _check(X: np.ndarray, Y: np.ndarray) -> None:
    if X.shape[0] != Y.shape[0]:
        raise XltError(f"CKA: {X.shape[0]} and {Y.shape[0]} rows; the two sides must hold the same examples")
    if X.shape[0] < 2:
        raise XltError("CKA: at least 2 examples are needed (features are centred)")


def linear_cka(X, Y) -> float:
    """Linear CKA, feature-space form: ‖YᵀX‖²_F / (‖XᵀX‖_F ‖YᵀY‖_F) of the centred features.
    NaN when one side is constant (zero after centring)."""
    X, Y = _centred(X), _centred(Y)
    _check(X, Y)
    denom = np.linalg.norm(X.T @ X) * np.linalg.norm(Y.T @ Y)
    return float(np.linalg.norm(Y.T @ X) ** 2 / denom) if denom > 0 else float("nan")


def _hsic(K: np.ndarray, L: np.ndarray) -> float:
    n = K.shape[0]
    H = np.eye(n) - np.full((n, n), 1.0 / n)
    return float(np.trace(K @ H @ L @ H)) / (n - 1) ** 2


def linear_cka_hsic(X, Y) -> float:
    """Linear CKA, kernel form: HSIC(K, L) / sqrt(HSIC(K, K) HSIC(L, L)), K = XXᵀ, L = YYᵀ,
    centred by H = I − 11ᵀ/n inside HSIC. O(n²) memory: used to check `linear_cka`."""
    X, Y = np.asarray(X, dtype=np.float64), np.asarray(Y, dtype=np.float64)
    _check(X, Y)
    K, L = X @ X.T, Y @ Y.T
    return _hsic(K, L) / np.sqrt(_hsic(K, K) * _hsic(L, L))


def spearman(cka: dict[str, float], scores: dict[str, float]) -> dict:
    """Spearman's ρ (and its p-value) between the CKA and the performance of the languages both
    hold (the paper's Table 2)."""
    # deferred: loads scipy only when this runs
    from scipy.stats import spearmanr

    langs = [lang for lang in cka if lang in scores]
    if len(langs) < 3:
        raise XltError(f"Spearman of CKA vs performance: {len(langs)} languages in common ({', '.join(langs)}); need 3")
    res = spearmanr([cka[lang] for lang in langs], [scores[lang] for lang in langs])
    return {"rho": float(res.statistic), "p": float(res.pvalue), "languages": langs}


def pca_coordinates(reps: dict[str, np.ndarray], rows: int = PCA_ROWS, random_state: int = PCA_RANDOM_STATE) -> dict:
    """Figure 1's 2-D PCA of one model: sklearn's PCA (full SVD, `random_state`) fitted on the
    first `rows` rows of every language's representations together; per language those rows'
    two coordinates. {"coords": {lang: [[pc1, pc2], ...]}, "n": {lang: rows}, "explained_variance_ratio",
    "rows_per_language", "random_state", "fitted_on"}."""
    # deferred: loads sklearn only when this runs
    from sklearn.decomposition import PCA

    if rows < 1:
        raise XltError(f"PCA: rows per language must be at least 1, got {rows}")
    langs = list(reps)
    parts = [np.asarray(reps[lang], dtype=np.float64)[:rows] for lang in langs]
    X = np.concatenate(parts)
    if X.shape[0] < 2:
        raise XltError(f"PCA: {X.shape[0]} rows in all; need at least 2")
    pca = PCA(n_components=2, svd_solver="full", random_state=random_state).fit(X)
    Z, out, start = pca.transform(X), {}, 0
    for lang, part in zip(langs, parts, strict=True):
        out[lang] = Z[start:start + len(part)].tolist()
        start += len(part)
    return {"coords": out, "n": {lang: len(part) for lang, part in zip(langs, parts, strict=True)},
            "explained_variance_ratio": pca.explained_variance_ratio_.tolist(), "rows_per_language": rows,
            "random_state": random_state, "fitted_on": "the first rows_per_language rows of every language together"}


# ---- representations of a fine-tuned model on a parallel test set ---------------------


def parallel_records(data_dir: str | Path, langs: list[str], split: str) -> dict[str, list[dict]]:
    """Each language's records of `split`, checked parallel row by row: the same count and the
    same label in every row as the first language's (XNLI and PAWS-X test sets are translations
    of the same examples, in the same order). Raises XltError naming both files otherwise."""
    files = {lang: Path(data_dir) / lang / f"{split}.jsonl" for lang in langs}
    for path in files.values():
        if not path.is_file():
            raise XltError(f"{path}: missing (CKA needs each language's {split} split)")
    recs = {lang: read_jsonl(path) for lang, path in files.items()}
    first = langs[0]
    for lang in langs[1:]:
        a, b = recs[first], recs[lang]
        if len(a) != len(b):
            raise XltError(f"{files[lang]}: {len(b)} rows, not parallel to {files[first]} ({len(a)} rows)")
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            if x.get("label") != y.get("label"):
                raise XltError(f"{files[lang]}: row {k} (label {y.get('label')!r}) is not parallel to "
                               f"{files[first]} row {k} (label {x.get('label')!r})")
    return recs


def _tokenized(tokenizer, chunk: list[dict], max_length: int) -> dict:
    """A chunk of records tokenised as evaluation does: `text` and `text_pair` (if any) as one
    input, or a tagging record's `tokens` as pre-split words (truncated to `max_length`)."""
    if "tokens" in chunk[0]:  # a tagging record (POS, NER): its words as the tagger reads them
        return tokenizer([r["tokens"] for r in chunk], is_split_into_words=True, padding=True,
                         truncation=True, max_length=max_length, return_tensors="pt")
    pairs = [r["text_pair"] for r in chunk] if "text_pair" in chunk[0] else None
    return tokenizer([r["text"] for r in chunk], pairs, padding=True, truncation=True,
                     max_length=max_length, return_tensors="pt")


def is_mixup_model(model) -> bool:
    """The model carries the X-Mixup extra (the one that reads the paired source side): it
    predicts from mixed target states."""
    return getattr(model, "source_reader", None) is not None


def sentence_representations(model, tokenizer, records: list[dict], max_length: int, batch_size: int = 64,
                             device=None, mixed: bool = False) -> np.ndarray:
    """(len(records), hidden) float64: per record, the mean over its real tokens of the encoder's
    last hidden layer (eval mode), the record tokenised as evaluation does (`_tokenized`).
    `mixed` (an X-Mixup model): the target's last layer with its English side mixed in
    (xlt.engine.model.TaskModel.with_source): the record's "source", else the record itself."""
    # deferred: loads torch only when this runs
    import torch

    # deferred: loads torch only when this runs
    from xlt.engine.fastpath import encode

    if mixed and not is_mixup_model(model):
        raise XltError("mixed representations: the model has no xmixup extra")
    device = device or next(model.parameters()).device
    model.eval()
    out = []
    with torch.no_grad():
        for i in range(0, len(records), batch_size):
            chunk = records[i:i + batch_size]
            batch = {k: v.to(device) for k, v in _tokenized(tokenizer, chunk, max_length).items()}
            if mixed:
                source = _tokenized(tokenizer, [{**r, **r.get("source", {})} for r in chunk], max_length)
                h = model({**batch, "source": {k: v.to(device) for k, v in source.items()}})["target_features"].float()
            else:
                h = encode(model.encoder, batch["input_ids"], batch["attention_mask"], batch.get("token_type_ids")).float()
            mask = batch["attention_mask"].unsqueeze(-1).to(h.dtype)
            out.append(((h * mask).sum(1) / mask.sum(1)).cpu().double().numpy())
    return np.concatenate(out)


def cka_job(model_dir: str | Path, data_dir: str | Path, langs: list[str], split: str, out: str | Path,
            source: str = "en", max_length: int | None = None, batch_size: int = 64, device: str = "auto",
            pca_out: str | Path | None = None, pca_rows: int = PCA_ROWS) -> dict:
    """CKA between `source` and each other language of `langs` for one fine-tuned model; writes
    {"cka": {lang: value}, "n": {lang: rows}, "source", "split", "max_length", "model", "provenance"}.
    `pca_out`: also the 2-D PCA coordinates of every language (`pca_coordinates`), with the same
    model and provenance keys; the CKA file is the same with or without it."""
    # deferred: loads safetensors, torch only when this runs
    from xlt.engine.model import load_model
    from xlt.engine.runtime import pick_device

    langs = [source, *[lang for lang in dict.fromkeys(langs) if lang != source]]
    recs = parallel_records(data_dir, langs, split)
    dev = pick_device(device)
    model, tokenizer, meta = load_model(model_dir, dev)
    max_length = max_length or (meta.get("train_config") or {}).get("max_length", 128)
    mixed = is_mixup_model(model)
    reps = {lang: sentence_representations(model, tokenizer, r, max_length, batch_size, dev, mixed) for lang, r in recs.items()}
    result = {
        "cka": {lang: linear_cka(reps[source], reps[lang]) for lang in langs if lang != source},
        "representations": "mixed" if mixed else "plain",
        "n": {lang: len(recs[lang]) for lang in langs},
        "source": source, "split": split, "max_length": max_length,
        "model": {"dir": str(model_dir), "weights_sha256": read_json(Path(model_dir) / "xlt_model.json").get("weights_sha256")},
        "provenance": provenance({"model": str(model_dir), "langs": langs, "split": split, "max_length": max_length},
                                 meta.get("train_config", {}).get("seed"),
                                 [Path(data_dir) / lang / f"{split}.jsonl" for lang in langs]),
    }
    if mixed:  # the second, labelled reading: the same sentences through the encoder alone
        plain = {lang: sentence_representations(model, tokenizer, r, max_length, batch_size, dev) for lang, r in recs.items()}
        result["cka_unmixed"] = {lang: linear_cka(plain[source], plain[lang]) for lang in langs if lang != source}
    write_json(out, result)
    if pca_out is not None:
        write_json(pca_out, {**pca_coordinates(reps, pca_rows), "source": source, "split": split,
                             "max_length": max_length, "model": result["model"], "provenance": result["provenance"]})
    return result
