"""A paper's job on the command line, its options read from the job function's signature:

    paper_job.py <slug> <job> --an-argument value … [--threads N]

A paper declares its jobs in `xlt/papers/<slug>/jobs.py` as `JOBS = {name: function}` and names
that module on its `Paper(jobs=...)`; the rule's shell line is the only other place a job's
arguments are written. Each parameter `some_name` is the option `--some-name`, required unless it
has a default or its type admits None. Types read:

    str, pathlib.Path, int, float     one value, converted
    bool                              --x / --no-x
    Literal["a", "b"]                 one of these values
    list[T]                           one or more values (none or more with a default)
    dict, dict[K, V]                  a JSON object (NaN and infinities refused)
    T | None, str | Path              T; the str where both are allowed
    Annotated[T, "what it is"]        T, with that text in --help

A signature with another type is the job author's error (TypeError, found by the tests before
any rule runs); a user's wrong paper, job or option is one line naming the allowed values.
"""

from __future__ import annotations

import argparse
import difflib
import inspect
import types
import typing
from collections.abc import Callable
from importlib import import_module
from pathlib import Path

from xlt.process.cli import ArgumentParser, json_arg, set_threads
from xlt.papers import PAPERS

SCALARS = (str, Path, int, float)
# the runner's own option, given to every job: torch's intra-op threads (the rule's threads)
THREADS = "threads"


def _json_object(text: str) -> dict:
    value = json_arg(text)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {type(value).__name__}")
    return value


def _unwrap(hint, where: str):
    """(the type to convert to, whether None is allowed)."""
    if typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        members = [m for m in typing.get_args(hint) if m is not type(None)]
        optional = len(members) < len(typing.get_args(hint))
        if set(members) == {str, Path}:
            return str, optional
        if len(members) == 1:
            return _unwrap(members[0], where)[0], optional
        raise TypeError(f"{where}: a union of {', '.join(map(str, members))}; a job's argument has one type")
    return hint, False


def _option(param: inspect.Parameter, hint, where: str) -> tuple[str, dict]:
    """The option `--name` of one parameter and argparse's keywords for it."""
    if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
        raise TypeError(f"{where}: *args, **kwargs and positional-only parameters have no option")
    if hint is inspect.Parameter.empty:
        raise TypeError(f"{where}: no type hint; a job's option is read from it")
    kind, optional = _unwrap(hint, where)
    said = [m for m in getattr(hint, "__metadata__", ()) if isinstance(m, str)]  # Annotated's text
    has_default = param.default is not param.empty
    kw: dict = {"dest": param.name, "required": not (has_default or optional)}
    if has_default or optional:
        kw["default"] = param.default if has_default else None
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is bool:
        kw.update(action=argparse.BooleanOptionalAction)
        what = "flag"
    elif kind in SCALARS:
        kw.update(type=kind)
        what = kind.__name__
    elif origin is typing.Literal:
        if not all(isinstance(a, str) for a in args):
            raise TypeError(f"{where}: a Literal of other than strings")
        kw.update(choices=list(args))
        what = "one of " + ", ".join(args)
    elif kind is list or origin is list:
        item = args[0] if args else str
        if item not in SCALARS:
            raise TypeError(f"{where}: a list of {item}; a list option holds str, Path, int or float")
        kw.update(type=item, nargs="*" if has_default else "+")
        what = f"{item.__name__} …"
    elif kind is dict or origin is dict:
        kw.update(type=_json_object, metavar="JSON")
        what = "a JSON object"
    else:
        raise TypeError(f"{where}: type {kind} has no option; allowed: str, Path, int, float, bool, Literal, "
                        "list[...], dict, and these or None")
    if not kw["required"]:
        what += f"; default {kw['default']}"
    kw["help"] = "; ".join([*said, what])
    return "--" + param.name.replace("_", "-"), kw


def job_parser(fn: Callable, prog: str) -> ArgumentParser:
    """The command line of the job `fn`: one option per parameter, and --threads."""
    hints = typing.get_type_hints(fn, include_extras=True)
    doc = inspect.getdoc(fn) or ""
    ap = ArgumentParser(prog=prog, description=doc.split("\n\n")[0], allow_abbrev=False)  # a rule spells options out
    for name, param in inspect.signature(fn).parameters.items():
        if name == THREADS:
            raise TypeError(f"{fn.__module__}.{fn.__qualname__}: argument `{THREADS}` is the runner's own")
        flag, kw = _option(param, hints.get(name, inspect.Parameter.empty), f"{fn.__module__}.{fn.__qualname__}({name})")
        ap.add_argument(flag, **kw)
    ap.add_argument("--threads", type=int, default=None, help="torch's intra-op threads; default: torch's")
    return ap


def parse_job_args(fn: Callable, argv: list[str], prog: str) -> tuple[dict, int | None]:
    """(the keyword arguments of `fn`, the threads) from `argv`; a usage error is one line, exit 2."""
    ap = job_parser(fn, prog)
    args, extra = ap.parse_known_args(argv)
    if extra:
        takes = [a.option_strings[0] for a in ap._actions if a.option_strings and a.dest != "help"]
        ap.error(f"unrecognized arguments: {' '.join(extra)}; allowed: {', '.join(takes)}")
    kwargs = vars(args)
    return kwargs, kwargs.pop(THREADS)


def paper_jobs(paper) -> dict[str, Callable]:
    """The jobs a paper declares (its `Paper.jobs` module's JOBS); this imports what they need."""
    return dict(import_module(paper.jobs).JOBS) if paper.jobs else {}


def _choose(ap: ArgumentParser, what: str, name: str, allowed: list[str]) -> str:
    if name in allowed:
        return name
    close = difflib.get_close_matches(name, allowed, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    ap.error(f"unknown {what} {name!r}; allowed: {', '.join(allowed) or '(none)'}{hint}")


def _summary(fn: Callable) -> str:
    """The first sentence of a job's docstring."""
    return " ".join((inspect.getdoc(fn) or "").split("\n\n")[0].split()).split(". ")[0]


def run_paper_job(argv: list[str], prog: str = "paper_job.py"):
    """Run `<slug> <job> --options…`: what the job function returns."""
    ap = ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0],
                        usage=f"{prog} <paper> <job> --option value … [--threads N]")
    with_jobs = [slug for slug, paper in PAPERS.items() if paper.jobs]
    if not argv or argv[0] in ("-h", "--help"):
        ap.print_help()
        print("\npapers with jobs: " + ", ".join(with_jobs) + f"\na job's options: {prog} <paper> <job> --help")
        return None
    slug = _choose(ap, "paper with jobs", argv[0], with_jobs)
    jobs = paper_jobs(PAPERS[slug])
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(f"jobs of paper {slug} ({PAPERS[slug].jobs}):")
        for name, fn in jobs.items():
            print(f"  {name:<14} {_summary(fn)}")
        return None
    name = _choose(ap, f"job of paper {slug}", argv[1], list(jobs))
    kwargs, threads = parse_job_args(jobs[name], argv[2:], f"{prog} {slug} {name}")
    set_threads(threads)
    return jobs[name](**kwargs)
