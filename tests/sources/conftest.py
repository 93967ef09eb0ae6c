"""Local stand-ins for the real hosts: an HTTP server on 127.0.0.1 serving a tmp dir
(optionally honouring Range, optionally breaking transfers), which also answers the Hugging
Face Hub's `/datasets/{repo}/resolve/{revision}/{file}` route (and a model repo's
`/{repo}/resolve/{revision}/{file}`) the way huggingface_hub expects (X-Repo-Commit, ETag,
Content-Length; X-Error-Code on 404).

The files it serves are made by `realfiles` in the real formats.
"""

from __future__ import annotations

import hashlib
import http.server
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- server


@dataclass
class HubRepo:
    root: Path  # the repo's files
    commit: str
    refs: tuple[str, ...] = ("main", "refs/convert/parquet")


@dataclass
class ServerState:
    root: Path
    support_range: bool = True
    break_next: int = 0  # the next N file responses stop halfway and close the connection
    # stall: file responses send half their body, set `stalled`, then wait for `stall` to be set
    stall: threading.Event | None = None
    stalled: threading.Event = field(default_factory=threading.Event)
    requests: list = field(default_factory=list)  # (method, path, Range header)
    hub: dict = field(default_factory=dict)  # repo_id -> HubRepo
    models: dict = field(default_factory=dict)  # repo_id -> HubRepo (model repos)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # keep pytest output clean
        pass

    def do_HEAD(self):
        self._handle(head=True)

    def do_GET(self):
        self._handle(head=False)

    @property
    def state(self) -> ServerState:
        return self.server.state

    def _plain(self, code: int, headers: dict | None = None, head: bool = False):
        body = b"" if head else f"{code}\n".encode()
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _handle(self, head: bool):
        raw_path = urlsplit(self.path).path
        self.state.requests.append((self.command, raw_path, self.headers.get("Range")))
        if raw_path.startswith("/datasets/"):
            return self._hub(raw_path[len("/datasets"):], head, self.state.hub)
        parts = raw_path.split("/")
        if len(parts) > 4 and parts[3] == "resolve" and f"{parts[1]}/{parts[2]}" in self.state.models:
            return self._hub(raw_path, head, self.state.models)
        f = self.state.root / unquote(raw_path.lstrip("/"))
        if not f.is_file():
            return self._plain(404, head=head)
        self._file(f.read_bytes(), {}, head)

    def _file(self, data: bytes, headers: dict, head: bool):
        start = 0
        rng = self.headers.get("Range")
        status = 200
        if rng and self.state.support_range and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[len("bytes=") : -1])
            if start >= len(data):
                return self._plain(416, {"Content-Range": f"bytes */{len(data)}"}, head)
            status = 206
            headers = {**headers, "Content-Range": f"bytes {start}-{len(data) - 1}/{len(data)}"}
        body = data[start:]
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Accept-Ranges", "bytes" if self.state.support_range else "none")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if head:
            return
        if self.state.stall is not None:
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.state.stalled.set()
            self.state.stall.wait(timeout=30)
            self.close_connection = True
            return
        if self.state.break_next > 0:
            self.state.break_next -= 1
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)

    def _hub(self, raw_path: str, head: bool, repos: dict):
        # [/datasets]/{owner}/{name}/resolve/{revision, url-quoted}/{path...}
        parts = raw_path.split("/")
        if len(parts) < 6 or parts[3] != "resolve":
            return self._plain(404, {"X-Error-Code": "RepoNotFound"}, head)
        repo_id = f"{parts[1]}/{parts[2]}"
        rev = unquote(parts[4])
        path = unquote("/".join(parts[5:]))
        repo = repos.get(repo_id)
        if repo is None:
            return self._plain(404, {"X-Error-Code": "RepoNotFound"}, head)
        if rev not in repo.refs and rev != repo.commit:
            return self._plain(404, {"X-Error-Code": "RevisionNotFound"}, head)
        f = repo.root / path
        if not f.is_file():
            return self._plain(
                404, {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": repo.commit}, head
            )
        data = f.read_bytes()
        self._file(data, {"X-Repo-Commit": repo.commit, "ETag": f'"{sha256_bytes(data)}"'}, head)


@dataclass
class LocalServer:
    state: ServerState
    url: str  # http://127.0.0.1:<port>

    @property
    def root(self) -> Path:
        return self.state.root

    def put(self, rel: str, data: bytes) -> str:
        """Serve `data` at `/rel`; return its URL."""
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        return f"{self.url}/{rel}"

    def hub_repo(self, repo_id: str, files: dict[str, bytes], commit: str | None = None,
                 refs=("main", "refs/convert/parquet"), model: bool = False) -> HubRepo:  # fmt: skip
        """A Hub dataset repo (a model repo with `model`) serving `files`; calling it again
        replaces the repo (a new commit, say)."""
        root = self.root / ("_models" if model else "_hub") / repo_id
        for rel, data in files.items():
            p = root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        commit = commit or sha256_bytes(repo_id.encode())[:40]
        repo = HubRepo(root=root, commit=commit, refs=tuple(refs))
        (self.state.models if model else self.state.hub)[repo_id] = repo
        return repo

    def gets(self) -> list:
        return [r for r in self.state.requests if r[0] == "GET"]


@pytest.fixture
def server(tmp_path):
    state = ServerState(root=tmp_path / "www")
    state.root.mkdir()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.state = state
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        yield LocalServer(state=state, url=f"http://127.0.0.1:{httpd.server_port}")
    finally:
        if state.stall is not None:
            state.stall.set()  # let a stalled handler finish
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.fixture(autouse=True)
def own_lock_file(monkeypatch, tmp_path):
    """Every test here locks into its own file, never the repository's catalog.lock.yaml."""
    from xlt.sources import lock

    path = tmp_path / "catalog.lock.yaml"
    monkeypatch.setattr(lock, "DEFAULT_LOCK", path)
    return path


@pytest.fixture
def hf_online(monkeypatch, tmp_path):
    """huggingface_hub reads HF_HUB_OFFLINE once at import (the Makefile exports it = 1)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1")
    return tmp_path / "hf-cache"
