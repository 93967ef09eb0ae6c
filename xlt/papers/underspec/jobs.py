"""underspec's jobs, run by `paper_job.py underspec <job>` (xlt.papers.job_cli reads each one's
options from its signature); imported only there: they load torch."""

from xlt.papers.underspec.grid import run_grid_job

JOBS = {
    # every interpolation grid of one setting scored on the source and target dev sets
    # (rules underspec_grid and underspec_grid_2d)
    "grid": run_grid_job,
}
