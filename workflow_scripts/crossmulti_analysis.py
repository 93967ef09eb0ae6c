#!/usr/bin/env python
"""crossmulti's analyses of fine-tuned models: probes of one frozen encoder (model and per-head),
attention-head updates of every model, pseudo-perplexity on one task's test text."""

from xlt.cli import ArgumentParser, json_arg, run, set_threads


def main():
    ap = ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="what", required=True)
    probe = sub.add_parser("probe", help="probe one encoder on every probing task")
    probe.add_argument("--model", help="a fine-tuned model directory (its encoder/ is probed); none: the pretrained encoder")
    probe.add_argument("--probes", type=json_arg, required=True, help="task -> {data, metric, source, langs}")
    probe.add_argument("--probe", type=json_arg, required=True, help="papers.crossmulti.analysis.probe")
    updates = sub.add_parser("head-updates", help="per-head weight updates of every model vs the pretrained encoder")
    updates.add_argument("--models", nargs="+", required=True)
    pppl = sub.add_parser("pppl", help="pseudo-perplexity of the vanilla encoder and every model on one task's test text")
    pppl.add_argument("--task", required=True)
    pppl.add_argument("--data", required=True)
    pppl.add_argument("--langs", nargs="+", required=True)
    pppl.add_argument("--models", nargs="+", required=True)
    pppl.add_argument("--pppl", type=json_arg, required=True, help="papers.crossmulti.analysis.pppl")
    for p in (probe, updates, pppl):
        p.add_argument("--pretrained", required=True, help="the pretrained encoder: Hub id or directory")
        p.add_argument("--revision", default=None)
        p.add_argument("--out", required=True, help="CSV")
        p.add_argument("--provenance", required=True, help="JSON")
        p.add_argument("--threads", type=int, default=None)
    a = ap.parse_args()
    set_threads(a.threads)
    if a.what == "pppl" and set(a.pppl) - {"max_length", "batch_size", "max_sentences"} | ({"max_length", "batch_size"} - set(a.pppl)):
        ap.error(f"argument --pppl: papers.crossmulti.analysis.pppl takes max_length, batch_size (both needed) and "
                 f"max_sentences; got {', '.join(sorted(a.pppl)) or 'none'}")
    if a.what == "probe":
        from pathlib import Path

        from xlt.papers.crossmulti.plan import model_setting
        from xlt.papers.crossmulti.probing import probe_config, run_probe_job

        probe_config(a.probe)  # before loading anything

        if a.model:
            from xlt.engine.model import MODEL_META
            from xlt.errors import XltError

            if not (Path(a.model) / MODEL_META).exists():
                raise XltError(f"{a.model}: not a saved xlt model (no {MODEL_META})")
            run_probe_job(str(Path(a.model) / "encoder"), None, a.probes, a.probe, a.out, a.provenance, model_setting(a.model))
        else:
            run_probe_job(a.pretrained, a.revision, a.probes, a.probe, a.out, a.provenance,
                          {"task": "none", "setting": "vanilla", "seed": 0, "collapsed": False})
    elif a.what == "head-updates":
        from xlt.papers.crossmulti.head_updates import run_head_updates_job

        run_head_updates_job(a.pretrained, a.revision, a.models, a.out, a.provenance)
    else:
        from xlt.papers.crossmulti.pppl import run_pppl_job

        run_pppl_job(a.task, a.data, a.langs, a.pretrained, a.revision, a.models, a.pppl["max_length"],
                     a.pppl["batch_size"], a.out, a.provenance, a.pppl.get("max_sentences"))


run(main)
