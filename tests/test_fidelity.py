"""The papers' fidelity ledgers (xlt/papers/<slug>/fidelity.yaml): valid, complete, true to the
resolved configs, and the source of the notes of every table and figure they affect."""

from __future__ import annotations

import copy

import pytest
import yaml

from xlt import fidelity as F
from xlt.workflow import paper_outputs as PO
from xlt.workflow import paper_targets as P
from xlt.errors import XltError
from xlt.workflow.config import load_configs

SLUGS = list(P.PAPERS)


@pytest.fixture(scope="module")
def full():
    return load_configs([])


@pytest.fixture(scope="module")
def tiny():
    return load_configs(["presets/tiny.yaml"])


def _items(slug: str) -> set[str]:
    paper = P.get_paper(slug)
    return {t.id for t in paper.tables} | {f.id for f in paper.figures}


@pytest.mark.parametrize("slug", SLUGS)
def test_every_paper_has_a_valid_complete_ledger(slug):
    ledger = F.load(slug)  # schema, ids, every category covered
    assert ledger["paper"] == slug


@pytest.mark.parametrize("slug", SLUGS)
def test_ours_matches_the_resolved_configs(slug, full, tiny):
    assert F.check_ours(slug, full, tiny) == []


@pytest.mark.parametrize("slug", SLUGS)
def test_affects_names_only_the_papers_tables_and_figures(slug):
    items = _items(slug)
    for e in F.load(slug)["entries"]:
        if e["affects"] != "all":
            assert set(e["affects"]) <= items, f"{slug} {e['id']}: unknown items {set(e['affects']) - items}"


@pytest.mark.parametrize("slug", SLUGS)
def test_every_deviation_is_in_the_notes_of_what_it_affects(slug, full):
    for e in F.deviations(slug):
        targets = _items(slug) if e["affects"] == "all" else e["affects"]
        for item in targets:
            assert F.deviation_note(slug, e) in F.item_notes(full, slug, item)


@pytest.mark.parametrize("slug", SLUGS)
def test_every_tiny_scaling_is_in_the_tiny_notes(slug, full, tiny):
    for e in F.load(slug)["entries"]:
        if "key" not in e["ours"] or F.config_value(tiny, e["ours"]["key"]) == e["ours"]["value"]:
            continue
        value = F.config_value(tiny, e["ours"]["key"])
        targets = _items(slug) if e["affects"] == "all" else e["affects"]
        for item in targets:
            assert F.scaling_note(slug, e, value) in F.item_notes(tiny, slug, item)
            assert F.scaling_note(slug, e, value) not in F.item_notes(full, slug, item)


# ---- the checks themselves, on a constructed ledger -----------------------------------------


def _entry(**over):
    e = {"id": "lr", "category": "learning_rate", "setting": "learning rate",
         "paper": {"value": 2e-5, "where": "§4"}, "reference": "none public",
         "ours": {"key": "hparams.toy.lr", "value": 2e-5}, "verdict": "same", "affects": ["table2"]}
    e.update(over)
    return e


def _ledger(entries, **over):
    led = {"paper": "toy", "references": [], "entries": entries,
           "not_applicable": {c: "the toy paper has none of it" for c in F.CATEGORIES if c != "learning_rate"}}
    led.update(over)
    return led


@pytest.fixture
def toy(tmp_path, monkeypatch):
    monkeypatch.setattr(F, "PAPERS_DIR", tmp_path)
    (tmp_path / "toy").mkdir()
    F.load.cache_clear()
    yield lambda ledger: (tmp_path / "toy" / "fidelity.yaml").write_text(yaml.safe_dump(ledger))
    F.load.cache_clear()


def test_a_deviation_needs_why_and_effect(toy):
    toy(_ledger([_entry(verdict="deviation")]))
    with pytest.raises(XltError, match=r"fidelity.yaml: entries.0 \(entry lr\): 'why' is a required property"):
        F.load("toy")


def test_an_uncovered_category_is_named(toy):
    led = _ledger([_entry()])
    del led["not_applicable"]["seeds"]
    toy(led)
    with pytest.raises(XltError, match="no entry .* for the categories: seeds"):
        F.load("toy")


def test_a_reference_names_a_listed_repo(toy):
    toy(_ledger([_entry(reference={"repo": "a/b", "file": "x.py:3", "value": 1})]))
    with pytest.raises(XltError, match="reference repo a/b is not among `references`"):
        F.load("toy")


