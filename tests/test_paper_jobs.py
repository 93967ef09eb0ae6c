"""The generic paper-job runner (xlt.papers.job_cli): a job's options come from its function's
signature and type hints; a wrong paper, job or option is one line naming the allowed values;
every job a paper declares reads, and every rule calling one passes only its options."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Annotated, Literal

import pytest

from xlt.papers import PAPERS
from xlt.papers.job_cli import job_parser, paper_jobs, parse_job_args, run_paper_job

REPO = Path(__file__).resolve().parents[1]


def toy(model: str, seeds: list[int], grid: dict, kind: Literal["1d", "2d"], out: Annotated[str | Path, "the CSV"],
        ratio: float, langs: list[str] = ["en"], max_length: int | None = None, revision: str | None = None,  # noqa: B006
        data: Path = Path("data"), pca: bool = False) -> dict:
    """A toy job: it returns what it was given."""
    return dict(locals())


JOBS = {"toy": toy}  # this module is the toy paper's jobs module (Paper.jobs)
REQUIRED = ["--model", "m", "--seeds", "1", "2", "--grid", '{"n": 3}', "--kind", "2d", "--out", "o.csv", "--ratio", "0.5"]


def error_line(capsys) -> str:
    lines = [line for line in capsys.readouterr().err.splitlines() if line]
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: ")
    return lines[0]


def test_options_are_the_signature_typed():
    kwargs, threads = parse_job_args(toy, [*REQUIRED, "--max-length", "64", "--langs", "de", "fr", "--data", "d",
                                           "--pca", "--threads", "3"], "prog")
    assert threads == 3
    assert kwargs == {"model": "m", "seeds": [1, 2], "grid": {"n": 3}, "kind": "2d", "out": "o.csv", "ratio": 0.5,
                      "langs": ["de", "fr"], "max_length": 64, "revision": None, "data": Path("d"), "pca": True}
    assert type(kwargs["seeds"][0]) is int and type(kwargs["ratio"]) is float and isinstance(kwargs["data"], Path)


def test_defaults_and_optional_types():
    kwargs, threads = parse_job_args(toy, REQUIRED, "prog")
    assert threads is None
    # a default is the function's; a type admitting None without a default is optional, None
    assert (kwargs["langs"], kwargs["max_length"], kwargs["revision"], kwargs["data"], kwargs["pca"]) == \
        (["en"], None, None, Path("data"), False)


def test_help_shows_each_option_with_its_type(capsys):
    with pytest.raises(SystemExit) as e:
        job_parser(toy, "paper_job.py toy toy").parse_args(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "A toy job: it returns what it was given." in out
    assert re.search(r"--kind \{1d,2d\}\s+one of 1d, 2d", out)
    assert re.search(r"--max-length MAX_LENGTH\s+int; default None", out)
    assert re.search(r"--grid JSON\s+a JSON object", out)
    assert re.search(r"--out OUT\s+the CSV; str", out)


@pytest.mark.parametrize("argv, expect", [
    (REQUIRED[:-2], r"the following arguments are required: --ratio"),
    ([*REQUIRED, "--modle", "x"], r"unrecognized arguments: --modle x; allowed: --model, --seeds, .*--pca, --threads"),
    ([*REQUIRED, "--max-length", "many"], r"argument --max-length: invalid int value: 'many'"),
    ([*REQUIRED, "--kind", "3d"], r"argument --kind: invalid choice: '3d' \(choose from '?1d'?, '?2d'?\)"),
    ([*REQUIRED, "--grid", "[1, 2]"], r"argument --grid: expected a JSON object, got list"),
    ([*REQUIRED, "--grid", '{"n": NaN}'], r"argument --grid: invalid JSON \(NaN is not a finite number\)"),
    ([*REQUIRED, "--seeds"], r"argument --seeds: expected at least one argument"),
    ([*REQUIRED, "--max-len", "64"], r"unrecognized arguments: --max-len 64; allowed: "),  # no abbreviations
], ids=["missing", "unknown", "int", "choice", "json-object", "json-nan", "list-empty", "abbreviated"])
def test_a_bad_option_is_one_line(argv, expect, capsys):
    with pytest.raises(SystemExit) as e:
        parse_job_args(toy, argv, "paper_job.py toy toy")
    assert e.value.code == 2
    line = error_line(capsys)
    assert line.startswith("error: paper_job.py toy toy: ")
    assert re.search(expect, line), line


def _untyped(a, b: int):
    pass


def _union(a: int | str):
    pass


def _tuple(a: tuple[int, int]):
    pass


def _list_of_dicts(a: list[dict]):
    pass


def _threads(threads: int):
    pass


def _varargs(*a: int):
    pass


@pytest.mark.parametrize("fn, expect", [
    (_untyped, r"_untyped\(a\): no type hint"),
    (_union, r"_union\(a\): a union of"),
    (_tuple, r"_tuple\(a\): type tuple\[int, int\] has no option; allowed: str, Path"),
    (_list_of_dicts, r"_list_of_dicts\(a\): a list of <class 'dict'>"),
    (_threads, r"argument `threads` is the runner's own"),
    (_varargs, r"_varargs\(a\): \*args"),
])
def test_a_signature_without_options_is_the_authors_error(fn, expect):
    with pytest.raises(TypeError, match=expect):
        job_parser(fn, "prog")


@pytest.fixture
def toy_paper(monkeypatch):
    """A paper `toy` whose jobs module is this test module, registered for the test's length."""
    monkeypatch.setitem(PAPERS, "toy", dataclasses.replace(PAPERS["dlfa"], slug="toy", jobs=__name__))
    monkeypatch.setitem(PAPERS, "bare", dataclasses.replace(PAPERS["dlfa"], slug="bare", jobs=None))  # declares none
    return PAPERS["toy"]


