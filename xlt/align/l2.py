"""L2 distances between last-layer word vectors of related (aligned) and unrelated word pairs
(adjust's Figures 1-2; §5.4 and Appendix B of the paper).

- Sentences: `sentences` aligned pairs drawn from the pool with `seed` (`sample.choose`).
- Words: the pool's tokens, fed to the encoder's tokenizer as pre-split words; a word's
  vector is the mean of its subwords' last-layer vectors (the paper's "avg"). A word cut off
  by `max_length`, whole or in the middle (some of its subwords kept, not all), has no vector
  and its links are skipped.
- Related pairs: the 1-to-1 links of those sentences (at most `word_pairs`, drawn with `seed`).
- Unrelated pairs: for every related pair, the same English word against a random word of
  another sentence pair's target side ("unpaired sentences" in the paper). Keeping the English
  word makes the two histograms differ in relatedness only.

The per-pair distances go to a CSV (kind, distance, words); `make_figures` draws the
histograms: one panel per language pair, one row per model (the original encoder for now;
adjusted and fine-tuned rows are added when those models exist).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from xlt.align.sample import choose, iter_chosen
from xlt.errors import XltError
from xlt.io import sha256_file, write_json, write_text
from xlt.provenance import code_version
from collections import Counter

COLUMNS = ("kind", "distance", "en_word", "xx_word")


@dataclass(frozen=True)
class L2Config:
    sentences: int = 1000  # sentence pairs drawn from the pool
    word_pairs: int = 5000  # related pairs kept (as many unrelated ones)
    seed: int = 1
    max_length: int = 128  # subwords per sentence, [CLS] and [SEP] included
    batch_size: int = 32


def load_encoder(name_or_path: str, revision: str | None = None):
    """The pretrained encoder (no head) and its fast tokenizer, from the Hub or a directory
    (the engine's loader: safetensors only, weights checked)."""
    # deferred: loads safetensors, torch only when this runs
    from xlt.engine.model import load_encoder as engine_load_encoder

    model, tokenizer = engine_load_encoder(name_or_path, revision)
    return model.eval(), tokenizer


def whole_word_ids(tokenizer, batch: list[list[str]], enc) -> list[list[int]]:
    """Per sentence of `batch`, the word of each position of its truncated encoding `enc`, -1
    where none ([CLS], [SEP], padding) and where the word was cut in the middle by truncation
    (fewer of its subwords kept than the untruncated encoding has): such a word counts as cut off."""

    full = tokenizer(batch, is_split_into_words=True, add_special_tokens=False, verbose=False)
    out = []
    for b in range(len(batch)):
        kept, total = enc.word_ids(b), Counter(full.word_ids(b))
        counts = Counter(kept)
        out.append([w if w is not None and counts[w] == total[w] else -1 for w in kept])
    return out


def word_vectors(model, tokenizer, sentences: list[list[str]], max_length: int, batch_size: int) -> list[np.ndarray]:
    """Per sentence, a (words × hidden) array of subword-averaged last-layer vectors; the rows
    of words cut off by `max_length`, whole or in the middle, are NaN."""
    import torch  # deferred with the engine: the align stage's other jobs never load torch

    # deferred: loads torch only when this runs
    from xlt.engine.fastpath import encode
    from xlt.engine.objectives import word_vectors as subword_means

    out = []
    for start in range(0, len(sentences), batch_size):
        batch = sentences[start : start + batch_size]
        enc = tokenizer(batch, is_split_into_words=True, truncation=True, max_length=max_length,
                        padding=True, return_tensors="pt")  # fmt: skip
        with torch.no_grad():  # the engine's forward (the model is in evaluation mode: Hugging Face's)
            hidden = encode(model, enc["input_ids"], enc["attention_mask"], enc.get("token_type_ids")).double()
        rows = torch.tensor(whole_word_ids(tokenizer, batch, enc))
        table, has, width = subword_means(hidden, rows)
        for b, words in enumerate(batch):
            vec = torch.full((len(words), hidden.shape[-1]), float("nan"), dtype=hidden.dtype)
            n = min(len(words), width)
            kept = has[b * width : b * width + n]
            vec[:n][kept] = table[b * width : b * width + n][kept]
            out.append(vec.numpy())
    return out


def distances(model, tokenizer, records: list[dict], cfg: L2Config) -> pd.DataFrame:
    """Related and unrelated word-pair distances over `records` (pool pairs with links)."""
    if len(records) < 2:
        raise XltError("L2 distances need at least two aligned sentence pairs (unrelated words come from another pair)")
    en = word_vectors(model, tokenizer, [r["src"] for r in records], cfg.max_length, cfg.batch_size)
    xx = word_vectors(model, tokenizer, [r["tgt"] for r in records], cfg.max_length, cfg.batch_size)
    has = [~np.isnan(v).any(axis=1) for v in xx]
    related = [(k, i, j) for k, r in enumerate(records) for i, j in r["links"]
               if not np.isnan(en[k][i]).any() and has[k][j]]  # fmt: skip
    rng = np.random.default_rng(cfg.seed)
    if len(related) > cfg.word_pairs:
        related = [related[t] for t in sorted(rng.choice(len(related), cfg.word_pairs, replace=False))]
    candidates = [k for k in range(len(records)) if has[k].any()]
    rows = []
    for k, i, j in related:
        rows.append(("related", float(np.linalg.norm(en[k][i] - xx[k][j])), records[k]["src"][i], records[k]["tgt"][j]))
        other = candidates[rng.integers(len(candidates))]
        while other == k:
            other = candidates[rng.integers(len(candidates))]
        j2 = int(rng.choice(np.flatnonzero(has[other])))
        rows.append(("unrelated", float(np.linalg.norm(en[k][i] - xx[other][j2])), records[k]["src"][i],
                     records[other]["tgt"][j2]))  # fmt: skip
    if not rows:
        raise XltError("L2 distances: no aligned word survives truncation to max_length")
    return pd.DataFrame(rows, columns=list(COLUMNS))


def l2_job(encoder: str, pool: str | Path, links: str | Path, cfg: L2Config, out_csv: str | Path,
           meta_out: str | Path, revision: str | None = None) -> pd.DataFrame:  # fmt: skip
    """Draw the sentences, encode them, write the distances CSV and its provenance."""
    model, tokenizer = load_encoder(encoder, revision)
    records = list(iter_chosen(pool, links, choose(pool, links, cfg.sentences, cfg.seed, at_most=True)))
    table = distances(model, tokenizer, records, cfg)
    write_text(out_csv, table.to_csv(index=False, float_format="%.10g"))
    write_json(meta_out, {"encoder": encoder, "revision": revision, "config": asdict(cfg), "sentences": len(records),
                          "pairs": table["kind"].value_counts().to_dict(), "pool_sha256": sha256_file(pool),
                          "links_sha256": sha256_file(links), "code": code_version()})  # fmt: skip
    return table
