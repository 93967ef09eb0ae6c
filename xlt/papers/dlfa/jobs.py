"""dlfa's jobs, run by `paper_job.py dlfa <job>` (xlt.papers.job_cli reads each one's options
from its signature); imported only there: they load torch."""

from xlt.papers.dlfa.similarity import run_similarity_job

JOBS = {
    # Table VI: cosine similarity of EN and the other languages' parallel XNLI test sentences,
    # per model (rule dlfa_similarity)
    "similarity": run_similarity_job,
}
