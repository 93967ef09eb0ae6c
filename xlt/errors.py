"""One exception type for every user-facing failure.

Its message is meant to be printed alone, as one line, by the workflow scripts: it names
the file and line (or the config key) and what was expected.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path


class XltError(Exception):
    """A failure the user can act on: bad config, malformed data, checksum mismatch, NaN loss."""


def unknown(kind: str, name: str, allowed) -> XltError:
    """`unknown <kind> '<name>'; allowed: …` and, for a near miss, `Did you mean …?`"""
    allowed = sorted(allowed)
    close = difflib.get_close_matches(name, allowed, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return XltError(f"unknown {kind} {name!r}; allowed: {', '.join(allowed) or '(none)'}.{hint}")


def check_config_ref(kind: str, key: str, name: str, allowed) -> None:
    """Config key `key` names a `kind` (encoder, language set, …) the config declares in `allowed`."""
    if name not in allowed:
        close = difflib.get_close_matches(name, list(allowed), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        if kind == "language set" and isinstance(name, str) and LANGUAGE_CODE.fullmatch(name):
            hint += f" {name!r} is a language: {LANGSET_HINT}"
        raise XltError(f"config key {key}: unknown {kind} {name!r}; allowed: {', '.join(sorted(allowed))}.{hint}")


LANGUAGE_CODE = re.compile(r"[a-z]{2,3}")
# What a key that names a language set says when given languages (docs/adding-a-language.md)
LANGSET_HINT = ("languages go through named language sets: declare one under language_sets "
                "(e.g. language_sets: {my_set: [en, de]}) and give its name (docs/adding-a-language.md)")


def langset_hint(value) -> str | None:
    """The hint for a language-set key given a language or a list of languages, else None."""
    if isinstance(value, list) or (isinstance(value, str) and LANGUAGE_CODE.fullmatch(value)):
        return f"{value!r} is not a language set's name: {LANGSET_HINT}"
    return None


class DataFormatError(XltError):
    """Malformed input data, located at `path:line`."""

    def __init__(self, path: str | Path, line: int | None, message: str):
        self.path = str(path)
        self.line = line
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")
