"""The source catalog: every real dataset's location, declared once in `catalog.yaml`.

An entry says where the files are (`url` entries: HTTPS addresses; `hub` entries: a Hugging
Face dataset repo and the files in it), how they are pinned (`sha256` per URL file, a commit
`revision` per Hub repo), and where they land under the raw root (docs/data.md). The fetch
layer (`xlt.sources.fetch`) reads nothing else.

`Source.plan(langs)` expands the `{lang}` / `{split}` templates into concrete `PlannedFile`s.
"""

from __future__ import annotations

import difflib
import fnmatch
import functools
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import PurePosixPath
from typing import Any

import yaml

from xlt.errors import XltError

KINDS = ("url", "hub")
COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
SHA256_RE = re.compile(r"^[0-9a-f]{64}$")

_SOURCE_KEYS = {
    "family", "kind", "description", "license", "notes", "languages", "files",
    "repo_id", "revision", "default_ref", "config", "splits", "same_data_as",
}  # fmt: skip
_URL_FILE_KEYS = {"url", "path", "sha256", "extract"}
_HUB_FILE_KEYS = {"repo_path", "path", "sha256"}
_EXTRACT_KEYS = {"dest", "strip_components", "members"}


@dataclass(frozen=True)
class Extract:
    dest: str  # directory under the raw root, owned by this entry
    strip_components: int = 0
    members: tuple[str, ...] = ()  # fnmatch patterns on archive member names; may use {lang}


@dataclass(frozen=True)
class FileSpec:
    path: str  # template, relative to the raw root
    url: str | None = None  # url entries
    repo_path: str | None = None  # hub entries
    sha256: Any = None  # None | str | {lang: str}
    extract: Extract | None = None


@dataclass(frozen=True)
class PlannedFile:
    """One concrete file of a source, templates filled in."""

    path: str  # relative to the raw root
    lang: str | None
    split: str | None
    url: str | None = None
    repo_path: str | None = None
    sha256: str | None = None
    extract: Extract | None = None


@dataclass(frozen=True)
class Source:
    name: str
    family: str
    kind: str
    description: str
    files: tuple[FileSpec, ...]
    license: str = ""
    notes: str = ""
    languages: tuple[str, ...] | None = None  # None: any language (open set)
    repo_id: str | None = None
    revision: str | None = None  # pinned commit sha (hub)
    default_ref: str = "main"  # what an unpinned hub fetch reads
    config: str | None = None  # the `datasets` config name, for reference
    splits: tuple[str, ...] = ()
    same_data_as: str | None = None  # a second route to the data of that entry (data_all skips it)
    extra: dict = field(default_factory=dict)

    @property
    def templated(self) -> bool:
        return any("{lang}" in _template_text(f) for f in self.files)

    @property
    def per_language(self) -> bool:
        """Whether fetching it selects languages (file names, or archive members to extract)."""
        return self.templated or any(
            "{lang}" in m for f in self.files if f.extract for m in f.extract.members
        )

    def resolve_langs(self, langs) -> tuple[str, ...]:
        """The languages to fetch: the requested ones, checked; all known ones if none given."""
        langs = tuple(dict.fromkeys(langs or ()))
        if not langs:
            if self.languages is None:
                if self.templated:
                    raise XltError(
                        f"source {self.name!r} needs languages (--langs): it offers any "
                        "language and none was given"
                    )
                return ()
            return self.languages
        if self.languages is not None:
            for lang in langs:
                if lang not in self.languages:
                    raise _unknown(f"language for source {self.name}", lang, self.languages)
        for lang in langs:
            if not re.fullmatch(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]+)*", lang):
                raise XltError(f"source {self.name!r}: {lang!r} is not a language code")
        return langs

    def plan(self, langs=None) -> list[PlannedFile]:
        """Expand the file templates for `langs` (checked) and the entry's splits."""
        langs = self.resolve_langs(langs)
        out: list[PlannedFile] = []
        seen: set[str] = set()
        for spec in self.files:
            per_lang = "{lang}" in spec.path or "{lang}" in (spec.url or spec.repo_path or "")
            per_split = "{split}" in spec.path
            for lang in langs if per_lang else (None,):
                for split in self.splits if per_split else (None,):
                    fill = {"lang": lang, "split": split}
                    path = _fill(spec.path, fill, self.name)
                    if path in seen:
                        continue
                    seen.add(path)
                    out.append(
                        PlannedFile(
                            path=path,
                            lang=lang,
                            split=split,
                            url=_fill(spec.url, fill, self.name) if spec.url else None,
                            repo_path=(
                                _fill(spec.repo_path, fill, self.name) if spec.repo_path else None
                            ),
                            sha256=_pick_digest(spec.sha256, lang),
                            extract=spec.extract,
                        )
                    )
        return out

    def members(self, extract: Extract, langs) -> tuple[str, ...]:
        """The archive member patterns for `langs`; () means every member."""
        langs = self.resolve_langs(langs)
        out: list[str] = []
        for pat in extract.members:
            if "{lang}" in pat:
                if not langs:  # no language selection: take everything
                    return ()
                out.extend(pat.replace("{lang}", lang) for lang in langs)
            else:
                out.append(pat)
        return tuple(dict.fromkeys(out))


