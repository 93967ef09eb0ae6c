"""dlfa's Table VI: how close a fine-tuned model puts English and its translations.

Per model: `sentences` rows drawn at random (one seeded draw, the same rows in every
language: XNLI test is parallel row by row) from the XNLI test sets; the premise of each row
is encoded alone, and its sentence embedding is the mean over its real tokens of the
features the head reads (after the DLFA fusion; the paper does not say which embedding, see
docs/papers.md). The value of a language is the mean over the rows of the cosine similarity
between the English sentence and its translation; a model's score is the mean over the
non-English languages.
"""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd
import torch

from xlt.errors import XltError
from xlt.io import read_jsonl, read_json, write_json, write_text
from xlt.provenance import provenance


def parallel_rows(data_dir: str | Path, langs: list[str], n: int, seed: int) -> dict[str, list[str]]:
    """The premises of `n` random rows of each language's XNLI test file, the same rows in each."""
    texts = {lang: [r["text"] for r in read_jsonl(Path(data_dir) / lang / "test.jsonl")] for lang in langs}
    sizes = {lang: len(t) for lang, t in texts.items()}
    if len(set(sizes.values())) != 1:
        raise XltError(f"{data_dir}: the test sets are not parallel (rows per language: {sizes})")
    size = next(iter(sizes.values()))
    if size < n:
        raise XltError(f"{data_dir}: {size} parallel test rows, fewer than the {n} sentences asked for")
    rows = sorted(random.Random(seed).sample(range(size), n))
    return {lang: [t[i] for i in rows] for lang, t in texts.items()}


@torch.no_grad()
def sentence_embeddings(model, tokenizer, texts: list[str], max_length: int) -> torch.Tensor:
    """(len(texts), hidden): the mean over real tokens of the model's features (eval mode)."""
    model.eval()
    batch = dict(tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt"))
    h = model.features(batch).float()
    mask = batch["attention_mask"].unsqueeze(-1).to(h.dtype)
    return (h * mask).sum(1) / mask.sum(1)


def similarities(model, tokenizer, sentences: dict[str, list[str]], source: str, max_length: int) -> dict[str, float]:
    """Language -> mean cosine similarity of its sentences with the `source` ones."""
    emb = {lang: sentence_embeddings(model, tokenizer, texts, max_length) for lang, texts in sentences.items()}
    return {lang: float(torch.nn.functional.cosine_similarity(emb[source], e, dim=-1).mean())
            for lang, e in emb.items() if lang != source}


def run_similarity_job(models: dict[str, str], data: str, langs: list[str], source: str, sentences: int,
                       sample_seed: int, model_seed: int, max_length: int, out_csv: str, out_json: str) -> pd.DataFrame:
    """`models`: "<task>:<setting>" -> directory of a model trained with `model_seed`.
    Writes one row per (task, model, lang) and the provenance beside it."""
    from xlt.engine.model import load_model  # torch: only in the job

    chosen = parallel_rows(data, langs, sentences, sample_seed)
    rows = []
    for key, path in models.items():
        task, _, setting = key.partition(":")
        model, tokenizer, _ = load_model(path)
        rows += [{"task": task, "model": setting, "lang": lang, "seed": model_seed, "value": v}
                 for lang, v in similarities(model, tokenizer, chosen, source, max_length).items()]
    frame = pd.DataFrame(rows)
    write_text(out_csv, frame.to_csv(index=False, float_format="%.10g"))
    write_json(out_json, {
        "sentences": sentences, "sample_seed": sample_seed, "languages": langs, "source": source,
        "models": {k: read_json(Path(p) / "xlt_model.json").get("weights_sha256") for k, p in models.items()},
        "provenance": provenance({"sentences": sentences, "sample_seed": sample_seed, "models": models}, model_seed,
                                 [Path(data) / lang / "test.jsonl" for lang in langs]),
    })
    return frame
