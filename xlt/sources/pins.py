"""What is pinned, locked and neither, per catalog entry and file (`make pins`).

    python -m xlt.sources.pins [--config config.yaml] [--lock PATH]

A file is *pinned* by the config (`download.pins`) or catalog.yaml (a sha256, or a Hub
entry's revision), *locked* by an entry in the lock file (written by its first fetch), or
*not locked* (its next fetch will lock it; `download.require_pins: true` refuses it).
Entries that offer any language (UD, WikiANN) list their locked files, then one line for
the languages not fetched yet. Lock entries of files the catalog no longer plans are listed
as `stale`.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path

from xlt.errors import XltError
from xlt.sources.catalog import Source, catalog
from xlt.sources.fetch import FetchConfig, sha256_pin
from xlt.sources.lock import LockEntry
from xlt.process.cli import ArgumentParser
from xlt.io import read_yaml


def _locked_line(rel: str, e: LockEntry) -> str:
    at = f"  at {e.revision}" if e.revision else ""
    return f"  locked      {rel}  sha256 {e.sha256}  {e.size} bytes{at}  {e.date}"


def source_lines(source: Source, pin: Mapping, locked: Mapping[str, LockEntry]) -> tuple[list[str], dict]:
    """The lines for one entry and its counts {locked, pinned, not locked, stale}."""
    counts = {"locked": 0, "pinned": 0, "not locked": 0, "stale": 0}
    head = f"{source.name} ({source.kind}{f' {source.repo_id}' if source.repo_id else ''})"
    lines = [head]
    rev = pin.get("revision") or source.revision
    rev_from = "config" if pin.get("revision") else "catalog.yaml"
    open_set = source.languages is None and source.templated
    planned = source.plan(None) if not open_set else []
    if open_set:  # the files of the languages in the lock (or pinned per language) stand for it
        langs = sorted({lang for rel in locked for lang in _langs_of(source, rel)})
        planned = source.plan(langs) if langs else []
    seen = set()
    for pf in planned:
        seen.add(pf.path)
        digest, where = sha256_pin(source, pf, pin)
        if digest is not None:
            counts["pinned"] += 1
            lines.append(f"  pinned      {pf.path}  sha256 {digest}  ({where})")
        elif pf.path in locked:
            counts["locked"] += 1
            lines.append(_locked_line(pf.path, locked[pf.path]))
        elif rev is not None:
            counts["pinned"] += 1
            lines.append(f"  pinned      {pf.path}  revision {rev}  ({rev_from})")
        else:
            counts["not locked"] += 1
            lines.append(f"  not locked  {pf.path}")
    for rel in sorted(set(locked) - seen):
        counts["stale"] += 1
        lines.append(_locked_line(rel, locked[rel]).replace("  locked   ", "  stale    ", 1))
    if open_set:
        templates = ", ".join(f.path for f in source.files)
        lines.append(f"  not locked  {templates}  (any other language)")
    return lines, counts


def _langs_of(source: Source, rel: str) -> list[str]:
    """The languages whose planned files include `rel` (open language sets only)."""
    out = []
    for spec in source.files:
        pat = re.escape(spec.path).replace(r"\{lang\}", r"(?P<lang>[^/]+)").replace(r"\{split\}", r"[^/]+")
        m = re.fullmatch(pat, rel)
        if m and "lang" in m.groupdict():
            out.append(m.group("lang"))
    return out


def encoder_lines(encoders: dict, locked: dict[str, dict[str, LockEntry]]) -> list[str]:
    """Each Hub encoder of the config's `encoders`: its snapshot's pinned or locked commit and
    files (xlt.sources.encoders), or that its first fetch will lock it."""
    out = []
    for name, spec in sorted(encoders.items()):
        if not isinstance(spec, dict) or not spec.get("hub") or spec.get("path") or spec.get("build"):
            continue
        files = locked.get(spec["hub"], {})
        commits = sorted({e.revision for e in files.values() if e.revision})
        state = (f"pinned at {spec['revision']}" if spec.get("revision") else
                 f"locked at {', '.join(commits)}" if files else "not locked (the first fetch locks it)")
        out.append(f"encoder {name} ({spec['hub']}): {state}")
        out += [_locked_line(r, e) for r, e in sorted(files.items())]
    return out


def report(cfg: FetchConfig, encoders: dict | None = None) -> str:
    return tally(cfg, encoders)[0]


def tally(cfg: FetchConfig, encoders: dict | None = None, sources=None) -> tuple[str, dict]:
    """The report and its file counts {locked, pinned, not locked, stale}, plus 'encoders not
    locked': the config's Hub encoders whose snapshot is neither pinned nor locked. `sources`:
    only these catalog entries (default: all)."""
    lock = cfg.lock_file()
    entries = lock.read()
    total = {"locked": 0, "pinned": 0, "not locked": 0, "stale": 0}
    out = [f"lock file: {lock.path}" + ("" if lock.path.exists() else " (none yet)")]
    for name, source in sorted(catalog().items()):
        if sources is not None and name not in sources:
            continue
        lines, counts = source_lines(source, cfg.pin_for(source), entries.get(name, {}))
        out += lines
        for k, v in counts.items():
            total[k] += v
    for name in sorted(set(entries) - set(catalog()) if sources is None else ()):
        out.append(f"{name} (not in the catalog)")
        out += [_locked_line(r, e).replace("  locked   ", "  stale    ", 1) for r, e in sorted(entries[name].items())]
        total["stale"] += len(entries[name])
    enc = encoder_lines(encoders or {}, lock.read("encoders"))
    out += enc
    out.append(", ".join(f"{v} {k}" for k, v in total.items()) + " (files)")
    return "\n".join(out) + "\n", {**total, "encoders not locked": sum("): not locked" in line for line in enc)}


def main(argv: list[str] | None = None) -> int:

    ap = ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", help="YAML file with a download: block (pins, lock)")
    ap.add_argument("--lock", help="the lock file (default: download.lock, else the repo's)")
    args = ap.parse_args(argv)
    try:
        block, encoders = {}, {}
        if args.config:

            data = read_yaml(args.config) or {}
            block = dict(data.get("download") or {}) if isinstance(data, dict) else {}
            encoders = dict(data.get("encoders") or {}) if isinstance(data, dict) else {}
        if args.lock:
            block["lock"] = args.lock
        cfg = FetchConfig.coerce(block)
        sys.stdout.write(report(cfg, encoders))
    except XltError as e:
        print(f"error: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
