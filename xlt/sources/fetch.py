"""The fetch layer: get each real dataset's files into the raw layout, verified.

    download(url, dest, sha256, manual_dir=...)   one HTTP(S) file: resumable, checksummed,
                                                   atomic; falls back to a hand-placed copy
    fetch_hub_files(repo_id, revision, files, dest_dir)
                                                   Hugging Face dataset files at a commit
    extract(archive, dest_dir, members)            tar / zip / gz, safe and atomic
    fetch_source(name, raw_root, langs, cfg)       one catalog entry, end to end + manifest

Nothing is half-written: data streams to `<dest>.part` and is renamed into place only after
its sha256 matched; archives are extracted into a temporary directory renamed into place.
A file without a pin is recorded in the lock file (`xlt.sources.lock`) once it is in place,
and every later fetch is checked against that record.
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
from xlt.sources.lock import LockConflictError, LockEntry, LockFile, now
from xlt.process.network import network_cause

DEFAULT_MANUAL_DIR = Path("resources/manual")
USER_AGENT = f"xlt/{xlt.__version__} (+https://github.com/; dataset fetcher)"


class ChecksumError(XltError):
    """A file's sha256 differs from its pin."""


class DownloadError(XltError):
    """A file could be obtained neither from the network nor from the manual directory."""


