"""Issue 30's bad-input classes, each with several variants: a number that is not finite, a
name that becomes part of a path but is not a safe name, and a config file that is not YAML
handed straight to `snakemake --configfile` (the check goes first: `python -m xlt.workflow.config --`).

In process where the library decides; as a subprocess (one case per class and entry point)
where the user sees the line: non-zero exit, one `error:` line naming the config file and the
key, no traceback, no partial output (tests.test_bad_inputs.assert_refused).
"""

from __future__ import annotations

import re
import sys

import pytest
import yaml

from tests.conftest import REPO
from tests.test_bad_inputs import TINY, Bad, assert_refused, config_check, run_case, snakemake_n
from xlt.workflow.config import NAME_PATTERN, check_workflow_config, config_sources, located, merged, snakemake_configfiles
from xlt.errors import XltError
from xlt.dag.targets import WILDCARDS, Init, Recipe


@pytest.fixture(scope="module")
def tiny_sources():
    return config_sources([TINY])


def refused(sources, bad: dict) -> str:
    """The located message for `bad` (a config file's mapping, `bad.yaml`) over `sources`."""
    sources = [*sources, ("bad.yaml", bad)]
    with pytest.raises(XltError) as e:
        check_workflow_config(merged(sources))
    return located(e.value, sources)


# ---- every number finite ---------------------------------------------------------------------

NONFINITE = [
    ({"hparams": {"crossmulti": {"lr": float("nan")}}}, r"hparams\.crossmulti\.lr: nan"),
    ({"data": {"wikimatrix": {"threshold": float("inf")}}}, r"data\.wikimatrix\.threshold: inf"),
    ({"papers": {"underspec": {"grid": {"alpha_2d": {"lo": float("-inf")}}}}},
     r"papers\.underspec\.grid\.alpha_2d\.lo: -inf"),
    ({"papers": {"underspec": {"grid": {"alpha_1d": {"extra": [0.5, float("nan")]}}}}},
     r"papers\.underspec\.grid\.alpha_1d\.extra\[1\]: nan"),
    ({"aux_sets": {"crossmulti_fa": {"weight": float("-inf")}}}, r"aux_sets\.crossmulti_fa\.weight: -inf"),
    ({"adapt": {"adjust": {"adam_betas": [0.9, float("inf")]}}}, r"adapt\.adjust\.adam_betas\[1\]: inf"),
    ({"papers": {"crossmulti": {"analysis": {"probe": {"lr": float("nan")}}}}},
     r"papers\.crossmulti\.analysis\.probe\.lr: nan"),
]


@pytest.mark.parametrize("bad,key", NONFINITE, ids=lambda x: x if isinstance(x, str) else "")
def test_a_number_that_is_not_finite_is_refused_naming_the_file_and_key(tiny_sources, bad, key):
    line = refused(tiny_sources, bad)
    assert re.fullmatch(rf"bad\.yaml: config key {key} is not a finite number; allowed: a finite number .*", line), line


def test_the_file_named_is_the_last_that_set_the_key(tiny_sources):
    """An earlier file's value that a later file does not touch is blamed on the earlier one."""
    first, second = ("first.yaml", {"hparams": {"crossmulti": {"lr": float("nan")}}}), ("second.yaml", {"hparams": {}})
    sources = [*tiny_sources, first, second]
    with pytest.raises(XltError) as e:
        check_workflow_config(merged(sources))
    assert located(e.value, sources).startswith("first.yaml: config key hparams.crossmulti.lr: nan")


def test_the_worlds_own_checks_name_the_file_too(tiny_sources):
    line = refused(tiny_sources, {"world": {"languages": {"de": {"order": "XYZ"}}}})
    assert line.startswith("bad.yaml: world.languages.de.order: 'XYZ' is not one of"), line


# ---- every name that becomes part of a path: one pattern -------------------------------------

BAD_NAMES = ["..", "../x", "a/b", "", ".hidden", "x..y", "a.b", "-x"]
NAME_KEYS = {  # where a name is declared (a mapping's key) -> a value for it
    "encoders": {"hub": "x/y"},
    "language_sets": ["en"],
    "hparams": {},
    "aux_sets": {"kind": "aligned_pairs", "weight": 1.0, "size": 100},
    "data.ud.sets": {},
    "data.xnli.sets": {"languages": ["en"]},
}


