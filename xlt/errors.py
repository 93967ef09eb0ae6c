"""One exception type for every user-facing failure.

Its message is meant to be printed alone, as one line, by the workflow scripts: it names
the file and line (or the config key) and what was expected.
"""

from __future__ import annotations

from pathlib import Path


class XltError(Exception):
    """A failure the user can act on: bad config, malformed data, checksum mismatch, NaN loss."""


class DataFormatError(XltError):
    """Malformed input data, located at `path:line`."""

    def __init__(self, path: str | Path, line: int | None, message: str):
        self.path = str(path)
        self.line = line
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")