def test_the_runner_runs_the_named_job(toy_paper, monkeypatch):
    threads = []
    monkeypatch.setattr("xlt.papers.job_cli.set_threads", threads.append)
    got = run_paper_job(["toy", "toy", *REQUIRED, "--threads", "2"])
    assert got["seeds"] == [1, 2] and got["kind"] == "2d" and threads == [2]


@pytest.mark.parametrize("argv, expect", [
    (["tyo", "toy"], r"unknown paper with jobs 'tyo'; allowed: .*\btoy\b.*; did you mean 'toy'\?"),
    (["bare", "x"], r"unknown paper with jobs 'bare'; allowed: crossmulti, dlfa, adjust, underspec, xmixup, toy$"),
    (["toy", "tyo"], r"unknown job of paper toy 'tyo'; allowed: toy; did you mean 'toy'\?"),
])
def test_a_wrong_paper_or_job_is_one_line_naming_the_allowed(toy_paper, argv, expect, capsys):
    with pytest.raises(SystemExit) as e:
        run_paper_job(argv)
    assert e.value.code == 2
    assert re.search(expect, error_line(capsys))


def test_the_runner_lists_papers_and_jobs(toy_paper, capsys):
    assert run_paper_job([]) is None
    assert "papers with jobs: crossmulti, dlfa, adjust, underspec, xmixup, toy\n" in capsys.readouterr().out
    assert run_paper_job(["toy"]) is None
    assert re.search(r"^  toy\s+A toy job: it returns what it was given\.$", capsys.readouterr().out, re.M)


# ---- the papers' own jobs and the rules that run them -------------------------------------------------------


def declared() -> dict[str, dict]:
    return {slug: paper_jobs(paper) for slug, paper in PAPERS.items() if paper.jobs}


def test_every_declared_job_reads_its_options():
    jobs = declared()
    # every paper with rules of its own declares what they run (versus has none: the generic rules train it)
    assert set(jobs) == {slug for slug in PAPERS if (REPO / "rules" / f"{slug}.smk").is_file()}
    for slug, named in jobs.items():
        assert named, slug
        for name, fn in named.items():
            assert job_parser(fn, f"{slug} {name}").description, f"{slug} {name}: no docstring"


# `paper_job.py <slug> <job> …options… 2> {log}` in a rule's shell line, its string pieces joined
CALL = re.compile(r"paper_job\.py (\w+) ([\w-]+)(.*?)2> \{log\}", re.S)


def rule_calls() -> list[tuple[str, str, str, list[str]]]:
    """(rules file, paper, job, the options given) of every paper_job.py call in rules/."""
    calls = []
    for smk in sorted((REPO / "rules").glob("*.smk")):
        for m in CALL.finditer(smk.read_text(encoding="utf-8")):
            calls.append((smk.name, m.group(1), m.group(2), re.findall(r"(--[a-z][\w-]*)", m.group(3))))
    return calls


def test_each_rule_passes_its_job_exactly_its_options():
    jobs, calls = declared(), rule_calls()
    # every call in rules/ read (none missed by CALL), and every declared job run by a rule
    assert len(calls) == sum(smk.read_text(encoding="utf-8").count("paper_job.py ") for smk in (REPO / "rules").glob("*.smk"))
    assert {(c[1], c[2]) for c in calls} == {(slug, name) for slug, named in jobs.items() for name in named}
    for smk, slug, name, given in calls:
        assert smk == f"{slug}.smk", f"{smk} runs a job of {slug}"
        ap = job_parser(jobs[slug][name], name)
        takes = {a.option_strings[0]: a.required for a in ap._actions if a.option_strings}
        unknown = set(given) - set(takes)
        # the centroids rule's --max-sentences comes in a parameter (only when the config caps it)
        missing = {o for o, required in takes.items() if required} - set(given)
        assert not unknown and not missing, f"rules/{smk}: paper_job.py {slug} {name}: unknown {unknown}, missing {missing}"


def test_no_paper_named_script_is_left():
    scripts = {p.stem for p in (REPO / "workflow_scripts").glob("*.py")}
    assert not {s for s in scripts for slug in PAPERS if slug in s}
