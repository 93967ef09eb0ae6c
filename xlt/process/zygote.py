"""A fork server for the workflow's jobs on one machine (`make tables`).

Starting Python with torch and transformers imported costs ~4 s of CPU per job (transformers 5
alone ~3 s: it imports torch._dynamo, torch.distributed.tensor, sympy, scipy.optimize); on the
tiny preset, with ~150 short jobs, that was about a third of `make tables`. The server imports
them once. A job's script (`xlt.process.cli.run`) then connects to it, passes its argv, working
directory, environment and standard streams (the file descriptors themselves, so Snakemake's
`2> {log}` still holds), and runs in a fresh fork of the server: the same code on the same
inputs, so the same outputs, bit for bit (tested), without the imports.

A job runs as it always did — in its own process, importing what it needs — whenever the
server cannot be used: no `XLT_ZYGOTE` in the environment (SLURM, tests, direct runs), the
socket does not answer, a torchrun worker, another interpreter, an environment variable read
at import time (threads, caches, Hub settings) that differs from the server's, or an `xlt`
module changed on disk since the server imported it.

    python -m xlt.process.zygote with -- snakemake --cores all all_tables   # serve while a command runs

Signals the job's client process receives (SIGTERM / SIGINT / SIGUSR1 / SIGHUP, e.g. Snakemake
stopping, SLURM's warning) are forwarded to the job; if the client dies, the job kills itself.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import importlib
import warnings
import threading
import random
import runpy
import traceback

ENV_VAR = "XLT_ZYGOTE"  # the server's socket path, set for the command it serves
IN_JOB = "XLT_ZYGOTE_JOB"  # set inside a served job, so its own run() does not delegate again
MAGIC = b"xltjob01"  # first bytes of a request (protocol version 1)

# Imported once by the server: what the workflow's scripts spend their start-up on.
PRELOAD = (
    "numpy", "torch", "safetensors.torch", "tokenizers", "transformers", "scipy.stats", "sklearn.metrics",
    "seqeval.metrics", "yaml", "xlt.engine.recipes.finetune", "xlt.engine.recipes.mlm", "xlt.stages.finetune",
    "xlt.metrics", "xlt.tables", "xlt.papers",
)
# Called once the modules are imported ("module:function"): the papers' extras and fine-tune
# extensions registered with the engine (xlt.engine.plugins), which a job would otherwise load
# when it first meets one of their names.
PRELOAD_CALLS = ("xlt.engine.plugins:load_plugins",)
# transformers imports model classes on first attribute access
PRELOAD_ATTRS = ("BertModel", "BertForMaskedLM", "BertTokenizerFast", "AutoTokenizer", "AutoModel",
                 "AutoModelForMaskedLM", "AutoConfig")
# Imported after the fork by some jobs (or by the processes around them), not preloaded: `warm`
# writes their bytecode too.
LAZY = (
    "tensorboardX.event_file_writer", "tensorboardX.proto.event_pb2", "tensorboardX.summary", "pyarrow.parquet",
    "matplotlib.pyplot", "sklearn.decomposition", "seqeval.scheme", "huggingface_hub", "jsonschema", "xlt.process.cli",
    "xlt.workflow.config", "xlt.workflow.runsummary", "xlt.figures",
)
# Environment read at import time by the preloaded libraries: a job whose values differ runs
# in its own process.
IMPORT_TIME_ENV = ("OMP_", "MKL_", "KMP_", "OPENBLAS_", "GOMP_", "TORCH", "PYTORCH_", "CUDA_", "NVIDIA_", "HF_",
                   "HUGGINGFACE_", "TRANSFORMERS_", "TOKENIZERS_", "PYTHON", "LD_", "MPLBACKEND", "HOME",
                   "XDG_CACHE_HOME", "RAYON_", "ONEDNN_", "DNNL_", "XLT_AMX")


# Thread counts Snakemake sets per job (its `threads`): applied in the forked job instead.
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
              "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def _import_env(env: dict) -> dict:
    return {k: v for k, v in env.items() if k.startswith(IMPORT_TIME_ENV) and k not in THREAD_ENV and k != IN_JOB}


def _apply_thread_env() -> None:
    """What a fresh process would take from OMP_NUM_THREADS at start-up (the script's own
    --threads still wins): torch's intra-op threads and the BLAS pools numpy / scipy use."""
    n = os.environ.get("OMP_NUM_THREADS", "")
    if n.isdigit() and int(n) > 0:
        # deferred: loads threadpoolctl, torch only when this runs
        import torch
        from threadpoolctl import threadpool_limits

        torch.set_num_threads(int(n))
        threadpool_limits(limits=int(n))