def _template_text(spec: FileSpec) -> str:
    return " ".join(x for x in (spec.path, spec.url, spec.repo_path) if x)


def _fill(template: str, values: dict, source: str) -> str:
    def repl(m: re.Match) -> str:
        key = m.group(1)
        if key not in values:
            raise XltError(
                f"catalog entry {source!r}: unknown placeholder {{{key}}} in {template!r}"
            )
        if values[key] is None:
            raise XltError(f"catalog entry {source!r}: {{{key}}} in {template!r} has no value")
        return values[key]

    return re.sub(r"\{(\w+)\}", repl, template)


def _pick_digest(sha, lang):
    if sha is None or isinstance(sha, str):
        return sha
    return sha.get(lang) if lang is not None else None


def _unknown(kind: str, name: str, allowed) -> XltError:
    allowed = sorted(allowed)
    close = difflib.get_close_matches(name, allowed, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return XltError(f"unknown {kind} {name!r}; allowed: {', '.join(allowed)}.{hint}")


# --------------------------------------------------------------------------- parsing


def _err(name: str, msg: str) -> XltError:
    return XltError(f"xlt/sources/catalog.yaml: sources.{name}: {msg}")


def _check_keys(name: str, where: str, got: dict, allowed: set) -> None:
    for key in got:
        if key not in allowed:
            close = difflib.get_close_matches(key, sorted(allowed), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise _err(name, f"unknown key {where}{key!r}.{hint}")


def _check_rel_path(name: str, path: str) -> None:
    p = PurePosixPath(path)
    if p.is_absolute() or ".." in p.parts or not path.strip():
        raise _err(name, f"path {path!r} must be relative to the raw root, without '..'")


def _check_digest(name: str, sha) -> None:
    values = sha.values() if isinstance(sha, dict) else [sha]
    for v in values:
        if v is not None and not (isinstance(v, str) and SHA256_RE.match(v)):
            raise _err(name, f"sha256 {v!r} is not 64 lower-case hex digits")


def parse_source(name: str, raw: dict) -> Source:
    if not isinstance(raw, dict):
        raise _err(name, "expected a mapping")
    _check_keys(name, "", raw, _SOURCE_KEYS)
    kind = raw.get("kind")
    if kind not in KINDS:
        raise _err(name, f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    for key in ("family", "description", "files"):
        if not raw.get(key):
            raise _err(name, f"missing {key!r}")
    files = []
    for i, f in enumerate(raw["files"]):
        if not isinstance(f, dict):
            raise _err(name, f"files[{i}] must be a mapping")
        _check_keys(name, f"files[{i}].", f, _URL_FILE_KEYS if kind == "url" else _HUB_FILE_KEYS)
        if not f.get("path"):
            raise _err(name, f"files[{i}] has no 'path'")
        _check_rel_path(name, f["path"])
        _check_digest(name, f.get("sha256"))
        extract = None
        if kind == "url":
            url = f.get("url") or ""
            if not url.startswith(("https://", "http://")):
                raise _err(name, f"files[{i}].url must be an http(s) address, got {url!r}")
            if "extract" in f:
                ex = f["extract"]
                _check_keys(name, f"files[{i}].extract.", ex, _EXTRACT_KEYS)
                if not ex.get("dest"):
                    raise _err(name, f"files[{i}].extract has no 'dest'")
                _check_rel_path(name, ex["dest"])
                extract = Extract(
                    dest=ex["dest"],
                    strip_components=int(ex.get("strip_components", 0)),
                    members=tuple(ex.get("members") or ()),
                )
            files.append(FileSpec(path=f["path"], url=url, sha256=f.get("sha256"), extract=extract))
        else:
            if not f.get("repo_path"):
                raise _err(name, f"files[{i}] has no 'repo_path'")
            files.append(FileSpec(path=f["path"], repo_path=f["repo_path"], sha256=f.get("sha256")))
    if kind == "hub":
        if not raw.get("repo_id") or "/" not in raw["repo_id"]:
            raise _err(name, "hub entries need repo_id 'owner/name'")
        rev = raw.get("revision")
        if rev is not None and not COMMIT_RE.match(str(rev)):
            raise _err(name, f"revision must be a 40-hex commit sha or null, got {rev!r}")
    langs = raw.get("languages")
    return Source(
        name=name,
        family=raw["family"],
        kind=kind,
        description=raw["description"],
        files=tuple(files),
        license=raw.get("license") or "",
        notes=raw.get("notes") or "",
        languages=tuple(langs) if langs is not None else None,
        repo_id=raw.get("repo_id"),
        revision=raw.get("revision"),
        default_ref=raw.get("default_ref") or "main",
        config=raw.get("config"),
        splits=tuple(raw.get("splits") or ()),
        same_data_as=raw.get("same_data_as"),
    )


def load_catalog(text: str | None = None) -> dict[str, Source]:
    """Parse the catalog (the packaged `catalog.yaml` unless `text` is given)."""
    if text is None:
        text = resources.files("xlt.sources").joinpath("catalog.yaml").read_text(encoding="utf-8")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise XltError(f"xlt/sources/catalog.yaml: invalid YAML ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("sources"), dict):
        raise XltError("xlt/sources/catalog.yaml: expected a top-level 'sources' mapping")
    out = {name: parse_source(name, raw) for name, raw in data["sources"].items()}
    for name, src in out.items():
        if src.same_data_as is not None and src.same_data_as not in out:
            raise _err(name, f"same_data_as: no entry {src.same_data_as!r}")
    return out


@functools.lru_cache(maxsize=1)
def catalog() -> dict[str, Source]:
    return load_catalog()


def get_source(name: str) -> Source:
    cat = catalog()
    try:
        return cat[name]
    except KeyError:
        raise _unknown("source", name, cat) from None


def sources_of_family(family: str) -> list[Source]:
    """Every entry feeding one registry source (e.g. 'ud' -> ud-2.5, ud-2.7)."""
    return [s for s in catalog().values() if s.family == family]


@functools.lru_cache(maxsize=None)  # a pure function of the catalog; the DAG asks ~4,000 times
def providers(pattern: str, lang: str | None = None) -> tuple[tuple[Source, str | None], ...]:
    """The catalog entries that place a file matching `pattern` (a glob relative to the raw
    root, as `xlt.stages.prepare.raw_patterns` gives) for language `lang`.

    Each comes with the language to fetch it for: `lang` when the entry selects languages
    (file names, or the members of an archive), None when its files hold every language
    (MultiNLI, TyDiQA). A file of an archive entry
    matches when it lies under the entry's extraction folder.
    """
    out: list[tuple[Source, str | None]] = []
    for source in catalog().values():
        if lang and source.languages is not None and lang not in source.languages:
            continue  # the entry does not offer this language (checked here: an error's "did you mean" costs)
        try:
            langs = source.resolve_langs([lang] if lang else None)
        except XltError:
            continue  # nor any language it could be asked for
        for pf in source.plan(langs):
            under_extract = pf.extract is not None and pattern.startswith(pf.extract.dest.rstrip("/") + "/")
            if under_extract or fnmatch.fnmatchcase(pf.path, pattern):
                out.append((source, lang if source.per_language else None))
                break
    return tuple(out)
