"""Where the real datasets come from (`catalog`) and how they are fetched (`fetch`).

Readers of the fetched files live in `xlt.formats`; this package only gets the bytes into
the raw layout of docs/data.md, verified.
"""

from xlt.sources.catalog import Source, catalog, get_source, sources_of_family
from xlt.sources.fetch import FetchConfig, download, extract, fetch_hub_files, fetch_source

__all__ = [
    "FetchConfig",
    "Source",
    "catalog",
    "download",
    "extract",
    "fetch_hub_files",
    "fetch_source",
    "get_source",
    "sources_of_family",
]
