"""Small WikiMatrix files and pools for the alignment tests (real formats, hand-made content)."""

from __future__ import annotations

import pytest

from xlt.formats.tsv import write_wikimatrix

# Score-sorted like the real files; a long pair, an identical pair and a low-scored pair.
ROWS = [
    (1.30, "the house is small .", "la casa es pequeña ."),
    (1.25, "the dog sleeps", "el perro duerme"),
    (1.20, "Berlin", "Berlin"),  # identical strings: dropped
    (1.15, " ".join(["word"] * 65), " ".join(["palabra"] * 65)),  # over 64 words: dropped
    (1.10, "a big house", "una casa grande"),
    (1.05, "the cat", "el gato"),
    (1.00, "not a translation", "nada que ver"),  # below 1.04: dropped
]


@pytest.fixture
def bitext(tmp_path):
    path = tmp_path / "WikiMatrix.en-es.tsv.gz"
    write_wikimatrix(path, ROWS)
    return path
