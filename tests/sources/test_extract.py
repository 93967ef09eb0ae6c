"""extract(): tgz / zip / gz, member selection, path traversal refused, atomic replacement."""

from __future__ import annotations

import gzip
import io
import zipfile

import pytest

from tests.sources.realfiles import (
    CONLLU_DE,
    CONLLU_EN,
    make_tgz,
    make_ud_tgz,
    make_wikimatrix_gz,
    make_xnli_mt_zip,
)
from xlt.errors import XltError
from xlt.sources.fetch import UnsafeArchiveError, extract


def _leftovers(parent):
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def test_tgz_all_members(tmp_path):
    arc = tmp_path / "ud-treebanks-v2.5.tgz"
    arc.write_bytes(make_ud_tgz())
    rels = extract(arc, tmp_path / "raw" / "ud-treebanks-v2.5", strip_components=1)
    assert "UD_English-EWT/en_ewt-ud-train.conllu" in rels
    assert "UD_English-EWT/LICENSE.txt" in rels
    dest = tmp_path / "raw" / "ud-treebanks-v2.5"
    assert (dest / "UD_German-GSD/de_gsd-ud-train.conllu").read_text() == CONLLU_DE
    assert _leftovers(tmp_path / "raw") == []


def test_tgz_selected_members(tmp_path):
    arc = tmp_path / "ud.tgz"
    arc.write_bytes(make_ud_tgz())
    dest = tmp_path / "ud-treebanks-v2.5"
    rels = extract(arc, dest, ["*/UD_*/en_*-ud-*.conllu"], strip_components=1)
    assert rels == [
        "UD_English-EWT/en_ewt-ud-test.conllu",
        "UD_English-EWT/en_ewt-ud-train.conllu",
        "UD_English-GUM/en_gum-ud-dev.conllu",
    ]
    assert (dest / "UD_English-GUM/en_gum-ud-dev.conllu").read_text() == CONLLU_EN
    assert not (dest / "UD_German-GSD").exists()


def test_pattern_matching_nothing_is_an_error(tmp_path):
    arc = tmp_path / "ud.tgz"
    arc.write_bytes(make_ud_tgz())
    with pytest.raises(XltError, match=r"no member matches \*/UD_\*/fr_\*"):
        extract(arc, tmp_path / "out", ["*/UD_*/en_*.conllu", "*/UD_*/fr_*.conllu"])
    assert not (tmp_path / "out").exists()
    assert _leftovers(tmp_path) == []


def test_replacement_is_whole_and_atomic(tmp_path):
    dest = tmp_path / "ud"
    (dest / "UD_Old").mkdir(parents=True)
    (dest / "UD_Old" / "stale.conllu").write_text("old")
    arc = tmp_path / "ud.tgz"
    arc.write_bytes(make_ud_tgz())
    extract(arc, dest, ["*/UD_German-*/*"], strip_components=1)
    assert sorted(p.name for p in dest.iterdir()) == ["UD_German-GSD"]
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize(
    "name", ["../evil.conllu", "ud/../../evil.conllu", "/tmp/evil.conllu", "ud/..\\..\\evil"]
)
def test_tar_path_traversal_refused(tmp_path, name):
    arc = tmp_path / "bad.tgz"
    arc.write_bytes(make_tgz({"ud/UD_X/x-ud-train.conllu": b"ok", name: b"pwned"}))
    dest = tmp_path / "sub" / "out"
    (dest).mkdir(parents=True)
    (dest / "keep.txt").write_text("previous tree")
    with pytest.raises(UnsafeArchiveError, match="refusing to extract"):
        extract(arc, dest)
    assert (dest / "keep.txt").read_text() == "previous tree"  # old tree untouched
    assert sorted(p.name for p in dest.iterdir()) == ["keep.txt"]
    assert (
        not (tmp_path / "evil.conllu").exists() and not (tmp_path / "sub" / "evil.conllu").exists()
    )
    assert _leftovers(tmp_path / "sub") == []


def test_tar_symlink_refused(tmp_path):
    arc = tmp_path / "bad.tgz"
    arc.write_bytes(make_tgz({"a/x.conllu": b"ok"}, links={"a/link": "/etc/passwd"}))
    with pytest.raises(UnsafeArchiveError, match="link"):
        extract(arc, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_zip_members_and_strip(tmp_path):
    arc = tmp_path / "XNLI-MT-1.0.zip"
    arc.write_bytes(make_xnli_mt_zip(("de", "es", "fr")))
    dest = tmp_path / "xnli-mt"
    rels = extract(
        arc,
        dest,
        ["*/multinli/multinli.train.de.tsv", "*/xnli/xnli.*.de.tsv"],
        strip_components=1,
    )
    assert rels == ["multinli/multinli.train.de.tsv", "xnli/xnli.test.de.tsv"]
    text = (dest / "multinli/multinli.train.de.tsv").read_text()
    assert text.startswith("premise\thypo\tlabel\n") and "contradictory" in text


@pytest.mark.parametrize("name", ["../../evil.tsv", "/abs/evil.tsv", "C:/evil.tsv"])
def test_zip_path_traversal_refused(tmp_path, name):
    arc = tmp_path / "bad.zip"
    arc.write_bytes(make_xnli_mt_zip(("de",), extra={name: b"pwned"}))
    with pytest.raises(UnsafeArchiveError):
        extract(arc, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert not (tmp_path.parent / "evil.tsv").exists()


def test_zip_symlink_refused(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        info = zipfile.ZipInfo("a/link")
        info.external_attr = 0o120777 << 16
        zf.writestr(info, "/etc/passwd")
    arc = tmp_path / "bad.zip"
    arc.write_bytes(buf.getvalue())
    with pytest.raises(UnsafeArchiveError, match="link"):
        extract(arc, tmp_path / "out")


def test_gz_single_file(tmp_path):
    arc = tmp_path / "WikiMatrix.en-es.tsv.gz"
    arc.write_bytes(make_wikimatrix_gz("es"))
    rels = extract(arc, tmp_path / "wm")
    assert rels == ["WikiMatrix.en-es.tsv"]
    first = (tmp_path / "wm" / "WikiMatrix.en-es.tsv").read_text().splitlines()[0]
    assert first.split("\t")[0] == "1.2"


def test_corrupt_archives_are_clear_errors(tmp_path):
    for name in ("x.tgz", "x.zip", "x.tsv.gz"):
        arc = tmp_path / name
        arc.write_bytes(b"this is not an archive")
        with pytest.raises(XltError, match=name.replace(".", r"\.")):
            extract(arc, tmp_path / f"out-{name}")
        assert not (tmp_path / f"out-{name}").exists()
    truncated = tmp_path / "t.tgz"
    truncated.write_bytes(make_ud_tgz()[:200])
    with pytest.raises(XltError, match="t.tgz"):
        extract(truncated, tmp_path / "out-t")
    assert _leftovers(tmp_path) == []


def test_unknown_archive_type(tmp_path):
    arc = tmp_path / "x.rar"
    arc.write_bytes(b"")
    with pytest.raises(XltError, match="unknown archive type"):
        extract(arc, tmp_path / "out")


def test_gzip_roundtrip_is_real_gzip(tmp_path):
    # The builder makes a real gzip stream (what the readers will open).
    assert gzip.decompress(make_wikimatrix_gz()).startswith(b"1.2\t")