class UnpinnedError(XltError):
    """A file with neither a pin nor a lock entry was requested under `require_pins`."""


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

    require_pins:   refuse every file that has neither a pin (config or catalog) nor an
                    entry in the lock file (default: fetch it and lock what was fetched)
    lock:           the lock file (default: xlt/sources/catalog.lock.yaml, in the repo)
    manual_dir:     where hand-downloaded files are looked for when the network fails
    hf_endpoint:    Hub endpoint (default: $HF_ENDPOINT or https://huggingface.co)
    hf_cache_dir:   huggingface_hub cache (default: $HF_HUB_CACHE)
    mirrors:        {url prefix: replacement prefix}, e.g. an institutional mirror
    pins:           {source: {revision: <commit>, sha256: {<raw path> | <lang>: <digest>}}}
    timeout:        seconds to wait for a server (connect and between reads)
    retries:        attempts per URL; a broken transfer resumes from its .part file
    """

    require_pins: bool = False
    lock: Path | None = None
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
        if "allow_unpinned" in cfg:
            raise XltError(
                "download.allow_unpinned: removed; an unpinned file is now fetched and locked "
                "(xlt/sources/catalog.lock.yaml) by default, and download.require_pins: true "
                "refuses it (docs/sources.md, 'Pinning')"
            )
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
        if not isinstance(out.require_pins, bool):
            raise XltError(f"download.require_pins: expected true or false, got {out.require_pins!r}")
        out.lock = Path(out.lock) if out.lock else None
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

    def lock_file(self) -> LockFile:
        return LockFile(self.lock)

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
        cause = network_cause(e, urlsplit(url).hostname)
        raise _Retryable(cause or f"{type(e).__name__}: {e}") from None
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


def _install_copy(
    src: Path, dest: Path, sha256: str | None, require_pin: bool, expected_from: str = "pin"
) -> str:
    """Copy `src` to `dest` atomically after checking its digest; return the digest."""
    actual = sha256_file(src)
    if sha256 is not None and actual != sha256:
        raise ChecksumError(
            f"{src}: sha256 mismatch for {dest.name}: expected {sha256} ({expected_from}), "
            f"got {actual}; the manual file was left as it is and not used"
        )
    if sha256 is None and require_pin:
        raise UnpinnedError(f"{dest}: no sha256 pin or lock entry to check {src} against")
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
    require_pin: bool = False,
    expected_from: str = "pin",
    session: requests.Session | None = None,
    timeout: float = 60.0,
    retries: int = 3,
) -> Fetched:
    """Fetch `url` to `dest`, verified against `sha256` before it is renamed into place.

    The transfer streams to `<dest>.part`. A `.part` left by an earlier attempt is resumed
    with a Range request when the server answers 206, and restarted when it answers 200.
    When the network fails (or the server has no such file), `manual_dir/<basename of url>`
    is used instead, after the same checksum. `sha256=None` fetches whatever is there (the
    caller records its digest: `fetch_source` locks it), and is refused with `require_pin`.
    `expected_from` says where `sha256` comes from, for the mismatch message.
    """
    dest = Path(dest)
    manual_dir = Path(manual_dir)
    if sha256 is not None:
        sha256 = sha256.lower()
        if not SHA256_RE.match(sha256):
            raise XltError(f"{dest}: sha256 pin {sha256!r} is not 64 hex digits")
    elif require_pin:
        raise UnpinnedError(
            f"{dest}: refusing to download {url} without a sha256 pin (download.require_pins); "
            "pin it in the config (download.pins) or lock it with a fetch without require_pins"
        )

    if dest.exists():
        actual = sha256_file(dest)
        if sha256 is None or actual == sha256:
            return Fetched(dest, actual, dest.stat().st_size, "existing", url=url)
        _log(
            f"{dest} does not match its {expected_from} (sha256 {actual}, expected {sha256}); "
            "removing it and fetching again"
        )
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
                f"{dest}: sha256 mismatch for {url}: expected {sha256} ({expected_from}), "
                f"got {actual}; the bad download was removed"
            )
        os.replace(part, dest)
        return Fetched(dest, actual, dest.stat().st_size, "network", url=url)

    # The network did not deliver: look for a copy placed by hand.
    candidates = _manual_candidates(url, dest, manual_dir, manual_names)
    for cand in candidates:
        if cand.is_file():
            _log(f"{url}: {problem}; using the manual copy {cand}")
            actual = _install_copy(cand, dest, sha256, require_pin, expected_from)
            return Fetched(dest, actual, dest.stat().st_size, "manual", url=url)
    digest = f" (sha256 {sha256})" if sha256 else ""
    raise DownloadError(
        f"could not download {url} ({problem}); download it by hand{digest} and save it as "
        f"{candidates[0]}, then run again"
    )


# --------------------------------------------------------------------------- Hugging Face Hub


class HubFileMissing(DownloadError):
    """The Hub repo has no such file at this revision (404 EntryNotFound)."""


def _commit_from_cache_path(path: str) -> str | None:
    parts = Path(path).parts
    for i, part in enumerate(parts[:-1]):
        if part == "snapshots" and COMMIT_RE.match(parts[i + 1]):
            return parts[i + 1]
    return None


def _offline_mode_error() -> Exception:
    # deferred: loads huggingface_hub only when this runs
    from huggingface_hub.errors import OfflineModeIsEnabled

    return OfflineModeIsEnabled()


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
    expected_from: Mapping[str, str] | None = None,
    repo_type: str = "dataset",
) -> list[Fetched]:
    """Fetch files of the Hub dataset (or `repo_type` "model") `repo_id` at `revision` into `dest_dir`.

    `filenames` maps each path in the repo to its path under `dest_dir` (a plain list keeps
    the repo's paths). Files go through `huggingface_hub.hf_hub_download` (its cache, its
    retries, `HF_ENDPOINT` / `endpoint`, `HF_TOKEN`), then are hard-linked or copied into
    place atomically. `sha256` optionally pins {repo path: digest} (`expected_from`: {repo
    path: where that digest comes from}, for the mismatch message). Script-only repos are
    read at `revision="refs/convert/parquet"`.
    """
    # deferred: loads huggingface_hub only when this runs
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
                repo_type=repo_type,
                revision=revision,
                endpoint=endpoint,
                cache_dir=str(cache_dir) if cache_dir else None,
                token=token,
            )
        except Exception as e:  # noqa: BLE001 - huggingface_hub / httpx errors, all user-facing
            ep = endpoint or hf_constants.ENDPOINT
            # A failed connection reaches us as LocalEntryNotFoundError, an EntryNotFoundError:
            # the network's own reason comes first, "no such file" only when the Hub answered.
            cause = network_cause(e, urlsplit(ep).hostname)
            if cause is None and hf_constants.HF_HUB_OFFLINE:
                cause = network_cause(_offline_mode_error())
            missing = cause is None and "EntryNotFound" in type(e).__name__
            hint = (f" The network: {cause}." if cause else
                    " Check the pinned revision." if "RevisionNotFound" in type(e).__name__ else
                    " The repo has no such file at this revision: check the catalog's file list." if missing else "")
            raise (HubFileMissing if missing else DownloadError)(
                f"could not fetch {where} from {ep} ({_one_line(e)}).{hint}"
            ) from None
        commit = _commit_from_cache_path(cached)
        actual = sha256_file(cached)
        want = sha256.get(repo_path)
        if want is not None and actual != want:
            why = (expected_from or {}).get(repo_path, "pin")
            raise ChecksumError(
                f"{dest}: sha256 mismatch for {where}: expected {want} ({why}), got {actual}; "
                "not installed"
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


def sha256_pin(source: Source, pf: PlannedFile, pin: Mapping) -> tuple[str | None, str]:
    """The file's sha256 pin (config first, then the catalog) and where it is written."""
    pinned = pin.get("sha256")
    key = f"download.pins.{source.name}.sha256"
    if isinstance(pinned, str) and pf.lang is None:
        return pinned.lower(), f"pinned in {key}"
    if isinstance(pinned, Mapping):
        for k in (pf.path, pf.lang):
            if k is not None and pinned.get(k):
                return str(pinned[k]).lower(), f"pinned in {key}.{k}"
    if pf.sha256:
        return pf.sha256, f"pinned in catalog.yaml, sources.{source.name}"
    return None, ""


def _lock_label(lock: LockFile, entry: LockEntry) -> str:
    return f"locked in {lock.path} on {entry.date}"


def _pin_vs_lock(name: str, rel: str, what: str, pinned: str, label: str, locked: str,
                 lock: LockFile, entry: LockEntry) -> LockConflictError:  # fmt: skip
    return LockConflictError(
        f"source {name!r}: {rel}: {label} says {what} {pinned}, but {lock.path} locked {what} "
        f"{locked} on {entry.date}; a pin wins over the lock only when they agree: fix the pin, "
        "or delete the lock entry to accept the pinned file"
    )


def _hub_url(repo_id: str, ref: str, repo_path: str) -> str:
    return f"https://huggingface.co/datasets/{repo_id}/resolve/{ref}/{repo_path}"


def fetch_source(
    name: str,
    raw_root: str | Path,
    langs: Iterable[str] | None = None,
    cfg: FetchConfig | Mapping | None = None,
    *,
    manifest: str | Path | None = None,
) -> dict:
    """Fetch one catalog entry for `langs` into `raw_root`; write and return its manifest.

    Each file is checked against its pin (config `download.pins`, then catalog.yaml) if it
    has one, else against its entry in the lock file (`cfg.lock`); a file with neither is
    fetched and then locked (its sha256, size, URL, Hub commit and the date), or refused
    up front under `cfg.require_pins`. A pin and a lock entry that disagree are an error.
    The manifest (default `<raw_root>/manifests/<name>.json`) lists every file placed under
    the raw root with its sha256, where it came from, and what it was checked against.
    """
    source = get_source(name)
    cfg = FetchConfig.coerce(cfg)
    raw_root = Path(raw_root)
    langs = source.resolve_langs(langs)
    planned = source.plan(langs)
    pin = cfg.pin_for(source)
    lock = cfg.lock_file()
    locked = lock.entries(name)
    files: list[dict] = []
    revision = resolved_revision = None

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

    def expected(pf: PlannedFile, pinned_by_revision: bool) -> tuple[str | None, str, str | None]:
        """(digest to check, where it comes from, 'pin' | 'lock' | None = to be locked)."""
        digest, label = sha256_pin(source, pf, pin)
        entry = locked.get(pf.path)
        if digest is not None:
            if entry is not None and entry.sha256 != digest:
                raise _pin_vs_lock(name, pf.path, "sha256", digest, label, entry.sha256, lock, entry)
            return digest, label, "pin"
        if entry is not None:
            return entry.sha256, _lock_label(lock, entry), "lock"
        return None, "", "pin" if pinned_by_revision else None

    def lock_new(new: dict[str, LockEntry]) -> None:
        try:
            lock.add(name, new)
        except LockConflictError:
            for rel in new:  # in place but not recorded: a later fetch must not trust it
                (raw_root / rel).unlink(missing_ok=True)
            raise
        for rel, e in new.items():
            at = f" at {e.revision}" if e.revision else ""
            _log(f"locked {rel}{at}: sha256 {e.sha256}, {e.size} bytes -> {lock.path}")

    if source.kind == "url":
        expect = {pf.path: expected(pf, False) for pf in planned}
        missing = [p for p, (d, _, _) in expect.items() if d is None]
        if missing and cfg.require_pins:
            raise UnpinnedError(
                f"source {name!r}: no sha256 pin and no lock entry for {', '.join(missing)}; "
                "refusing to download unpinned files (download.require_pins: true). Pin them "
                f"under download.pins.{name}.sha256 in the config, or fetch them once without "
                f"require_pins to lock them in {lock.path}"
            )
        with requests.Session() as session:
            for pf in planned:
                digest, label, how = expect[pf.path]
                got = download(
                    cfg.rewrite(pf.url),
                    raw_root / pf.path,
                    digest,
                    manual_dir=cfg.manual_dir,
                    manual_names=[pf.path],
                    require_pin=cfg.require_pins,
                    expected_from=label or "pin",
                    session=session,
                    timeout=cfg.timeout,
                    retries=cfg.retries,
                )
                if how is None:
                    lock_new({pf.path: LockEntry(sha256=got.sha256, size=got.size, url=pf.url,
                                                 date=now(), origin=got.origin)})  # fmt: skip
                record(got, pinned=how == "pin", check=how or "locked now")
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
        pinned = all(how == "pin" for _, _, how in expect.values())
    else:
        revision, rev_label = pin.get("revision"), f"download.pins.{name}.revision"
        if revision is None and source.revision is not None:
            revision, rev_label = source.revision, f"catalog.yaml, sources.{name}.revision"
        if revision is not None:
            revision = str(revision)
            if not COMMIT_RE.match(revision):
                raise XltError(
                    f"{rev_label}: {revision!r} is not a 40-hex commit sha "
                    "(branches and tags move; pin the commit)"
                )
        revision_pinned = pinned = revision is not None
        lock_revs = sorted({e.revision for e in locked.values() if e.revision})
        if len(lock_revs) > 1:
            raise LockConflictError(
                f"{lock.path}: source {name!r} is locked at several commits of {source.repo_id} "
                f"({', '.join(lock_revs)}); delete the entries of the wrong one"
            )
        if lock_revs and revision is not None and lock_revs[0] != revision:
            rel, entry = next((r, e) for r, e in sorted(locked.items()) if e.revision)
            raise _pin_vs_lock(name, rel, "revision", revision, rev_label, lock_revs[0], lock, entry)
        revision = revision or (lock_revs[0] if lock_revs else None)
        expect = {pf.repo_path: expected(pf, revision_pinned) for pf in planned}
        missing = [pf.path for pf in planned if expect[pf.repo_path][2] is None]
        if missing and cfg.require_pins:
            raise UnpinnedError(
                f"source {name!r} (Hub dataset {source.repo_id}): no pinned revision and no lock "
                f"entry for {', '.join(missing)}; refusing to download unpinned files "
                f"(download.require_pins: true). Set download.pins.{name}.revision to a commit "
                f"sha in the config, or fetch them once without require_pins to lock them in "
                f"{lock.path}"
            )
        ref = revision or source.default_ref
        endpoint = cfg.hf_endpoint or os.environ.get("HF_ENDPOINT") or None
        fetched: list[tuple[PlannedFile, Fetched]] = []
        for pf in planned:
            digest, label, how = expect[pf.repo_path]
            try:
                got = fetch_hub_files(
                    source.repo_id,
                    ref,
                    {pf.repo_path: pf.path},
                    raw_root,
                    endpoint=endpoint,
                    cache_dir=cfg.hf_cache_dir,
                    sha256={pf.repo_path: digest},
                    expected_from={pf.repo_path: label or "pin"},
                )[0]
            except DownloadError as e:
                got = _hub_manual(pf, raw_root, cfg, digest, e, label or "pin")
            fetched.append((pf, got))
        commits = {f.revision for _, f in fetched if f.revision}
        if len(commits) > 1:
            raise XltError(
                f"source {name!r}: files came from different commits of {source.repo_id} "
                f"({', '.join(sorted(commits))}); pin a revision"
            )
        resolved_revision = commits.pop() if commits else revision
        new: dict[str, LockEntry] = {}
        for pf, got in fetched:
            digest, _, how = expect[pf.repo_path]
            if how is None or (digest is None and got.origin == "manual"):
                at = got.revision or (None if got.origin == "manual" else resolved_revision)
                new[pf.path] = LockEntry(
                    sha256=got.sha256, size=got.size, url=_hub_url(source.repo_id, at or ref, pf.repo_path),
                    date=now(), revision=at, origin=got.origin,
                )  # fmt: skip
                how = None
            record(got, repo_path=pf.repo_path, pinned=how == "pin", check=how or "locked now")
        lock_new(new)

    out = {
        "source": name,
        "family": source.family,
        "kind": source.kind,
        "description": source.description,
        "license": source.license,
        "languages": list(langs),
        "repo_id": source.repo_id,
        "revision_requested": revision if source.kind == "hub" else None,
        "revision": resolved_revision,
        "pinned": pinned,
        "lock": str(lock.path),
        "files": sorted(files, key=lambda f: f["path"]),
        "xlt_version": xlt.__version__,
    }
    manifest = Path(manifest) if manifest else raw_root / "manifests" / f"{name}.json"
    write_json(manifest, out)
    return out


def _hub_manual(
    pf: PlannedFile, raw_root: Path, cfg: FetchConfig, sha: str | None, error: XltError,
    expected_from: str = "pin",
) -> Fetched:  # fmt: skip
    """A Hub file that could not be fetched: use `<manual_dir>/<raw path>` if present."""
    cand = cfg.manual_dir / pf.path
    if cand.is_file():
        if sha is None and cfg.require_pins:
            raise DownloadError(
                f"{error} A manual copy exists at {cand}, but without a sha256 pin or lock entry "
                f"for {pf.path} it cannot be checked; pin it, or fetch it once without "
                "download.require_pins to lock it"
            )
        _log(f"{error}; using the manual copy {cand}")
        dest = raw_root / pf.path
        actual = _install_copy(cand, dest, sha, False, expected_from)
        return Fetched(dest, actual, dest.stat().st_size, "manual", url=str(pf.repo_path))
    raise DownloadError(f"{error} Or save the file by hand as {cand} and run again.")
