"""xmixup's prices in the full-scale bill (xlt.workflow.bill): X-Mixup's fine-tunes read both sides of
every pair; Figure 3's CKA and Figure 4's centroids encode test sets with a trained model."""

from __future__ import annotations

from xlt.dag import targets as T
from xlt.paperkit.base import BillRule, PaperBill
from xlt.dag.work import SPLIT_LANGSET, Work, run_output, workload_of


def _langs(cfg: dict, w: dict) -> list[str]:
    return sorted({"en", *T.langset_languages(cfg, w["langset"])})


def cka(cfg: dict, w: dict, ex) -> list[Work]:
    """One forward pass over the parallel test sets of English and the language set."""
    return [Work(workload_of(w["dataset"]), infer=ex.tokens(w["dataset"], _langs(cfg, w), w["split"]))]


def centroids(cfg: dict, w: dict, ex) -> list[Work]:
    """One forward pass over the test set of `testset` (e.g. POS sentences), priced as that input."""
    return [Work(workload_of(w["testset"]), infer=ex.tokens(w["testset"], _langs(cfg, w), w["split"]))]


BILL = PaperBill(
    rules=(
        BillRule("xmixup_cka", run_output("xmixup/cka", rf"{SPLIT_LANGSET}\.json"), cka),
        # a model of `dataset` encoding another task's test set
        BillRule("xmixup_centroids", run_output("xmixup/centroids", rf"on-(?P<testset>[^/]+)/{SPLIT_LANGSET}\.json"),
                 centroids),
    ),
    # X-Mixup encodes both sides of every pair: two forwards and backwards per example
    # (xlt/papers/xmixup/benchmarks/throughput.py: 2.17x a translate-train step)
    train_multiples={"xmixup": 2},
)
