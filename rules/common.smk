# Validate the config (one line naming the key and the allowed values) and expose the
# target logic of xlt.dag.targets as `T`, what the workflow derives from the papers
# (xlt.workflow.paper_targets) as `P` and the registry (xlt.papers: `papers.<slug>` is a
# paper's plugin, which its rules/<slug>.smk reads); on failure, repeat the jobs' own error lines.
import json
import os
import sys
import time
from pathlib import Path

# `report` at a line start is a Snakemake directive, hence the alias
from snakemake.io import report as report_flag
from snakemake.logging import DefaultFormatter
from snakemake.logging import logger as snakemake_logger

from xlt.workflow import packs as PACKS
from xlt.workflow import footprint as FOOT
from xlt.workflow import paper_targets as P
from xlt import papers
from xlt import fidelity as FIDELITY
from xlt.dag import resources as R
from xlt.dag import targets as T
from xlt import zeroshot as Z
from xlt.process.cli import configfile_slip, failure_lines
from xlt.workflow.config import check_workflow_config, located, merged, workflow_sources
from xlt.errors import XltError
from xlt.workflow.plan import plan_lines, start_errors
from xlt.workflow.progress import Pace, prices, progress_note
from xlt.workflow.report import rst_caption
from xlt.workflow.shown import after_success

# when this run started: a job log older than this is an earlier run's (onerror quotes none of it)
RUN_STARTED = time.time()

# `--configfile=presets/tiny.yaml my.yaml all_tables` reads my.yaml as a target: say so in one line.
if slip := configfile_slip(sys.argv):
    print(slip, file=sys.stderr)
    sys.exit(1)

# Merge order: each paper's config.yaml (xlt/papers/<slug>/), the Snakefile's configfile, each
# --configfile (one saying `paper_preset: <p>` after the papers' presets/<p>.yaml), --config.
# Snakemake merged the files without the papers' own: the config is rebuilt from the sources.
_cli = [str(f) for f in workflow.overwrite_configfiles]
_files = [str(f) for f in workflow.configfiles if str(f) not in _cli] + _cli
_sources = []
try:
    _sources = workflow_sources(_files, workflow.config_settings.config)
    _resolved = merged(_sources)
    config.clear()
    config.update(_resolved)
    check_workflow_config(config)
    # the zero_shot target's encoder given as a directory or a Hub id: an encoders entry from here on
    config["encoders"].update(Z.declared_encoders(config))
except XltError as e:
    # One line naming the file that set the key and exit 1, before the DAG exists (a
    # WorkflowError would add Snakemake's frame lines around the message).
    print(f"error: invalid configuration: {located(e, _sources)}", file=sys.stderr)
    sys.exit(1)

RESULTS = config["results"]


# Snakemake's progress line `N of M steps (P%) done` with the time left (xlt.workflow.progress): each
# job priced by its rule (a fine-tune by its task and epochs), scaled by this machine's pace on the
# jobs done; on the console and in .snakemake/log (xlt.workflow.runsummary reads its start).
class TimeLeftFormatter(DefaultFormatter):
    started = time.monotonic()
    pace = None  # a Pace of a local run's jobs, set at onstart; one for every handler's formatter

    def format_job_info(self, msg):
        if self.pace is not None and "jobid" in msg:
            self.pace.started(msg["jobid"], time.monotonic())
        return super().format_job_info(msg)

    def format_job_finished(self, msg):
        if self.pace is not None and "job_id" in msg:
            self.pace.finished(msg["job_id"], time.monotonic())
        return super().format_job_finished(msg)

    def format_progress(self, msg):
        now = time.monotonic()
        if self.pace is not None and self.pace.speed() is not None:
            note = self.pace.note(now)
        else:
            note = progress_note(msg["done"], msg["total"], now - self.started)
        return super().format_progress(msg) + (f", {note}" if note else "")


def job_pace(workflow):
    """The Pace of a local run's jobs; None (the mean time per step) elsewhere or if the DAG can't be read."""
    try:
        jobs = list(workflow.dag.needrun_jobs())
        return Pace(prices(jobs), workflow.cores, {j.jobid: j.threads for j in jobs})
    except Exception:  # the note is a courtesy; the run goes on
        return None


