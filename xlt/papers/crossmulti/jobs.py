"""crossmulti's jobs, the analyses of Table 2's models, run by `paper_job.py crossmulti <job>`
(xlt.papers.job_cli reads each one's options from its signature); imported only there: they
load torch."""

from __future__ import annotations

from pathlib import Path

from xlt.engine.model import MODEL_META
from xlt.errors import XltError
from xlt.papers.crossmulti.plan import model_setting
from xlt.papers.crossmulti.head_updates import run_head_updates_job
from xlt.papers.crossmulti.pppl import run_pppl_job
from xlt.papers.crossmulti.probing import probe_config, run_probe_job

PPPL_KEYS, PPPL_NEEDED = {"max_length", "batch_size", "max_sentences"}, {"max_length", "batch_size"}
VANILLA = {"task": "none", "setting": "vanilla", "seed": 0, "collapsed": False}  # the pretrained encoder's label


def probe_job(pretrained: str, probes: dict, probe: dict, out: str, provenance_out: str,
              model: str | None = None, revision: str | None = None, collapse: dict | None = None) -> None:
    """Probe one frozen encoder on every probing task: a fine-tuned model's (`model`, its
    encoder/) or, without one, the pretrained encoder. `probes`: task -> {data, metric, source,
    langs}; `probe`: papers.crossmulti.analysis.probe; `collapse`: the config's collapse rule
    (less `retries`), which says whether each probe learned nothing."""
    probe_config(probe)  # before loading anything
    if model is None:
        run_probe_job(pretrained, revision, probes, probe, out, provenance_out, VANILLA, collapse)
        return
    if not (Path(model) / MODEL_META).exists():
        raise XltError(f"{model}: not a saved xlt model (no {MODEL_META})")
    run_probe_job(str(Path(model) / "encoder"), None, probes, probe, out, provenance_out, model_setting(model), collapse)


def pppl_job(task: str, data_dir: str, langs: list[str], pretrained: str, models: list[str], pppl: dict, out: str,
             provenance_out: str, revision: str | None = None) -> None:
    """Pseudo-perplexity of the pretrained encoder and every model on one task's test text;
    `pppl`: papers.crossmulti.analysis.pppl."""
    if set(pppl) - PPPL_KEYS or PPPL_NEEDED - set(pppl):
        raise XltError(f"--pppl: papers.crossmulti.analysis.pppl takes max_length, batch_size (both needed) and "
                       f"max_sentences; got {', '.join(sorted(pppl)) or 'none'}")
    run_pppl_job(task, data_dir, langs, pretrained, revision, models, pppl["max_length"], pppl["batch_size"], out,
                 provenance_out, pppl.get("max_sentences"))


JOBS = {
    "probe": probe_job,  # rules crossmulti_probe_vanilla, crossmulti_probe_model
    # per-head weight updates of every model against the pretrained encoder (rule crossmulti_head_updates)
    "head-updates": run_head_updates_job,
    "pppl": pppl_job,  # rule crossmulti_pppl
}
