"""The full-scale bill: device-hours of every training and evaluation job of the DAG, per
paper and in total, for xlt's loop and for the Hugging Face Trainer baselines.

    jobs        (rule, output path) of every job the DAG would run (`snakemake --summary`,
                read by `summary_jobs`); each output path is parsed with the path grammar
    examples    per (dataset, language, split): the prepared data on disk (lines of
                results/data/<dataset>/<lang>/<split>.jsonl), else the papers' data-size
                tables (xlt/papers/<slug>/published), else the public sizes in DATASET_SIZES
    tokens      examples × the task's mean subwords per example (xlt.throughput.LENGTHS:
                estimates, stated as such in the output)
    throughput  the GPU benchmark's JSON (benchmarks/gpu_throughput.py --json): training and
                evaluation tokens/s per encoder shape, workload and side

A job's hours are its training tokens over the training tokens/s plus its evaluation tokens
(per-epoch dev sets, test sets, interpolation grid points) over the evaluation tokens/s.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from xlt import papers as P
from xlt import targets as T
from xlt.errors import XltError
from xlt.registry import get_task
from xlt.throughput import length_profile

# Public sizes (examples per split, every language) of splits no paper table prints
# (docs/data.md): MARC 200k / 5k / 5k per language.
DATASET_SIZES = {("marc", "dev"): 5000}
# Encoder shapes the benchmark measures, by the Hub id in the config's `encoders` block.
# XLM-R base is priced as mBERT: the same 12 × 768 transformer (the larger vocabulary is an
# embedding lookup), not measured on its own.
SHAPE_OF_HUB = {"bert-base-multilingual": "mbert", "xlm-roberta-base": "mbert", "xlm-roberta-large": "xlmr-large"}
# Rules that run an encoder (job kinds with a GPU in xlt.resources.KINDS); every other rule
# (downloads, preparation, tables, figures) costs no device time. One not in PATTERNS is
# listed as not priced, never silently free. A paper's own priced rules: its bill_rules.
ENCODER_RULES = {"build_encoder", "adapt_mlm", "adjust_encoder", "finetune", "evaluate", "evaluate_on", "align_l2",
                 "adjust_l2", "xmixup_cka"}
# Path grammar of the jobs that are priced (output paths relative to the results folder).
PATTERNS = {
    "finetune": re.compile(r"models/(?P<encoder>[^/]+)/(?P<init>[^/]+)/(?P<dataset>[^/]+)/(?P<recipe>[^/]+)/seed(?P<seed>\d+)$"),
    "evaluate": re.compile(r"eval/(?P<encoder>[^/]+)/(?P<init>[^/]+)/(?P<dataset>[^/]+)/(?P<recipe>[^/]+)/seed(?P<seed>\d+)/"
                           r"(?P<split>[a-z]+)\.(?P<langset>[A-Za-z0-9_]+)\.json$"),
    # the model of `dataset` scored on another dataset of its task (xlt.targets.eval_file's testset)
    "evaluate_on": re.compile(r"eval/(?P<encoder>[^/]+)/(?P<init>[^/]+)/(?P<dataset>[^/]+)/(?P<recipe>[^/]+)/seed(?P<seed>\d+)/"
                              r"on-(?P<testset>[^/]+)/(?P<split>[a-z]+)\.(?P<langset>[A-Za-z0-9_]+)\.json$"),
}
# rule -> (paper, its BillRule): the rules of the papers' own that run an encoder
PAPER_RULES = {r.rule: (slug, r) for slug, paper in P.PAPERS.items() for r in paper.bill_rules}


def summary_jobs(summary_tsv: str) -> list[tuple[str, str]]:
    """(rule, output file) of each row of `snakemake --summary` (tab-separated, with header)."""
    lines = [line.split("\t") for line in summary_tsv.splitlines() if line.strip()]
    if not lines or lines[0][:3] != ["output_file", "date", "rule"]:
        raise XltError("not the output of `snakemake --summary`: expected a header 'output_file date rule ...'")
    return [(row[2], row[0]) for row in lines[1:]]


class Examples:
    """Examples per (dataset, language, split), and where each count came from."""

    def __init__(self, cfg: dict, root: str | Path = "."):
        self.cfg, self.root = cfg, Path(root)
        self.sources: dict[str, int] = defaultdict(int)  # where counts came from -> how many lookups
        self._published = self._load_published()
        self._means: dict[str, float] = {}

    @staticmethod
    def _load_published() -> dict:
        """(task, lang or None, split) -> (examples, where) from the papers' data sizes, the
        lowest rank first (DataSize.rank: per language before one count for all languages)."""
        sizes = [s for paper in P.PAPERS.values() if paper.data_sizes for s in paper.data_sizes()]
        out: dict = {}
        for s in sorted(sizes, key=lambda s: s.rank):
            out.setdefault((s.task, s.lang, s.split), (s.examples, s.where))
        return out

    def count(self, dataset: str, lang: str, split: str) -> int:
        path = self.root / T.data_dir(self.cfg, dataset) / lang / f"{split}.jsonl"
        if path.exists():
            self.sources["prepared data on disk"] += 1
            with open(path, "rb") as f:
                return sum(1 for line in f if line.strip())
        task = T.task_of(dataset)
        key_task = "pos" if task == "parsing" else task  # parsing reads the same UD sentences as POS
        for key in ((dataset, lang, split), (key_task, lang, split), (key_task, None, split)):  # a named set's own first
            if key in self._published:
                n, where = self._published[key]
                self.sources[where] += 1
                return n
        if (task, split) in DATASET_SIZES:
            self.sources["public dataset sizes (docs/data.md)"] += 1
            return DATASET_SIZES[(task, split)]
        raise XltError(f"no size for {dataset} {lang} {split}: not prepared under {self.root / T.data_dir(self.cfg, dataset)} "
                       "and in no published data-size table; prepare it (snakemake data_all) or add it to "
                       "xlt.bill.DATASET_SIZES")

    def tokens(self, dataset: str, langs, split: str) -> float:
        task = T.task_of(dataset)
        if task not in self._means:
            self._means[task] = length_profile(task).mean()
        mean = self._means[task]
        return sum(self.count(dataset, lang, split) for lang in langs) * mean


@dataclass
class Cost:
    train_tokens: float = 0.0
    eval_tokens: float = 0.0
    jobs: dict = field(default_factory=lambda: defaultdict(int))


def workload_of(dataset: str) -> str:
    """The benchmark workload whose throughput prices a task: tasks over word sequences
    (tagging, parsing) are priced as tagging, text inputs (classification, QA) as pair
    classification."""
    return "tagging" if get_task(T.task_of(dataset)).input == "tokens" else "pair"


def shape_of(cfg: dict, encoder: str) -> str:
    hub = (cfg["encoders"].get(encoder) or {}).get("hub") or ""
    for key, shape in SHAPE_OF_HUB.items():
        if key in hub:
            return shape
    raise XltError(f"encoder {encoder!r} ({hub or 'no hub id'}): no measured shape; the benchmark measures "
                   f"{', '.join(f'{k} ({v})' for k, v in SHAPE_OF_HUB.items())}")


def job_costs(cfg: dict, jobs: list[tuple[str, str]], examples: Examples) -> tuple[dict, dict]:
    """Tokens per (paper, encoder shape, workload), and the jobs no cost model covers."""
    costs: dict = defaultdict(Cost)
    unpriced: dict = defaultdict(int)
    results = cfg["results"].rstrip("/") + "/"
    for rule, path in jobs:
        if rule not in ENCODER_RULES and rule not in PAPER_RULES:
            continue
        if rule not in PATTERNS and rule not in PAPER_RULES:
            unpriced[rule] += 1  # outputs, not jobs: a job with two outputs counts twice
            continue
        pattern = PAPER_RULES[rule][1].output if rule in PAPER_RULES else PATTERNS[rule]
        m = pattern.search(path[len(results):] if path.startswith(results) else path)
        if not m:
            continue  # a second output of a priced job (predictions, the grid's JSON)
        w = m.groupdict()
        dataset = w["dataset"]
        if rule in PAPER_RULES:
            paper, priced = PAPER_RULES[rule]
            train, evals = priced.tokens(cfg, w, examples)
        else:
            recipe = T.Recipe.parse(w["recipe"])
            # `<profile>-<extra tag>` is billed to the paper whose tag grammar it is
            profile, _, tag = recipe.hparams.partition("-")
            # a paper's second profile (`<slug>_<name>`, e.g. xmixup_qa) is billed to that paper
            own = next((slug for slug in P.PAPERS if profile.startswith(f"{slug}_")), profile)
            paper = P.tag_owner(tag)[0] if tag else own
            if rule == "finetune":
                hp = P.hparams(cfg, w["recipe"], dataset)
                epochs = hp["epochs"]
                # X-Mixup encodes both sides of every pair: two forwards and backwards per example
                # (benchmarks/xmixup_throughput.py: 2.17x a translate-train step)
                sides = 2 if any(e.get("name") == "xmixup" for e in hp.get("extras", [])) else 1
                train = sides * epochs * examples.tokens(dataset, recipe.train_langs, "train")
                # model selection: the dev sets of the training languages, or of the profile's own
                evals = epochs * examples.tokens(dataset, hp.get("dev_languages") or recipe.train_langs, "dev")
            else:
                scored = w.get("testset") or dataset
                train, evals = 0.0, examples.tokens(scored, T.langset_languages(cfg, w["langset"]), w["split"])
        c = costs[(paper, shape_of(cfg, w["encoder"]), workload_of(dataset))]
        c.train_tokens += train
        c.eval_tokens += evals
        c.jobs[rule] += 1
    return dict(costs), dict(unpriced)


def throughputs(bench: dict) -> dict:
    """(shape, workload, side) -> (training tokens/s, evaluation tokens/s) from the benchmark JSON."""
    try:
        return {(r["shape"], r["workload"], r["side"]): (r["tokens_per_s"], r["eval_tokens_per_s"]) for r in bench["rows"]}
    except (KeyError, TypeError) as e:
        raise XltError(f"not a gpu_throughput.py JSON (missing {e})") from None


def bill(costs: dict, rates: dict, sides=("ours", "hf_default", "hf_best"), partial: bool = False) -> tuple[dict, dict]:
    """(hours per paper and side, plus 'total'; the costs left unpriced). A (shape, workload)
    with no measured throughput is an error, or with `partial` left out and returned."""
    out: dict = defaultdict(lambda: dict.fromkeys(sides, 0.0))
    unpriced: dict = {}
    for key, c in costs.items():
        paper, shape, workload = key
        missing = [side for side in sides if (shape, workload, side) not in rates]
        if missing and partial:
            unpriced[key] = c
            continue
        if missing:
            measured = sorted({(s, w) for s, w, _ in rates})
            raise XltError(f"no throughput for {shape} / {workload} / {missing[0]} in the benchmark JSON; it has "
                           f"{', '.join(f'{s}/{w}' for s, w in measured) or 'nothing'}: run "
                           f"benchmarks/gpu_throughput.py --shapes {shape} --json …, or bill only what was measured")
        for side in sides:
            train_rate, eval_rate = rates[(shape, workload, side)]
            hours = (c.train_tokens / train_rate + c.eval_tokens / eval_rate) / 3600
            out[paper][side] += hours
            out["total"][side] += hours
    return dict(out), unpriced