@pytest.mark.parametrize("name", BAD_NAMES)
@pytest.mark.parametrize("where", list(NAME_KEYS))
def test_a_declared_name_outside_the_safe_pattern_is_refused(tiny_sources, where, name):
    bad: dict = {}
    node = bad
    for part in where.split("."):
        node = node.setdefault(part, {})
    node[name] = NAME_KEYS[where]
    line = refused(tiny_sources, bad)
    assert line.startswith(f"bad.yaml: config key {where}: the name {name!r} is not allowed; expected "), line
    assert "pattern ^[" in line


REFERENCES = [  # a value that names a declared name (or a dataset, a UD treebank folder)
    ({"papers": {"crossmulti": {"encoder": "../mbert"}}}, r"papers\.crossmulti\.encoder", "a name"),
    ({"papers": {"crossmulti": {"languages": ""}}}, r"papers\.crossmulti\.languages", "a name"),
    ({"papers": {"crossmulti": {"table6": {"fa": "a/b"}}}}, r"papers\.crossmulti\.table6\.fa", "a name"),
    ({"papers": {"dlfa": {"languages": {"ner": ".x"}}}}, r"papers\.dlfa\.languages\.ner", "a name"),
    ({"papers": {"xmixup": {"hparams": "..", "translate_train": {"xnli": "xnli/../x"}}}},
     r"papers\.xmixup\.(hparams|translate_train\.xnli)", "a (name|dataset)"),
    ({"align": {"l2": {"encoder": "../tiny"}}}, r"align\.l2\.encoder", "a name"),
    ({"aux_sets": {"crossmulti_fa": {"tasks": {"ner": ["pos/../x"]}}}}, r"aux_sets\.crossmulti_fa\.tasks\.ner\[0\]",
     "a dataset"),
    ({"data": {"ud": {"treebanks": {"en": ["../../etc"]}}}}, r"data\.ud\.treebanks\.en\[0\]", "a UD treebank directory"),
]


@pytest.mark.parametrize("bad,key,what", REFERENCES, ids=lambda x: x if isinstance(x, str) else "")
def test_a_reference_outside_the_safe_pattern_is_refused(tiny_sources, bad, key, what):
    line = refused(tiny_sources, bad)
    assert re.match(rf"bad\.yaml: config key {key}: .* is not allowed; expected {what}", line), line


@pytest.mark.parametrize("name", ["a", "0", "mbert", "xlmr_large", "Z9_x", "crossmulti_fa"])
def test_a_safe_name_fits_every_wildcard_it_fills(name):
    """A name the pattern lets through is one the path grammar builds and parses back."""
    assert re.fullmatch(NAME_PATTERN, name)
    for wildcard in ("encoder", "langset"):
        assert re.fullmatch(WILDCARDS[wildcard], name)
    recipe = Recipe(("en", "de"), name, name).name
    assert re.fullmatch(WILDCARDS["recipe"], recipe) and Recipe.parse(recipe) == Recipe(("de", "en"), name, name)
    init = Init("mlm", "ner", name).name
    assert re.fullmatch(WILDCARDS["init"], init) and Init.parse(init).langset == name


def test_the_schema_and_the_library_share_the_one_pattern():
    schema = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text())
    assert schema["$defs"]["name"]["pattern"] == NAME_PATTERN
    assert schema["$defs"]["set_name"]["pattern"] == NAME_PATTERN.replace("A-Za-z", "a-z")


# ---- the user's view: one line, the file and key, no traceback, nothing written --------------

