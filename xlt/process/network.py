"""Why a fetch did not reach its host, in words a user acts on: the offline variable that is
set (each by its own name), a DNS failure, a refused connection, a timeout.

huggingface_hub turns any failed connection into `LocalEntryNotFoundError`, a subclass of
`EntryNotFoundError` ("no such file"); the network's own error is further down the exception's
chain (`__cause__` / `__context__`), which `network_cause` reads.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator, Mapping

# Each switches the Hub off for its library; huggingface_hub reads HF_HUB_OFFLINE or, failing
# that, TRANSFORMERS_OFFLINE (its constants.HF_HUB_OFFLINE); `datasets` reads HF_DATASETS_OFFLINE.
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")
HUB_OFFLINE_VARIABLES = OFFLINE_VARIABLES[:2]
_TRUE = {"1", "ON", "YES", "TRUE"}
_DNS = ("Name or service not known", "nodename nor servname", "Temporary failure in name resolution",
        "No address associated with hostname", "getaddrinfo failed", "NameResolutionError")  # fmt: skip
_REFUSED = ("Connection refused", "ConnectionRefusedError", "actively refused")
_TIMEOUT = ("timed out", "Timeout")


def offline_variables(names=OFFLINE_VARIABLES, env: Mapping[str, str] | None = None) -> list[str]:
    """The offline variables among `names` that are set to a true value (1, ON, YES, TRUE)."""
    env = os.environ if env is None else env
    return [n for n in names if env.get(n, "").strip().upper() in _TRUE]


def hub_offline(env: Mapping[str, str] | None = None) -> bool:
    """The Hub is switched off for huggingface_hub (and so transformers) by the environment."""
    return bool(offline_variables(HUB_OFFLINE_VARIABLES, env))


def offline_words(names: list[str]) -> str:
    """`HF_HUB_OFFLINE=1`, or `TRANSFORMERS_OFFLINE=1 and HF_DATASETS_OFFLINE=1`: as set here."""
    return " and ".join(f"{n}={os.environ.get(n, '1').strip()}" for n in names)


def _chain(e: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    todo: list[BaseException] = [e]
    while todo:
        x = todo.pop(0)
        if id(x) in seen:
            continue
        seen.add(id(x))
        yield x
        todo += [c for c in (x.__cause__, x.__context__) if c is not None]
        todo += [a for a in getattr(x, "args", ()) if isinstance(a, BaseException)]  # urllib3 wraps its reason


def network_cause(e: BaseException, host: str | None = None) -> str | None:
    """The network's reason a request failed, in one phrase, or None when the network answered
    (a 404, a checksum): 'DNS failure: …', 'connection refused by …', 'timed out …', or the
    offline variable that stopped the request before it left."""
    at = f" {host}" if host else ""
    chain = list(_chain(e))
    if any(type(x).__name__ == "OfflineModeIsEnabled" for x in chain):
        names = offline_variables(HUB_OFFLINE_VARIABLES)
        set_by = offline_words(names) if names else "HF_HUB_OFFLINE (huggingface_hub's offline mode)"
        return f"the Hub is switched off here by {set_by}: unset it where a download should run"
    text = " | ".join(f"{type(x).__name__}: {x}" for x in chain)
    if any(isinstance(x, socket.gaierror) for x in chain) or any(s in text for s in _DNS):
        return f"DNS failure: the host{at} could not be resolved (no network or no DNS here)"
    if any(isinstance(x, ConnectionRefusedError) for x in chain) or any(s in text for s in _REFUSED):
        return f"connection refused by{at or ' the host'} (nothing listens there, or a firewall or proxy refuses)"
    if any(isinstance(x, (TimeoutError, socket.timeout)) for x in chain) or any(s in text for s in _TIMEOUT):
        return f"the connection to{at or ' the host'} timed out (no route, or a firewall drops it)"
    if any(type(x).__name__ in ("ConnectError", "ConnectionError") for x in chain):
        return f"no connection to{at or ' the host'}"
    return None
