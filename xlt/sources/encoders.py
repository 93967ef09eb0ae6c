"""Encoder snapshots: a Hub model's files at one commit, in a local directory every job loads
from (docs/sources.md, "Offline compute nodes").

    <raw_root>/encoders/<encoder>/       config.json, model.safetensors, tokenizer files
    <raw_root>/encoders/<encoder>/xlt-snapshot.json   repo id, commit, each file's sha256

The `download_encoder` rule makes one (a local rule: it runs where Snakemake runs, which has
network); `snakemake prefetch` makes every one the configured papers need, with the datasets.
Jobs then read only these directories, so compute nodes without internet (the SLURM profile
runs them with HF_HUB_OFFLINE=1) never reach for the Hub.

A snapshot is locked like the data (xlt.sources.lock, section `encoders`, keyed by Hub id):
the first fetch records the commit `main` pointed to and every file's sha256; every later
fetch reads that commit and verifies each file. A `revision` in the config pins the commit
(it must agree with the lock). Weights are fetched as safetensors only (never a pickle).
"""

from __future__ import annotations

from pathlib import Path

from xlt.errors import XltError
from xlt.io import TO_SAFETENSORS, atomic_dir, write_json
from xlt.sources.catalog import COMMIT_RE
from xlt.sources.fetch import FetchConfig, HubFileMissing, UnpinnedError, _log, fetch_hub_files
from xlt.sources.lock import LockConflictError, LockEntry, now
from xlt.io import read_json

SECTION = "encoders"
SNAPSHOT_META = "xlt-snapshot.json"
# What a job reads: the config and the weights (needed), the tokenizer's files (whichever the
# repo has: mBERT a vocab.txt, XLM-R a sentencepiece model; tokenizer.json for both).
WEIGHTS = "model.safetensors"
REQUIRED = ("config.json", WEIGHTS)
OPTIONAL = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt",
            "sentencepiece.bpe.model")  # fmt: skip


def model_url(repo_id: str, ref: str, path: str) -> str:
    return f"https://huggingface.co/{repo_id}/resolve/{ref}/{path}"


def _locked_commit(lock, repo_id: str, locked: dict[str, LockEntry], revision: str | None) -> str | None:
    revs = sorted({e.revision for e in locked.values() if e.revision})
    if len(revs) > 1:
        raise LockConflictError(f"{lock.path}: encoder {repo_id} is locked at several commits "
                                f"({', '.join(revs)}); delete the entries of the wrong one")  # fmt: skip
    if revs and revision is not None and revs[0] != revision:
        raise LockConflictError(
            f"encoder {repo_id}: the config pins revision {revision}, but {lock.path} locked "
            f"{revs[0]}; fix the pin, or delete the lock entries to accept the pinned commit"
        )
    return revs[0] if revs else None


def fetch_encoder(name: str, repo_id: str, dest: str | Path, revision: str | None = None,
                  cfg: FetchConfig | dict | None = None) -> dict:  # fmt: skip
    """Fetch the Hub model `repo_id` (config name `name`) into the directory `dest`, at
    `revision` (a 40-hex commit), else at the commit its lock entries name, else at `main`,
    and lock what was fetched. `dest` is replaced whole, only when every file is in place and
    verified. Returns the snapshot's record (also written as `dest`/xlt-snapshot.json)."""
    cfg = FetchConfig.coerce(cfg)
    if revision is not None and not COMMIT_RE.match(str(revision)):
        raise XltError(f"encoders.{name}.revision: {revision!r} is not a 40-hex commit sha "
                       "(branches and tags move; pin the commit)")  # fmt: skip
    lock = cfg.lock_file()
    locked = lock.entries(repo_id, SECTION)
    commit = _locked_commit(lock, repo_id, locked, revision)
    commit = revision or commit
    if commit is None and cfg.require_pins:
        raise UnpinnedError(
            f"encoder {name} (Hub model {repo_id}): no pinned revision and no lock entry; refusing "
            f"to download it (download.require_pins: true). Set encoders.{name}.revision to a "
            f"commit sha, or fetch it once without require_pins to lock it in {lock.path}"
        )
    wanted = sorted(locked) if locked else [*REQUIRED, *OPTIONAL]
    ref = commit or "main"
    endpoint = cfg.hf_endpoint or None
    files: dict[str, dict] = {}
    new: dict[str, LockEntry] = {}
    dest = Path(dest)
    with atomic_dir(dest) as tmp:
        for f in wanted:
            entry = locked.get(f)
            try:
                (got,) = fetch_hub_files(
                    repo_id, ref, {f: f}, tmp, endpoint=endpoint, cache_dir=cfg.hf_cache_dir,
                    sha256={f: entry.sha256 if entry else None}, repo_type="model",
                    expected_from={f: f"locked in {lock.path} on {entry.date}" if entry else "pin"},
                )  # fmt: skip
            except HubFileMissing as e:
                if entry is None and f in OPTIONAL:
                    continue  # this repo's tokenizer has no such file
                if f == WEIGHTS:  # pickled weights only (pytorch_model.bin): never loaded here
                    raise HubFileMissing(
                        f"encoder {name} (Hub model {repo_id}) has no {WEIGHTS} at {ref}, and pickled weights are "
                        f"never read here: pin a revision that has it (encoders.{name}.revision), or download the "
                        f"model, convert it once (`{TO_SAFETENSORS} <its directory>`) and give that directory as "
                        f"encoders.{name}.path") from e
                raise
            if got.revision and ref != got.revision:
                if COMMIT_RE.match(ref):
                    raise XltError(f"encoder {repo_id}: {f} came from commit {got.revision}, not {ref}")
                ref = got.revision  # `main` resolved: every other file from the same commit
            files[f] = {"sha256": got.sha256, "bytes": got.size}
            if entry is None:
                new[f] = LockEntry(sha256=got.sha256, size=got.size, url=model_url(repo_id, ref, f),
                                   date=now(), revision=ref if COMMIT_RE.match(ref) else None, origin="hub")  # fmt: skip
        record = {"encoder": name, "repo_id": repo_id, "revision": ref, "revision_requested": revision,
                  "files": files, "lock": str(lock.path), "check": "lock" if locked else "locked now"}  # fmt: skip
        write_json(tmp / SNAPSHOT_META, record)
        lock.add(repo_id, new, SECTION)  # before the rename: a refused lock leaves no snapshot
    for f, e in sorted(new.items()):
        _log(f"locked encoder {repo_id} {f} at {e.revision}: sha256 {e.sha256}, {e.size} bytes -> {lock.path}")
    return record


def snapshot_of(directory: str | Path) -> dict | None:
    """The record of the snapshot in `directory`, or None when it is not one."""

    p = Path(directory) / SNAPSHOT_META
    return read_json(p) if p.is_file() else None