CLI = [
    Bad("cli-nan", config_check(str(TINY), "bad.yaml"),
        r"^error: invalid configuration: bad\.yaml: config key hparams\.crossmulti\.lr: nan is not a finite number",
        {"bad.yaml": "hparams: {crossmulti: {lr: .nan}}\n"}),
    Bad("cli-name", config_check(str(TINY), "bad.yaml"),
        r"^error: invalid configuration: bad\.yaml: config key language_sets: the name '\.\./x' is not allowed",
        {"bad.yaml": "language_sets: {../x: [en]}\n"}),
    Bad("snakemake-inf", snakemake_n(str(TINY), "bad.yaml"),
        r"^error: invalid configuration: bad\.yaml: config key data\.wikimatrix\.threshold: -inf is not a finite",
        {"bad.yaml": "data: {wikimatrix: {threshold: -.inf}}\n"}, outputs=["results", "logs", ".snakemake"]),
    Bad("snakemake-name", snakemake_n(str(TINY), "bad.yaml"),
        r"^error: invalid configuration: bad\.yaml: config key encoders: the name 'a/b' is not allowed",
        {"bad.yaml": "encoders: {a/b: {hub: x}}\n"},
        outputs=["results", "logs", ".snakemake"]),
    # YAML 1.1 reads 2e-5 (no dot) as a string: the line says how to write the number
    Bad("cli-exponent-without-dot", config_check(str(TINY), "bad.yaml"),
        r"^error: invalid configuration: bad\.yaml: config key hparams\.crossmulti\.lr: '2e-5' should be of type "
        r"number \(YAML reads 2e-5 as a string: write 2\.0e-5\)$",
        {"bad.yaml": "hparams: {crossmulti: {lr: 2e-5}}\n"}),
    # a misspelled key, top level or nested, names the file that wrote it (not config.yaml, which
    # sets the mapping it is in)
    Bad("cli-top-level-typo", config_check(str(TINY), "bad.yaml"),
        r"^error: invalid configuration: bad\.yaml: config key \(top level\): unknown key\(s\) \['hparms'\]; "
        r"allowed: .* Did you mean 'hparams'\?$",
        {"bad.yaml": "hparms: {crossmulti: {lr: 1.0e-5}}\n"}),
    Bad("snakemake-nested-typo", snakemake_n(str(TINY), "bad.yaml"),
        r"^error: invalid configuration: bad\.yaml: config key hparams\.crossmulti: unknown key\(s\) \['lrr'\]",
        {"bad.yaml": "hparams: {crossmulti: {lrr: 1.0e-5}}\n"}, outputs=["results", "logs", ".snakemake"]),
    # Snakemake reads --configfile files before the workflow runs: the check goes first.
    Bad("snakemake-not-yaml-checked-first",
        [sys.executable, "-m", "xlt.workflow.config", "--", *snakemake_n(str(TINY), "bad.yaml")],
        r"^error: invalid configuration: bad\.yaml:2: invalid YAML \(expected ',' or ']'",
        {"bad.yaml": "hparams:\n  crossmulti: {lr: [1e-5}\n  x: 1\n"}, outputs=["results", "logs", ".snakemake"]),
]


@pytest.mark.parametrize("case", CLI, ids=lambda c: c.id)
def test_a_bad_config_is_one_line_naming_the_file_and_key(case, tmp_path):
    assert_refused(run_case(case, tmp_path), case.expect, tmp_path, case.outputs)


def test_the_check_runs_the_command_when_the_config_is_good(tmp_path):
    import subprocess

    from tests.test_bad_inputs import _env

    cmd = [sys.executable, "-c", "import sys; print('ran', sys.argv[1:])", "--configfile", str(TINY)]
    run = subprocess.run([sys.executable, "-m", "xlt.workflow.config", "--", *cmd], cwd=tmp_path, capture_output=True, text=True,
                         timeout=60, env={**_env(), "PYTHONPATH": str(REPO)})
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == f"ran ['--configfile', '{TINY}']"


@pytest.mark.parametrize("argv,files", [
    (["snakemake", "--configfile", "a.yaml", "b.yaml", "-n", "all"], ["a.yaml", "b.yaml"]),
    (["snakemake", "--configfile=a.yaml", "b.yaml", "--configfiles", "c.yaml"], ["a.yaml", "c.yaml"]),
    (["snakemake", "--configf", "a.yaml", "--config", "x=1", "--cores", "2"], ["a.yaml"]),
    (["snakemake", "-n", "all_tables"], []),
])
def test_the_config_files_of_a_snakemake_command_line(argv, files):
    assert snakemake_configfiles(argv) == files
