"""Seeded samples of aligned sentence pairs: N pairs per seed, each sample its own file.

A sample keeps a link only where its two words differ, as the adjust authors' pair filter
does (`filter_data_alignments`, pefimov/cross-lingual-adjustment): an identical pair (".",
a name, a number) would only pull a token towards itself. Only pairs with at least one link
left are drawn (a pair without links adds nothing to the alignment loss). A sample is one
draw: the adjustment's (`seed`), or another of the same pool, e.g. continual learning's
(`draw="continual"`: a fresh sample, not the adjustment's). Two streaming passes over the pool and its links: the first counts the
eligible pairs, the second writes the chosen ones, so memory holds indices, not sentences.

Sample file (JSON lines): ``{"id", "src": [en tokens], "tgt": [xx tokens], "links": [[i, j], ...]}``
in pool order; its provenance JSON beside it names the backend (version, settings), the pool
and links checksums, the seed and the size.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

from xlt.align.pool import iter_pool
from xlt.errors import DataFormatError, XltError
from xlt.formats.tsv import iter_pharaoh
from xlt.io import atomic_path, read_json, sha256_file, write_json
from xlt.provenance import code_version


def differing_links(rec: dict) -> dict:
    """The record with only the links whose two words differ (the authors' pair filter)."""
    return {**rec, "links": [link for link in rec["links"] if rec["src"][link[0]] != rec["tgt"][link[1]]]}


def iter_aligned(pool: str | Path, links: str | Path, *, identical: bool = True) -> Iterator[dict]:
    """Pool pairs with their final links, in pool order (the two files must have one line each);
    without `identical`, the links joining two identical words are dropped."""
    link_lines = iter_pharaoh(links)
    n = 0
    for _lineno, pair_id, src, tgt in iter_pool(pool):
        n += 1
        row = next(link_lines, None)
        if row is None:
            raise DataFormatError(links, None, f"ends after {n - 1} lines; the pool {pool} has more pairs")
        rec = {"id": pair_id, "src": src, "tgt": tgt, "links": row}
        yield rec if identical else differing_links(rec)
    if next(link_lines, None) is not None:
        raise DataFormatError(links, n + 1, f"more lines than the pool {pool} has pairs ({n})")


def choose(pool: str | Path, links: str | Path, n: int, seed: int, *, at_most: bool = False, identical: bool = True,
           draw: str = "") -> list[int]:
    """Pool positions of `n` pairs drawn without replacement among those with links, sorted;
    with `at_most`, fewer when the pool has fewer aligned pairs. A named `draw` is its own
    random stream of the same seed (another sample, as reproducible)."""
    eligible = [k for k, rec in enumerate(iter_aligned(pool, links, identical=identical)) if rec["links"]]
    if at_most:
        n = min(n, len(eligible))
    if n > len(eligible):
        raise XltError(f"sample of {n} pairs asked, but the pool {pool} has only {len(eligible)} aligned pairs "
                       "(align.samples sizes must not exceed it)")  # fmt: skip
    return sorted(random.Random(f"{draw}-{seed}" if draw else seed).sample(eligible, n))


def iter_chosen(pool: str | Path, links: str | Path, positions: list[int], *, identical: bool = True) -> Iterator[dict]:
    wanted = set(positions)
    for k, rec in enumerate(iter_aligned(pool, links, identical=identical)):
        if k in wanted:
            yield rec


def write_sample(pool: str | Path, links: str | Path, align_meta: str | Path, n: int, seed: int,
                 out: str | Path, meta_out: str | Path, draw: str = "") -> dict:  # fmt: skip
    """Draw `n` aligned pairs with `seed` (and `draw`), identical-word links dropped; write them
    (JSON lines) and their provenance."""
    positions = choose(pool, links, n, seed, identical=False, draw=draw)
    return write_records(iter_chosen(pool, links, positions, identical=False), pool, links, align_meta, out, meta_out,
                         {"size": n, "seed": seed, **({"draw": draw} if draw else {}), "identical_links": "dropped"})


def write_records(records: Iterator[dict], pool: str | Path, links: str | Path, align_meta: str | Path,
                  out: str | Path, meta_out: str | Path, meta: dict) -> dict:  # fmt: skip
    """Write a sample's records (JSON lines) and its provenance: `meta` with the backend that
    made the links, the pool, links and sample checksums and the number of links."""
    n_links = 0
    with atomic_path(out) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for rec in records:
            n_links += len(rec["links"])
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    aligned = read_json(align_meta)
    meta = {
        **meta,
        "links": n_links,
        "backend": aligned["backend"],
        "pool_sha256": sha256_file(pool),
        "links_sha256": sha256_file(links),
        "sample_sha256": sha256_file(out),
        "code": code_version(),
    }
    write_json(meta_out, meta)
    return meta
