#!/usr/bin/env python
"""Fine-tune an encoder on one task and save the model: one job, whole, as one JSON argument
(xlt.stages.finetune_job.FinetuneJob, built by the `finetune` rule); a job of several seeds
trains them in one job (a pack)."""

from xlt.process.cli import ArgumentParser, json_arg, run, set_threads
from xlt.stages.finetune_job import FinetuneJob


def main():
    ap = ArgumentParser(description=__doc__)
    ap.add_argument("--job", type=json_arg, required=True, help="the job: xlt.stages.finetune_job.FinetuneJob as JSON")
    ap.add_argument("--kill-after-steps", type=int, default=None, help="testing aid: SIGKILL itself after N steps")
    a = ap.parse_args()
    job = FinetuneJob.from_dict(a.job, where="--job")
    set_threads(job.threads)
    # torch: imported once the threads are set
    from xlt.stages.finetune import finetune

    finetune(job, a.kill_after_steps)


run(main)
