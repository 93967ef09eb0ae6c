"""The fetch layer: get each real dataset's files into the raw layout, verified.

    download(url, dest, sha256, manual_dir=...)   one HTTP(S) file: resumable, checksummed,
                                                   atomic; falls back to a hand-placed copy
    fetch_hub_files(repo_id, revision, files, dest_dir)
                                                   Hugging Face dataset files at a commit
    extract(archive, dest_dir, members)            tar / zip / gz, safe and atomic
    fetch_source(name, raw_root, langs, cfg)       one catalog entry, end to end + manifest

Nothing is half-written: data streams to `<dest>.part` and is renamed into place only after
its sha256 matched; archives are extracted into a temporary directory renamed into place.
Every failure is an `XltError` whose one-line message names the file or URL and what to do.
"""

from __future__ import annotations

import difflib
import fnmatch
import gzip
import os
import re
import shutil
import stat
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

import requests

import xlt
from xlt.errors import XltError
from xlt.io import sha256_file, write_json
from xlt.sources.catalog import COMMIT_RE, SHA256_RE, PlannedFile, Source, get_source

DEFAULT_MANUAL_DIR = Path("resources/manual")
USER_AGENT = f"xlt/{xlt.__version__} (+https://github.com/; dataset fetcher)"


class ChecksumError(XltError):
    """A file's sha256 differs from its pin."""


class DownloadError(XltError):
    """A file could be obtained neither from the network nor from the manual directory."""


class UnpinnedError(XltError):
    """A source without sha256 / commit pins was requested without `allow_unpinned`."""


class UnsafeArchiveError(XltError):
    """An archive member would escape the extraction directory (absolute path, '..', link)."""


def _log(msg: str) -> None:
    print(f"xlt: {msg}", file=sys.stderr, flush=True)


@dataclass
class Fetched:
    """One file now in place: where, its digest, and where it came from."""

    path: Path
    sha256: str
    size: int
    origin: str  # network | manual | existing | hub
    url: str | None = None
    revision: str | None = None  # hub: the commit the file was read at


# --------------------------------------------------------------------------- config


