"""The work of a job that runs an encoder, in tokens: what the full-scale bill (xlt.workflow.bill) prices
and a paper's bill rules (xlt/papers/<slug>/bill.py) return.

    Work        tokens trained on and run forward by one part of a job, in one workload
    workload    the benchmark workload whose measured throughput prices it (tagging, pair, qa),
                or FLOPS for work no benchmark measures (MLM, aligned pairs)
    lengths     mean subwords per example of a task (xlt.dag.throughput.LENGTHS) and of one side of
                an aligned sentence pair (BITEXT): estimates, stated as such in the bill

This module imports no paper and nothing of the bill, so a paper's bill module can use it
without an import circle (xlt.workflow.bill reads the papers' registry).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from xlt.dag import targets as T
from xlt.registry import get_task
from xlt.dag.throughput import LengthProfile, length_profile

FLOPS = "flops"  # the workload of work no benchmark measures: always priced from FLOPs
# One side of an aligned sentence pair (WikiMatrix), subwords: an ESTIMATE, like LENGTHS.
BITEXT = LengthProfile(median=28, sigma=0.5, lo=6)
# A fine-tuned model's run directory in a priced output's path (xlt.dag.targets.model_dir, relative to
# the models/, eval/ or a paper's analysis folder): its wildcards are the run's parts
RUN = r"(?P<encoder>[^/]+)/(?P<init>[^/]+)/(?P<dataset>[^/]+)/(?P<recipe>[^/]+)/seed(?P<seed>\d+)"
SPLIT_LANGSET = r"(?P<split>[a-z]+)\.(?P<langset>[A-Za-z0-9_]+)"  # <split>.<language set> of an evaluation file


def run_output(prefix: str, suffix: str) -> re.Pattern:
    """The path grammar `<prefix>/<run>/<suffix>` of a job's output, relative to the results folder."""
    return re.compile(rf"{prefix}/{RUN}/{suffix}$")


@dataclass
class Work:
    """One part of a job: tokens trained on and run forward, in one workload."""

    workload: str  # tagging | pair | qa (measured by the GPU benchmark) | FLOPS
    train: float = 0.0
    infer: float = 0.0
    mlm: bool = False  # the MLM head's vocabulary projection on the masked positions


def workload_of(dataset: str) -> str:
    """The benchmark workload whose throughput prices a task: tasks over word sequences
    (tagging, parsing) are priced as tagging, span QA as qa, text inputs (classification) as
    pair classification."""
    task = get_task(T.task_of(dataset))
    return "tagging" if task.input == "tokens" else "qa" if task.input == "qa" else "pair"


@functools.cache
def mean_tokens(task: str) -> float:
    """Mean subwords per example of a task ("bitext": one side of an aligned pair); sampled once."""
    return BITEXT.mean() if task == "bitext" else length_profile(task).mean()


@functools.cache
def mean_square_tokens(task: str) -> float:
    """Mean of the squared subwords per example (a cost quadratic in length, e.g. pseudo-perplexity)."""
    sq = length_profile(task).sample(20_000, seed=0)
    return sum(n * n for n in sq) / len(sq)


def mlm_work(steps: int, batch_size: int, length: float) -> list[Work]:
    """Masked-language-model training: `steps` batches of `batch_size` sequences of `length`."""
    return [Work(FLOPS, train=steps * batch_size * length, mlm=True)]
