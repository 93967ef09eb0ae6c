#!/usr/bin/env python
"""Fetch one catalog source into the raw layout, or one encoder snapshot (the `download` and
`download_encoder` rules call this).

    python workflow_scripts/download.py --source wikiann --raw-root results/raw \
        --langs en de --manifest results/raw/manifests/wikiann.json [--config config.yaml]
    python workflow_scripts/download.py --encoder mbert --hub google-bert/bert-base-multilingual-cased \
        [--revision <commit>] --out results/raw/encoders/mbert [--config config.yaml]

`--config` is a YAML/JSON file; its `download:` block (or the whole mapping when it has
none) is the fetch configuration (pins, require_pins, lock, mirrors, manual_dir, ...). The
workflow passes that block inline instead, as `--download '<JSON>'`. The file's block, the
inline one and the flags given here are merged in that order, as config files are (xlt.workflow.config:
nested mappings merge, other values replace). On failure: one line `error: ...` on stderr,
exit status 1.
"""

from __future__ import annotations

import sys

from xlt.process.cli import ArgumentParser, json_arg
from xlt.workflow.config import config_sources, merged
from xlt.errors import XltError


def _config_block(path: str) -> dict:
    """The download: block of a config file (read as a workflow config file is), or the whole
    mapping when it has none."""
    data = config_sources([path], default=False)[-1][1]  # the file's own (after any layers it brings)
    block = data.get("download", data)
    if not isinstance(block, dict):
        raise XltError(f"{path}: download: expected a mapping")
    return block


def _json_block(text: str) -> dict:
    from argparse import ArgumentTypeError

    try:
        block = json_arg(text)
    except ArgumentTypeError as e:
        raise XltError(f"--download: {e}") from None
    if not isinstance(block, dict):
        raise XltError("--download: expected a JSON object (the config's download: block)")
    return block


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(description=__doc__.split("\n\n")[0])
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--source", help="catalog entry (xlt/sources/catalog.yaml)")
    what.add_argument("--encoder", help="an encoder of the config's `encoders` (with --hub, --out)")
    ap.add_argument("--hub", help="the encoder's Hub model id")
    ap.add_argument("--revision", help="the encoder's pinned commit (default: the lock's, else main)")
    ap.add_argument("--out", help="the encoder snapshot's directory")
    ap.add_argument("--raw-root", help="root of the raw layout (docs/data.md); with --source")
    ap.add_argument("--langs", nargs="*", default=[], help="languages (space or comma separated)")
    ap.add_argument("--manifest", help="manifest JSON to write (default <raw-root>/manifests/)")
    ap.add_argument("--config", help="YAML/JSON file holding the download: block")
    ap.add_argument("--download", help="the download: block itself, as JSON (the workflow's way)")
    ap.add_argument("--require-pins", action="store_true", default=None,
                    help="refuse files with neither a pin nor a lock entry")
    ap.add_argument("--lock", help="the lock file (default xlt/sources/catalog.lock.yaml)")
    ap.add_argument("--manual-dir", help="where hand-downloaded files are looked for")
    ap.add_argument("--hf-endpoint", help="Hugging Face Hub endpoint (default $HF_ENDPOINT)")
    args = ap.parse_args(argv)
    langs = [x for item in args.langs for x in item.split(",") if x]
    try:
        from xlt.sources.fetch import fetch_source

        flags = {"require_pins": args.require_pins, "lock": args.lock, "manual_dir": args.manual_dir,
                 "hf_endpoint": args.hf_endpoint}
        # the file's block, then --download, then the flags given, merged as config files are
        cfg = merged([("--config", _config_block(args.config) if args.config else {}),
                      ("--download", _json_block(args.download) if args.download else {}),
                      ("flags", {k: v for k, v in flags.items() if v})])
        if args.encoder:
            from xlt.sources.encoders import fetch_encoder

            if not (args.hub and args.out):
                raise XltError("--encoder needs --hub and --out")
            man = fetch_encoder(args.encoder, args.hub, args.out, args.revision, cfg)
            where = f"{args.out} ({args.hub} at {man['revision']})"
        else:
            if not args.raw_root:
                raise XltError("--source needs --raw-root")
            man = fetch_source(args.source, args.raw_root, langs, cfg, manifest=args.manifest)
            where = args.raw_root
    except XltError as e:
        print(f"error: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    print(f"{args.encoder or args.source}: {len(man['files'])} files under {where}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
