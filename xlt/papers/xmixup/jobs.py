"""xmixup's jobs, run by `paper_job.py xmixup <job>` (xlt.papers.job_cli reads each one's
options from its signature); imported only there: they load torch."""

from xlt.papers.xmixup.centroids import centroids_job
from xlt.papers.xmixup.cka import cka_job

JOBS = {
    # linear CKA between English and each other language of one model, and their 2-D PCA
    # coordinates (Tables 2 and 7, Figures 1 and 3; rule xmixup_cka)
    "cka": cka_job,
    # Figure 4: one model's language centroids on a test set (rule xmixup_centroids)
    "centroids": centroids_job,
}
