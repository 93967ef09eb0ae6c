"""How workflow scripts run: one line `error: …` and exit 1 on a user-facing failure."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable

from xlt.errors import XltError
from xlt.zygote import delegate


def quiet_libraries() -> None:
    """Keep job logs readable: no per-load reports or shard progress bars from transformers."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except ImportError:
        pass


def set_threads(n: int | None) -> None:
    if n:
        import torch

        torch.set_num_threads(int(n))


def run(main: Callable[[], object]) -> None:
    if os.environ.get("XLT_ZYGOTE"):  # a fork server with the heavy imports done (xlt/zygote.py)
        code = delegate(os.environ["XLT_ZYGOTE"])
        if code is not None:
            sys.exit(code)
    quiet_libraries()
    try:
        main()
    except XltError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
    except OSError as e:
        # A file that is missing or unwritable (a full disk included) outside the readers'
        # own checks: still one line naming it.
        if e.filename is None:
            raise
        print(f"error: {e.filename}: {e.strerror}", file=sys.stderr)
        sys.exit(1)


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are one line, `error: <script>: <what>` (exit 2)."""

    def error(self, message):
        print(f"error: {self.prog}: {message}", file=sys.stderr)
        sys.exit(2)


def _no_constant(name: str):
    raise ValueError(f"{name} is not a finite number")


def json_arg(text: str):
    """A JSON argument (a config block the rule passes); NaN and Infinity refused."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except ValueError as e:  # JSONDecodeError is a ValueError
        raise argparse.ArgumentTypeError(f"invalid JSON ({e})") from None


_FAILED_RULE = re.compile(r"^Error in rule (\S+):")
_FAILED_LOG = re.compile(r"^\s+log: (.+) \(check log file\(s\) for error details\)")


def failed_job_errors(snakemake_logs) -> list[str]:
    """The `error:` line each failed job wrote to its log, as `error: rule <rule>: <line> (log:
    <path>)`, read from Snakemake's own log file(s) of the run (the workflow's `onerror` prints them
    last, so a failed run ends with the project's line naming the file and line)."""
    from pathlib import Path

    if isinstance(snakemake_logs, (str, Path)):
        snakemake_logs = [snakemake_logs]
    text = "\n".join(Path(p).read_text(encoding="utf-8", errors="replace")
                     for p in snakemake_logs or [] if p and Path(p).is_file())
    rule, out = None, []
    for line in text.splitlines():
        if m := _FAILED_RULE.match(line):
            rule = m.group(1)
        elif (m := _FAILED_LOG.match(line)) and rule:
            for path in m.group(1).split(", "):
                job_log = Path(path)
                errors = [x for x in job_log.read_text(encoding="utf-8", errors="replace").splitlines()
                          if x.startswith("error: ")] if job_log.is_file() else []
                line_out = f"error: rule {rule}: {errors[-1][len('error: '):]} (log: {path})" if errors else None
                if line_out and line_out not in out:
                    out.append(line_out)
    return out
