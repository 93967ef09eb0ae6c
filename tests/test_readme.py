"""The README stays true: its status block is the one the registry generates (xlt.workflow.status),
every repository path and every make / snakemake target it names exists, its layout names every
rules file, and what points into it (the SLURM profile) names a section it has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO
from xlt.workflow import paper_outputs as PO
from xlt.workflow import paper_targets as P
from xlt.process.cli import LIST_OPTIONS, VALUED_OPTIONS
from xlt.workflow.config import load_configs
from xlt.workflow.help import make_targets, target_rules
from xlt.workflow.status import BEGIN, block, current_block

README = (REPO / "README.md").read_text(encoding="utf-8")
GENERATED = ("results", "logs", "resources", ".snakemake", ".venv", "report.html")  # made by a run or an install
# options whose next word is a value, not a target
VALUED = VALUED_OPTIONS | LIST_OPTIONS


def _spans(text: str, indented_blocks: bool = True) -> list[str]:
    """Inline code, link targets, the lines of fenced and (if asked) of indented code blocks
    (the layout: paths beside prose)."""
    blocks = re.findall(r"```[^\n]*\n(.*?)```", text, flags=re.S)
    rest = re.sub(r"```.*?```", "", text, flags=re.S)
    indented = re.findall(r"^    (\S.*)$", rest, flags=re.M)
    inline = re.findall(r"`([^`\n]+)`", rest)
    return [line for b in blocks for line in b.splitlines()] + (indented if indented_blocks else []) + inline + re.findall(r"\]\(([^)\s]+)\)", text)


def _paths(text: str) -> set[str]:
    out = set()
    for span in _spans(text):
        for word in span.split():
            word = word.strip(",;:()\"'")
            first = word.split("/", 1)[0]
            if ("/" in word or "." in word) and (REPO / first).exists() and first not in GENERATED and first:
                out.add(word)
    return out


def _exists(path: str) -> bool:
    pattern = re.sub(r"\{[^},]*\}|<[^>]*>", "*", path)
    pattern = re.sub(r"\{([^},]*),[^}]*\}", r"\1", pattern)  # {md,csv,tex}: the first
    return any(REPO.glob(pattern.rstrip("/"))) if "*" in pattern else (REPO / pattern).exists()


def test_the_first_screen_says_what_xlt_is_the_two_commands_and_the_runs_own_timing():
    """A newcomer's first screen: the tool, `make tables` and `make test`, what you get and how
    long it takes on what machine (the run's own timing line); no commit hash, no date."""
    first = "\n".join(README.splitlines()[:40])
    assert first.startswith("# xlt") and "Snakemake" in first and "five papers" in first
    assert re.search(r"^make tables\b", first, re.M) and re.search(r"^make test\b", first, re.M)
    # the first result in minutes, with the time and machine it was measured on
    assert re.search(r"^make first\b", first, re.M)
    assert re.search(r"`make first: \d+:\d\d elapsed, \d+ of \d+ jobs done, on \d+ threads of [^`]+`", first)
    assert re.search(r"`make tables: \d+:\d\d elapsed, \d+ of \d+ jobs done, on \d+ threads of [^`]+`", first)
    assert "results/tables/" in first and "results/figures/" in first and "make help" in first
    assert not re.search(r"\b[0-9a-f]{7,40}\b", first), "a commit hash in the README's first screen"
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b|\bissue #\d+", first), "a date in the README's first screen"


def test_the_cluster_section_goes_prefetch_locks_plan_submit_resume():
    section = README.split("## Run it on a SLURM cluster", 1)[1].split("\n## ", 1)[0]
    steps = ["make prefetch", "make pins", "make plan", "--profile slurm all_tables", "resumes"]
    assert [section.index(s) for s in steps] == sorted(section.index(s) for s in steps)


def test_the_status_block_is_the_generated_one():
    assert current_block(README, "README.md") == block(), "regenerate with: python -m xlt.workflow.status --write README.md"
    assert README.count(BEGIN) == 1


def test_every_repository_path_the_readme_names_exists():
    paths = _paths(README)
    assert {"presets/tiny.yaml", "xlt/workflow/runsummary.py", "slurm/profile.yaml", "docs/papers.md"} <= paths
    assert [p for p in sorted(paths) if not _exists(p)] == []


def _snakemake_targets(text: str) -> set[str]:
    out = set()
    for span in _spans(text, indented_blocks=False):
        words = span.split("#")[0].split()
        for i, w in enumerate(words):
            if not w.endswith("snakemake"):
                continue
            in_files = False
            for prev, word in zip(words[i:], words[i + 1:]):
                if word.startswith("-"):
                    in_files = word in ("--configfile", "--configfiles")
                elif not in_files and prev not in VALUED and re.fullmatch(r"[a-z][a-z0-9_]*", word):
                    out.add(word)
    return out


def test_every_make_and_snakemake_target_the_readme_names_exists():
    made = {t for t, _ in make_targets()}
    rules = {r for path in [REPO / "Snakefile", *REPO.glob("rules/*.smk")]
             for r in re.findall(r"^rule (\w+):", path.read_text(), flags=re.M)}
    known = rules | set(P.target_rules(load_configs([REPO / "presets" / "tiny.yaml"])))
    named_make = set(re.findall(r"`make ([a-z][\w-]*)", README)) | set(re.findall(r"^make ([a-z][\w-]*)", README, flags=re.M))
    # `make <Snakemake target>` runs it (the Makefile's .DEFAULT): a make target or a workflow target
    assert {"tables", "help", "report", "test", "plan", "prefetch"} <= named_make and named_make <= made | known
    assert {"crossmulti_fig1", "crossmulti_table2"} <= named_make
    named = _snakemake_targets(README)
    assert {"all_tables", "crossmulti_table2", "underspec_all", "data_all"} <= named
    assert sorted(named - known) == []


def test_the_layout_names_every_rules_file():
    layout = README.split("## Layout", 1)[1].split("\n## ", 1)[0]
    # a paper's own rules file is rules/<slug>.smk there
    assert [p.stem for p in sorted(REPO.glob("rules/*.smk")) if p.stem not in P.PAPERS and not re.search(rf"\b{p.stem}\b", layout)] == []
    assert "rules/<slug>.smk" in layout


def test_what_points_into_the_readme_names_a_section_it_has():
    headings = set(re.findall(r"^#+ (.+)$", README, flags=re.M))
    profile = (REPO / "slurm" / "profile.yaml").read_text()
    cited = re.findall(r'README(?:\.md)?, "([^"]+)"', profile)
    assert cited and set(cited) <= headings


def test_the_adding_a_paper_example_names_a_published_table_and_its_entry():
    doc = (REPO / "docs" / "adding-a-paper.md").read_text()
    slug, table = re.search(r"For example, (\w+)'s Table (\d+)", doc).groups()
    assert f'+        Table("table{table}", table{table}_inputs, table{table},' in doc
    assert f"+def table{table}(spec: dict, inputs: list[str]):" in doc and f"+def table{table}_inputs(cfg: dict)" in doc
    assert (REPO / "xlt" / "papers" / slug / "published" / f"table{table}.csv").is_file()


def test_make_help_lists_every_make_target_with_a_line_and_the_workflow_targets(capsys):
    from xlt.workflow.help import main

    main()
    out = capsys.readouterr().out
    for target, description in make_targets():
        assert description, f"make target {target}: no `## …` line"
        assert f"make {target} " in out
    for rule, _ in target_rules():
        assert f"  {rule} " in out
    assert "all_tables" in out and "underspec_all" in out and "make plan " in out
    # every table and figure by its target name, in the paper's order (tables, then figures)
    items = {f"{slug}_{i}" for slug in P.PAPERS for i in P.item_targets(slug)}  # a table may have a name (versus_methods)
    named = [w for w in re.findall(r"\b([a-z]+_[a-z0-9_]+)\b", out) if w in items]
    for slug, paper in P.PAPERS.items():
        ids = [n.removeprefix(f"{slug}_") for n in named if n.startswith(f"{slug}_")]
        assert sorted(ids) == sorted([t.id for t in paper.tables] + [f.id for f in paper.figures])
        table_ids = [i for i in ids if i in {t.id for t in paper.tables}]
        assert ids[:len(table_ids)] == table_ids  # the tables first
        tables = [int(i.removeprefix("table")) for i in table_ids if i.startswith("table")]
        assert tables == sorted(tables)
    assert named.index("xmixup_table2") < named.index("xmixup_table11") < named.index("xmixup_table12") < \
        named.index("xmixup_fig1")
    assert named.index("underspec_fig2") < named.index("underspec_fig2_encoder") < named.index("underspec_fig10")
    assert named.index("crossmulti_fig1") < named.index("crossmulti_figa1")


def test_a_misspelled_target_gets_the_nearest_names():
    from xlt.workflow.help import check_targets, known_targets

    known = known_targets()
    assert {"crossmulti_fig1", "underspec_fig2_encoder", "xmixup_table17", "all_tables", "tables", "evaluate_on"} <= known
    assert check_targets(["crossmulti_fgi1"]) == ("error: no target 'crossmulti_fgi1'; did you mean crossmulti_fig1, "
                                                  "crossmulti_figa1, crossmulti_figa4? (`make help` lists every target)")
    assert check_targets(["tabels"]).startswith("error: no target 'tabels'; did you mean tables")
    assert check_targets(["crossmulti_fig1", "results/tables/x.md", "a.yaml"]) is None  # files: Snakemake's to judge
    assert check_targets(["zzzzqqq"]) == "error: no target 'zzzzqqq' (`make help` lists every target)"


def test_make_checks_a_target_before_snakemake_and_runs_a_figure_target():
    """`make <target>` (the Makefile's .DEFAULT): a typo stops before Snakemake reads the
    workflow; a figure's own target is one Snakemake knows (dry run: no job runs)."""
    import subprocess

    run = subprocess.run(["make", "-s", "crossmulti_fgi1"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and "Building DAG" not in run.stdout + run.stderr
    assert run.stderr.splitlines()[0].startswith("error: no target 'crossmulti_fgi1'; did you mean crossmulti_fig1")
    dry = subprocess.run(["make", "-s", "-n", "xmixup_fig4"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert "snakemake --cores all xmixup_fig4 --configfile presets/tiny.yaml" in dry.stdout


@pytest.mark.parametrize("argv, slip", [
    (["snakemake", "--configfile=presets/tiny.yaml", "my.yaml", "all_tables"], "my.yaml"),
    (["snakemake", "all_tables", "--configfile", "presets/tiny.yaml", "my.yaml"], None),
    (["snakemake", "--configfile", "presets/tiny.yaml", "my.yaml", "--cores", "2", "all_tables"], None),
    (["snakemake", "--configfile=s.yaml", "--cores", "1", "resources/raw/manifests/x.json"], None),
    (["snakemake", "--cores", "1", "resources/raw/manifests/x.json", "out.yaml"], "out.yaml"),  # no rule writes YAML
    (["snakemake", "--cores", "all", "my.yaml", "all_tables", "--configfile", "presets/tiny.yaml"], "my.yaml"),
    (["snakemake", "-n", "my.yaml", "all_tables"], "my.yaml"),
    (["snakemake", "--config", "encoder=tiny", "langs=a.yaml", "--profile", "p.yaml", "zero_shot"], None),
])
def test_a_config_file_among_the_targets_is_one_line(argv, slip):
    from xlt.process.cli import configfile_slip

    line = configfile_slip(argv)
    if slip is None:
        assert line is None
    else:
        assert line.startswith(f"error: {slip}: a config file given as a target; --configfile takes") and "\n" not in line


def test_a_target_among_the_config_files_is_one_line():
    from xlt.workflow.config import load_configs as load
    from xlt.errors import XltError

    with pytest.raises(XltError, match=r"^all_tables: no such config file \(a target\?\); --configfile takes every"):
        load([REPO / "presets" / "tiny.yaml", "all_tables"])


def test_status_names_tables_and_figures_in_ranges():
    from xlt.workflow.status import describe

    assert describe(["table1", "table2", "table3", "table5", "fig1", "figa1", "figa2", "figa3", "text_d12"]) == \
        "Tables 1–3, 5; Figures 1, A1–A3; text_d12"
    assert describe(["table12"]) == "Table 12" and describe([]) == "–"
