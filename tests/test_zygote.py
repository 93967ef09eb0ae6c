"""The fork server (xlt/process/zygote.py): a served job behaves as the same job in its own process —
same outputs bit for bit, same streams, exit status, errors and signals — and the server is
bypassed wherever it could differ."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "tests" / "zygote" / "job.py"


def start_server(path: str) -> subprocess.Popen:
    """`xlt.process.zygote serve path`, returned once it has written "ready"."""
    r, w = os.pipe()
    proc = subprocess.Popen([sys.executable, "-m", "xlt.process.zygote", "serve", path, "--ready-fd", str(w)],
                            pass_fds=(w,), cwd=ROOT)
    os.close(w)
    with os.fdopen(r) as ready:
        assert ready.readline().strip() == "ready"
    return proc


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A running server: its socket `path` and `pid`."""
    path = str(tmp_path_factory.mktemp("zygote") / "socket")
    proc = start_server(path)
    yield SimpleNamespace(path=path, pid=proc.pid)
    proc.terminate()
    proc.wait(timeout=30)
    assert not os.path.exists(path)  # the server removes its socket


def job(args, cwd, server=None, env_extra=None, **kw):
    env = {k: v for k, v in os.environ.items() if k != "XLT_ZYGOTE"}
    env["OMP_NUM_THREADS"] = "1"
    if server:
        env["XLT_ZYGOTE"] = server.path
    env.update(env_extra or {})
    return subprocess.run([sys.executable, str(JOB), *args], cwd=cwd, env=env, capture_output=True, text=True, **kw)


def test_served_job_equals_own_process(server, tmp_path):
    (tmp_path / "s").mkdir(), (tmp_path / "o").mkdir()  # one file name: torch.save writes it inside
    served = job(["--out", "w.pt"], tmp_path / "s", server, {"ZYGOTE_TEST_MARKER": "x1"})
    own = job(["--out", "w.pt"], tmp_path / "o", None, {"ZYGOTE_TEST_MARKER": "x1"})
    assert served.returncode == own.returncode == 0, served.stderr + own.stderr
    assert (tmp_path / "s" / "w.pt").read_bytes() == (tmp_path / "o" / "w.pt").read_bytes()
    assert served.stdout == own.stdout == "stdout line\n"
    assert served.stderr == own.stderr == "stderr line\n"  # no server chatter in the job's log
    import json

    s, o = (json.loads((tmp_path / n / "w.pt.json").read_text()) for n in ("s", "o"))
    assert s["cwd"] == str(tmp_path / "s") and o["cwd"] == str(tmp_path / "o")
    assert s["marker"] == "x1" and s["threads"] == o["threads"] == 1
    assert s["argv"] == ["--out", "w.pt"]
    assert s["served"] and not o["served"]
    assert s["pid"] != o["pid"]


def test_served_jobs_find_the_papers_extras_registered(server, tmp_path):
    """The server loads the engine's plugins before it forks (zygote.PRELOAD_CALLS), so a served
    job that loads a model finds a paper's extra without importing anything; its own process
    starts with the engine's alone and loads them when it meets one (xlt.engine.plugins)."""
    import json

    (tmp_path / "s").mkdir(), (tmp_path / "o").mkdir()
    for where, via in (("s", server), ("o", None)):
        assert job(["--out", "e.pt"], tmp_path / where, via).returncode == 0
    served, own = (json.loads((tmp_path / n / "e.pt.json").read_text())["extras"] for n in ("s", "o"))
    assert {"scalar_mix", "dlfa", "xmixup"} <= set(served) and own == ["scalar_mix"]


def test_errors_and_exit_status_pass_through(server, tmp_path):
    r = job(["--out", "x.pt", "--fail", "bad value in the input"], tmp_path, server)
    assert r.returncode == 1
    assert r.stderr.strip() == "error: bad value in the input"
    r = job(["--out", "y.pt", "--exit", "7"], tmp_path, server)
    assert r.returncode == 7
    r = job(["--no-such-flag"], tmp_path, server)
    assert r.returncode == 2 and r.stderr.startswith("error: ")


def test_import_time_environment_difference_runs_own_process(server, tmp_path):
    r = job(["--out", "z.pt"], tmp_path, server, {"HF_HUB_OFFLINE": "0" if os.environ.get("HF_HUB_OFFLINE") == "1" else "1"})
    assert r.returncode == 0
    assert "starts its own process: environment differs from the server's in ['HF_HUB_OFFLINE']" in r.stderr
    assert (tmp_path / "z.pt").exists()


def test_unreachable_server_runs_own_process(tmp_path):
    r = job(["--out", "u.pt"], tmp_path, SimpleNamespace(path=str(tmp_path / "no-socket")))
    assert r.returncode == 0 and (tmp_path / "u.pt").exists()


