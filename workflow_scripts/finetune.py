#!/usr/bin/env python
"""Fine-tune an encoder on one task (training languages from the recipe) and save the model;
with several seeds (and as many --out and --checkpoint-dir), train them in one job (a pack)."""

from xlt.process.cli import ArgumentParser, json_arg, run, set_threads
from xlt.errors import XltError


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
    ap.add_argument("--seed", type=int, nargs="+", required=True, help="several: a pack (xlt.stages.finetune.finetune_pack)")
    ap.add_argument("--out", nargs="+", required=True, help="one model directory per seed")
    ap.add_argument("--checkpoint-dir", nargs="+", required=True, help="one per seed")
    ap.add_argument("--pack-checkpoint-dir", default=None, help="a pack's loop checkpoint (several seeds)")
    ap.add_argument("--oracle-langs-each", type=json_arg, default=None, help="a pack: each seed's --oracle-langs, [[lang, ...], ...]")
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
    from xlt.stages.finetune import finetune

    if len(a.seed) > 1:
        from xlt.stages.finetune import finetune_pack

        if a.aux or a.pack_checkpoint_dir is None:
            raise XltError("a pack (several --seed) needs --pack-checkpoint-dir and takes no --aux")
        finetune_pack(a.task, a.encoder, a.revision, a.data, a.train_langs, a.hparams, a.seed, a.out, a.checkpoint_dir,
                      a.pack_checkpoint_dir, a.kill_after_steps, a.collapse_retries, a.collapse_rule, a.oracle_langs_each)
        return
    if len(a.out) != 1 or len(a.checkpoint_dir) != 1:
        raise XltError("one --seed: one --out and one --checkpoint-dir")
    finetune(a.task, a.encoder, a.revision, a.data, a.train_langs, a.hparams, a.seed[0], a.out[0], a.checkpoint_dir[0],
             a.kill_after_steps, a.collapse_retries, a.aux, a.collapse_rule, a.oracle_langs, a.tensorboard_dir)


run(main)
