"""underspec's jobs, run by `paper_job.py underspec <job>` (xlt.papers.job_cli reads each one's
options from its signature); imported only there: they load torch."""

from xlt.papers.underspec.grid import run_grid_job

JOBS = {
    # one interpolation grid scored on the source and target dev sets (rule underspec_grid)
    "grid": run_grid_job,
}