def test_check_ours_names_a_wrong_value_and_an_unexplained_tiny_change(toy):
    toy(_ledger([_entry()]))
    full = {"hparams": {"toy": {"lr": 3e-5}}}
    assert F.check_ours("toy", full, full) == ["toy lr: hparams.toy.lr is 3e-05 in config.yaml, the ledger says 2e-05"]
    full = {"hparams": {"toy": {"lr": 2e-5}}}
    tiny = copy.deepcopy(full)
    tiny["hparams"]["toy"]["lr"] = 1e-3
    assert F.check_ours("toy", full, tiny) == [
        "toy lr: the tiny preset sets hparams.toy.lr to 0.001 (full scale 2e-05) and the ledger gives no `tiny` reason"]


def test_notes_carry_deviations_and_this_runs_changes(toy):
    dev = _entry(id="clip", category="grad_clipping", setting="gradient clipping", paper="silent",
                 reference={"repo": "a/b", "file": "run.py:9", "value": "none"},
                 ours={"key": "hparams.toy.max_grad_norm", "value": 1.0}, verdict="deviation",
                 why="the engine's default.", effect="none measured.", affects="all")
    lr = _entry(ours={"key": "hparams.toy.lr", "value": 2e-5, "tiny": {"value": 1e-3, "why": "the tiny encoder's scale."}})
    toy(_ledger([lr, dev], references=[{"repo": "a/b", "commit": "abcdef0", "what": "the authors'"}]))
    full = {"hparams": {"toy": {"lr": 2e-5, "max_grad_norm": 1.0}}}
    tiny = {"hparams": {"toy": {"lr": 1e-3, "max_grad_norm": 1.0}}}
    assert F.item_notes(full, "toy", "table2") == [
        "Deviation (toy fidelity `clip`), gradient clipping: paper silent; a/b none (run.py:9); ours 1 "
        "(`hparams.toy.max_grad_norm`). Why: the engine's default. Effect: none measured."]
    assert F.item_notes(tiny, "toy", "table2")[1] == (
        "This run (toy fidelity `lr`), learning rate: 0.001 (full scale 2e-05, `hparams.toy.lr`): the tiny encoder's scale.")
    assert F.item_notes(tiny, "toy", "fig9") == F.item_notes(full, "toy", "fig9")  # lr affects table2 only


def test_a_tables_markdown_ends_with_the_ledgers_notes():
    md = "## Table 2\n\n| | XNLI |\n|---|---|\n\n- a note of the table\n"
    out = PO.with_ledger_notes(md, ["Deviation (toy fidelity `clip`), gradient clipping: …"])
    assert out.startswith(md.rstrip("\n"))
    assert out.endswith(f"\n\n{PO.LEDGER_HEADING}\n\n- Deviation (toy fidelity `clip`), gradient clipping: …\n")
    assert PO.with_ledger_notes(md, []) == md


def test_the_index_lists_figure_notes_under_the_papers_figures():
    from xlt.workflow.report import index_markdown

    slug = next(s for s in P.PAPERS if P.get_paper(s).figures)
    figs = [f.id for f in P.get_paper(slug).figures][:2]
    files = [f"results/figures/{slug}/{f}.png" for f in figs]
    notes = {slug: [["a note on both", figs], ["a note on a figure not listed", ["fig_none"]]]}
    md = index_markdown(files, "results/tables/index.md", notes)
    assert f"- ({', '.join(figs)}) a note on both" in md
    assert "not listed" not in md
    assert "fidelity ledger" not in index_markdown(files, "results/tables/index.md")


def test_the_index_job_reads_figure_notes_past_the_kernels_argument_limit(tmp_path):
    """The index rule pipes the figure notes (tens of KiB on the tiny preset) into tables_index.py:
    one argv string is limited to 128 KiB, stdin is not."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    slug = next(s for s in P.PAPERS if P.get_paper(s).figures)
    fig = P.get_paper(slug).figures[0].id
    (tmp_path / "results" / "figures" / slug).mkdir(parents=True)
    item = tmp_path / "results" / "figures" / slug / f"{fig}.png"
    item.write_bytes(b"")
    notes = {slug: [["x" * 200_000, [fig]]]}  # past 128 KiB
    script = Path(__file__).resolve().parents[1] / "workflow_scripts" / "tables_index.py"
    out = tmp_path / "index.md"
    run = subprocess.run([sys.executable, str(script), "--items", str(item), "--figure-notes", "-", "--out", str(out)],
                         input=json.dumps(notes), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert f"- ({fig}) {'x' * 200_000}" in out.read_text()