def test_changed_code_runs_own_process(tmp_path):
    """A job refuses a server whose xlt modules changed on disk since it imported them. The
    server here imports a copy of the package, and the copy is what changes: touching the
    repository's own files would turn away every other server of a parallel test run."""
    import shutil

    from xlt.process.zygote import start_server

    pkg = tmp_path / "pkg"
    shutil.copytree(ROOT / "xlt", pkg / "xlt", ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k != "XLT_ZYGOTE"}
    env.update(OMP_NUM_THREADS="1", PYTHONPATH=str(pkg))
    path = str(tmp_path / "socket")
    proc, ready = start_server(path, env=env, cwd=str(tmp_path))
    try:
        assert ready
        copy = SimpleNamespace(path=path)
        served = job(["--out", "a.pt"], tmp_path, copy, {"PYTHONPATH": str(pkg)})
        assert served.returncode == 0 and served.stderr == "stderr line\n", served.stderr
        src = pkg / "xlt" / "engine" / "loop.py"  # imported by the server (xlt.process.zygote.PRELOAD)
        st = src.stat()
        os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        r = job(["--out", "c.pt"], tmp_path, copy, {"PYTHONPATH": str(pkg)})
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert r.returncode == 0
    assert "xlt's code changed since the server started" in r.stderr


def _wait_for(cond, what, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def _start_waiting_job(server, tmp_path, name):
    env = {k: v for k, v in os.environ.items()}
    env.update(XLT_ZYGOTE=server.path, OMP_NUM_THREADS="1")
    out = tmp_path / name
    client = subprocess.Popen([sys.executable, str(JOB), "--out", str(out), "--wait-for", str(tmp_path / "never")],
                              cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    pidfile = Path(str(out) + ".pid")
    _wait_for(lambda: pidfile.exists() and pidfile.read_text(), "the job to start")
    return client, int(pidfile.read_text()), out


def test_sigterm_to_the_client_reaches_the_job(server, tmp_path):
    client, pid, out = _start_waiting_job(server, tmp_path, "t.pt")
    ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    assert ppid == server.pid  # the job is the server's fork, not the client itself
    client.send_signal(signal.SIGTERM)
    assert client.wait(timeout=60) == 3  # the job's own handler chose the status
    assert Path(str(out) + ".term").read_text() == str(int(signal.SIGTERM))


def test_a_killed_client_takes_its_job_along(server, tmp_path):
    client, pid, _ = _start_waiting_job(server, tmp_path, "k.pt")
    assert _alive(pid)
    client.kill()
    client.wait(timeout=60)
    _wait_for(lambda: not _alive(pid), "the orphaned job to die")


def test_with_serves_the_command_and_stops(tmp_path):
    """`python -m xlt.process.zygote with -- cmd`: the command's jobs are served, its status returned,
    and no server is left behind."""
    import json

    env = {k: v for k, v in os.environ.items() if k != "XLT_ZYGOTE"}
    env["OMP_NUM_THREADS"] = "1"
    script = f"{sys.executable} {JOB} --out a.pt && {sys.executable} {JOB} --out b.pt --exit 5"
    r = subprocess.run([sys.executable, "-m", "xlt.process.zygote", "with", "--", "bash", "-c", script], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 5, r.stderr
    assert json.loads((tmp_path / "a.pt.json").read_text())["served"]
    assert json.loads((tmp_path / "b.pt.json").read_text())["served"]
    import re

    path = re.search(r"serving jobs from (\S+) ", r.stderr).group(1)
    assert not os.path.exists(path)
    left = subprocess.run(["pgrep", "-f", f"xlt.process.zygote serve {path}"], capture_output=True, text=True)
    assert left.stdout == ""


def test_a_stopped_server_exits_at_once(tmp_path):
    """SIGTERM (run_with_server at the end of `make tables`), even right after "ready": the
    server removes its socket and exits 0 (without the interpreter's teardown of torch and
    transformers, ~1.3 s measured, docs/papers.md: not timed here)."""
    path = str(tmp_path / "socket")
    proc = start_server(path)
    proc.terminate()  # at once after "ready": the socket is removed all the same
    assert proc.wait(timeout=30) == 0
    assert not os.path.exists(path)


def test_warm_writes_the_bytecode_whatever_the_environment_says(tmp_path):
    """`make install` installs without pip's byte-compilation and runs `xlt.process.zygote warm`: the
    modules it imports get their .pyc files even under PYTHONDONTWRITEBYTECODE=1; a module
    that cannot be imported is a warning, not a failed install."""
    (tmp_path / "warm_probe.py").write_text("VALUE = 1\n")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    r = subprocess.run([sys.executable, "-m", "xlt.process.zygote", "warm", "warm_probe", "no_such_module_xyz"], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "no_such_module_xyz" in r.stderr
    assert list((tmp_path / "__pycache__").glob("warm_probe.cpython-*.pyc"))