def _xlt_sources() -> dict[str, float]:
    """mtime of every imported xlt module's file: a job refuses a server with stale code."""
    out = {}
    for name, mod in list(sys.modules.items()):
        path = getattr(mod, "__file__", None)
        if path and (name == "xlt" or name.startswith("xlt.")):
            try:
                out[path] = os.stat(path).st_mtime_ns
            except OSError:
                out[path] = -1
    return out


def _recv_exact(conn: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("peer closed")
        buf += chunk
    return buf


def _preload() -> None:

    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception as e:  # a job importing it itself gets the real error
            warnings.warn(f"zygote: preloading {name} failed: {e}", stacklevel=1)
    for call in PRELOAD_CALLS:
        module, function = call.split(":")
        try:
            getattr(importlib.import_module(module), function)()
        except Exception as e:  # a job meeting a paper's name loads them itself and gets the real error
            warnings.warn(f"zygote: preloading {call} failed: {e}", stacklevel=1)
    # deferred: loads transformers only when this runs
    import transformers

    for attr in PRELOAD_ATTRS:
        getattr(transformers, attr, None)


def warm(extra: tuple[str, ...] = ()) -> None:
    """Write the bytecode (.pyc) of what the workflow's processes import, by importing it once
    with bytecode writing on whatever PYTHONDONTWRITEBYTECODE says (`make install`: pip installs
    without byte-compiling every file, ~28 s of a fresh install; without the .pyc files every
    later process would compile what it imports again, ~+5 s for this server alone). `extra`:
    more modules (the Makefile names Snakemake's, which xlt does not import)."""

    sys.dont_write_bytecode = False
    os.environ.setdefault("MPLBACKEND", "Agg")
    _preload()
    for name in (*LAZY, *extra):
        try:
            importlib.import_module(name)
        except Exception as e:  # an optional package missing: its users compile it themselves
            warnings.warn(f"zygote warm: importing {name} failed: {e}", stacklevel=1)


def serve(path: str, ready_fd: int | None = None) -> None:
    """Listen on `path` until terminated; fork one child per job request."""
    env = _import_env(dict(os.environ))  # as the server started: importing torch sets KMP_* itself
    _preload()

    if threading.active_count() != 1:  # forking a process with threads could deadlock its children
        print(f"zygote: {threading.active_count()} threads after preloading; refusing to serve", file=sys.stderr)
        sys.exit(1)
    sources = _xlt_sources()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(64)
    server.settimeout(2.0)
    parent = os.getppid()
    try:  # from "ready" on, a SIGTERM (SystemExit) always passes through the `finally` below
        if ready_fd is not None:
            os.write(ready_fd, b"ready\n")
            os.close(ready_fd)
        while True:
            try:
                conn, _ = server.accept()
            except (InterruptedError, TimeoutError):
                if os.getppid() != parent:  # whoever started the server is gone (killed): so is the server
                    return
                continue
            conn.settimeout(None)
            try:
                magic, fds, _, _ = socket.recv_fds(conn, 8, 3)
            except Exception:
                conn.close()
                continue
            if magic != MAGIC:
                for fd in fds:
                    os.close(fd)
                conn.close()
                continue
            _handle(server, conn, fds, env, sources)
    finally:
        server.close()
        try:
            os.unlink(path)
        except OSError:
            pass


def _handle(server: socket.socket, conn: socket.socket, fds: list[int], env: dict, sources: dict) -> None:
    try:
        size = struct.unpack("!Q", _recv_exact(conn, 8))[0]
        request = json.loads(_recv_exact(conn, size))
    except Exception:
        for fd in fds:
            os.close(fd)
        conn.close()
        return
    why = None
    if len(fds) != 3:
        why = "standard streams not received"
    elif request.get("executable") != sys.executable:
        why = f"interpreter {request.get('executable')} is not the server's {sys.executable}"
    elif _import_env(request["env"]) != env:
        diff = sorted(set(_import_env(request["env"]).items()) ^ set(env.items()))
        why = f"environment differs from the server's in {sorted({k for k, _ in diff})}"
    elif _xlt_sources() != sources:
        why = "xlt's code changed since the server started"
    if why:
        conn.sendall(f"refuse {why}\n".encode())
        for fd in fds:
            os.close(fd)
        conn.close()
        return
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        conn.close()
        return
    server.close()
    _run_job(conn, fds, request)  # never returns


def _run_job(conn: socket.socket, fds: list[int], request: dict) -> None:
    """In the forked child: become the job's process and run its script as __main__."""

    code = 1
    try:
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.setsid()  # its own process group: the server's are not the job's
        for i, fd in enumerate(fds):
            os.dup2(fd, i)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ[IN_JOB] = "1"
        tempfile.tempdir = None  # TMPDIR as the job has it
        _apply_thread_env()
        random.seed()  # a fresh process's RNGs are seeded from the OS, not copies of the server's
        # deferred: loads numpy only when this runs
        import numpy as np

        np.random.seed()
        conn.sendall(f"pid {os.getpid()}\n".encode())

        def watch_client():  # the client gone (killed): so is the job
            try:
                while conn.recv(1):
                    pass
            except OSError:
                pass
            os.kill(os.getpid(), signal.SIGKILL)

        threading.Thread(target=watch_client, daemon=True).start()
        script = request["argv"][0]
        sys.argv = list(request["argv"])
        sys.path[0] = os.path.dirname(os.path.abspath(script))
        runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        code = 130
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        try:
            conn.sendall(f"exit {code}\n".encode())
        except OSError:
            pass
        os._exit(code)


def delegate(path: str) -> int | None:
    """Run this process's script (sys.argv) in the server at `path`; its exit status, or
    None where the server cannot be used (then the caller runs the job itself)."""
    if os.environ.get(IN_JOB) or "LOCAL_RANK" in os.environ:
        return None
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
    except OSError:
        return None
    argv = [os.path.abspath(sys.argv[0]), *sys.argv[1:]]
    body = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ),
                       "executable": sys.executable}).encode()
    sys.stdout.flush()
    sys.stderr.flush()
    with conn:
        try:
            socket.send_fds(conn, [MAGIC], [0, 1, 2])
            conn.sendall(struct.pack("!Q", len(body)) + body)
            reader = conn.makefile("r")
            first = reader.readline()
        except OSError:
            return None
        if not first.startswith("pid "):  # refused (or a server going away): run here
            if first.startswith("refuse "):
                print(f"xlt.process.zygote: this job starts its own process: {first[7:].strip()}", file=sys.stderr)
            return None
        pid = int(first.split()[1])
        forwarded = []

        def forward(signum, frame):
            forwarded.append(signum)
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGHUP):
            signal.signal(sig, forward)
        while True:
            try:
                line = reader.readline()
                break
            except InterruptedError:
                continue
        if line.startswith("exit "):
            return int(line.split()[1])
        if forwarded:
            return 128 + forwarded[-1]
        print(f"error: the job's process ({pid}) ended without an exit status (killed?)", file=sys.stderr)
        return 1