onstart:
    TimeLeftFormatter.started = time.monotonic()  # the jobs' start, not the DAG's
    # a cluster run's main process (not a job on a node, not a local run)
    if not workflow.local_exec and not workflow.remote_exec:
        print(cluster_plan(workflow, config), file=sys.stderr)
        # Slurm, account, partitions, disk: one line each, and no job submitted
        if errors := start_errors(
            config, needrun_jobs(workflow), os.environ, Path.cwd()
        ):
            for line in errors:
                print(f"error: {line}", file=sys.stderr)
            sys.exit(1)
    elif workflow.local_exec:
        TimeLeftFormatter.pace = job_pace(workflow)
    for _handler in snakemake_logger.handlers:
        if type(_handler.formatter) is DefaultFormatter:
            _handler.setFormatter(
                TimeLeftFormatter(
                    _handler.formatter.quiet, _handler.formatter.show_failed_logs
                )
            )


# (rule, outputs) of every job this run starts
def needrun_jobs(workflow):
    return [
        (j.rule.name, [str(f) for f in j.output]) for j in workflow.dag.needrun_jobs()
    ]


# A cluster run (`--profile slurm`) starts with the plan `make plan` prints (xlt.workflow.plan): jobs
# and GPU-hours per stage, what is missing. Never in the way of the run: a failure is one line.
def cluster_plan(workflow, config):
    try:
        jobs = needrun_jobs(workflow)
        target = " ".join(sorted(map(str, workflow.dag_settings.targets)))
        target = target or "all_tables"  # the Snakefile's first rule
        files = [str(f) for f in workflow.overwrite_configfiles]
        lines = plan_lines(config, jobs, target, files, Path.cwd(), os.environ, True)
        return "\n".join(lines)
    except Exception as e:  # the plan is a courtesy; the run goes on
        return f"xlt: no plan ({type(e).__name__}: {e})"


# A table or zero-shot target run by snakemake itself ends with the table (its first rows) and
# its path (xlt.workflow.shown); `make <target>` prints it after Snakemake (also when nothing
# ran), `make tables` lists every path itself.
onsuccess:
    if not os.environ.get("XLT_RUN_SUMMARY") and not os.environ.get("XLT_SHOWN"):
        if _shown := after_success(
            config, sorted(map(str, workflow.dag_settings.targets))
        ):
            print(_shown)


# A failed job's own one-line error (file and line, or key) is in its log; repeat it last, and
# say whether a rerun resumes or what to mend first (under `make tables`, xlt.workflow.runsummary
# says it after the run).
onerror:
    if not os.environ.get("XLT_RUN_SUMMARY"):
        print("\n".join(failure_lines(log, RUN_STARTED)), file=sys.stderr)


envvars:
    "PATH",


# Jobs call the scripts of workflow_scripts/ by name (found from the Snakefile, so
# `--directory elsewhere` works) and their `#!/usr/bin/env python` is the interpreter running
# Snakemake (the project's venv). --use-conda activates its env later, which then wins.
os.environ["PATH"] = os.pathsep.join(
    [
        os.path.join(workflow.basedir, "workflow_scripts"),
        os.path.dirname(sys.executable),
        os.environ.get("PATH", ""),
    ]
)
ENV = "../envs/xlt.yaml"

# Jobs a remote executor runs (the SLURM profile: compute nodes, often without internet) run
# with the Hub offline: they read only local encoder snapshots and downloaded sources. The
# downloads (download, download_encoder; `prefetch` runs them all) are local rules: they run
# where Snakemake runs, with its network, never here. The SLURM plugin submits with
# --export=ALL and refuses --export in slurm_extra, so the job sets this itself.
if workflow.remote_exec:
    os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")


wildcard_constraints:
    **P.wildcard_constraints(),


def as_json(obj):
    return json.dumps(obj, sort_keys=True)


# What `snakemake --report` shows of a table or figure ({paper}/{table|figure} outputs, by
# format): the readable forms, each with the caption template report/<kind>.rst, which shows
# the rule's params.caption (from the plugin registry).
REPORTED = ("md", "csv", "png")


def reported(outputs, kind):
    item = "{%s}" % kind
    return {
        ext: (
            report_flag(
                path,
                caption=f"../report/{kind}.rst",
                category="{paper}",
                subcategory=f"{kind}s",
                labels={kind: item, "format": ext},
            )
            if ext in REPORTED
            else path
        )
        for ext, path in outputs.items()
    }
