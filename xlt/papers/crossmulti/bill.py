"""crossmulti's prices in the full-scale bill (xlt.workflow.bill): +DA's MLM adaptation and the analyses
of Table 2's models (probes, pseudo-perplexity).

The plan's functions that list the analysed models and the probe jobs are passed in by the
paper's declaration: this module imports nothing of the package (no import circle)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from xlt.dag import targets as T
from xlt.paperkit.base import BillRule, PaperBill
from xlt.dag.work import Work, mean_square_tokens, mean_tokens, mlm_work, workload_of


def paper_bill(slug: str, probe_jobs: Callable[[dict], dict], analysed_models: Callable[..., list[str]]) -> PaperBill:
    """The bill rules of the paper `slug`: `probe_jobs(cfg)` (task -> what its probe job reads) and
    `analysed_models(cfg, tasks)` (the model directories the analyses read) are the plan's."""

    def adapt_mlm(cfg: dict, w: dict, ex) -> list[Work]:
        """+DA: MLM on the task's training text, sequences no longer than the task's mean."""
        m = T.engine_options(cfg, cfg["adapt"]["mlm"])
        task = T.task_of(T.Init.parse(w["init"]).dataset)
        return mlm_work(m["steps"], m["batch_size"], min(mean_tokens(task), m.get("max_length", 128)))

    def probes(cfg: dict, w: dict, ex) -> list[Work]:
        """A probe job encodes every probing task's data once (the EN training features, capped,
        and the test sets); the linear probes train on the cached features (CPU-cheap)."""
        cap = cfg["papers"][slug]["analysis"]["probe"].get("max_train_examples")
        out = []
        for task, job in probe_jobs(cfg).items():
            dataset = Path(job["data"]).name
            n = ex.count(dataset, job["source"], "train")
            n = min(n, cap) if cap else n
            out.append(Work(workload_of(dataset), infer=n * mean_tokens(task) + ex.tokens(dataset, job["langs"], "test")))
        return out

    def pppl(cfg: dict, w: dict, ex) -> list[Work]:
        """Pseudo-perplexity: each token of a test sentence masked once, a forward pass per masked
        copy (Σ L² tokens per sentence), for the released encoder and every analysed model."""
        task, p = T.task_of(w["dataset"]), cfg["papers"][slug]
        models = 1 + len(analysed_models(cfg, [task]))
        n = sum(ex.count(w["dataset"], lang, "test") for lang in cfg["language_sets"][p["languages"]])
        return [Work(workload_of(w["dataset"]), infer=models * n * mean_square_tokens(task))]

    probe, pppl_dir = rf"{slug}/probe/(?P<encoder>[^/]+)", rf"{slug}/pppl/(?P<encoder>[^/]+)"
    return PaperBill(rules=(
        # shared rule (rules/encoder.smk), asked for by +DA only
        BillRule("adapt_mlm", re.compile(r"encoders/(?P<encoder>[^/]+)/(?P<init>mlm-[^/]+)$"), adapt_mlm),
        BillRule(f"{slug}_probe_model", re.compile(rf"{probe}/(?P<dataset>[^/]+)/[^/]+/seed\d+\.csv$"), probes),
        BillRule(f"{slug}_probe_vanilla", re.compile(rf"{probe}/vanilla\.csv$"), probes),
        BillRule(f"{slug}_pppl", re.compile(rf"{pppl_dir}/(?P<dataset>[^/]+)\.csv$"), pppl),
    ), no_device_time={f"{slug}_head_updates": "CPU: compares weight matrices, no forward pass"})  # fmt: skip