def _in_foreground() -> bool:
    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except OSError:  # no terminal
        return False


def start_server(path: str, env: dict | None = None, cwd: str | None = None) -> tuple[subprocess.Popen, bool]:
    """A server on socket `path`, once it has done its imports: the process, and whether it is ready."""
    r, w = os.pipe()
    server = subprocess.Popen([sys.executable, "-m", "xlt.process.zygote", "serve", path, "--ready-fd", str(w)],
                              pass_fds=(w,), env=env, cwd=cwd)
    os.close(w)
    with os.fdopen(r) as ready:
        return server, ready.readline().strip() == "ready"


def run_with_server(command: list[str]) -> int:
    """Start a server, run `command` with XLT_ZYGOTE set, stop the server; the command's status."""
    with tempfile.TemporaryDirectory(prefix="xlt-zygote-") as tmp:
        path = os.path.join(tmp, "socket")
        t = time.perf_counter()
        server, ok = start_server(path)
        env = dict(os.environ)
        if ok:
            env[ENV_VAR] = path
            print(f"xlt.process.zygote: serving jobs from {path} (ready in {time.perf_counter() - t:.1f} s)", file=sys.stderr)
        else:
            print("xlt.process.zygote: the server did not start; jobs start their own processes", file=sys.stderr)
        proc = subprocess.Popen(command, env=env)

        def forward(signum, frame):  # a kill: the command stops, then the server
            if signum == signal.SIGINT and _in_foreground():
                return  # Ctrl-C: the terminal sent it to the command too; a second one would hurry Snakemake
            proc.send_signal(signum)

        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, forward)
        try:
            while True:
                try:
                    return proc.wait()
                except InterruptedError:
                    continue
        finally:
            server.terminate()
            server.wait()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["serve"] and len(argv) >= 2:
        ready = int(argv[3]) if argv[2:3] == ["--ready-fd"] else None
        code = 0
        try:
            serve(argv[1], ready)
        except SystemExit as e:  # SIGTERM (run_with_server stopping it) or a refusal to serve
            code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
        # without the interpreter's teardown of torch and transformers: ~1.3 s that the end of
        # `make tables` waited for (run_with_server); the server holds no open output
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    if argv[:1] == ["warm"]:
        warm(tuple(argv[1:]))
        return 0
    if argv[:1] == ["with"]:
        cmd = argv[2:] if argv[1:2] == ["--"] else argv[1:]
        if cmd:
            return run_with_server(cmd)
    print("usage: python -m xlt.process.zygote with -- <command ...> | serve <socket path> | warm [module ...]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
