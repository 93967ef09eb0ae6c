"""How workflow scripts run: one line `error: …` and exit 1 on a user-facing failure."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from xlt.errors import XltError
from xlt.process.zygote import delegate


def quiet_libraries() -> None:
    """Keep job logs readable: no per-load reports or shard progress bars from transformers."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        # deferred: transformers (~3 s to import) only in the jobs that call this
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except ImportError:
        pass


def set_threads(n: int | None) -> None:
    if n:
        # deferred: loads torch only when this runs
        import torch

        torch.set_num_threads(int(n))


def run(main: Callable[[], object]) -> None:
    if os.environ.get("XLT_ZYGOTE"):  # a fork server with the heavy imports done (xlt/process/zygote.py)
        code = delegate(os.environ["XLT_ZYGOTE"])
        if code is not None:
            sys.exit(code)
    quiet_libraries()
    try:
        main()
    except XltError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
    except OSError as e:
        # A file that is missing or unwritable (a full disk included) outside the readers'
        # own checks: still one line naming it.
        if e.filename is None:
            raise
        print(f"error: {e.filename}: {e.strerror}", file=sys.stderr)
        sys.exit(1)


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are one line, `error: <script>: <what>` (exit 2)."""

    def error(self, message):
        print(f"error: {self.prog}: {message}", file=sys.stderr)
        sys.exit(2)


def _no_constant(name: str):
    raise ValueError(f"{name} is not a finite number")


def json_arg(text: str):
    """A JSON argument (a config block the rule passes); NaN and Infinity refused. `-`: read from
    standard input (a rule pipes a text that may pass the kernel's 128 KiB limit on one argument)."""
    if text == "-":
        text = sys.stdin.read()
    try:
        return json.loads(text, parse_constant=_no_constant)
    except ValueError as e:  # JSONDecodeError is a ValueError
        raise argparse.ArgumentTypeError(f"invalid JSON ({e})") from None


CONFIG_SUFFIXES = (".yaml", ".yml", ".json")
LAYERING = ("--configfile takes every following word as a config file: write the targets first and the "
            "files last, e.g. `snakemake --cores all all_tables --configfile presets/tiny.yaml my.yaml`")


# Snakemake options that read every following word up to the next option (a target among them
# is theirs), and those that read exactly one; any other option is a flag.
LIST_OPTIONS = {"--configfile", "--configfiles", "--config", "-C", "--forcerun", "-R", "--until", "-U",
                "--omit-from", "-O", "--allowed-rules", "--forcerun-all", "--batch"}
VALUED_OPTIONS = {"--cores", "-c", "-j", "--jobs", "--profile", "--workflow-profile", "--report", "--directory", "-d",
                  "--snakefile", "-s", "--executor", "-e", "--latency-wait", "-w", "--retries", "--resources",
                  "--set-threads", "--default-resources", "--rerun-triggers", "--local-cores", "--max-jobs-per-second",
                  "--keep-storage-local-copies", "--software-deployment-method", "--sdm", "--quiet", "-q"}


def configfile_slip(argv: list[str]) -> str | None:
    """The one-line error of config files that Snakemake's command line `argv` reads as targets:
    a YAML file where a target goes, e.g. right after `--configfile=a.yaml` (the `=` form takes
    one file: `--configfile=a.yaml my.yaml all`) or before the option (`my.yaml all --configfile
    a.yaml`); Snakemake would say only that no rule produces it. Other targets, JSON outputs
    included, are left alone."""
    files, takes = [], 0  # takes: words the last option still reads (-1: every one up to the next option)
    for word in argv[1:]:
        if word.startswith("-") and len(word) > 1:
            name, eq, _ = word.partition("=")
            takes = 0 if eq else -1 if name in LIST_OPTIONS else 1 if name in VALUED_OPTIONS else 0
        elif takes:
            takes -= takes > 0
        elif word.endswith((".yaml", ".yml")):
            files.append(word)
    if not files:
        return None
    return f"error: {', '.join(map(str, files))}: a config file given as a target; {LAYERING}"


def snakemake_configfiles(command: list[str]) -> list[str]:
    """The files of `--configfile A B …` / `--configfile=A` in a Snakemake command line
    (`--configfiles` and abbreviations as argparse takes them), in order."""
    files, taking = [], False
    for arg in command:
        opt, eq, value = arg.partition("=")
        if len(opt) > len("--config") and "--configfiles".startswith(opt):
            taking = not eq
            files += [value] if eq else []
        elif taking and not arg.startswith("-"):
            files.append(arg)
        else:
            taking = False
    return files


def not_a_config_file(path) -> str | None:
    """The hint for a target read as a config file (`--configfile a.yaml all_tables`): a missing
    'file' without a config file's suffix."""
    if Path(path).exists() or str(path).endswith(CONFIG_SUFFIXES):
        return None
    return f"{path}: no such config file (a target?); {LAYERING}"


RERUN = ("Rerun the same command to finish: what was made is kept, and an interrupted training job "
         "resumes from its last checkpoint.")
# After a failure no rerun can mend as it stands (a bad file, a setting, a missing download).
FIX_FIRST = ("Rerunning as it stands fails the same way: first do what each error line above says; then rerun "
             "the same command (what was made is kept).")
_FAILED_RULE = re.compile(r"^Error in rule (\S+):")
_FIELD = re.compile(r"^\s+(output|log): (.+?)(?: \(check log file\(s\) for error details\))?$")
# An error line a rerun can get past: the job was stopped (a signal, the scheduler's limit; it saved
# a checkpoint), ran out of memory, or the network timed out. Any other `error:` line is the
# project's own check, which names what to mend: rerunning unchanged fails the same way.
_TRANSIENT = re.compile(r"rerun to resume|checkpoint saved|timed out|out of memory|Temporary failure"
                        r"|connection (?:reset|aborted)", re.IGNORECASE)
_AT_LINE = re.compile(r"^(\S+?):(\d+): ")  # a DataFormatError's `<file>:<line>: `
STOPPED = "stopped without an error line in its log (killed: out of memory, a time limit or an interrupt)"


@dataclass
class FailedJob:
    rule: str
    outputs: list[str] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    error: str | None = None  # the last `error:` line of its log (of this run), without `error: `

    @property
    def transient(self) -> bool:
        """Whether rerunning the same command can get past this failure (nothing to mend first)."""
        return self.error is None or bool(_TRANSIENT.search(self.error))

    @property
    def fix(self) -> str | None:
        """What to do where the error line names a file's line (malformed data) without saying."""
        m = _AT_LINE.match(self.error or "")
        if m is None or "; " in self.error[m.end():]:  # the message already says what to do
            return None
        return f"mend line {m[2]} of {m[1]} (or, if downloaded, remove it to fetch it again), then rerun"

    def line(self) -> str:
        where = f" (log: {', '.join(self.logs)})" if self.logs else ""
        fix = f"; {self.fix}" if self.fix else ""
        return f"error: rule {self.rule}: {self.error or STOPPED}{fix}{where}"


def next_step(jobs: list[FailedJob], command: str | None = None) -> str:
    """The last line after a failed run: rerun (every failure transient), or mend first."""
    same = f"the same command ({command})" if command else "the same command"
    if all(j.transient for j in jobs):
        return RERUN.replace("the same command", same)
    return FIX_FIRST.replace("the same command", same)


def error_lines(text: str) -> list[str]:
    """The `error:` lines of a job's log, also one written after a progress bar's `\\r` redraws
    on the same line (the log of an older run)."""
    return [seg for line in text.splitlines() for seg in line.split("\r")[-1:] if seg.startswith("error: ")]


def _read(paths) -> str:
    if isinstance(paths, (str, Path)):
        paths = [paths]
    return "\n".join(Path(p).read_text(encoding="utf-8", errors="replace") for p in paths or [] if p and Path(p).is_file())


def failed_jobs(snakemake_logs, since: float | None = None) -> list[FailedJob]:
    """Each `Error in rule …` block of Snakemake's log(s), with the job's own last error line.
    `since` (seconds since the epoch): the run's start; a job log not written since is an older
    run's (the job failed before writing its own), and its error is not this run's."""
    jobs: list[FailedJob] = []
    for line in _read(snakemake_logs).splitlines():
        if m := _FAILED_RULE.match(line):
            jobs.append(FailedJob(m.group(1)))
        elif jobs and (m := _FIELD.match(line)):
            getattr(jobs[-1], m.group(1) + "s").extend(m.group(2).split(", "))
    for job in jobs:
        errors = [e for log in job.logs if Path(log).is_file() and (since is None or Path(log).stat().st_mtime >= since - 1)
                  for e in error_lines(Path(log).read_text(encoding="utf-8", errors="replace"))]
        job.error = errors[-1][len("error: "):] if errors else None
    return jobs


def failed_job_errors(snakemake_logs, since: float | None = None) -> list[str]:
    """The `error:` line each failed job wrote to its log (of this run), as `error: rule <rule>:
    <line> (log: <path>)`, read from Snakemake's own log file(s) of the run."""
    return list(dict.fromkeys(j.line() for j in failed_jobs(snakemake_logs, since) if j.error))


def failure_lines(snakemake_logs, since: float | None = None) -> list[str]:
    """What a failed run prints last (the workflow's `onerror`): each failed job's line, naming
    the file and line or key to mend, and then whether to rerun or to mend first."""
    jobs = failed_jobs(snakemake_logs, since)
    return [*dict.fromkeys(j.line() for j in jobs), next_step(jobs)]
