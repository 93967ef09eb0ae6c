"""A paper's settings beside it (xlt.papers.config_files): xlt/papers/<slug>/config.yaml and
presets/<preset>.yaml merged into the config where a run reads it; config.yaml's keys and the
preset's file still win; a bad key fails naming the paper's file; a profile names its metric."""

import shutil

import pytest

from tests.conftest import REPO
from xlt.workflow import config as C
from xlt.dag import targets as T
from xlt.errors import XltError
from xlt.io import read_yaml
from xlt.papers import config_files as F

TINY = REPO / "presets" / "tiny.yaml"


@pytest.fixture
def papers_copy(tmp_path, monkeypatch):
    """The papers' config files copied under tmp_path/xlt/papers/, read from there."""
    folder = tmp_path / "xlt" / "papers"
    for slug in F.PAPERS:
        for path in [F.paper_file(slug), *(F.FOLDER / slug / "presets").glob("*.yaml")]:
            dest = folder / path.relative_to(F.FOLDER)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, dest)
    monkeypatch.setattr(F, "FOLDER", folder)
    monkeypatch.setattr(F, "REPO", tmp_path)
    return folder


@pytest.fixture
def user_config(tmp_path, monkeypatch):
    """config.yaml with the user's own keys appended (the file `load_configs` starts from)."""
    def write(extra: str):
        path = tmp_path / "config.yaml"
        path.write_text((REPO / "config.yaml").read_text() + extra)
        monkeypatch.setattr(C, "DEFAULT_CONFIG", path)
    return write


def _error(configfiles) -> str:
    sources = []
    with pytest.raises(XltError) as e:
        sources = C.config_sources(configfiles)
        C.check_workflow_config(C.merged(sources))
    return C.located(e.value, sources)


def test_the_papers_blocks_and_profiles_come_from_their_folders():
    full, tiny = C.load_configs([]), C.load_configs([TINY])
    default = F.layer()
    assert [label for label, _ in default] == [f"xlt/papers/{slug}/config.yaml" for slug in F.PAPERS]
    for label, data in default:
        slug = label.split("/")[2]
        assert full["papers"][slug] == data["papers"][slug]
        assert all(full["hparams"][name] == profile for name, profile in data.get("hparams", {}).items())
    # the tiny preset's values of a paper are its presets/tiny.yaml, over its defaults
    assert tiny["papers"]["crossmulti"]["encoder"] == "tiny" and full["papers"]["crossmulti"]["encoder"] == "mbert"
    assert tiny["papers"]["crossmulti"]["metric"] == full["papers"]["crossmulti"]["metric"]  # not set by the preset: kept
    assert F.PRESET_KEY not in tiny and F.presets() == ["claims", "first", "tiny"]  # make claims-seeds', make first's, make tables'


def test_a_key_of_config_yaml_overrides_the_papers_default_and_the_preset_overrides_both(user_config, tmp_path):
    user_config("\npapers:\n  crossmulti:\n    seeds: [7, 8]\n")
    mine = tmp_path / "mine.yaml"  # a paper's profile: overridden from a file of the user's
    mine.write_text("hparams:\n  dlfa: {lr: 3.0e-5}\n")
    full, tiny = C.load_configs([mine]), C.load_configs([mine, TINY])
    assert full["papers"]["crossmulti"]["seeds"] == [7, 8]
    assert full["papers"]["crossmulti"]["tasks"] == ["pos", "ner", "pawsx", "marc"]  # the rest: the paper's
    assert full["hparams"]["dlfa"]["lr"] == 3.0e-5 and full["hparams"]["dlfa"]["epochs"] == 5
    C.check_workflow_config(full)
    # the tiny preset (its papers' presets/tiny.yaml) sets both keys: config.yaml's yield, as before the move
    assert tiny["papers"]["crossmulti"]["seeds"] == [1, 2] and tiny["hparams"]["dlfa"]["lr"] == 5.0e-4


def test_an_unknown_key_in_a_papers_file_names_the_file_and_key(papers_copy):
    path = papers_copy / "crossmulti" / "config.yaml"
    path.write_text(path.read_text().replace("    seeds: [1, 2, 3]", "    seedz: [1, 2, 3]\n    seeds: [1, 2, 3]", 1))
    message = _error([])
    assert message.startswith("xlt/papers/crossmulti/config.yaml: config key papers.crossmulti: unknown key(s) ['seedz']"), message
    assert "Did you mean 'seeds'?" in message


def test_an_unknown_key_in_a_papers_preset_names_that_file(papers_copy):
    path = papers_copy / "dlfa" / "presets" / "tiny.yaml"
    path.write_text(path.read_text().replace("    control: 4", "    contrl: 4", 1))
    message = _error([TINY])
    assert message.startswith("xlt/papers/dlfa/presets/tiny.yaml: config key papers.dlfa: unknown key(s) ['contrl']"), message


