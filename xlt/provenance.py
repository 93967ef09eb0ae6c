"""What every model and result carries: resolved config, seed, data checksums, code version."""

from __future__ import annotations

import functools
import hashlib
import platform
import subprocess
from pathlib import Path

import xlt
from xlt.io import sha256_file

_ROOT = Path(__file__).resolve().parent


@functools.cache
def code_version() -> dict:
    """The git commit (and whether the tree was dirty), plus a hash of the xlt sources.

    The source hash identifies the code even outside a git checkout (an installed wheel).
    """
    h = hashlib.sha256()
    for p in sorted(_ROOT.rglob("*.py")):
        h.update(p.relative_to(_ROOT).as_posix().encode())
        h.update(p.read_bytes())
    info = {"xlt": xlt.__version__, "source_sha256": h.hexdigest()}
    try:
        top = _ROOT.parent
        commit = subprocess.run(
            ["git", "-C", str(top), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if commit.returncode == 0:
            info["git_commit"] = commit.stdout.strip()
            dirty = subprocess.run(
                ["git", "-C", str(top), "status", "--porcelain", "--untracked-files=no", "xlt"],
                capture_output=True,
                text=True,
                timeout=10,
            )
            info["git_dirty"] = bool(dirty.stdout.strip())
    except (OSError, subprocess.TimeoutExpired):
        pass
    return info


def environment() -> dict:
    # deferred: loads torch, transformers only when this runs
    import torch
    import transformers

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "platform": platform.platform(),
    }


def data_checksums(paths) -> dict[str, str]:
    return {str(p): sha256_file(p) for p in paths}


def provenance(config: dict, seed: int | None, inputs) -> dict:
    return {
        "config": config,
        "seed": seed,
        "data_sha256": data_checksums(inputs),
        "code": code_version(),
        "environment": environment(),
    }
