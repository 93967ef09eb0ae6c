#!/usr/bin/env python
"""Run one job a paper declares (xlt/papers/<slug>/jobs.py), its options read from the job
function's signature (xlt.papers.job_cli):

    paper_job.py <paper> <job> --option value … [--threads N]
    paper_job.py <paper> --help        its jobs
    paper_job.py <paper> <job> --help  a job's options
"""

import sys

from xlt.process.cli import run


def main():
    # imported here, not above: under the fork server (xlt.process.cli.run) the job runs there, with the
    # registry and torch already imported
    from xlt.papers.job_cli import run_paper_job

    run_paper_job(sys.argv[1:])


run(main)
