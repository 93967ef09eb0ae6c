"""fetch_source(): catalog entries end to end against local stand-ins, with manifests."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from tests.sources.realfiles import (
    make_marc_jsonl,
    make_squad_json,
    make_squad_parquet,
    make_ud_tgz,
    make_wikiann_parquet,
    make_wikimatrix_gz,
    make_xnli_mt_zip,
    sha256_bytes,
)
from xlt.errors import XltError
from xlt.io import sha256_file
from xlt.sources.fetch import DownloadError, FetchConfig, UnpinnedError, fetch_source

LINDAT = "https://lindat.mff.cuni.cz/repository/xmlui/bitstream/handle/"
FBAI = "https://dl.fbaipublicfiles.com/"


def test_ud_tarball_pinned_and_extracted_for_languages(server, tmp_path):
    data = make_ud_tgz("2.5")
    server.put("lindat/11234/1-3105/ud-treebanks-v2.5.tgz", data)
    cfg = {
        "mirrors": {LINDAT: f"{server.url}/lindat/"},
        "pins": {"ud-2.5": {"sha256": {"_archives/ud-treebanks-v2.5.tgz": sha256_bytes(data)}}},
        "manual_dir": str(tmp_path / "manual"),
    }
    raw = tmp_path / "raw"
    man = fetch_source("ud-2.5", raw, ["en"], cfg)
    paths = [f["path"] for f in man["files"]]
    assert paths == [
        "_archives/ud-treebanks-v2.5.tgz",
        "ud-treebanks-v2.5/UD_English-EWT/en_ewt-ud-test.conllu",
        "ud-treebanks-v2.5/UD_English-EWT/en_ewt-ud-train.conllu",
        "ud-treebanks-v2.5/UD_English-GUM/en_gum-ud-dev.conllu",
    ]
    assert man["pinned"] is True and man["languages"] == ["en"]
    for f in man["files"]:
        assert sha256_file(raw / f["path"]) == f["sha256"]
    on_disk = json.loads((raw / "manifests" / "ud-2.5.json").read_text())
    assert on_disk == man
    # Again for en + de: the archive is reused (no new GET), the tree now holds both.
    n = len(server.gets())
    man2 = fetch_source("ud-2.5", raw, ["en", "de"], cfg, manifest=tmp_path / "m.json")
    assert len(server.gets()) == n
    assert (raw / "ud-treebanks-v2.5/UD_German-GSD/de_gsd-ud-train.conllu").exists()
    assert man2["files"][0]["origin"] == "existing"
    assert (tmp_path / "m.json").exists()


def test_unpinned_url_source_refused_when_required_else_locked(server, tmp_path, capsys):
    gz = make_wikimatrix_gz("es")
    server.put("fb/laser/WikiMatrix/v1/WikiMatrix.en-es.tsv.gz", gz)
    cfg = {"mirrors": {FBAI: f"{server.url}/fb/"}, "manual_dir": str(tmp_path / "m")}
    with pytest.raises(UnpinnedError) as e:
        fetch_source("wikimatrix", tmp_path / "raw", ["es"], {**cfg, "require_pins": True})
    assert "wikimatrix/WikiMatrix.en-es.tsv.gz" in str(e.value)
    assert "download.pins.wikimatrix.sha256" in str(e.value)
    assert server.state.requests == []
    man = fetch_source("wikimatrix", tmp_path / "raw", ["es"], cfg)
    assert man["pinned"] is False and man["files"][0]["check"] == "locked now"
    assert (tmp_path / "raw/wikimatrix/WikiMatrix.en-es.tsv.gz").read_bytes() == gz  # kept as .gz
    err = capsys.readouterr().err
    assert f"locked wikimatrix/WikiMatrix.en-es.tsv.gz: sha256 {sha256_bytes(gz)}" in err


def test_pin_by_language_and_mismatch(server, tmp_path):
    gz = make_wikimatrix_gz("vi")
    server.put("fb/laser/WikiMatrix/v1/WikiMatrix.en-vi.tsv.gz", gz)
    cfg = {"mirrors": {FBAI: f"{server.url}/fb/"}, "manual_dir": str(tmp_path / "m")}
    man = fetch_source("wikimatrix", tmp_path / "raw", ["vi"],
                       {**cfg, "pins": {"wikimatrix": {"sha256": {"vi": sha256_bytes(gz)}}}})  # fmt: skip
    assert man["pinned"] is True
    (tmp_path / "raw/wikimatrix/WikiMatrix.en-vi.tsv.gz").unlink()
    with pytest.raises(XltError, match="sha256 mismatch"):
        fetch_source("wikimatrix", tmp_path / "raw", ["vi"],
                     {**cfg, "pins": {"wikimatrix": {"sha256": {"vi": "1" * 64}}}})  # fmt: skip
    assert not (tmp_path / "raw/wikimatrix/WikiMatrix.en-vi.tsv.gz").exists()


def test_xnli_mt_zip(server, tmp_path):
    data = make_xnli_mt_zip(("de", "es"))
    server.put("fb/XNLI/XNLI-MT-1.0.zip", data)
    cfg = {
        "mirrors": {FBAI: f"{server.url}/fb/"},
        "pins": {"xnli-mt": {"sha256": {"_archives/XNLI-MT-1.0.zip": sha256_bytes(data)}}},
    }
    man = fetch_source("xnli-mt", tmp_path / "raw", ["de"], cfg)
    assert [f["path"] for f in man["files"]] == [
        "_archives/XNLI-MT-1.0.zip",
        "xnli-mt/multinli/multinli.train.de.tsv",
        "xnli-mt/xnli/xnli.test.de.tsv",
    ]
    # A language the archive lacks fails loudly, naming the pattern.
    with pytest.raises(XltError, match="multinli.train.fr.tsv"):
        fetch_source("xnli-mt", tmp_path / "raw", ["fr"], cfg)
    assert (tmp_path / "raw/xnli-mt/multinli/multinli.train.de.tsv").exists()  # old tree kept


def test_squad_json_from_url(server, tmp_path):
    train, dev = make_squad_json(), make_squad_json()
    server.put("squad/train-v1.1.json", train)
    server.put("squad/dev-v1.1.json", dev)
    cfg = {
        "mirrors": {"https://rajpurkar.github.io/SQuAD-explorer/dataset/": f"{server.url}/squad/"},
        "pins": {"squad-json": {"sha256": {"squad/train-v1.1.json": sha256_bytes(train),
                                           "squad/dev-v1.1.json": sha256_bytes(dev)}}},
    }  # fmt: skip
    man = fetch_source("squad-json", tmp_path / "raw", None, cfg)
    assert [f["path"] for f in man["files"]] == ["squad/dev-v1.1.json", "squad/train-v1.1.json"]
    doc = json.loads((tmp_path / "raw/squad/train-v1.1.json").read_text())
    assert doc["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["text"] == "Paris"


def test_url_source_manual_fallback(dead_url, tmp_path):
    gz = make_wikimatrix_gz("hi")
    manual = tmp_path / "resources" / "manual"
    manual.mkdir(parents=True)
    (manual / "WikiMatrix.en-hi.tsv.gz").write_bytes(gz)
    cfg = {
        "mirrors": {FBAI: f"{dead_url}/"},
        "manual_dir": str(manual),
        "retries": 1,
        "pins": {"wikimatrix": {"sha256": {"hi": sha256_bytes(gz)}}},
    }
    man = fetch_source("wikimatrix", tmp_path / "raw", ["hi"], cfg)
    assert man["files"][0]["origin"] == "manual"


# --------------------------------------------------------------------------- hub entries


def _wikiann_repo(server):
    files = {
        f"{lang}/{split}-00000-of-00001.parquet": make_wikiann_parquet(lang)
        for lang in ("en", "de")
        for split in ("train", "validation", "test")
    }
    return server.hub_repo("unimelb-nlp/wikiann", files), files


def test_hub_source_pinned(server, hf_online, tmp_path):
    repo, files = _wikiann_repo(server)
    cfg = {"hf_endpoint": server.url, "hf_cache_dir": str(hf_online),
           "pins": {"wikiann": {"revision": repo.commit}}}  # fmt: skip
    man = fetch_source("wikiann", tmp_path / "raw", ["en", "de"], cfg)
    assert man["revision"] == repo.commit and man["pinned"] is True
    assert [f["path"] for f in man["files"]] == sorted(f"wikiann/{k}" for k in files)
    for f in man["files"]:
        assert f["origin"] == "hub"
        assert (tmp_path / "raw" / f["path"]).read_bytes() == files[f["repo_path"]]
    t = pq.read_table(tmp_path / "raw/wikiann/de/test-00000-of-00001.parquet")
    assert t.column("langs").to_pylist()[0][0] == "de"
    assert all(f"/resolve/{repo.commit}/" in r[1] for r in server.state.requests)


def test_hub_source_unpinned_refused_when_required_else_locked(server, hf_online, tmp_path, capsys):
    repo, _ = _wikiann_repo(server)
    cfg = {"hf_endpoint": server.url, "hf_cache_dir": str(hf_online)}
    with pytest.raises(UnpinnedError, match="download.pins.wikiann.revision"):
        fetch_source("wikiann", tmp_path / "raw", ["en"], {**cfg, "require_pins": True})
    assert server.state.requests == []
    man = fetch_source("wikiann", tmp_path / "raw", ["en"], cfg)
    assert man["revision"] == repo.commit and man["pinned"] is False
    assert man["revision_requested"] is None
    assert all("/resolve/main/" in r[1] for r in server.state.requests)
    assert f"at {repo.commit}: sha256" in capsys.readouterr().err


def test_hub_needs_commit_not_branch(tmp_path):
    with pytest.raises(XltError, match="40-hex commit"):
        fetch_source("wikiann", tmp_path, ["en"], {"pins": {"wikiann": {"revision": "main"}}})


def test_mlqa_reads_convert_branch(server, hf_online, tmp_path):
    data = make_squad_parquet()
    server.hub_repo("facebook/mlqa", {"mlqa.de.de/validation/0000.parquet": data,
                                      "mlqa.de.de/test/0000.parquet": data},
                    refs=("refs/convert/parquet",))  # fmt: skip
    cfg = {"hf_endpoint": server.url, "hf_cache_dir": str(hf_online)}
    man = fetch_source("mlqa", tmp_path / "raw", ["de"], cfg)
    assert [f["path"] for f in man["files"]] == [
        "mlqa/de/test-00000-of-00001.parquet",
        "mlqa/de/validation-00000-of-00001.parquet",
    ]
    assert all("/resolve/refs%2Fconvert%2Fparquet/" in r[1] for r in server.state.requests)
    cols = pq.read_table(tmp_path / "raw/mlqa/de/test-00000-of-00001.parquet").column_names
    assert cols == ["id", "title", "context", "question", "answers"]


def test_marc_mirror_jsonl(server, hf_online, tmp_path):
    files = {f"ja/{s}.jsonl": make_marc_jsonl("ja") for s in ("train", "validation", "test")}
    repo = server.hub_repo("mteb/amazon_reviews_multi", files)
    cfg = {"hf_endpoint": server.url, "hf_cache_dir": str(hf_online),
           "pins": {"marc": {"revision": repo.commit}}}  # fmt: skip
    man = fetch_source("marc", tmp_path / "raw", ["ja"], cfg)
    assert [f["path"] for f in man["files"]] == [
        "marc/ja/test.jsonl", "marc/ja/train.jsonl", "marc/ja/validation.jsonl"
    ]  # fmt: skip


def test_hub_manual_fallback(server, hf_online, tmp_path):
    # The Hub does not have the file: a hand-placed copy is used, checked against its pin.
    repo = server.hub_repo("google-research-datasets/tydiqa",
                           {"secondary_task/train-00000-of-00001.parquet": make_squad_parquet()})  # fmt: skip
    val = make_squad_parquet()
    manual = tmp_path / "manual"
    (manual / "tydiqa").mkdir(parents=True)
    (manual / "tydiqa/validation-00000-of-00001.parquet").write_bytes(val)
    cfg = {
        "hf_endpoint": server.url,
        "hf_cache_dir": str(hf_online),
        "manual_dir": str(manual),
        "pins": {"tydiqa": {"revision": repo.commit,
                            "sha256": {"tydiqa/validation-00000-of-00001.parquet": sha256_bytes(val)}}},
    }  # fmt: skip
    man = fetch_source("tydiqa", tmp_path / "raw", None, cfg)
    origins = {f["path"]: f["origin"] for f in man["files"]}
    assert origins == {
        "tydiqa/train-00000-of-00001.parquet": "hub",
        "tydiqa/validation-00000-of-00001.parquet": "manual",
    }
    # Without the manual copy: the message names the Hub file and where to put it by hand.
    (manual / "tydiqa/validation-00000-of-00001.parquet").unlink()
    (tmp_path / "raw/tydiqa/validation-00000-of-00001.parquet").unlink()
    with pytest.raises(DownloadError) as e:
        fetch_source("tydiqa", tmp_path / "raw", None, cfg)
    assert "secondary_task/validation-00000-of-00001.parquet" in str(e.value)
    assert str(manual / "tydiqa/validation-00000-of-00001.parquet") in str(e.value)


# --------------------------------------------------------------------------- config and names


def test_unknown_source_suggests():
    with pytest.raises(XltError, match="Did you mean 'wikiann'"):
        fetch_source("wikian", "/nonexistent", ["en"])


def test_unknown_language_suggests():
    with pytest.raises(XltError, match="language for source paws-x 'fra'.*Did you mean 'fr'"):
        fetch_source("paws-x", "/nonexistent", ["fra"])


def test_open_language_set_needs_languages():
    with pytest.raises(XltError, match="needs languages"):
        fetch_source("wikiann", "/nonexistent", [])


def test_config_unknown_key():
    with pytest.raises(XltError, match="download.require_pin: unknown key.*'require_pins'"):
        FetchConfig.coerce({"require_pin": True})


def test_config_allow_unpinned_was_replaced():
    with pytest.raises(XltError, match="download.allow_unpinned: removed.*require_pins"):
        FetchConfig.coerce({"allow_unpinned": True})
    with pytest.raises(XltError, match="download.require_pins: expected true or false"):
        FetchConfig.coerce({"require_pins": "yes"})
