"""Word links between two token sequences: symmetrisation and the 1-to-1 filter.

A link is ``(i, j)``: token ``i`` of the English side, token ``j`` of the other side (0-based),
the order of Pharaoh files. Both operations are ours (not a backend's), so every backend's
output goes through the same code.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from xlt.errors import DataFormatError

Link = tuple[int, int]


def intersect(forward: Iterable[Link], reverse: Iterable[Link]) -> list[Link]:
    """Links both directions agree on (the symmetrisation of the adjust paper), sorted."""
    return sorted(set(forward) & set(reverse))


def one_to_one(links: Iterable[Link]) -> list[Link]:
    """Keep a link only when neither of its tokens takes part in another link.

    A token aligned to two tokens says nothing about which one its vector should match, so
    the whole group is dropped (not one member picked), as in the adjust paper's setting.
    """
    links = set(links)
    src = Counter(i for i, _ in links)
    tgt = Counter(j for _, j in links)
    return sorted((i, j) for i, j in links if src[i] == 1 and tgt[j] == 1)


def check_bounds(links: Iterable[Link], n_src: int, n_tgt: int, path: str | Path, lineno: int) -> None:
    """A link outside either sentence means the alignment file does not belong to the pool."""
    for i, j in links:
        if i >= n_src or j >= n_tgt:
            raise DataFormatError(
                path, lineno, f"link {i}-{j} outside the sentence pair ({n_src} x {n_tgt} tokens): "
                "is this alignment file from another pool?"
            )  # fmt: skip
