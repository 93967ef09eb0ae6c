#!/usr/bin/env python
"""Fine-tune an encoder on one task (training languages from the recipe) and save the model."""

from xlt.cli import ArgumentParser, json_arg, run, set_threads


def main():
    ap = ArgumentParser(description=__doc__)
    ap.add_argument("--task", required=True)
    ap.add_argument("--encoder", required=True, help="Hub id or local directory")
    ap.add_argument("--revision", default=None)
    ap.add_argument("--data", required=True, help="the task's normalised data folder")
    ap.add_argument("--train-langs", nargs="+", required=True)
    ap.add_argument("--hparams", type=json_arg, required=True)
    ap.add_argument("--aux", type=json_arg, default=[],
                    help='auxiliary task streams: [{"task", "data", "weight", "batch_size"?}] (multi-task learning)')
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--checkpoint-dir", required=True)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--collapse-retries", type=int, default=0,
                    help="retrain a collapsed run with the next seeds, up to N times")
    ap.add_argument("--collapse-rule", type=json_arg, default={},
                    help='what calls a run collapsed: {"max_share", "min_gain"} (config collapse:; xlt.metrics.COLLAPSE_RULE)')
    ap.add_argument("--oracle-langs", nargs="*", default=[],
                    help="also select per target language on its own dev set (oracle.json beside the model)")
    ap.add_argument("--tensorboard-dir", default=None, help="each epoch's scalars as TensorBoard events here")
    ap.add_argument("--kill-after-steps", type=int, default=None, help="testing aid: SIGKILL itself after N steps")
    a = ap.parse_args()
    set_threads(a.threads)
    from xlt.finetune import finetune

    finetune(a.task, a.encoder, a.revision, a.data, a.train_langs, a.hparams, a.seed, a.out, a.checkpoint_dir, a.kill_after_steps,
             a.collapse_retries, a.aux, a.collapse_rule, a.oracle_langs, a.tensorboard_dir)


run(main)
