"""A real headless browser for the report test: Debian's chromium, installed on first use.

    dom = dump_dom(page, tmp_path)                  # the DOM after the page's scripts ran
    dom = dump_dom(page, tmp_path, then="app.showCategory('x')")  # ... and after a user's step
    words = visible_text(dom)                       # the text shown, one entry per element

Installs the `chromium` package with apt-get (as root, like tests/slurm does for SLURM) when
no chromium binary is on PATH; `apt-get update` runs only if the first attempt fails.
Where that is impossible (not root, no apt-get) the test fails with the reason, unless
XLT_SKIP_BROWSER=1 is set: then it is skipped without trying.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

BINARIES = ("chromium", "chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


def _binary() -> str | None:
    return next((b for b in map(shutil.which, BINARIES) if b), None)


def chromium() -> str:
    """The chromium binary, installed first if missing."""
    if os.environ.get("XLT_SKIP_BROWSER") == "1":
        pytest.skip("XLT_SKIP_BROWSER=1: browser tests skipped")
    if _binary():
        return _binary()
    apt = shutil.which("apt-get")
    if os.geteuid() != 0 or apt is None:
        pytest.fail("chromium is missing and cannot be installed here (needs root and apt-get); "
                    "install Debian's chromium or set XLT_SKIP_BROWSER=1", pytrace=False)  # fmt: skip
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = [apt, "install", "-y", "--no-install-recommends", "-o", "DPkg::Lock::Timeout=300", "chromium"]
    res = subprocess.run(install, env=env, capture_output=True, text=True, timeout=900)
    if res.returncode != 0:
        subprocess.run([apt, "update", "-o", "DPkg::Lock::Timeout=300"], env=env, capture_output=True, timeout=900)
        res = subprocess.run(install, env=env, capture_output=True, text=True, timeout=900)
    if res.returncode != 0 or not _binary():
        pytest.fail(f"apt-get install chromium failed:\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}", pytrace=False)
    return _binary()


def dump_dom(page: Path, tmp_path: Path, then: str | None = None, budget_ms: int = 20000) -> str:
    """The serialised DOM of `page` once its scripts have run (virtual time, no network).

    `then`: JavaScript run once the page has loaded, as a user's click would (a copy of the
    page with that one script appended is opened; the page itself is not changed)."""
    if then is not None:
        text = page.read_text(encoding="utf-8")
        end = text.rindex("</body>")
        script = f'<script>window.addEventListener("load", () => setTimeout(() => {{ {then}; }}, 100));</script>'
        page = tmp_path / f"driven-{page.name}"
        page.write_text(text[:end] + script + text[end:], encoding="utf-8")
    profile = tmp_path / "chromium-profile"
    cmd = [chromium(), *FLAGS, f"--user-data-dir={profile}", f"--virtual-time-budget={budget_ms}",
           "--dump-dom", page.resolve().as_uri()]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout


def visible_text(dom: str, root: str = '<div id="app">') -> list[str]:
    """The text nodes under `root` (scripts, styles and inline SVG left out), unescaped."""
    app = dom[dom.index(root):]
    app = re.sub(r"<(script|style|svg)\b.*?</\1>", "", app, flags=re.S)
    return [html.unescape(t).strip() for t in re.split(r"<[^>]+>", app) if t.strip()]
