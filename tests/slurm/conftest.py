"""pytest fixture ``slurm_cluster``: a private single-node SLURM for the whole session.

    @pytest.mark.slurm
    def test_x(slurm_cluster):
        slurm_cluster.env            # {"SLURM_CONF": ...}: add to a subprocess env
        slurm_cluster.environ()      # os.environ + that (minus stray SLURM_* vars)
        slurm_cluster.account        # "xlt"
        slurm_cluster.partition      # "debug"
        slurm_cluster.run(["sacct", ...], timeout=30)

Installs the Debian packages on first use (as root, via apt-get), starts the daemons,
and stops them on teardown, also after failures, Ctrl-C or SIGTERM.  If SLURM cannot be
installed or started (not root, no apt-get), the fixture fails, unless
``XLT_SKIP_SLURM=1`` is set: then every test using it is skipped, without trying.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import signal
import sys
import time
from pathlib import Path

import pytest


def _load_cluster_module():
    # Loaded by path under a unique name, so that no sys.path entry or package
    # layout of tests/ is assumed (and "cluster" cannot clash with anything).
    name = "xlt_tests_slurm_cluster"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("cluster.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


cluster = _load_cluster_module()


def pytest_collection_modifyitems(config, items):
    # Any test that uses the fixture carries the marker, so `-m "not slurm"` deselects it.
    for item in items:
        if "slurm_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slurm)


def _sigterm_to_keyboardinterrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture(scope="session")
def slurm_cluster():
    if os.environ.get("XLT_SKIP_SLURM") == "1":
        pytest.skip("XLT_SKIP_SLURM=1: SLURM tests skipped")
    try:
        t0 = time.monotonic()
        spent = cluster.install()
        if spent:
            print(f"\n[slurm_cluster] installed packages in {spent:.1f}s", file=sys.stderr)
        # one cluster per xdist worker (`make test` runs several): its own name, ports and state dir
        c = cluster.start(cluster_name=cluster.DEFAULT_CLUSTER + os.environ.get("PYTEST_XDIST_WORKER", ""))
    except cluster.ClusterUnavailable as exc:
        pytest.fail(
            f"A real SLURM is needed for these tests and cannot be set up here: {exc}\n"
            "Run as root on Debian/Ubuntu (apt-get), or set XLT_SKIP_SLURM=1 to skip them.",
            pytrace=False,
        )
    except cluster.ClusterError as exc:
        pytest.fail(f"The test SLURM did not come up:\n{exc}", pytrace=False)
    print(
        f"[slurm_cluster] up in {time.monotonic() - t0:.1f}s at {c.base} ({c.timings})",
        file=sys.stderr,
    )
    # Teardown must run even when CI's `timeout` sends SIGTERM: pytest unwinds
    # fixtures on KeyboardInterrupt, not on SIGTERM.  atexit is the last resort.
    old = signal.getsignal(signal.SIGTERM)
    if old in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _sigterm_to_keyboardinterrupt)
    atexit.register(c.stop)
    try:
        yield c
    finally:
        spent = c.stop()
        atexit.unregister(c.stop)
        if old in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, old)
        print(f"\n[slurm_cluster] stopped in {spent:.1f}s", file=sys.stderr)