@dataclass
class FetchConfig:
    """The `download:` block of the workflow config (every key optional).

    allow_unpinned: fetch sources whose sha256 / revision is not pinned, and print the
                    values to pin (never the default: an unpinned file may change silently)
    manual_dir:     where hand-downloaded files are looked for when the network fails
    hf_endpoint:    Hub endpoint (default: $HF_ENDPOINT or https://huggingface.co)
    hf_cache_dir:   huggingface_hub cache (default: $HF_HUB_CACHE)
    mirrors:        {url prefix: replacement prefix}, e.g. an institutional mirror
    pins:           {source: {revision: <commit>, sha256: {<raw path> | <lang>: <digest>}}}
    timeout:        seconds to wait for a server (connect and between reads)
    retries:        attempts per URL; a broken transfer resumes from its .part file
    """

    allow_unpinned: bool = False
    manual_dir: Path = DEFAULT_MANUAL_DIR
    hf_endpoint: str | None = None
    hf_cache_dir: Path | None = None
    mirrors: dict = field(default_factory=dict)
    pins: dict = field(default_factory=dict)
    timeout: float = 60.0
    retries: int = 3

    @classmethod
    def coerce(cls, cfg) -> FetchConfig:
        if cfg is None:
            return cls()
        if isinstance(cfg, cls):
            return cfg
        if not isinstance(cfg, Mapping):
            raise XltError(f"download config must be a mapping, got {type(cfg).__name__}")
        known = set(cls.__dataclass_fields__)
        for key in cfg:
            if key not in known:
                close = difflib.get_close_matches(key, sorted(known), n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                raise XltError(
                    f"download.{key}: unknown key; allowed: {', '.join(sorted(known))}.{hint}"
                )
        out = cls(**dict(cfg))
        out.manual_dir = Path(out.manual_dir)
        out.hf_cache_dir = Path(out.hf_cache_dir) if out.hf_cache_dir else None
        out.allow_unpinned = bool(out.allow_unpinned)
        out.mirrors = dict(out.mirrors or {})
        out.pins = dict(out.pins or {})
        if int(out.retries) < 1:
            raise XltError(f"download.retries: must be >= 1, got {out.retries!r}")
        out.retries = int(out.retries)
        return out

    def rewrite(self, url: str) -> str:
        for prefix in sorted(self.mirrors, key=len, reverse=True):
            if url.startswith(prefix):
                return self.mirrors[prefix] + url[len(prefix) :]
        return url

    def pin_for(self, source: Source) -> dict:
        pin = self.pins.get(source.name) or {}
        if not isinstance(pin, Mapping):
            raise XltError(f"download.pins.{source.name}: expected a mapping")
        return pin


# --------------------------------------------------------------------------- download


class _Retryable(Exception):
    pass


class _Fatal(Exception):
    """The server answered, but not with the file (4xx): retrying will not help."""


def _content_range_start(value: str | None) -> tuple[int | None, int | None]:
    m = re.match(r"bytes (\d+)-\d+/(\d+|\*)", value or "")
    if not m:
        return None, None
    total = int(m.group(2)) if m.group(2) != "*" else None
    return int(m.group(1)), total


def _http_to_part(url: str, part: Path, session: requests.Session, timeout: float) -> None:
    """Bring `part` up to the whole file: resume with Range if the server allows it."""
    pos = part.stat().st_size if part.exists() else 0
    headers = {"Accept-Encoding": "identity", "User-Agent": USER_AGENT}
    if pos:
        headers["Range"] = f"bytes={pos}-"
    try:
        resp = session.get(url, headers=headers, stream=True, timeout=timeout, allow_redirects=True)
    except requests.RequestException as e:
        raise _Retryable(f"{type(e).__name__}: {e}") from None
    with resp:
        if resp.status_code == 416 and pos:
            # Range not satisfiable: the .part may already hold the whole file.
            m = re.match(r"bytes \*/(\d+)", resp.headers.get("Content-Range", ""))
            if m and int(m.group(1)) == pos:
                return
            part.unlink()
            raise _Retryable("stale partial file (server refused the range); restarting")
        if resp.status_code == 206 and pos:
            start, _ = _content_range_start(resp.headers.get("Content-Range"))
            if start != pos:
                part.unlink()
                raise _Retryable(f"server resumed at byte {start}, not {pos}; restarting")
            mode, expected = "ab", resp.headers.get("Content-Length")
            _log(f"resuming {part.name[: -len('.part')]} at byte {pos}")
        elif resp.status_code == 200:
            if pos:
                _log(f"server ignored the Range request; restarting {url}")
            mode, expected = "wb", resp.headers.get("Content-Length")
        elif 500 <= resp.status_code < 600 or resp.status_code in (408, 429):
            raise _Retryable(f"HTTP {resp.status_code} {resp.reason}")
        else:
            raise _Fatal(f"HTTP {resp.status_code} {resp.reason}")
        written = 0
        try:
            with open(part, mode) as f:
                for chunk in resp.raw.stream(1 << 20, decode_content=False):
                    f.write(chunk)
                    written += len(chunk)
        except Exception as e:  # noqa: BLE001 - any broken transfer: keep .part, resume
            raise _Retryable(
                f"transfer broken after {written} bytes ({type(e).__name__})"
            ) from None
        if expected is not None and written != int(expected):
            raise _Retryable(f"transfer ended after {written} of {expected} bytes")


def _manual_candidates(url: str, dest: Path, manual_dir: Path, names: Iterable[str]) -> list[Path]:
    base = unquote(PurePosixPath(urlsplit(url).path).name) or dest.name
    out = [manual_dir / base]
    out += [manual_dir / n for n in names]
    if dest.name != base:
        out.append(manual_dir / dest.name)
    return list(dict.fromkeys(out))


def _install_copy(src: Path, dest: Path, sha256: str | None, allow_unpinned: bool) -> str:
    """Copy `src` to `dest` atomically after checking its digest; return the digest."""
    actual = sha256_file(src)
    if sha256 is not None and actual != sha256:
        raise ChecksumError(
            f"{src}: sha256 mismatch for {dest.name}: expected {sha256}, got {actual}; "
            "the manual file was left as it is and not used"
        )
    if sha256 is None and not allow_unpinned:
        raise UnpinnedError(f"{dest}: no sha256 pin to check {src} against")
    _place(src, dest)
    return actual


def _place(src: Path | str, dest: Path) -> None:
    """Put a verified file at `dest` atomically: a hard link where possible, else a copy."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.place.tmp")
    try:
        try:
            os.link(os.path.realpath(src), tmp)
        except OSError:
            shutil.copyfile(src, tmp)
        os.replace(tmp, dest)
    finally:
        if tmp.exists():
            tmp.unlink()


def download(
    url: str,
    dest: str | Path,
    sha256: str | None,
    *,
    manual_dir: str | Path = DEFAULT_MANUAL_DIR,
    manual_names: Iterable[str] = (),
    allow_unpinned: bool = False,
    session: requests.Session | None = None,
    timeout: float = 60.0,
    retries: int = 3,
) -> Fetched:
    """Fetch `url` to `dest`, verified against `sha256` before it is renamed into place.

    The transfer streams to `<dest>.part`. A `.part` left by an earlier attempt is resumed
    with a Range request when the server answers 206, and restarted when it answers 200.
    When the network fails (or the server has no such file), `manual_dir/<basename of url>`
    is used instead, after the same checksum. `sha256=None` is refused unless
    `allow_unpinned`; then the digest seen is logged so that it can be pinned.
    """
    dest = Path(dest)
    manual_dir = Path(manual_dir)
    if sha256 is not None:
        sha256 = sha256.lower()
        if not SHA256_RE.match(sha256):
            raise XltError(f"{dest}: sha256 pin {sha256!r} is not 64 hex digits")
    elif not allow_unpinned:
        raise UnpinnedError(
            f"{dest}: refusing to download {url} without a sha256 pin; pin it in the config "
            "(download.pins) or set download.allow_unpinned: true to fetch it and print its digest"
        )

    if dest.exists():
        actual = sha256_file(dest)
        if sha256 is None or actual == sha256:
            return Fetched(dest, actual, dest.stat().st_size, "existing", url=url)
        _log(f"{dest} does not match its pin (sha256 {actual}); removing it and fetching again")
        dest.unlink()

    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    own_session = session is None
    session = session or requests.Session()
    problem = None
    _log(f"downloading {url} -> {dest}")
    try:
        for attempt in range(1, retries + 1):
            try:
                _http_to_part(url, part, session, timeout)
                problem = None
                break
            except _Retryable as e:
                problem = str(e)
                if attempt < retries:
                    _log(f"{url}: {problem}; retry {attempt}/{retries - 1}")
            except _Fatal as e:
                problem = str(e)
                break
    finally:
        if own_session:
            session.close()

    if problem is None:
        actual = sha256_file(part)
        if sha256 is not None and actual != sha256:
            part.unlink()
            raise ChecksumError(
                f"{dest}: sha256 mismatch for {url}: expected {sha256}, got {actual}; "
                "the bad download was removed"
            )
        os.replace(part, dest)
        if sha256 is None:
            _log(f"UNPINNED {dest.name}: sha256 {actual} (pin it: download.pins)")
        return Fetched(dest, actual, dest.stat().st_size, "network", url=url)

    # The network did not deliver: look for a copy placed by hand.
    candidates = _manual_candidates(url, dest, manual_dir, manual_names)
    for cand in candidates:
        if cand.is_file():
            _log(f"{url}: {problem}; using the manual copy {cand}")
            actual = _install_copy(cand, dest, sha256, allow_unpinned)
            return Fetched(dest, actual, dest.stat().st_size, "manual", url=url)
    digest = f" (sha256 {sha256})" if sha256 else ""
    raise DownloadError(
        f"could not download {url} ({problem}); download it by hand{digest} and save it as "
        f"{candidates[0]}, then run again"
    )


# --------------------------------------------------------------------------- Hugging Face Hub


def _commit_from_cache_path(path: str) -> str | None:
    parts = Path(path).parts
    for i, part in enumerate(parts[:-1]):
        if part == "snapshots" and COMMIT_RE.match(parts[i + 1]):
            return parts[i + 1]
    return None


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def fetch_hub_files(
    repo_id: str,
    revision: str,
    filenames: Mapping[str, str] | Iterable[str],
    dest_dir: str | Path,
    *,
    endpoint: str | None = None,
    cache_dir: str | Path | None = None,
    sha256: Mapping[str, str | None] | None = None,
    token: str | bool | None = None,
) -> list[Fetched]:
    """Fetch files of the Hub dataset `repo_id` at `revision` into `dest_dir`.

    `filenames` maps each path in the repo to its path under `dest_dir` (a plain list keeps
    the repo's paths). Files go through `huggingface_hub.hf_hub_download` (its cache, its
    retries, `HF_ENDPOINT` / `endpoint`, `HF_TOKEN`), then are hard-linked or copied into
    place atomically. `sha256` optionally pins {repo path: digest}. Script-only repos are
    read at `revision="refs/convert/parquet"`.
    """
    from huggingface_hub import constants as hf_constants
    from huggingface_hub import hf_hub_download

    if not isinstance(filenames, Mapping):
        filenames = {f: f for f in filenames}
    dest_dir = Path(dest_dir)
    sha256 = dict(sha256 or {})
    out: list[Fetched] = []
    for repo_path, rel in filenames.items():
        dest = dest_dir / rel
        where = f"{repo_id}@{revision}:{repo_path}"
        try:
            cached = hf_hub_download(
                repo_id,
                repo_path,
                repo_type="dataset",
                revision=revision,
                endpoint=endpoint,
                cache_dir=str(cache_dir) if cache_dir else None,
                token=token,
            )
        except Exception as e:  # noqa: BLE001 - huggingface_hub / httpx errors, all user-facing
            hint = ""
            if hf_constants.HF_HUB_OFFLINE:
                hint = (
                    " HF_HUB_OFFLINE is set (the Makefile sets it for the tiny preset): unset it."
                )
            elif "RevisionNotFound" in type(e).__name__:
                hint = " Check the pinned revision."
            elif "EntryNotFound" in type(e).__name__:
                hint = " The repo has no such file at this revision: check the catalog's file list."
            ep = endpoint or hf_constants.ENDPOINT
            raise DownloadError(
                f"could not fetch {where} from {ep} ({_one_line(e)}).{hint}"
            ) from None
        commit = _commit_from_cache_path(cached)
        actual = sha256_file(cached)
        want = sha256.get(repo_path)
        if want is not None and actual != want:
            raise ChecksumError(
                f"{dest}: sha256 mismatch for {where}: expected {want}, got {actual}; not installed"
            )
        _place(cached, dest)
        out.append(Fetched(dest, actual, dest.stat().st_size, "hub", url=where, revision=commit))
    return out


# --------------------------------------------------------------------------- extraction


def _archive_format(archive: Path) -> str:
    name = archive.name.lower()
    if name.endswith((".tgz", ".tar.gz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar")):
        return "tar"
    if name.endswith(".zip"):
        return "zip"
    if name.endswith(".gz"):
        return "gz"
    raise XltError(f"{archive}: unknown archive type (expected .tgz/.tar.*, .zip or .gz)")


def _safe_parts(archive: Path, name: str) -> tuple[str, ...]:
    """The member's path components; refuse anything that could leave the target dir."""
    norm = name.replace("\\", "/")
    if norm.startswith("/") or re.match(r"^[A-Za-z]:", norm):
        raise UnsafeArchiveError(
            f"{archive}: member {name!r} has an absolute path; refusing to extract"
        )
    parts = tuple(p for p in norm.split("/") if p not in ("", "."))
    if ".." in parts:
        raise UnsafeArchiveError(f"{archive}: member {name!r} contains '..'; refusing to extract")
    return parts


def _selected(name: str, members: tuple[str, ...] | None) -> str | None:
    """The pattern that selects `name` ('' when everything is selected), else None."""
    if not members:
        return ""
    for pat in members:
        if fnmatch.fnmatchcase(name, pat):
            return pat
    return None


def _write_member(src, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as out:
        shutil.copyfileobj(src, out, 1 << 20)


def extract(
    archive: str | Path,
    dest_dir: str | Path,
    members: Iterable[str] | None = None,
    *,
    strip_components: int = 0,
) -> list[str]:
    """Extract `archive` (tar[.gz|.bz2|.xz] / zip / single-file .gz) into `dest_dir`.

    `members`: fnmatch patterns on the archive's member names (before stripping); only
    matching regular files are extracted, and a pattern that matches nothing is an error.
    Absolute paths, '..' and links are refused. Everything is written into a temporary
    directory beside `dest_dir`, which then replaces `dest_dir` by rename: `dest_dir` is
    either the old complete tree or the new complete tree, never a mix.
    Returns the extracted files' paths relative to `dest_dir`, sorted.
    """
    archive = Path(archive)
    dest_dir = Path(dest_dir)
    fmt = _archive_format(archive)
    members = tuple(members) if members else None
    dest_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest_dir.name}.extract.", dir=dest_dir.parent))
    written: list[str] = []
    used: set[str] = set()

    def place(name: str, opener) -> None:
        parts = _safe_parts(archive, name)
        pat = _selected("/".join(parts), members)
        if pat is None:
            return
        used.add(pat)
        parts = parts[strip_components:]
        if not parts:
            return
        rel = "/".join(parts)
        with opener() as src:
            _write_member(src, tmp.joinpath(*parts))
        written.append(rel)

    try:
        if fmt == "tar":
            try:
                with tarfile.open(archive, "r:*") as tf:
                    for m in tf:
                        parts = _safe_parts(archive, m.name)
                        if m.isdir():
                            continue
                        if m.issym() or m.islnk():
                            raise UnsafeArchiveError(
                                f"{archive}: member {m.name!r} is a link; refusing to extract"
                            )
                        if not m.isfile():
                            continue  # devices, fifos: never data
                        place("/".join(parts), lambda m=m: tf.extractfile(m))
            except (tarfile.TarError, EOFError, OSError) as e:
                raise XltError(f"{archive}: not a readable tar archive ({_one_line(e)})") from None
        elif fmt == "zip":
            try:
                with zipfile.ZipFile(archive) as zf:
                    for info in zf.infolist():
                        _safe_parts(archive, info.filename)
                        if info.is_dir():
                            continue
                        if stat.S_ISLNK(info.external_attr >> 16):
                            raise UnsafeArchiveError(
                                f"{archive}: member {info.filename!r} is a link; refusing to extract"
                            )
                        place(info.filename, lambda info=info: zf.open(info))
            except (zipfile.BadZipFile, OSError) as e:
                raise XltError(f"{archive}: not a readable zip archive ({_one_line(e)})") from None
        else:  # single-file gzip
            name = archive.name[: -len(".gz")]
            try:
                place(name, lambda: gzip.open(archive, "rb"))
            except (gzip.BadGzipFile, EOFError, OSError) as e:
                raise XltError(f"{archive}: not a readable gzip file ({_one_line(e)})") from None
        if members:
            missing = [p for p in members if p not in used]
            if missing:
                raise XltError(
                    f"{archive}: no member matches {', '.join(missing)}; the archive's layout "
                    "differs from the catalog (or the language is not in it)"
                )
        # Swap the new tree in: old -> aside, new -> dest, drop old.
        aside = None
        if dest_dir.exists():
            aside = Path(tempfile.mkdtemp(prefix=f".{dest_dir.name}.old.", dir=dest_dir.parent))
            os.rmdir(aside)
            os.replace(dest_dir, aside)
        os.replace(tmp, dest_dir)
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return sorted(written)


# --------------------------------------------------------------------------- one source


def _digest_pin(source: Source, pf: PlannedFile, pin: Mapping) -> str | None:
    pinned = pin.get("sha256")
    if isinstance(pinned, str) and pf.lang is None:
        return pinned.lower()
    if isinstance(pinned, Mapping):
        for key in (pf.path, pf.lang):
            if key is not None and pinned.get(key):
                return str(pinned[key]).lower()
    return pf.sha256


def _pin_hint(name: str, lines: list[str]) -> str:
    return "\n".join(
        ["to pin it, add to the config:", "  download:", "    pins:", f"      {name}:"] + lines
    )


def fetch_source(
    name: str,
    raw_root: str | Path,
    langs: Iterable[str] | None = None,
    cfg: FetchConfig | Mapping | None = None,
    *,
    manifest: str | Path | None = None,
) -> dict:
    """Fetch one catalog entry for `langs` into `raw_root`; write and return its manifest.

    The manifest (default `<raw_root>/manifests/<name>.json`) lists every file placed under
    the raw root with its sha256, where it came from, and the pins that were (or were not)
    used. Unpinned sources are refused unless `cfg.allow_unpinned`; then the digests /
    commit seen are logged as a ready-to-paste `download: pins:` block.
    """
    source = get_source(name)
    cfg = FetchConfig.coerce(cfg)
    raw_root = Path(raw_root)
    langs = source.resolve_langs(langs)
    planned = source.plan(langs)
    pin = cfg.pin_for(source)
    files: list[dict] = []
    unpinned: list[str] = []
    resolved_revision = None

    def record(f: Fetched, **extra) -> None:
        files.append(
            {
                "path": f.path.relative_to(raw_root).as_posix(),
                "sha256": f.sha256,
                "bytes": f.size,
                "origin": f.origin,
                **({"url": f.url} if f.url else {}),
                **extra,
            }
        )

    if source.kind == "url":
        digests = {pf.path: _digest_pin(source, pf, pin) for pf in planned}
        missing = [p for p, d in digests.items() if d is None]
        if missing and not cfg.allow_unpinned:
            raise UnpinnedError(
                f"source {name!r}: no sha256 pin for {', '.join(missing)}; refusing to download "
                "unpinned files. Pin them under download.pins."
                f"{name}.sha256 in the config, or set download.allow_unpinned: true to fetch "
                "them once and print their digests"
            )
        with requests.Session() as session:
            for pf in planned:
                url = cfg.rewrite(pf.url)
                got = download(
                    url,
                    raw_root / pf.path,
                    digests[pf.path],
                    manual_dir=cfg.manual_dir,
                    manual_names=[pf.path],
                    allow_unpinned=cfg.allow_unpinned,
                    session=session,
                    timeout=cfg.timeout,
                    retries=cfg.retries,
                )
                if digests[pf.path] is None:
                    unpinned.append(f"          {pf.path}: {got.sha256}")
                record(got, pinned=digests[pf.path] is not None)
                if pf.extract is not None:
                    dest = raw_root / pf.extract.dest
                    members = source.members(pf.extract, langs)
                    _log(f"extracting {pf.path} -> {pf.extract.dest}/")
                    rels = extract(
                        got.path, dest, members, strip_components=pf.extract.strip_components
                    )
                    for rel in rels:
                        p = dest / rel
                        files.append(
                            {
                                "path": p.relative_to(raw_root).as_posix(),
                                "sha256": sha256_file(p),
                                "bytes": p.stat().st_size,
                                "origin": "extracted",
                                "archive": pf.path,
                            }
                        )
        if unpinned:
            _log(
                f"source {name!r} was fetched UNPINNED; "
                + _pin_hint(name, ["        sha256:"] + unpinned)
            )
    else:
        revision = pin.get("revision") or source.revision
        if revision is not None:
            revision = str(revision)
            if not COMMIT_RE.match(revision):
                raise XltError(
                    f"download.pins.{name}.revision: {revision!r} is not a 40-hex commit sha "
                    "(branches and tags move; pin the commit)"
                )
        elif not cfg.allow_unpinned:
            raise UnpinnedError(
                f"source {name!r} (Hub dataset {source.repo_id}) has no pinned revision; set "
                f"download.pins.{name}.revision to a commit sha in the config, or set "
                f"download.allow_unpinned: true to read {source.default_ref!r} once and print "
                "the commit to pin"
            )
        ref = revision or source.default_ref
        sha_pins = {pf.repo_path: _digest_pin(source, pf, pin) for pf in planned}
        endpoint = cfg.hf_endpoint or os.environ.get("HF_ENDPOINT") or None
        fetched: list[Fetched] = []
        for pf in planned:
            try:
                got = fetch_hub_files(
                    source.repo_id,
                    ref,
                    {pf.repo_path: pf.path},
                    raw_root,
                    endpoint=endpoint,
                    cache_dir=cfg.hf_cache_dir,
                    sha256={pf.repo_path: sha_pins[pf.repo_path]},
                )[0]
            except DownloadError as e:
                got = _hub_manual(pf, raw_root, cfg, sha_pins[pf.repo_path], e)
            fetched.append(got)
            record(got, repo_path=pf.repo_path, pinned=sha_pins[pf.repo_path] is not None)
        commits = {f.revision for f in fetched if f.revision}
        if len(commits) > 1:
            raise XltError(
                f"source {name!r}: files came from different commits of {source.repo_id} "
                f"({', '.join(sorted(commits))}); pin a revision"
            )
        resolved_revision = commits.pop() if commits else revision
        if revision is None and resolved_revision:
            _log(
                f"source {name!r} was read at {source.default_ref!r} (UNPINNED); "
                + _pin_hint(name, [f"        revision: {resolved_revision}"])
            )

    out = {
        "source": name,
        "family": source.family,
        "kind": source.kind,
        "description": source.description,
        "license": source.license,
        "languages": list(langs),
        "repo_id": source.repo_id,
        "revision_requested": (
            (pin.get("revision") or source.revision) if source.kind == "hub" else None
        ),
        "revision": resolved_revision,
        "pinned": (
            not unpinned
            if source.kind == "url"
            else (pin.get("revision") or source.revision) is not None
        ),
        "files": sorted(files, key=lambda f: f["path"]),
        "xlt_version": xlt.__version__,
    }
    manifest = Path(manifest) if manifest else raw_root / "manifests" / f"{name}.json"
    write_json(manifest, out)
    return out


def _hub_manual(
    pf: PlannedFile, raw_root: Path, cfg: FetchConfig, sha: str | None, error: XltError
) -> Fetched:
    """A Hub file that could not be fetched: use `<manual_dir>/<raw path>` if present."""
    cand = cfg.manual_dir / pf.path
    if cand.is_file():
        if sha is None and not cfg.allow_unpinned:
            raise DownloadError(
                f"{error} A manual copy exists at {cand}, but without a sha256 pin for "
                f"{pf.path} it cannot be checked; pin it or set download.allow_unpinned: true"
            )
        _log(f"{error}; using the manual copy {cand}")
        dest = raw_root / pf.path
        actual = _install_copy(cand, dest, sha, True)
        return Fetched(dest, actual, dest.stat().st_size, "manual", url=str(pf.repo_path))
    raise DownloadError(f"{error} Or save the file by hand as {cand} and run again.")
