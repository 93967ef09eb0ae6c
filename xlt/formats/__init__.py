"""Strict readers (and writers) of the real source formats listed in docs/data.md.

Each reader turns one raw file into the normalised records of docs/data.md (a list of
dicts) and fails loudly with `DataFormatError(path, line, message)` on anything it does not
understand. Each writer writes atomically through `xlt.io.atomic_path`; the tiny world
(`xlt.world`) uses the writers so that the tiny run exercises the same readers as the full one.
"""

from xlt.formats.conllu import format_conllu, read_conllu, write_conllu
from xlt.formats.hub_parquet import (
    read_hub_parquet,
    read_pawsx,
    read_squad_parquet,
    read_tydiqa,
    read_wikiann,
    read_xnli,
    write_parquet,
)
from xlt.formats.marc_jsonl import read_marc, write_marc
from xlt.formats.squad_json import read_squad, write_squad
from xlt.formats.tsv import (
    read_gold_pharaoh,
    read_pharaoh,
    read_wikimatrix,
    read_xnli_mt,
    read_xtreme_translate_test,
    read_xtreme_translated,
    tokenize,
    write_pharaoh,
    write_tsv,
    write_wikimatrix,
)

__all__ = [
    "format_conllu", "read_conllu", "write_conllu",
    "read_hub_parquet", "read_pawsx", "read_squad_parquet", "read_tydiqa", "read_wikiann", "read_xnli", "write_parquet",
    "read_marc", "write_marc", "read_squad", "write_squad",
    "read_gold_pharaoh", "read_pharaoh", "read_wikimatrix", "read_xnli_mt", "read_xtreme_translate_test", "read_xtreme_translated",
    "tokenize",
    "write_pharaoh", "write_tsv", "write_wikimatrix",
]  # fmt: skip
