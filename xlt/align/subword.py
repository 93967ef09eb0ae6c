"""The stage's subword branch (adjust Table 6's `subword alignment`): the aligner runs on the
encoder's subwords instead of words, and the adjustment uses those links as they are.

    pool.tsv --encoder's tokenizer--> subword-<encoder>/pool.tsv
        --backend, intersection, 1-to-1 (xlt.align.stage, unchanged)--> subword-<encoder>/<backend>/links.pharaoh
    + the word-level sample n<N>.seed<S>.jsonl (its pair ids)
        --> subword-<encoder>/<backend>/samples/n<N>.seed<S>.jsonl   (records with "unit": "subword")

- Each word is tokenised on its own, exactly as the word-level adjustment tokenises it
  (xlt.engine.features), so a word's subwords here are the subwords its vector averages there.
- The subword pool has the word pool's pairs, ids and order, one line each; only the tokens
  differ. It is aligned whole (the aligner's statistics need the corpus), with the backend
  that aligned the words.
- A subword sample holds the *same sentence pairs* as the word-level sample of that size and
  seed (our choice; the paper does not say how its subword run sampled): Table 6's rows then
  differ in how the links were made, not in which sentences were seen. A pair whose subwords
  got no 1-to-1 link stays in the sample (its [CLS] and [SEP] are still aligned).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from xlt.align.pool import iter_pool
from xlt.align.sample import iter_aligned, write_records
from xlt.errors import DataFormatError, XltError
from xlt.io import atomic_path, sha256_file

UNIT = "subword"  # the records' "unit": the engine's subword mode reads only these
BLOCK = 10_000  # pool pairs tokenised per tokenizer call: bounded memory on a 250K pool


def subword_pieces(tokenizer, words: list[str]) -> dict[str, list[str]]:
    """Each word's subword tokens, the word tokenised alone (an empty result: the unknown token)."""
    ids = tokenizer(words, add_special_tokens=False)["input_ids"] if words else []
    out = {}
    for w, x in zip(words, ids, strict=True):
        pieces = tokenizer.convert_ids_to_tokens(x) if x else [tokenizer.unk_token]
        for p in pieces:
            if not p or any(c.isspace() for c in p) or p == "|||":
                raise XltError(f"tokenizer {tokenizer.name_or_path!r} makes the token {p!r} of word {w!r}: the "
                               "subword pool needs tokens without whitespace (the pool's separator)")
        out[w] = pieces
    return out


def _blocks(pool: str | Path) -> Iterator[list[tuple[int, str, list[str], list[str]]]]:
    block = []
    for row in iter_pool(pool):
        block.append(row)
        if len(block) == BLOCK:
            yield block
            block = []
    if block:
        yield block


def build_subword_pool(pool: str | Path, tokenizer, out: str | Path) -> dict:
    """Write `pool` re-tokenised into subwords (same ids, same order); return the counts."""
    counts = {"pairs": 0, "en_words": 0, "en_subwords": 0, "xx_words": 0, "xx_subwords": 0, "longest": 0}
    with atomic_path(out) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for block in _blocks(pool):
            pieces = subword_pieces(tokenizer, sorted({w for _, _, src, tgt in block for w in src + tgt}))
            for _lineno, pair_id, src, tgt in block:
                s = [p for w in src for p in pieces[w]]
                t = [p for w in tgt for p in pieces[w]]
                f.write(f"{pair_id}\t{' '.join(s)}\t{' '.join(t)}\n")
                counts["pairs"] += 1
                counts["en_words"] += len(src)
                counts["en_subwords"] += len(s)
                counts["xx_words"] += len(tgt)
                counts["xx_subwords"] += len(t)
                counts["longest"] = max(counts["longest"], len(s), len(t))
    if counts["pairs"] == 0:
        raise XltError(f"{pool}: an empty pool has no subwords to align")
    split = {side: round(counts[f"{side}_subwords"] / counts[f"{side}_words"], 3) for side in ("en", "xx")}
    return {"counts": counts, "subwords_per_word": split, "tokenizer": tokenizer.name_or_path,
            "word_pool_sha256": sha256_file(pool)}


def sample_ids(word_sample: str | Path) -> list[str]:
    """The pair ids of a word-level sample (xlt.align.sample), in its order."""
    ids = []
    with open(word_sample, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                ids.append(json.loads(line)["id"])
            except (json.JSONDecodeError, KeyError, TypeError) as e:
                raise DataFormatError(word_sample, n, f"not a sample record ({e.__class__.__name__}: {e})") from None
    return ids


def write_subword_sample(pool: str | Path, links: str | Path, align_meta: str | Path, word_sample: str | Path,
                         size: int, seed: int, out: str | Path, meta_out: str | Path) -> dict:
    """The subword records of the word sample's pairs (same ids, pool order) with their subword
    links; its provenance names the word sample it follows."""
    wanted = set(sample_ids(word_sample))
    if len(wanted) != size:
        raise XltError(f"{word_sample}: {len(wanted)} pairs, but a sample of {size} is asked")
    if missing := sorted(wanted - {pair_id for _, pair_id, _, _ in iter_pool(pool)}):
        raise XltError(f"{word_sample}: {len(missing)} of its pairs are not in the subword pool {pool} (e.g. "
                       f"{missing[0]}): were the two made from different pools?")
    records = ({**rec, "unit": UNIT} for rec in iter_aligned(pool, links, identical=False) if rec["id"] in wanted)
    return write_records(records, pool, links, align_meta, out, meta_out,
                         {"size": size, "seed": seed, "unit": UNIT, "word_sample_sha256": sha256_file(word_sample)})
