"""A private, throwaway single-node SLURM cluster for tests (Debian 12, as root).

Everything lives in one temporary directory: the config (used through ``SLURM_CONF``),
the munge key and socket, a MariaDB data directory, slurmdbd, slurmctld and slurmd
state, spool and logs, and the fake GPU device nodes.  Nothing under /etc is written;
the only system-wide change is ``install()`` (apt packages).  All daemons run in the
foreground as children of this process (their own session), every wait is bounded,
and ``stop()`` ends them by PID.

Python API (what the pytest fixture uses)::

    install()                       # apt-get install if a binary is missing
    c = start()                     # -> SlurmCluster, node idle, sacct answering
    c.run(["sbatch", ...])          # subprocess.run with c.environ() and a timeout
    c.stop()

Command line (for poking at it by hand)::

    python tests/slurm/cluster.py install
    python tests/slurm/cluster.py start           # prints `export SLURM_CONF=...`
    python tests/slurm/cluster.py stop <base-dir>
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

PACKAGES = [
    "slurmctld",
    "slurmd",
    "slurm-client",
    "munge",
    "slurmdbd",
    "mariadb-server",
]
# One binary per package: if all are on PATH, install() does nothing.
REQUIRED_COMMANDS = {
    "slurmctld": "slurmctld",
    "slurmd": "slurmd",
    "sbatch": "slurm-client",
    "sacct": "slurm-client",
    "sacctmgr": "slurm-client",
    "munged": "munge",
    "slurmdbd": "slurmdbd",
    "mariadbd": "mariadb-server",
    "mariadb-install-db": "mariadb-server",
}
SBIN_DIRS = ("/usr/sbin", "/sbin", "/usr/local/sbin")
# Client commands wrapped in <base>/bin so that they find our config without SLURM_CONF.
CLIENTS = (
    "srun",
    "sbatch",
    "salloc",
    "squeue",
    "sacct",
    "sacctmgr",
    "scancel",
    "scontrol",
    "sinfo",
    "sstat",
)

DEFAULT_ACCOUNT = "xlt"
DEFAULT_PARTITION = "debug"
DEFAULT_CLUSTER = "xlttest"
STATE_FILE = "cluster.json"
TMP_PREFIX = "xlt-slurm-"


class ClusterUnavailable(RuntimeError):
    """SLURM cannot be installed or started on this machine (not root, no apt, ...)."""


class ClusterError(RuntimeError):
    """A daemon failed to come up in time; the message carries the log tails."""


# --------------------------------------------------------------------------- helpers


def _which(cmd: str) -> str | None:
    path = os.environ.get("PATH", "") + os.pathsep + os.pathsep.join(SBIN_DIRS)
    return shutil.which(cmd, path=path)


def missing_commands() -> list[str]:
    return [c for c in REQUIRED_COMMANDS if _which(c) is None]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(path: Path, n: int = 25) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"(no {path.name})"
    return "\n".join(lines[-n:])


def _wait_for(predicate, timeout: float, what: str, interval: float = 0.2):
    """Poll ``predicate`` until it returns truthy or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = predicate()
        except Exception as exc:  # noqa: BLE001 - keep polling, report the last error
            last = exc
        else:
            if last:
                return last
        if time.monotonic() >= deadline:
            raise ClusterError(
                f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})"
            )
        time.sleep(interval)
        interval = min(interval * 1.5, 1.0)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still "exists"; treat it as dead.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _cmdline(pid: int) -> str:
    try:
        return (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return ""


def _kill_pid(pid: int, expect: str, timeout: float = 15.0) -> None:
    """SIGTERM ``pid`` (only if its command line still contains ``expect``), then SIGKILL."""
    if not _pid_alive(pid) or expect not in _cmdline(pid):
        _reap(pid)
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _reap(pid)
        if not _pid_alive(pid):
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _pid_alive(pid):
        _reap(pid)
        time.sleep(0.1)


def _pids_with_env(key: str, value: str) -> list[int]:
    """PIDs whose environment has key=value exactly (our job steps, slurmstepd...)."""
    needle = f"{key}={value}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            env = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if needle in env:
            found.append(int(entry))
    return found


# --------------------------------------------------------------------------- install


def install(timeout: float = 900.0) -> float:
    """Install the Debian packages if any binary is missing. Returns seconds spent.

    Raises ClusterUnavailable when that is impossible (not root, no apt-get).
    ``apt-get update`` runs only if the first install attempt fails.
    """
    if not missing_commands():
        return 0.0
    if os.geteuid() != 0:
        raise ClusterUnavailable(
            f"SLURM binaries missing ({', '.join(missing_commands())}) and not root"
        )
    apt = shutil.which("apt-get")
    if apt is None:
        raise ClusterUnavailable("SLURM binaries missing and there is no apt-get")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    t0 = time.monotonic()
    cmd = [
        apt, "install", "-y", "--no-install-recommends",
        "-o", "DPkg::Lock::Timeout=300", *PACKAGES,
    ]  # fmt: skip

    def remaining() -> float:
        return max(10.0, timeout - (time.monotonic() - t0))

    def attempt(args) -> subprocess.CompletedProcess:
        try:
            return subprocess.run(
                args, env=env, capture_output=True, text=True, timeout=remaining()
            )
        except subprocess.TimeoutExpired as exc:
            raise ClusterUnavailable(
                f"`{' '.join(args)}` timed out after {exc.timeout:.0f}s"
            ) from exc

    res = attempt(cmd)
    if res.returncode != 0:
        upd = attempt([apt, "update", "-o", "DPkg::Lock::Timeout=300"])
        if upd.returncode != 0:
            raise ClusterUnavailable(
                f"apt-get update failed:\n{upd.stdout[-2000:]}\n{upd.stderr[-2000:]}"
            )
        res = attempt(cmd)
    if res.returncode != 0:
        raise ClusterUnavailable(
            f"apt-get install failed:\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}"
        )
    if missing_commands():
        raise ClusterUnavailable(f"installed, but still missing: {missing_commands()}")
    return time.monotonic() - t0


# --------------------------------------------------------------------------- cluster


@dataclass
class SlurmCluster:
    base: Path
    cluster_name: str
    account: str
    partition: str
    node: str
    cpus: int
    real_memory_mb: int
    gpus: int
    shards_per_gpu: int = 0
    die_with_parent: bool = True
    owner_pid: int = field(default_factory=os.getpid)
    ports: dict[str, int] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    created_devices: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    # -- paths ------------------------------------------------------------------
    @property
    def conf_dir(self) -> Path:
        return self.base / "etc"

    @property
    def slurm_conf(self) -> Path:
        return self.conf_dir / "slurm.conf"

    @property
    def munge_socket(self) -> Path:
        return self.base / "munge" / "munge.socket"

    @property
    def log_dir(self) -> Path:
        return self.base / "log"

    @property
    def bin_dir(self) -> Path:
        """Wrappers for the SLURM clients that default SLURM_CONF to ours (see CLIENTS)."""
        return self.base / "bin"

    @property
    def env(self) -> dict[str, str]:
        """Variables to add to a process environment to talk to this cluster.

        PATH starts with ``bin_dir``: snakemake-executor-plugin-slurm-jobstep drops every
        SLURM_* variable except a few job ids (SLURM_CONF included) before it calls
        ``srun`` inside the job, and srun without a config then dies with
        "fatal: Could not establish a configuration source".
        """
        return {
            "SLURM_CONF": str(self.slurm_conf),
            "PATH": os.pathsep.join([str(self.bin_dir), os.environ.get("PATH", ""), *SBIN_DIRS]),
        }

    def environ(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        # A surrounding SLURM job's variables would confuse sbatch and the plugin.
        for k in list(env):
            if k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_")):
                del env[k]
        env.update(self.env)
        env.update(extra)
        return env

    def run(
        self, args, timeout: float = 30.0, check: bool = False, **kw
    ) -> subprocess.CompletedProcess:
        kw.setdefault("capture_output", True)
        kw.setdefault("text", True)
        return subprocess.run(
            args, env=kw.pop("env", None) or self.environ(), timeout=timeout, check=check, **kw
        )

    def popen(self, args, **kw) -> subprocess.Popen:
        """Popen with our environment, in its own session (so ``os.killpg(p.pid, ...)``
        ends it with its children), and SIGTERM to it if the calling process dies."""
        kw.setdefault("env", self.environ())
        kw.setdefault("start_new_session", True)
        kw.setdefault("preexec_fn", _die_with_parent)
        return subprocess.Popen(args, **kw)

    def logs(self, n: int = 25) -> str:
        parts = []
        for p in sorted([*self.log_dir.glob("*"), *(self.base / "munge").glob("*.log")]):
            parts.append(f"--- {p.name} (last {n} lines) ---\n{_tail(p, n)}")
        return "\n".join(parts)

    def save_state(self) -> None:
        data = {k: (str(v) if isinstance(v, Path) else v) for k, v in self.__dict__.items()}
        (self.base / STATE_FILE).write_text(json.dumps(data, indent=1))

    @classmethod
    def load_state(cls, base: Path) -> "SlurmCluster":
        data = json.loads((Path(base) / STATE_FILE).read_text())
        data["base"] = Path(data["base"])
        return cls(**data)

    # -- queries ----------------------------------------------------------------
    def node_state(self) -> str:
        r = self.run(["sinfo", "-h", "-N", "-n", self.node, "-o", "%T"], timeout=15)
        return (
            r.stdout.strip()
            if r.returncode == 0
            else f"sinfo rc={r.returncode}: {r.stderr.strip()}"
        )

    def sacct_ok(self) -> bool:
        r = self.run(
            ["sacct", "-X", "-n", "--clusters", "all", "-S", "now-1hours", "-o", "JobID"],
            timeout=30,
        )
        return r.returncode == 0

    def jobs(self) -> list[str]:
        r = self.run(["squeue", "-h", "-o", "%i"], timeout=15)
        return r.stdout.split() if r.returncode == 0 else []

    # -- lifecycle --------------------------------------------------------------
    def _spawn(self, name: str, args: list[str], expect_alive: float = 0.0, **kw) -> int:
        log = open(self.log_dir / f"{name}.out", "ab")
        env = self.environ()
        proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            cwd=self.base,
            preexec_fn=_die_with_parent if self.die_with_parent else None,
            **kw,
        )
        log.close()
        self.pids[name] = proc.pid
        self.save_state()
        return proc.pid

    def _check_alive(self, name: str) -> bool:
        pid = self.pids[name]
        _reap(pid)
        if not _pid_alive(pid):
            raise ClusterError(
                f"{name} (pid {pid}) exited during startup\n"
                f"{_tail(self.log_dir / f'{name}.out')}\n{_tail(self.log_dir / f'{name}.log')}"
                f"\n{_tail(self.base / 'munge' / f'{name}.log')}"
            )
        return True

    def stop(self, timeout: float = 60.0) -> float:
        """Cancel our jobs, stop our daemons by PID, remove the temp dir. Idempotent."""
        t0 = time.monotonic()
        if self.pids.get("slurmctld") and _pid_alive(self.pids["slurmctld"]):
            try:
                self.run(["scancel", "--full", "--user", "root"], timeout=15)
                end = time.monotonic() + min(20.0, timeout / 3)
                while self.jobs() and time.monotonic() < end:
                    time.sleep(0.3)
            except (subprocess.TimeoutExpired, OSError):
                pass
        order = ["slurmd", "slurmctld", "slurmdbd", "mariadbd", "munged"]
        expect = {"slurmd": "slurmd", "slurmctld": "slurmctld", "slurmdbd": "slurmdbd",
                  "mariadbd": "mariadbd", "munged": "munged"}  # fmt: skip
        for name in order + [n for n in self.pids if n not in order]:
            pid = self.pids.get(name)
            if pid:
                _kill_pid(pid, expect.get(name, name), timeout=15)
        # Job processes (slurmstepd, the jobstep snakemake, srun) that outlived the
        # daemons: they carry our unique SLURM_CONF path in their environment.
        for pid in _pids_with_env("SLURM_CONF", str(self.slurm_conf)):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.pids.clear()
        for dev in self.created_devices:
            Path(dev).unlink(missing_ok=True)
        shutil.rmtree(self.base, ignore_errors=True)
        return time.monotonic() - t0


_LIBC = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1
_SIGTERM = int(signal.SIGTERM)


def _die_with_parent() -> None:
    # Runs in the child between fork and exec, possibly already as another user:
    # it must not import anything (the interpreter may live under an unreadable /root).
    _LIBC.prctl(_PR_SET_PDEATHSIG, _SIGTERM)


def remove_stale(tmp: str | Path | None = None) -> list[Path]:
    """Remove leftovers of killed runs: <tmp>/xlt-slurm-* whose daemons are all gone."""
    removed = []
    for d in Path(tmp or tempfile.gettempdir()).glob(f"{TMP_PREFIX}*"):
        try:
            state = json.loads((d / STATE_FILE).read_text())
        except (OSError, ValueError):
            continue  # not ours, or still being created
        owner = state.get("owner_pid")
        if owner and _pid_alive(owner) and owner != os.getpid():
            continue  # being started, or in use, by a live process
        if any(
            _pid_alive(pid) and name in _cmdline(pid) for name, pid in state.get("pids", {}).items()
        ):
            continue
        if _pids_with_env("SLURM_CONF", str(d / "etc" / "slurm.conf")):
            continue
        shutil.rmtree(d, ignore_errors=True)
        removed.append(d)
    return removed


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.write_text(text)
    path.chmod(mode)


def start(
    base: str | Path | None = None,
    *,
    account: str = DEFAULT_ACCOUNT,
    partition: str = DEFAULT_PARTITION,
    cluster_name: str = DEFAULT_CLUSTER,
    cpus: int | None = None,
    real_memory_mb: int | None = None,
    gpus: int = 2,
    shards_per_gpu: int = 4,
    gpu_dev_dir: str | Path | None = None,
    die_with_parent: bool = True,
    timeout: float = 180.0,
) -> SlurmCluster:
    """Start munged, mariadbd, slurmdbd, slurmctld and slurmd in a fresh temp dir.

    Returns once the node is idle and ``sacct`` answers.  On any failure everything
    already started is stopped again and ClusterError (with log tails) is raised.
    ``gpu_dev_dir``: where the fake GPU device nodes go (default: inside the temp dir,
    so that nothing shared is touched; ``/dev`` works too).
    ``shards_per_gpu``: Slurm's GPU sharing (gres/shard), that many shards on each fake GPU.
    ``cpus``: default the machine's, at least 4 (``SlurmdParameters=config_overrides`` lets the
    node declare more than it has): the GPU-sharing test runs four one-CPU jobs at once.
    ``die_with_parent``: daemons get SIGTERM when this process dies (PR_SET_PDEATHSIG),
    so a killed pytest leaves nothing behind; the CLI turns it off.
    """
    if os.geteuid() != 0:
        raise ClusterUnavailable(
            "starting the test SLURM needs root (daemons run as root/munge/mysql)"
        )
    missing = missing_commands()
    if missing:
        raise ClusterUnavailable(f"missing commands {missing}; run install() first")
    t_start = time.monotonic()
    deadline = t_start + timeout

    def left() -> float:
        return max(1.0, deadline - time.monotonic())

    if base is None:
        remove_stale()
    base = Path(tempfile.mkdtemp(prefix=TMP_PREFIX) if base is None else base)
    base.mkdir(parents=True, exist_ok=True)
    base.chmod(0o755)  # munge and mysql must traverse it
    node = socket.gethostname().split(".")[0]
    if cpus is None:
        cpus = max(4, os.cpu_count() or 1)
    if real_memory_mb is None:
        with open("/proc/meminfo") as f:
            total_kb = int(next(line for line in f if line.startswith("MemTotal")).split()[1])
        real_memory_mb = int(total_kb / 1024 * 0.8)
    c = SlurmCluster(
        base=base, cluster_name=cluster_name, account=account, partition=partition,
        node=node, cpus=cpus, real_memory_mb=real_memory_mb, gpus=gpus,
        shards_per_gpu=shards_per_gpu if gpus else 0, die_with_parent=die_with_parent,
    )  # fmt: skip
    c.ports = {k: _free_port() for k in ("slurmctld", "slurmd", "slurmdbd", "mysql")}
    for d in ("etc", "log", "state", "spool", "run", "munge", "mysql", "bin"):
        (base / d).mkdir(exist_ok=True)
    c.save_state()
    try:
        _start(c, left, gpu_dev_dir)
    except BaseException as exc:
        logs = c.logs()
        c.stop()
        if isinstance(exc, ClusterError):
            raise ClusterError(f"{exc}\n{logs}") from None
        raise
    c.timings["start"] = time.monotonic() - t_start
    c.save_state()
    return c


def _start(c: SlurmCluster, left, gpu_dev_dir=None) -> None:
    base = c.base
    munge_pw = pwd.getpwnam("munge")
    mysql_pw = pwd.getpwnam("mysql")

    # ---- client wrappers (see SlurmCluster.env) -----------------------------------
    c.bin_dir.mkdir(exist_ok=True)
    for name in CLIENTS:
        real = _which(name)
        if real:
            _write(
                c.bin_dir / name,
                f'#!/bin/sh\nexport SLURM_CONF="${{SLURM_CONF:-{c.slurm_conf}}}"\nexec {real} "$@"\n',
                0o755,
            )

    # ---- fake GPUs ---------------------------------------------------------------
    dev_dir = Path(gpu_dev_dir) if gpu_dev_dir else base / "dev"
    dev_dir.mkdir(exist_ok=True)
    for i in range(c.gpus):
        dev = dev_dir / f"fakegpu{i}"
        if not dev.exists():
            os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # same as /dev/null
            c.created_devices.append(str(dev))

    # ---- munge -------------------------------------------------------------------
    t = time.monotonic()
    mdir = base / "munge"
    os.chown(mdir, munge_pw.pw_uid, munge_pw.pw_gid)
    mdir.chmod(0o755)
    key = mdir / "munge.key"
    key.write_bytes(secrets.token_bytes(1024))
    os.chown(key, munge_pw.pw_uid, munge_pw.pw_gid)
    key.chmod(0o400)
    c._spawn(
        "munged",
        [_which("munged"), "--foreground", f"--socket={c.munge_socket}", f"--key-file={key}",
         f"--pid-file={mdir / 'munged.pid'}", f"--log-file={mdir / 'munged.log'}",
         f"--seed-file={mdir / 'munged.seed'}"],
        user=munge_pw.pw_uid, group=munge_pw.pw_gid, extra_groups=[],
    )  # fmt: skip

    def munge_ok():
        c._check_alive("munged")
        cred = c.run([_which("munge"), "-n", "-S", str(c.munge_socket)], timeout=10)
        if cred.returncode != 0:
            return False
        r = c.run([_which("unmunge"), "-S", str(c.munge_socket)], input=cred.stdout, timeout=10)
        return r.returncode == 0

    _wait_for(munge_ok, min(30, left()), "munged")
    c.timings["munge"] = time.monotonic() - t

    # ---- MariaDB -----------------------------------------------------------------
    t = time.monotonic()
    datadir = base / "mysql"
    os.chown(datadir, mysql_pw.pw_uid, mysql_pw.pw_gid)
    sock = base / "run" / "mysqld.sock"
    (base / "run").chmod(0o777)
    # Its own temporary directory: two clusters side by side (parallel test workers) would clash
    # on MariaDB's temporary table files in the shared /tmp.
    tmpdir = base / "mysql-tmp"
    tmpdir.mkdir(exist_ok=True)
    os.chown(tmpdir, mysql_pw.pw_uid, mysql_pw.pw_gid)
    r = c.run(
        [_which("mariadb-install-db"), "--no-defaults", f"--datadir={datadir}", "--user=mysql",
         "--auth-root-authentication-method=socket", "--skip-test-db", f"--tmpdir={tmpdir}"],
        timeout=min(120, left()),
    )  # fmt: skip
    if r.returncode != 0:
        raise ClusterError(f"mariadb-install-db failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    c.timings["mariadb-install-db"] = time.monotonic() - t
    c._spawn(
        "mariadbd",
        [_which("mariadbd"), "--no-defaults", f"--datadir={datadir}", f"--tmpdir={tmpdir}",
         f"--socket={sock}", f"--port={c.ports['mysql']}", "--bind-address=127.0.0.1",
         f"--pid-file={base / 'run' / 'mysqld.pid'}", f"--log-error={c.log_dir / 'mariadbd.log'}",
         "--skip-name-resolve", "--skip-log-bin", "--innodb-buffer-pool-size=128M",
         "--innodb-lock-wait-timeout=900"],
        # Started as mysql rather than with --user=mysql: a process that changes its
        # own uid loses PR_SET_PDEATHSIG.
        user=mysql_pw.pw_uid, group=mysql_pw.pw_gid, extra_groups=[],
    )  # fmt: skip
    mariadb = _which("mariadb") or _which("mysql")

    def sql(stmt: str) -> subprocess.CompletedProcess:
        return c.run(
            [mariadb, "--no-defaults", f"--socket={sock}", "-u", "root", "-e", stmt], timeout=30
        )

    def db_ok():
        c._check_alive("mariadbd")
        return sql("SELECT 1").returncode == 0

    _wait_for(db_ok, min(60, left()), "mariadbd")
    db_pass = secrets.token_hex(12)
    r = sql(
        "CREATE DATABASE slurm_acct_db;"
        f"CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{db_pass}';"
        "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
    )
    if r.returncode != 0:
        raise ClusterError(f"creating the accounting database failed: {r.stderr}")
    c.timings["mariadb"] = time.monotonic() - t

    # ---- config files ------------------------------------------------------------
    etc = c.conf_dir
    auth = f"socket={c.munge_socket}"
    _write(
        etc / "slurmdbd.conf",
        f"""# generated by tests/slurm/cluster.py
AuthType=auth/munge
AuthInfo={auth}
DbdHost={c.node}
DbdAddr=127.0.0.1
DbdPort={c.ports['slurmdbd']}
SlurmUser=root
PidFile={base / 'run' / 'slurmdbd.pid'}
LogFile={c.log_dir / 'slurmdbd.log'}
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={c.ports['mysql']}
StorageUser=slurm
StoragePass={db_pass}
StorageLoc=slurm_acct_db
""",
        0o600,
    )
    gres_line = f" Gres=gpu:fake:{c.gpus}" if c.gpus else ""
    if c.shards_per_gpu:
        gres_line += f",shard:{c.gpus * c.shards_per_gpu}"
    _write(
        c.slurm_conf,
        f"""# generated by tests/slurm/cluster.py
ClusterName={c.cluster_name}
SlurmctldHost={c.node}(127.0.0.1)
SlurmctldPort={c.ports['slurmctld']}
SlurmdPort={c.ports['slurmd']}
AuthType=auth/munge
AuthInfo={auth}
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={base / 'state'}
SlurmdSpoolDir={base / 'spool'}
SlurmctldPidFile={base / 'run' / 'slurmctld.pid'}
SlurmdPidFile={base / 'run' / 'slurmd.pid'}
SlurmctldLogFile={c.log_dir / 'slurmctld.log'}
SlurmdLogFile={c.log_dir / 'slurmd.log'}
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
MinJobAge=300
SchedulerType=sched/backfill
DefMemPerCPU=100
GresTypes=gpu,shard
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort={c.ports['slurmdbd']}
AccountingStoragePass={c.munge_socket}
AccountingStorageEnforce=associations
AccountingStorageTRES=gres/gpu,gres/shard
AccountingStoreFlags=job_comment
NodeName={c.node} NodeAddr=127.0.0.1 CPUs={c.cpus} RealMemory={c.real_memory_mb}{gres_line} State=UNKNOWN
PartitionName={c.partition} Nodes={c.node} Default=YES MaxTime=INFINITE State=UP
""",
    )
    gres_conf = "AutoDetect=off\n"
    if c.gpus:
        gres_conf += f"Name=gpu Type=fake File={dev_dir}/fakegpu[0-{c.gpus - 1}]\n"
    if c.shards_per_gpu:  # spread evenly over the GPUs
        gres_conf += f"Name=shard Count={c.gpus * c.shards_per_gpu}\n"
    _write(etc / "gres.conf", gres_conf)

    # ---- slurmdbd + associations ---------------------------------------------------
    t = time.monotonic()
    c._spawn("slurmdbd", [_which("slurmdbd"), "-D"])

    def dbd_ok():
        c._check_alive("slurmdbd")
        return c.run(["sacctmgr", "-n", "-P", "list", "cluster"], timeout=15).returncode == 0

    _wait_for(dbd_ok, min(60, left()), "slurmdbd (sacctmgr list cluster)")
    for args in (
        ["add", "cluster", c.cluster_name],
        [
            "add",
            "account",
            c.account,
            f"Cluster={c.cluster_name}",
            "Description=xlt tests",
            "Organization=xlt",
        ],
        [
            "add",
            "user",
            "root",
            f"Account={c.account}",
            f"DefaultAccount={c.account}",
            f"Cluster={c.cluster_name}",
        ],
    ):
        r = c.run(["sacctmgr", "-i", *args], timeout=30)
        if r.returncode != 0 and "Nothing new added" not in r.stdout + r.stderr:
            raise ClusterError(
                f"sacctmgr {' '.join(args)} failed (rc {r.returncode}): {r.stdout}{r.stderr}"
            )
    c.timings["slurmdbd"] = time.monotonic() - t

    # ---- slurmctld + slurmd ------------------------------------------------------
    t = time.monotonic()
    c._spawn("slurmctld", [_which("slurmctld"), "-D", "-c", "-i"])

    def ctld_ok():
        c._check_alive("slurmctld")
        r = c.run(["scontrol", "ping"], timeout=15)
        return r.returncode == 0 and "UP" in r.stdout

    _wait_for(ctld_ok, min(60, left()), "slurmctld (scontrol ping)")
    c._spawn("slurmd", [_which("slurmd"), "-D"])

    def node_idle():
        c._check_alive("slurmd")
        c._check_alive("slurmctld")
        state = c.node_state()
        if state.startswith(("drain", "down", "fail")) or "drain" in state:
            reason = c.run(["sinfo", "-h", "-R"], timeout=15).stdout.strip()
            raise ClusterError(f"node {c.node} is {state}: {reason}")
        return state == "idle"

    _wait_for(node_idle, min(60, left()), f"node {c.node} idle in sinfo")
    c.timings["slurmctld+slurmd"] = time.monotonic() - t
    _wait_for(c.sacct_ok, min(30, left()), "sacct to answer")


# --------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("install")
    p = sub.add_parser("start")
    p.add_argument("--dir", help="base directory (default: a new temp dir)")
    p = sub.add_parser("stop")
    p.add_argument("base")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "install":
            print(f"install took {install():.1f}s")
        elif a.cmd == "start":
            c = start(a.dir, die_with_parent=False)
            print(f"# started in {c.timings['start']:.1f}s; stop with: {sys.argv[0]} stop {c.base}")
            print(f"export SLURM_CONF={c.slurm_conf}")
            print(f"# account={c.account} partition={c.partition} node={c.node}")
        else:
            c = SlurmCluster.load_state(Path(a.base))
            print(f"stopped in {c.stop():.1f}s")
    except ClusterUnavailable as exc:
        print(f"unavailable: {exc}", file=sys.stderr)
        return 2
    except ClusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
