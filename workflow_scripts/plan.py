#!/usr/bin/env python
"""`make plan`: the plan of a run (xlt.workflow.plan) from Snakemake's DAG, built in this process through
its API (no job printed: a few seconds for config.yaml's ~3,300 jobs), nothing run.

    plan.py [--target all_tables] [--configfile config.yaml …] [--directory .] [--gpus 8]
"""

import contextlib
import io
import os
import sys
from pathlib import Path

from xlt.process.cli import ArgumentParser, run

REPO = Path(__file__).resolve().parent.parent


def dag_jobs(configfiles: list[str], target: str, workdir: Path) -> tuple[dict, list[tuple[str, list[str]]]]:
    """(the workflow's config, (rule, outputs) of every job `target` needs run in `workdir`).
    Snakemake's own output is kept back and shown only when it fails (a config error's line)."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.enums import Quietness
    from snakemake.settings.types import ConfigSettings, DAGSettings, OutputSettings, ResourceSettings

    from xlt.errors import XltError

    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said), contextlib.redirect_stdout(said):
            # quiet = rules + progress: a dry run stops once the DAG is built (no job printed)
            with SnakemakeApi(OutputSettings(quiet={Quietness.RULES, Quietness.PROGRESS})) as api:
                wf = api.workflow(resource_settings=ResourceSettings(cores=1),
                                  config_settings=ConfigSettings(configfiles=[Path(c).resolve() for c in configfiles]),
                                  snakefile=REPO / "Snakefile", workdir=workdir.resolve())  # fmt: skip
                wf.dag(DAGSettings(targets={target})).execute_workflow(executor="dryrun")
                workflow = wf._workflow  # the API returns nothing of the DAG: its workflow holds it
                jobs = [(job.rule.name, [str(f) for f in job.output]) for job in workflow.dag.needrun_jobs()]
                return dict(workflow.config), jobs
    except (Exception, SystemExit) as e:
        lines = [line for line in said.getvalue().splitlines() if line.startswith("error")] or \
            said.getvalue().strip().splitlines()[-3:] or [str(e)]
        raise XltError(" ".join(lines[-1].removeprefix("error: ").split())) from None


def main():
    ap = ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="all_tables")
    ap.add_argument("--configfile", nargs="*", default=[str(REPO / "config.yaml")])
    ap.add_argument("--directory", default=".", help="the run's working directory (what is done there is not planned)")
    ap.add_argument("--gpus", type=int, default=8, help="the wall-clock of the run on this many GPUs (default 8)")
    a = ap.parse_args()
    from xlt.workflow.help import check_targets

    if line := check_targets([a.target]):
        print(line, file=sys.stderr)
        sys.exit(1)
    from xlt.workflow.config import load_configs
    from xlt.workflow.plan import plan_lines

    load_configs(a.configfile)  # a config file's own error (file and line) before Snakemake reads it
    cfg, jobs = dag_jobs(a.configfile, a.target, Path(a.directory))
    print("\n".join(plan_lines(cfg, jobs, a.target, a.configfile, Path(a.directory), os.environ, gpus=a.gpus)))


if __name__ == "__main__":  # tests import dag_jobs
    run(main)
