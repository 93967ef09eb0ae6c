"""The lock file: what the first fetch of each unpinned file saw, so that every later fetch
gets the same bytes (docs/sources.md, "Pinning").

    sources:
      <catalog entry>:
        <raw path>:
          sha256: <64 hex>          # of the file as placed under the raw root
          size: <bytes>
          url: <where it came from> # URL files: the catalog's URL; Hub files: .../resolve/<commit>/...
          revision: <40-hex commit> # Hub files only: the commit the file was read at
          origin: network | hub | manual | existing
          date: 'YYYY-MM-DDTHH:MM:SSZ'
    encoders:
      <Hub model id>:
        <file>:                     # config.json, model.safetensors, tokenizer files
          (the same fields; revision: the commit the snapshot was read at)

Encoder snapshots (xlt.sources.encoders, the `prefetch` target) are locked like the data:
one commit per model, one entry per file.

One entry per file, keys sorted, one value per line: a new lock shows in a diff as added
lines only. The file is rewritten whole, atomically (a temporary file renamed over it), under
an exclusive `fcntl.flock` on a sidecar file (`.<name>.flock`, git-ignored), after reading it
again: two download jobs finishing at once both land their entries. An entry is added only
after its file is in place and verified; an entry is never changed (a disagreement is an
error naming both digests: delete the entry by hand to accept a new release).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from xlt.errors import XltError
from xlt.sources.catalog import COMMIT_RE, SHA256_RE

DEFAULT_LOCK = Path(__file__).resolve().with_name("catalog.lock.yaml")
VERSION = 1
HEADER = """\
# Written by xlt on the first fetch of each file that has no pin (docs/sources.md, "Pinning").
# Every later fetch is checked against it: commit this file. Do not edit entries; delete one
# to accept a new release of that file. `make pins` lists what is locked and what is not.
"""
_FIELDS = ("sha256", "size", "url", "revision", "origin", "date")
SECTIONS = ("sources", "encoders")  # catalog entries; encoder snapshots (Hub model ids)


class LockConflictError(XltError):
    """A lock entry disagrees with a pin, with another entry, or with what was fetched."""


def default_lock_path() -> Path:
    """The lock file kept in the repository beside catalog.yaml (config `download.lock` overrides)."""
    return DEFAULT_LOCK


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class LockEntry:
    sha256: str
    size: int
    url: str
    date: str
    revision: str | None = None  # Hub files: the commit the file was read at
    origin: str | None = None

    def as_yaml(self) -> dict:
        values = asdict(self)
        return {k: values[k] for k in _FIELDS if values[k] is not None}


def _bad(path: Path, where: str, msg: str) -> XltError:
    return XltError(f"{path}: {where}: {msg} (the lock file is written by xlt; restore it from git)")


def _parse(path: Path, data) -> dict[str, dict[str, dict[str, LockEntry]]]:
    """{section: {source: {raw path: entry}}} for every section of SECTIONS."""
    if data is None:
        return {sec: {} for sec in SECTIONS}
    if not isinstance(data, Mapping) or any(not isinstance(data.get(sec, {}) or {}, Mapping) for sec in SECTIONS):
        raise _bad(path, "top level", f"expected a mapping with {' and/or '.join(map(repr, SECTIONS))}")
    if data.get("version", VERSION) != VERSION:
        raise _bad(path, "version", f"expected {VERSION}, got {data.get('version')!r}")
    return {sec: _parse_section(path, sec, data.get(sec) or {}) for sec in SECTIONS}


def _parse_section(path: Path, section: str, sources: Mapping) -> dict[str, dict[str, LockEntry]]:
    out: dict[str, dict[str, LockEntry]] = {}
    for source, files in sources.items():
        if not isinstance(files, Mapping):
            raise _bad(path, f"{section}.{source}", "expected a mapping {raw path: entry}")
        out[source] = {}
        for rel, raw in files.items():
            where = f"{section}.{source}.{rel}"
            if not isinstance(raw, Mapping):
                raise _bad(path, where, "expected a mapping")
            unknown = sorted(set(raw) - set(_FIELDS))
            if unknown:
                raise _bad(path, where, f"unknown key(s) {unknown}")
            sha, size, rev = raw.get("sha256"), raw.get("size"), raw.get("revision")
            if not (isinstance(sha, str) and SHA256_RE.match(sha)):
                raise _bad(path, f"{where}.sha256", f"{sha!r} is not 64 lower-case hex digits")
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise _bad(path, f"{where}.size", f"{size!r} is not a byte count")
            if rev is not None and not (isinstance(rev, str) and COMMIT_RE.match(rev)):
                raise _bad(path, f"{where}.revision", f"{rev!r} is not a 40-hex commit")
            out[source][str(rel)] = LockEntry(
                sha256=sha, size=size, url=str(raw.get("url") or ""), date=str(raw.get("date") or ""),
                revision=rev, origin=raw.get("origin"),
            )  # fmt: skip
    return out


def dump(entries: Mapping[str, Mapping[str, LockEntry]],
         encoders: Mapping[str, Mapping[str, LockEntry]] | None = None) -> str:  # fmt: skip
    """The lock file's text: header, version, sources (then encoders, when any) and paths
    sorted, one value per line."""

    def section(d: Mapping[str, Mapping[str, LockEntry]]) -> dict:
        return {s: {p: d[s][p].as_yaml() for p in sorted(d[s])} for s in sorted(d) if d[s]}

    body = {"version": VERSION, "sources": section(entries)}
    if encoders and section(encoders):
        body["encoders"] = section(encoders)
    # Key order is fixed here (sort_keys=False keeps it): version first, then sources and
    # their paths sorted, each entry's fields in _FIELDS order.
    return HEADER + yaml.safe_dump(body, sort_keys=False, default_flow_style=False, width=1000)


class LockFile:
    """The lock file at `path` (default: the repository's, beside catalog.yaml)."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else default_lock_path()

    def read_all(self) -> dict[str, dict[str, dict[str, LockEntry]]]:
        """{section: {source: {raw path: entry}}}; a missing file is an empty lock."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return _parse(self.path, None)
        except OSError as e:
            raise XltError(f"{self.path}: cannot read the lock file ({e.strerror})") from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise _bad(self.path, "YAML", " ".join(str(e).split())) from None
        return _parse(self.path, data)

    def read(self, section: str = "sources") -> dict[str, dict[str, LockEntry]]:
        """{source: {raw path: entry}} of one section (catalog sources, or encoders)."""
        return self.read_all()[section]

    def entries(self, source: str, section: str = "sources") -> dict[str, LockEntry]:
        return dict(self.read(section).get(source, {}))

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        side = self.path.with_name(f".{self.path.name}.flock")
        with open(side, "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def add(self, source: str, new: Mapping[str, LockEntry], section: str = "sources") -> None:
        """Record `new` {raw path: entry} for `source` (a catalog entry, or a Hub model id in
        section "encoders"): under the file lock, read the file again, refuse an entry that
        disagrees with one already there, write atomically."""
        if not new:
            return
        with self._exclusive():
            everything = self.read_all()
            mine = everything[section].setdefault(source, {})
            changed = False
            for rel, entry in new.items():
                old = mine.get(rel)
                if old is not None:
                    if old.sha256 != entry.sha256 or (
                        old.revision and entry.revision and old.revision != entry.revision
                    ):
                        raise LockConflictError(
                            f"{self.path}: {source}: {rel} is locked with sha256 {old.sha256}"
                            f"{f' at {old.revision}' if old.revision else ''} ({old.date}), but "
                            f"this fetch got sha256 {entry.sha256}"
                            f"{f' at {entry.revision}' if entry.revision else ''}; not recorded"
                        )
                    continue  # the same bytes: keep the first date
                mine[rel] = entry
                changed = True
            if changed:
                fd, tmp = tempfile.mkstemp(
                    prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent
                )
                try:
                    with os.fdopen(fd, "w", encoding="utf-8") as fh:
                        fh.write(dump(everything["sources"], everything["encoders"]))
                        fh.flush()
                        os.fsync(fh.fileno())
                    os.chmod(tmp, 0o644)
                    os.replace(tmp, self.path)
                finally:
                    if os.path.exists(tmp):
                        os.unlink(tmp)
