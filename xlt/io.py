"""Atomic file output and JSON-lines I/O.

Every writer goes through `atomic_path`: the data is written to a temporary file beside
the target and renamed into place only when complete, so a crash or a validation error
never leaves a half-written output behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from xlt.errors import DataFormatError
import gzip
import shutil


def _make_parents(target: Path) -> list[Path]:
    """mkdir -p the parent of `target`; return the folders it created, deepest first."""
    made, p = [], target.parent
    while not p.exists():
        made.append(p)
        p = p.parent
    target.parent.mkdir(parents=True, exist_ok=True)
    return made


def _remove_empty(folders: list[Path]) -> None:
    """Undo `_make_parents` after a failure: a failed job leaves no empty output folder."""
    for d in folders:
        try:
            d.rmdir()
        except OSError:  # not empty (something else wrote there) or already gone
            break


@contextlib.contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary path; move it onto `target` only if the block succeeds."""
    target = Path(target)
    made = _make_parents(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    ok = False
    try:
        yield tmp_path
        os.replace(tmp_path, target)
        ok = True
    finally:
        if tmp_path.exists():
            tmp_path.unlink()
        if not ok:
            _remove_empty(made)


def write_text(target: str | Path, text: str) -> None:
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(target: str | Path, obj: Any) -> None:
    write_text(target, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def write_jsonl(target: str | Path, records: Iterable[dict]) -> int:
    n = 0
    with atomic_path(target) as tmp, open(tmp, "w", encoding="utf-8") as f:
        for rec in records:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
            n += 1
    return n


def iter_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(line number, text without the line break) of a UTF-8 text file, gzip or plain.

    Invalid UTF-8, a missing or truncated file raise DataFormatError naming file (and line).
    """

    path = Path(path)
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            for lineno, raw in enumerate(f, 1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise DataFormatError(path, lineno, f"invalid UTF-8 ({e.reason})") from None
                yield lineno, line.rstrip("\n").rstrip("\r")
    except (OSError, EOFError) as e:  # missing, unreadable, truncated / not gzip
        if isinstance(e, FileNotFoundError):
            raise DataFormatError(path, None, "file not found") from None
        raise DataFormatError(path, None, f"cannot read file ({e})") from None


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) of a JSON-lines file; blank lines are skipped."""
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataFormatError(path, lineno, f"invalid JSON ({e.msg})") from None
        if not isinstance(rec, dict):
            raise DataFormatError(path, lineno, "expected a JSON object")
        yield lineno, rec


def read_jsonl(path: str | Path) -> list[dict]:
    """Read JSON lines; a bad line raises DataFormatError naming file:line."""
    return [rec for _, rec in iter_jsonl(path)]


def read_json(path: str | Path) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except UnicodeDecodeError as e:
        raise DataFormatError(path, None, f"invalid UTF-8 ({e.reason})") from None
    except json.JSONDecodeError as e:
        raise DataFormatError(path, e.lineno, f"invalid JSON ({e.msg})") from None


def read_yaml(path: str | Path) -> Any:
    """A YAML (or JSON) file; unreadable or invalid YAML raises DataFormatError naming file:line."""
    # deferred: loads yaml only when this runs
    import yaml

    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataFormatError(path, None, "file not found") from None
    except UnicodeDecodeError as e:
        raise DataFormatError(path, None, f"invalid UTF-8 ({e.reason})") from None
    except OSError as e:
        raise DataFormatError(path, None, f"cannot read file ({e.strerror})") from None
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        what = " ".join(str(e.problem or e.context).split())
        raise DataFormatError(path, mark.line + 1 if mark else None, f"invalid YAML ({what})") from None
    except yaml.YAMLError as e:
        raise DataFormatError(path, None, f"invalid YAML ({' '.join(str(e).split())})") from None


def check_safetensors(path: str | Path) -> None:
    """Refuse a truncated or corrupted safetensors file (DataFormatError naming it) before a
    loader reads it: the 8-byte header length, the JSON header, and the file size the header's
    tensor offsets imply."""
    path = Path(path)
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(8)
            n = int.from_bytes(head, "little") if len(head) == 8 else None
            if n is None or 8 + n > size:
                raise DataFormatError(path, None, f"truncated or corrupted safetensors file ({size} bytes, header cut)")
            raw = f.read(n)
    except FileNotFoundError:
        raise DataFormatError(path, None, "file not found") from None
    try:
        header = json.loads(raw)
        end = max((int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__"), default=0)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        raise DataFormatError(path, None, "corrupted safetensors file (unreadable header)") from None
    if 8 + n + end != size:
        raise DataFormatError(path, None, f"truncated or corrupted safetensors file ({size} bytes, "
                                          f"its header describes {8 + n + end})")


def weights_digest(directory: str | Path) -> dict[str, str]:
    """sha256 of every safetensors file under a model directory, by relative path."""
    directory = Path(directory)
    return {str(p.relative_to(directory)): sha256_file(p) for p in sorted(directory.rglob("*.safetensors"))}


def verify_weights(directory: str | Path, expected: dict[str, str] | None = None, fix: str | None = None) -> None:
    """Check every safetensors file under `directory` (structure, and the sha256 recorded when
    it was saved, if given): a truncated or bit-flipped weight file is refused with its path and,
    when given, `fix` (what rebuilds it: a rerun alone keeps the damaged file)."""
    directory = Path(directory)
    try:
        for p in sorted(directory.rglob("*.safetensors")):
            check_safetensors(p)
        for rel, digest in (expected or {}).items():
            p = directory / rel
            if not p.is_file():
                raise DataFormatError(p, None, "file not found (listed in the model's weights_sha256)")
            if sha256_file(p) != digest:
                raise DataFormatError(p, None, "corrupted: sha256 differs from the one recorded when it was saved")
    except DataFormatError as e:
        if fix is None:
            raise
        raise DataFormatError(e.path, e.line, f"{str(e).split(': ', 1)[1]}; {fix}") from None


# Pickled weights (torch.save): loading them can run code, so no loader here reads them.
PICKLED_WEIGHTS = ("pytorch_model*.bin",)
TO_SAFETENSORS = ".venv/bin/python -m xlt.engine.to_safetensors"


def pickle_only(directory: str | Path) -> str | None:
    """The one-line problem of a model directory whose weights are pickled only (no safetensors
    beside them), with the command that converts them; None otherwise."""
    directory = Path(directory)
    if any(directory.glob("*.safetensors")):
        return None
    pickled = sorted(p.name for pattern in PICKLED_WEIGHTS for p in directory.glob(pattern))
    if not pickled:
        return None
    return (f"{directory} holds only pickled weights ({', '.join(pickled)}), which can run code when loaded and are "
            f"never read here; convert them once to safetensors: `{TO_SAFETENSORS} {directory}`")


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


@contextlib.contextmanager
def atomic_dir(target: str | Path) -> Iterator[Path]:
    """Yield a temporary directory; it replaces `target` only if the block succeeds."""

    target = Path(target)
    made = _make_parents(target)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    ok = False
    try:
        yield tmp
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
        ok = True
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
        if not ok:
            _remove_empty(made)
