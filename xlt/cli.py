"""How workflow scripts run: one line `error: …` and exit 1 on a user-facing failure."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable


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
    from xlt.errors import XltError

    quiet_libraries()
    try:
        main()
    except XltError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)


def json_arg(text: str):
    return json.loads(text)
