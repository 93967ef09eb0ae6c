"""workflow_scripts/download.py: a thin CLI; failures are one `error:` line and exit 1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from tests.sources.realfiles import make_wikimatrix_gz, sha256_bytes

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "workflow_scripts" / "download.py"


def run(*args, cwd=ROOT):
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_fetches_with_config_file(server, tmp_path):
    gz = {lang: make_wikimatrix_gz(lang) for lang in ("es", "ru")}
    for lang, data in gz.items():
        server.put(f"laser/WikiMatrix/v1/WikiMatrix.en-{lang}.tsv.gz", data)
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "download": {
                    "mirrors": {"https://dl.fbaipublicfiles.com/": f"{server.url}/"},
                    "pins": {"wikimatrix": {"sha256": {k: sha256_bytes(v) for k, v in gz.items()}}},
                }
            }
        )
    )
    man = tmp_path / "out" / "wikimatrix.json"
    r = run("--source", "wikimatrix", "--raw-root", tmp_path / "raw", "--langs", "es,ru",
            "--manifest", man, "--config", config, "--lock", tmp_path / "lock.yaml")  # fmt: skip
    assert r.returncode == 0, r.stderr
    data = json.loads(man.read_text())
    assert [f["path"] for f in data["files"]] == [
        "wikimatrix/WikiMatrix.en-es.tsv.gz",
        "wikimatrix/WikiMatrix.en-ru.tsv.gz",
    ]


def test_cli_merges_the_file_the_inline_block_and_the_flags_as_config_files(server, tmp_path):
    """--config's block, then --download, then the flags, nested mappings merged (xlt.workflow.config):
    each language's pin comes from another layer and --require-pins refuses any file without one."""
    gz = {lang: make_wikimatrix_gz(lang) for lang in ("es", "ru")}
    for lang, data in gz.items():
        server.put(f"laser/WikiMatrix/v1/WikiMatrix.en-{lang}.tsv.gz", data)
    pin = {lang: {"wikimatrix": {"sha256": {lang: sha256_bytes(gz[lang])}}} for lang in gz}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"download": {"mirrors": {"https://dl.fbaipublicfiles.com/": f"{server.url}/"},
                                                   "pins": pin["es"]}}))
    man = tmp_path / "out" / "wikimatrix.json"
    r = run("--source", "wikimatrix", "--raw-root", tmp_path / "raw", "--langs", "es,ru", "--manifest", man,
            "--config", config, "--download", json.dumps({"pins": pin["ru"]}), "--require-pins",
            "--lock", tmp_path / "lock.yaml")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert len(json.loads(man.read_text())["files"]) == 2


def test_cli_error_is_one_line(tmp_path):
    r = run("--source", "wikimatrix", "--raw-root", tmp_path / "raw", "--langs", "es",
            "--require-pins", "--lock", tmp_path / "lock.yaml")  # fmt: skip
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "refusing to download unpinned files" in lines[0]
    assert not (tmp_path / "raw" / "manifests").exists()


def test_cli_network_failure_names_manual_path(dead_url, tmp_path):
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"mirrors": {"https://dl.fbaipublicfiles.com/": f"{dead_url}/"},
                                  "retries": 1}))  # fmt: skip
    r = run("--source", "wikimatrix", "--raw-root", tmp_path / "raw", "--langs", "vi",
            "--config", config, "--lock", tmp_path / "lock.yaml", "--manual-dir", tmp_path / "manual")  # fmt: skip
    assert r.returncode == 1
    err = r.stderr.strip().splitlines()[-1]
    assert err.startswith("error: could not download ")
    assert str(tmp_path / "manual" / "WikiMatrix.en-vi.tsv.gz") in err


def test_cli_unknown_source(tmp_path):
    r = run("--source", "wikimatrx", "--raw-root", tmp_path)
    assert r.returncode == 1 and "Did you mean 'wikimatrix'" in r.stderr
