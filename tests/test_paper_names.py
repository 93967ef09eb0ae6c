"""A paper's name appears outside its own files only in comments (issue 41's acceptance): every
tracked file but the papers' folders (xlt/papers/), their rules files (rules/<slug>.smk), tests,
docs and Markdown pages may name a registered paper (xlt.papers.PAPERS) in a comment
(`#`, and a Python docstring) and nowhere else, so that what one paper alone reads lives beside it."""

import ast
import io
import re
import subprocess
import tokenize
from pathlib import Path

import pytest

from tests.conftest import REPO
from xlt.papers import PAPERS

OUT_OF_SCOPE = ("xlt/papers/", "tests/", "docs/")
PYTHON_LIKE = {".py", ".smk"}  # Python's tokens (Snakemake's rules files lex as Python)
HASH_COMMENTS = {".yaml", ".yml", ".toml", ".cfg", ".txt", ".sh"}


def names_pattern(names) -> re.Pattern:
    """A whole-word match of any of `names`, as `grep -w` reads words (letters, digits, _); a path
    into a paper's folder counts too (the GPU script finds the papers' sections by a glob)."""
    return re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(map(re.escape, names)) + r")(?![A-Za-z0-9_])")


def in_scope(path: str, slugs) -> bool:
    own_rules = {f"rules/{slug}.smk" for slug in slugs}
    return not (path.startswith(OUT_OF_SCOPE) or path in own_rules or path.endswith(".md"))


def _docstring_lines(text: str) -> set[int]:
    """The lines of a module's, class's or function's docstring."""
    lines = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def python_hits(text: str, pattern: re.Pattern, docstrings: bool = True) -> list[tuple[int, str]]:
    """(line, token) of every token naming a paper that is no comment (nor a docstring)."""
    allowed = _docstring_lines(text) if docstrings else set()
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and tok.start[0] in allowed):
            continue
        if pattern.search(tok.string):
            out.append((tok.start[0], tok.string))
    return out


def hash_comment_hits(text: str, pattern: re.Pattern, anywhere: bool = False) -> list[tuple[int, str]]:
    """(line, code) of every line naming a paper outside its `#` comment: YAML's and a shell's
    comment starts at a `#` after a space or at the line's start; Make's at any `#` (`anywhere`)."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        code = re.split(r"#" if anywhere else r"(?:^|(?<=\s))#", line, maxsplit=1)[0]
        if pattern.search(code):
            out.append((number, code.strip()))
    return out


def hits(path: str, text: str, pattern: re.Pattern) -> list[tuple[int, str]]:
    suffix, name = Path(path).suffix, Path(path).name
    if suffix == ".py":
        return python_hits(text, pattern)
    if suffix in PYTHON_LIKE or name == "Snakefile":
        return python_hits(text, pattern, docstrings=False)
    if name == "Makefile":
        return hash_comment_hits(text, pattern, anywhere=True)
    if suffix in HASH_COMMENTS:
        return hash_comment_hits(text, pattern)
    return [(number, line.strip()) for number, line in enumerate(text.splitlines(), 1) if pattern.search(line)]


def tracked_files() -> list[str]:
    """The repository's files (tracked, and new ones not ignored)."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    return [p for p in out.splitlines() if (REPO / p).is_file()]


def test_a_papers_name_outside_its_files_is_only_in_comments():
    pattern = names_pattern(PAPERS)
    found = []
    for path in tracked_files():
        if not in_scope(path, PAPERS):
            continue
        try:
            text = (REPO / path).read_text(encoding="utf-8")
        except UnicodeDecodeError:  # a binary file (a figure): no code
            continue
        found += [f"{path}:{line}: {code}" for line, code in hits(path, text, pattern)]
    assert not found, "a paper named outside its folder, not in a comment:\n" + "\n".join(found)


@pytest.mark.parametrize("path,text,expected", [
    ("x.py", '"""The adjust paper\'s test."""\nX = 1  # as adjust does\n', []),
    ("x.py", 'def f():\n    """adjust: a docstring."""\n    return "adjust"\n', [(3, '"adjust"')]),
    ("x.py", "from xlt.papers import adjust\n", [(1, "adjust")]),
    ("x.py", "adjusted = adjust_config = 1\n", []),  # words, not the name
    ("rules/align.smk", '# adjust\nrule a:\n    """adjust"""\n', [(3, '"""adjust"""')]),  # no docstrings in rules
    ("config.yaml", "a: adjust  # adjust\n# adjust\nb: 'x#adjust'\n", [(1, "a: adjust"), (3, "b: 'x#adjust'")]),
    ("Makefile", "x: # adjust\n\techo adjust\n", [(2, "echo adjust")]),
    ("report/workflow.rst", "adjust\n", [(1, "adjust")]),
    ("run.sh", "python xlt/papers/adjust/benchmarks/x.py\n", [(1, "python xlt/papers/adjust/benchmarks/x.py")]),
    ("x.py", "import xlt.papers.adjust.plan\n", [(1, "adjust")]),
])
def test_what_counts_as_a_comment(path, text, expected):
    assert hits(path, text, names_pattern(["adjust"])) == expected


def test_the_scope_leaves_out_the_papers_own_files():
    slugs = ["adjust", "toy"]
    assert not in_scope("xlt/papers/adjust/plan.py", slugs) and not in_scope("rules/toy.smk", slugs)
    assert not in_scope("README.md", slugs) and not in_scope("tests/test_x.py", slugs)
    assert in_scope("rules/align.smk", slugs) and in_scope("rules/dlfa.smk", slugs) and in_scope("config.yaml", slugs)