@pytest.mark.parametrize("text,message", [
    ("data: {x: {}}\n", r"xlt/papers/underspec/config.yaml: config key data is not a paper's to set; "
                         r"allowed: papers, hparams, language_sets, aux_sets, adapt, zero_shot"),
    ("papers: {dlfa: {seeds: [1]}}\n", r"xlt/papers/underspec/config.yaml: config key papers.dlfa: a paper's file sets its own block only"),
    ("hparams: {crossmulti: {lr: 1.0}}\n", r"xlt/papers/underspec/config.yaml: config key hparams.crossmulti is also set by xlt/papers/crossmulti/config.yaml"),
    ("language_sets: {crossmulti: [en]}\n", r"xlt/papers/underspec/config.yaml: config key language_sets.crossmulti is also set by xlt/papers/crossmulti/config.yaml"),
    ("adapt: {adjust: {lr: 1.0}}\n", r"xlt/papers/underspec/config.yaml: config key adapt.adjust is also set by xlt/papers/adjust/config.yaml"),
])
def test_a_papers_file_sets_its_own_block_and_names_only(papers_copy, text, message):
    (papers_copy / "underspec" / "config.yaml").write_text(text)
    with pytest.raises(XltError, match=message):
        C.load_configs([])


def test_the_papers_own_names_come_from_their_folders():
    """What one paper alone reads (its language sets, aux sets, adaptation method, zero_shot's
    profile) is declared in its folder, not in config.yaml, and reaches the merged config."""
    shared, full = read_yaml(REPO / "config.yaml"), C.load_configs([])
    owners = {key: label for label, data in F.layer() for key in F.declared(data)}
    for key in ["language_sets.crossmulti", "aux_sets.crossmulti_fa", "language_sets.adjust", "adapt.adjust",
                "aux_sets.adjust_continual", "language_sets.underspec", "zero_shot.hparams", "language_sets.xmixup_pos"]:
        block, name = key.split(".")
        assert key in owners and name not in (shared.get(block) or {}) and name in full[block], key
    assert owners["zero_shot.hparams"] == "xlt/papers/underspec/config.yaml" and full["zero_shot"]["hparams"] == "underspec"
    assert not set(F.declared(shared)) & set(owners)


def test_an_edited_config_yaml_overrides_a_papers_name(papers_copy, monkeypatch):
    """A cluster's edited config.yaml sets a paper's language set or profile key: it wins, as a
    --configfile does (the repository's own config.yaml declares none: the test above)."""
    shared = papers_copy.parent.parent / "config.yaml"
    shared.write_text((REPO / "config.yaml").read_text().replace("language_sets:\n", "language_sets:\n  adjust: [en]\n", 1)
                      + "\nhparams:\n  dlfa: {lr: 3.0e-5}\n")
    monkeypatch.setattr(C, "DEFAULT_CONFIG", shared)
    full = C.load_configs([])
    assert full["language_sets"]["adjust"] == ["en"]
    assert full["hparams"]["dlfa"]["lr"] == 3.0e-5 and full["hparams"]["dlfa"]["epochs"] == 5  # the rest: the paper's
    mine = papers_copy.parent.parent / "mine.yaml"  # a user's file over both
    mine.write_text("language_sets: {adjust: [en, es]}\n")
    assert C.load_configs([mine])["language_sets"]["adjust"] == ["en", "es"]


def test_an_unknown_paper_preset_names_the_file_and_the_presets(tmp_path):
    preset = tmp_path / "mine.yaml"
    preset.write_text("paper_preset: tiy\n")
    with pytest.raises(XltError, match=r"mine.yaml: config key paper_preset: 'tiy' is no paper's preset .*; allowed: claims, first, tiny"):
        C.load_configs([preset])


def test_a_profile_names_its_selection_metric_per_task():
    cfg = C.load_configs([TINY])
    # adjust trains with underspec's profile on the tiny preset: underspec's metrics, none for QA
    assert cfg["papers"]["adjust"]["hparams"] == "underspec"
    assert T.hparams(cfg, "en.underspec", "ner")["select_metric"] == "span_f1"
    assert "select_metric" not in T.hparams(cfg, "en.underspec", "qa")  # the task's first metric
    assert T.hparams(cfg, "en.crossmulti", "pos.es_ancora")["select_metric"] == "f1_macro"
    # a profile named as no paper, or renamed, keeps what it says: no lookup by the profile's name
    cfg["hparams"]["mine"] = dict(cfg["hparams"]["crossmulti"])
    assert T.hparams(cfg, "en.mine", "ner")["select_metric"] == "token_f1_macro"
    del cfg["hparams"]["crossmulti"]["select_metric"]
    assert "select_metric" not in T.hparams(cfg, "en.crossmulti", "ner")
    # a task's own setting wins over the profile's mapping
    cfg["hparams"]["mine"]["per_task"] = {"ner": {"select_metric": "span_f1"}}
    assert T.hparams(cfg, "en.mine", "ner")["select_metric"] == "span_f1"


@pytest.mark.parametrize("metrics,message", [
    ({"ner": "f1"}, r"config key hparams\.crossmulti\.select_metric\.ner: unknown metric of task ner 'f1'"),
    ({"nre": "span_f1"}, r"config key hparams\.crossmulti\.select_metric: unknown task 'nre'"),
])
def test_a_bad_selection_metric_names_the_key(metrics, message):
    cfg = C.load_configs([])
    cfg["hparams"]["crossmulti"]["select_metric"] = metrics
    with pytest.raises(XltError, match=message):
        C.validate(cfg)


def test_docs_papers_table_is_the_generated_one():
    from xlt.workflow.status import PAPERS_BEGIN, PAPERS_END, current_block, papers_block

    text = (REPO / "docs" / "papers.md").read_text(encoding="utf-8")
    assert current_block(text, "docs/papers.md", PAPERS_BEGIN, PAPERS_END) == papers_block(), \
        "regenerate with: make status (python -m xlt.workflow.status --write docs/papers.md)"
