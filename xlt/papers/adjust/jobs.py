"""adjust's jobs, run by `paper_job.py adjust <job>` (xlt.papers.job_cli reads each one's options
from its signature); imported only there: they load torch."""

from __future__ import annotations

from xlt.papers.adjust.recipe import AdjustConfig, adjust_encoder


def adjust_encoder_job(encoder: str, pairs: list[str], adjust: dict, out: str, checkpoint_dir: str,
                       revision: str | None = None) -> None:
    """Adjust an encoder (Hub id or directory) across languages on a sample of aligned sentence
    pairs (Cao et al. 2020; `pairs`: the alignment stage's JSON lines); save it in HF format with
    its provenance. `adjust`: the AdjustConfig (xlt.papers.adjust.inits.adjust_config)."""
    cfg = AdjustConfig.from_dict({**adjust, "progress": True}, where="--adjust")
    adjust_encoder(cfg, encoder, pairs, out, checkpoint_dir, revision=revision,
                   resolved_config={"adjust": cfg.to_dict(), "encoder": encoder, "revision": revision, "pairs": pairs})


JOBS = {
    "encoder": adjust_encoder_job,  # rule adjust_encoder: an adjusted encoder, results/encoders/{encoder}/adjust-…
}
