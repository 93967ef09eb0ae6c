"""The full-scale bill: device-hours of every job of the DAG, per paper and in total, for xlt's
loop and for the Hugging Face Trainer with its best flags.

    jobs        (rule, outputs) of every job the DAG would run (`snakemake -n`, read by
                `dag_jobs`): a job with several outputs is one job
    rules       every rule of the workflow is either priced (PRICED: a cost model below, or a
                paper's BillRule) or listed in NO_DEVICE_TIME with why it runs no encoder;
                `classify` refuses a rule that is neither (tests/test_bill.py reads the rule
                list from the workflow)
    examples    per (dataset, language, split): the prepared data on disk (lines of
                results/data/<dataset>/<lang>/<split>.jsonl), else the papers' data-size
                tables (xlt/papers/<slug>/published), else the public sizes in DATASET_SIZES
    tokens      examples × the task's mean subwords per example (xlt.throughput.LENGTHS:
                estimates, stated as such in the output); aligned sentences: BITEXT
    hours       tokens over the GPU benchmark's measured tokens/s (benchmarks/gpu_throughput.py
                --json) where it measured that encoder shape and workload (fine-tuning and
                evaluation of tagging, pair and QA tasks); otherwise, and for work no benchmark
                measures (MLM, aligned pairs and their anchors), FLOPs (6 · N · tokens training,
                2 · N · tokens inference, N the encoder's non-embedding parameters) at the MFU
                the benchmark measured for that workload and side (FlopRates), or 40% of an
                H100's bf16 peak while none was measured: an ESTIMATE, printed with its assumption

A fine-tune costs its epochs over its training data (twice for X-Mixup's two sides), its
auxiliary streams (one batch of each per step: crossmulti's +FA tasks; adjust's continual
aligned pairs, both sides, and the anchor's forward pass through the released encoder) and
its dev sets after each epoch.
"""

from __future__ import annotations

import functools
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from xlt import papers as P
from xlt import targets as T
from xlt.errors import XltError
from xlt.registry import get_task
from xlt.throughput import LengthProfile, encoder_shape, length_profile, peak_tflops, shape_of

# Public sizes (examples per split, every language) of splits no paper table prints
# (docs/data.md): MARC 200k / 5k / 5k per language.
# XQuAD: 1,190 questions in each language (qa's test split beyond English SQuAD)
DATASET_SIZES = {("marc", "dev"): 5000, ("qa", "test"): 1190}
# Encoder shapes, by the Hub id (or local path) in the config's `encoders` block. XLM-R base is
# priced as mBERT: the same 12 × 768 transformer (the larger vocabulary is an embedding lookup).
# The FLOPs estimate, until a GPU benchmark measured the work: this GPU's bf16 dense peak
# (xlt.throughput.PEAK_BF16_TFLOPS) at this model FLOP utilisation.
ESTIMATE_GPU = "NVIDIA H100 SXM"
ESTIMATE_MFU = 0.40
SIDES = ("ours", "hf_best")
SIDE_NAMES = {"ours": "ours", "hf_best": "HF Trainer, best flags"}
# One side of an aligned sentence pair (WikiMatrix), subwords: an ESTIMATE, like LENGTHS.
BITEXT = LengthProfile(median=28, sigma=0.5, lo=6)
MLM_MASKED = 0.15  # the MLM head's vocabulary projection runs on the masked positions only
FLOPS = "flops"  # the workload of work no benchmark measures: always priced from FLOPs
# Rules that run no encoder, and why they cost no device time.
NO_DEVICE_TIME = {
    "download": "network transfer (a local rule, on the login node)",
    "download_encoder": "network transfer (a local rule, on the login node)",
    "prepare_task": "CPU: reads and normalises the raw files",
    "world": "CPU: writes the synthetic world (tiny preset only)",
    "encoder_corpus": "CPU: the tiny world's text (tiny preset only)",
    "align_pool": "CPU: filters and tokenises the bitext",
    "align_links": "CPU: the word aligner (fast_align / eflomal), no encoder",
    "align_sample": "CPU: draws samples of aligned pairs",
    "align_continual_sample": "CPU: draws samples of aligned pairs",
    "align_subword_pool": "CPU: the encoder's tokenizer only, no forward pass",
    "align_subword_links": "CPU: the word aligner on subwords, no encoder",
    "align_subword_sample": "CPU: draws samples of aligned pairs",
    "align_aer": "CPU: alignment error rate against gold links",
    "align_aer_table": "CPU: a table of result files",
    "crossmulti_head_updates": "CPU: compares weight matrices, no forward pass",
    "paper_table": "CPU: a table of result files",
    "paper_claims": "CPU: a paper's claims decided on its table CSVs",
    "claims_page": "CPU: the claims of every paper on one page",
    "paper_figure": "CPU: a figure of result files",
    "tables_index": "CPU: lists the tables",
    "all_tables": "a target: no job of its own",
    "data_all": "a target: no job of its own",
    "prefetch": "a target: no job of its own",
    "zero_shot": "a target: no job of its own (its fine-tunes and evaluations are priced)",
    "zero_shot_table": "CPU: a table of result files",
    "align_all": "a target: no job of its own",
}
ALIAS = "a target (an alias of a paper's tables): no job of its own"
# Path grammar of the priced jobs' outputs (relative to the results folder); the one output of
# a job that is priced (a second output, predictions or a CSV beside a JSON, is the same job).
_RUN = r"(?P<encoder>[^/]+)/(?P<init>[^/]+)/(?P<dataset>[^/]+)/(?P<recipe>[^/]+)/seed(?P<seed>\d+)"
PATTERNS = {
    "finetune": re.compile(rf"models/{_RUN}$"),
    "evaluate": re.compile(rf"eval/{_RUN}/(?P<split>[a-z]+)\.(?P<langset>[A-Za-z0-9_]+)\.json$"),
    # the model of `dataset` scored on another dataset of its task (xlt.targets.eval_file's testset)
    "evaluate_on": re.compile(rf"eval/{_RUN}/on-(?P<testset>[^/]+)/(?P<split>[a-z]+)\.(?P<langset>[A-Za-z0-9_]+)\.json$"),
    "build_encoder": re.compile(r"encoders/(?P<encoder>[^/]+)/pretrained$"),
    "adapt_mlm": re.compile(r"encoders/(?P<encoder>[^/]+)/(?P<init>mlm-[^/]+)$"),
    "adjust_encoder": re.compile(r"encoders/(?P<encoder>[^/]+)/(?P<init>adjust-[^/]+)$"),
    "crossmulti_probe_model": re.compile(r"crossmulti/probe/(?P<encoder>[^/]+)/(?P<dataset>[^/]+)/[^/]+/seed\d+\.csv$"),
    "crossmulti_probe_vanilla": re.compile(r"crossmulti/probe/(?P<encoder>[^/]+)/vanilla\.csv$"),
    "crossmulti_pppl": re.compile(r"crossmulti/pppl/(?P<encoder>[^/]+)/(?P<dataset>[^/]+)\.csv$"),
    "dlfa_similarity": re.compile(r"dlfa/similarity/(?P<encoder>[^/]+)/seed(?P<seed>\d+)\.csv$"),
    "align_l2": re.compile(r"align/en-(?P<pair>[a-z]+)/[^/]+/l2/(?P<encoder>[^/]+)\.csv$"),
    "adjust_l2": re.compile(r"adjust/l2/en-(?P<pair>[a-z]+)/[^/]+\.csv$"),
    "xmixup_cka": re.compile(rf"xmixup/cka/{_RUN}/(?P<split>[a-z]+)\.(?P<langset>[A-Za-z0-9_]+)\.json$"),
    # a model of `dataset` encoding another task's test set (Figure 4's centroids of POS)
    "xmixup_centroids": re.compile(rf"xmixup/centroids/{_RUN}/on-(?P<testset>[^/]+)/(?P<split>[a-z]+)\."
                                   r"(?P<langset>[A-Za-z0-9_]+)\.json$"),
}
# The paper a rule outside the recipes' grammar is billed to
RULE_PAPER = {"adapt_mlm": "crossmulti", "adjust_encoder": "adjust", "crossmulti_probe_model": "crossmulti",
              "crossmulti_probe_vanilla": "crossmulti", "crossmulti_pppl": "crossmulti", "dlfa_similarity": "dlfa",
              "align_l2": "adjust", "adjust_l2": "adjust", "xmixup_cka": "xmixup", "xmixup_centroids": "xmixup",
              "build_encoder": "(tiny encoder)"}
# rule -> (paper, its BillRule): the rules of the papers' own that run an encoder
PAPER_RULES = {r.rule: (slug, r) for slug, paper in P.PAPERS.items() for r in paper.bill_rules}
PRICED = set(PATTERNS) | set(PAPER_RULES)


def classify(rule: str, aliases=()) -> str:
    """'priced', or why the rule costs no device time; a rule that is neither is an error."""
    if rule in PRICED:
        return "priced"
    if rule in NO_DEVICE_TIME:
        return NO_DEVICE_TIME[rule]
    if rule in aliases:
        return ALIAS
    raise XltError(f"rule {rule!r} is neither priced nor listed as costing no device time: give it a cost "
                   "model in xlt.bill (PATTERNS and job_costs, or a paper's bill_rules) or a reason in "
                   "xlt.bill.NO_DEVICE_TIME")


def dag_jobs(dry_run: str) -> list[tuple[str, list[str]]]:
    """(rule, its outputs) of every job of `snakemake -n <target>`'s output: one entry per job,
    whatever its number of outputs (a target rule's job has none)."""
    jobs: list[tuple[str, list[str]]] = []
    for line in dry_run.splitlines():
        m = re.fullmatch(r"(?:local)?rule (\w+):", line)
        if m:
            jobs.append((m.group(1), []))
        elif line.startswith("    output: ") and jobs:
            jobs[-1][1].extend(line[len("    output: "):].split(", "))
    if not jobs:
        raise XltError("not the output of `snakemake -n`: no 'rule <name>:' job in it")
    return jobs


class Examples:
    """Examples per (dataset, language, split), and where each count came from."""

    def __init__(self, cfg: dict, root: str | Path | None = "."):
        """`root`: where prepared data is looked for; None: the published sizes only (what
        `make bill` uses, the same on every checkout)."""
        self.cfg, self.root = cfg, (Path(root) if root is not None else None)
        self.sources: dict[str, int] = defaultdict(int)  # where counts came from -> how many lookups
        self._published = self._load_published()

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
        path = self.root / T.data_dir(self.cfg, dataset) / lang / f"{split}.jsonl" if self.root else None
        if path is not None and path.exists():
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
        raise XltError(f"no size for {dataset} {lang} {split}: not prepared under {self.root or '.'}/{T.data_dir(self.cfg, dataset)} "
                       "and in no published data-size table; prepare it (snakemake data_all) or add it to "
                       "xlt.bill.DATASET_SIZES")

    def tokens(self, dataset: str, langs, split: str) -> float:
        return sum(self.count(dataset, lang, split) for lang in langs) * _mean(T.task_of(dataset))


@dataclass
class Cost:
    """The work of the jobs of one (paper, encoder shape, workload): tokens and model FLOPs."""

    train_tokens: float = 0.0
    eval_tokens: float = 0.0
    train_flops: float = 0.0
    eval_flops: float = 0.0
    jobs: dict = field(default_factory=lambda: defaultdict(int))


def workload_of(dataset: str) -> str:
    """The benchmark workload whose throughput prices a task: tasks over word sequences
    (tagging, parsing) are priced as tagging, span QA as qa, text inputs (classification) as
    pair classification."""
    task = get_task(T.task_of(dataset))
    return "tagging" if task.input == "tokens" else "qa" if task.input == "qa" else "pair"


@dataclass
class Work:
    """One part of a job: tokens trained on and run forward, in one workload."""

    workload: str  # tagging | pair (measured by the benchmark) | FLOPS
    train: float = 0.0
    infer: float = 0.0
    mlm: bool = False  # the MLM head's vocabulary projection on the masked positions


@functools.cache
def _mean(task: str) -> float:
    """Mean subwords per example of a task (BITEXT: one side of an aligned pair); sampled once."""
    return BITEXT.mean() if task == "bitext" else length_profile(task).mean()


@functools.cache
def _mean_square(task: str) -> float:
    sq = length_profile(task).sample(20_000, seed=0)
    return sum(n * n for n in sq) / len(sq)


def _finetune(cfg: dict, w: dict, ex: Examples) -> list[Work]:
    dataset, recipe = w["dataset"], T.Recipe.parse(w["recipe"])
    hp = P.hparams(cfg, w["recipe"], dataset)
    epochs, bs = hp["epochs"], hp.get("batch_size", 32)
    n_train = sum(ex.count(dataset, lang, "train") for lang in recipe.train_langs)
    # X-Mixup encodes both sides of every pair: two forwards and backwards per example
    # (benchmarks/xmixup_throughput.py: 2.17x a translate-train step)
    sides = 2 if any(e.get("name") == "xmixup" for e in hp.get("extras", [])) else 1
    main = Work(workload_of(dataset), train=sides * epochs * n_train * _mean(T.task_of(dataset)),
                # model selection: the dev sets of the training languages, or of the profile's own
                infer=epochs * ex.tokens(dataset, hp.get("dev_languages") or recipe.train_langs, "dev"))
    steps = epochs * math.ceil(n_train / bs)
    out = [main]
    for a in T.aux_streams(cfg, w["recipe"], dataset, w["encoder"], w["init"]):
        n = steps * a.get("batch_size", bs)  # one batch of each stream per step; the streams cycle
        if a.get("kind") == "aligned_pairs":  # both sides trained; the anchor: English, released encoder
            out.append(Work(FLOPS, train=2 * n * _mean("bitext"), infer=n * _mean("bitext")))
        else:
            out.append(Work(workload_of(Path(a["data"]).name), train=n * _mean(a["task"])))
    return out


def _evaluate(cfg: dict, w: dict, ex: Examples) -> list[Work]:
    scored = w.get("testset") or w["dataset"]
    return [Work(workload_of(scored), infer=ex.tokens(scored, T.langset_languages(cfg, w["langset"]), w["split"]))]


def _mlm(steps: int, batch_size: int, length: float) -> list[Work]:
    return [Work(FLOPS, train=steps * batch_size * length, mlm=True)]


def _build_encoder(cfg: dict, w: dict, ex: Examples) -> list[Work]:
    m = cfg["encoders"][w["encoder"]]["build"]["mlm"]
    return _mlm(m["steps"], m["batch_size"], m.get("max_length", 128))


def _adapt_mlm(cfg: dict, w: dict, ex: Examples) -> list[Work]:
    m = T.engine_options(cfg, cfg["adapt"]["mlm"])
    task = T.task_of(T.Init.parse(w["init"]).dataset)
    return _mlm(m["steps"], m["batch_size"], min(_mean(task), m.get("max_length", 128)))


def _adjust_encoder(cfg: dict, w: dict, ex: Examples) -> list[Work]:
    it, a = T.Adjusted.parse(w["init"]), T.adjust_config(cfg, w["init"])
    n = a.get("epochs", 1) * it.size  # pairs; both sides trained, the anchor reads the English side
    return [Work(FLOPS, train=2 * n * _mean("bitext"), infer=n * _mean("bitext"))]


def _probe_data(cfg: dict, ex: Examples) -> list[Work]:
    """A probe job encodes every probing task's data once (the EN training features, capped,
    and the test sets); the linear probes train on the cached features (CPU-cheap)."""
    from xlt.papers.crossmulti import plan as CM

    cap = cfg["papers"]["crossmulti"]["analysis"]["probe"].get("max_train_examples")
    out = []
    for task, job in CM.probe_jobs(cfg).items():
        dataset = Path(job["data"]).name
        n = ex.count(dataset, job["source"], "train")
        n = min(n, cap) if cap else n
        out.append(Work(workload_of(dataset), infer=n * _mean(task) + ex.tokens(dataset, job["langs"], "test")))
    return out


def _pppl(cfg: dict, w: dict, ex: Examples) -> list[Work]:
    """Pseudo-perplexity: each token of a test sentence masked once, a forward pass per masked
    copy (Σ L² tokens per sentence), for the released encoder and every analysed model."""
    from xlt.papers.crossmulti import plan as CM

    task, p = T.task_of(w["dataset"]), cfg["papers"]["crossmulti"]
    mean_sq = _mean_square(task)
    models = 1 + len(CM.analysed_models(cfg, [task]))
    n = sum(ex.count(w["dataset"], lang, "test") for lang in cfg["language_sets"][p["languages"]])
    return [Work(workload_of(w["dataset"]), infer=models * n * mean_sq)]


def _similarity(cfg: dict, w: dict, ex: Examples) -> list[Work]:
    from xlt.papers.dlfa import plan as D

    p = cfg["papers"]["dlfa"]
    models = len(D.similarity_models(cfg, w["encoder"], int(w["seed"])))
    langs = T.langset_languages(cfg, p["languages"]["xnli"])
    return [Work("pair", infer=models * p["similarity"]["sentences"] * len(langs) * _mean("xnli"))]


def _l2(cfg: dict, w: dict, ex: Examples) -> list[Work]:
    return [Work(FLOPS, infer=2 * cfg["align"]["l2"]["sentences"] * _mean("bitext"))]


def _cka(cfg: dict, w: dict, ex: Examples) -> list[Work]:
    langs = sorted({"en", *T.langset_languages(cfg, w["langset"])})
    return [Work(workload_of(w["dataset"]), infer=ex.tokens(w["dataset"], langs, w["split"]))]


def _centroids(cfg: dict, w: dict, ex: Examples) -> list[Work]:
    """One forward pass over the test set of `testset` (e.g. POS sentences), priced as that input."""
    langs = sorted({"en", *T.langset_languages(cfg, w["langset"])})
    return [Work(workload_of(w["testset"]), infer=ex.tokens(w["testset"], langs, w["split"]))]


COST_MODELS = {
    "finetune": _finetune, "evaluate": _evaluate, "evaluate_on": _evaluate, "build_encoder": _build_encoder,
    "adapt_mlm": _adapt_mlm, "adjust_encoder": _adjust_encoder,
    "crossmulti_probe_model": lambda cfg, w, ex: _probe_data(cfg, ex),
    "crossmulti_probe_vanilla": lambda cfg, w, ex: _probe_data(cfg, ex),
    "crossmulti_pppl": _pppl, "dlfa_similarity": _similarity, "align_l2": _l2, "adjust_l2": _l2, "xmixup_cka": _cka,
    "xmixup_centroids": _centroids,
}  # fmt: skip


def _paper_of(rule: str, w: dict) -> str:
    if rule in RULE_PAPER:
        return RULE_PAPER[rule]
    # `<profile>-<extra tag>` is billed to the paper whose tag grammar it is
    profile, _, tag = T.Recipe.parse(w["recipe"]).hparams.partition("-")
    # a paper's second profile (`<slug>_<name>`, e.g. xmixup_qa) is billed to that paper
    own = next((slug for slug in P.PAPERS if profile.startswith(f"{slug}_")), profile)
    return P.tag_owner(tag)[0] if tag else own


def job_costs(cfg: dict, jobs: list[tuple[str, list[str]]], examples: Examples, aliases=()) -> tuple[dict, dict]:
    """({(paper, shape, workload, rule): Cost}, {rule: jobs} of every rule): each rule priced
    or classified as costing no device time (`classify`)."""
    costs: dict = defaultdict(Cost)
    counts: dict = defaultdict(int)
    results = cfg["results"].rstrip("/") + "/"
    for rule, outputs in jobs:
        classify(rule, aliases)
        counts[rule] += 1
        if rule not in PRICED:
            continue
        pattern = PAPER_RULES[rule][1].output if rule in PAPER_RULES else PATTERNS[rule]
        found = [m for p in outputs if (m := pattern.search(p[len(results):] if p.startswith(results) else p))]
        if not found:
            raise XltError(f"rule {rule}: no output of its job matches the bill's path grammar ({', '.join(outputs)})")
        w = found[0].groupdict()
        if rule in PAPER_RULES:
            paper, priced = PAPER_RULES[rule]
            train, infer = priced.tokens(cfg, w, examples)
            works = [Work(workload_of(w["dataset"]), train=train, infer=infer)]
        else:
            paper, works = _paper_of(rule, w), COST_MODELS[rule](cfg, w, examples)
        shape = shape_of(cfg, w.get("encoder") or cfg["align"]["l2"]["encoder"])
        es = encoder_shape(cfg, shape)
        n, head = es.non_embedding_params(), es.hidden * es.vocab * MLM_MASKED
        for i, work in enumerate(works):
            c = costs[(paper, shape, work.workload, rule)]
            c.train_tokens += work.train
            c.eval_tokens += work.infer
            c.train_flops += 6 * (n + (head if work.mlm else 0)) * work.train
            c.eval_flops += 2 * n * work.infer
            if i == 0:
                c.jobs[rule] += 1
    return dict(costs), dict(counts)


def throughputs(bench: dict) -> dict:
    """(shape, workload, side) -> (training tokens/s, evaluation tokens/s) from the benchmark JSON."""
    try:
        return {(r["shape"], r["workload"], r["side"]): (r["tokens_per_s"], r["eval_tokens_per_s"]) for r in bench["rows"]}
    except (KeyError, TypeError) as e:
        raise XltError(f"not a gpu_throughput.py JSON (missing {e})") from None


def estimate_rate(gpu: str = ESTIMATE_GPU, mfu: float = ESTIMATE_MFU) -> float:
    """Model FLOP/s of the estimate: `mfu` of the bf16 dense peak of `gpu`."""
    peak = peak_tflops(gpu)
    if peak is None:
        raise XltError(f"no bf16 peak known for GPU {gpu!r} (xlt.throughput.PEAK_BF16_TFLOPS)")
    return mfu * peak * 1e12


@dataclass
class FlopRates:
    """The utilisation that prices work from FLOPs, by (workload, side): the MFU the GPU
    benchmark measured (training, evaluation; mean over its shapes; a workload it did not
    measure, e.g. MLM: the mean of the side) of its GPU's peak, or ESTIMATE_MFU of
    ESTIMATE_GPU's while none was measured."""

    peak: float  # FLOP/s
    mfu: dict = field(default_factory=dict)  # (workload | None, side) -> (training MFU, evaluation MFU)

    def __call__(self, workload: str, side: str) -> tuple[float, float]:
        m = self.mfu.get((workload, side)) or self.mfu.get((None, side)) or (ESTIMATE_MFU, ESTIMATE_MFU)
        return m[0] * self.peak, m[1] * self.peak


def flop_rates(bench: dict | None) -> FlopRates:
    if not (bench and bench.get("gpu")):
        return FlopRates(estimate_rate(ESTIMATE_GPU, 1.0))
    groups: dict = defaultdict(list)
    for r in bench["rows"]:
        if r.get("mfu") and r.get("eval_mfu"):
            for key in ((r["workload"], r["side"]), (None, r["side"])):
                groups[key].append((r["mfu"], r["eval_mfu"]))
    mean = {k: (sum(t for t, _ in v) / len(v), sum(e for _, e in v) / len(v)) for k, v in groups.items()}
    peak = bench.get("peak_tflops") or peak_tflops(bench["device"])
    if not peak:
        raise XltError(f"benchmark JSON: no bf16 peak known for {bench['device']!r}")
    return FlopRates(peak * 1e12, mean)


def hours(key: tuple, c: Cost, rates: dict, util: FlopRates, side: str) -> tuple[float, bool]:
    """(hours, measured?) of one cost: from the benchmark's tokens/s where it measured this
    (shape, workload, side), else from FLOPs at the utilisation `util` gives."""
    _, shape, workload, *_ = key
    if (shape, workload, side) in rates:
        train_rate, eval_rate = rates[(shape, workload, side)]
        return (c.train_tokens / train_rate + c.eval_tokens / eval_rate) / 3600, True
    train_rate, eval_rate = util(None if workload == FLOPS else workload, side)
    return (c.train_flops / train_rate + c.eval_flops / eval_rate) / 3600, False


def bill(costs: dict, rates: dict, util: FlopRates, sides=SIDES, by: int = 0) -> dict:
    """{group | 'total': {side: hours, 'measured': the hours of the first side priced from
    measured rates, 'jobs', 'train_tokens', 'eval_tokens'}}, grouped by the cost key's part
    `by` (0 paper, 3 rule)."""
    out: dict = defaultdict(lambda: {**dict.fromkeys(sides, 0.0), "measured": 0.0, "jobs": 0,
                                     "train_tokens": 0.0, "eval_tokens": 0.0})  # fmt: skip
    for key, c in costs.items():
        for group in (key[by], "total"):
            row = out[group]
            row["jobs"] += sum(c.jobs.values())
            row["train_tokens"] += c.train_tokens
            row["eval_tokens"] += c.eval_tokens
            for side in sides:
                h, measured = hours(key, c, rates, util, side)
                row[side] += h
                if measured and side == sides[0]:
                    row["measured"] += h
    return dict(out)


def report(cfg: dict, jobs: list[tuple[str, str]], examples: Examples, bench: dict | None, target: str,
           configfile: str, aliases=()) -> dict:  # fmt: skip
    """The bill as data (what `make bill` writes as JSON and renders as markdown)."""
    costs, counts = job_costs(cfg, jobs, examples, aliases)
    measured = bool(bench and bench.get("gpu"))
    rates = throughputs(bench) if measured else {}
    gpu = bench["device"] if measured else ESTIMATE_GPU
    util = flop_rates(bench)
    shapes = sorted({k[1] for k in costs})
    return {
        "target": target, "config": configfile, "jobs": sum(counts.values()),
        "gpu": gpu, "peak_tflops": util.peak / 1e12,
        "mfu": {f"{w or 'other'}/{side}": m for (w, side), m in sorted(util.mfu.items(), key=str)},
        "mfu_default": ESTIMATE_MFU,
        "benchmark": ({"device": bench["device"], "date": bench.get("date")} if measured else None),
        "benchmark_ignored": (f"measured on {bench.get('device')}, not a GPU" if bench and not measured else None),
        "params": {s: encoder_shape(cfg, s).non_embedding_params() for s in shapes},
        "papers": bill(costs, rates, util),
        "rules": {r: {**v, "how": "measured" if v["measured"] >= v["ours"] > 0 else
                      "FLOPs estimate" if not v["measured"] else "measured + FLOPs"}
                  for r, v in bill(costs, rates, util, by=3).items() if r != "total"},
        "no_device_time": {r: {"jobs": n, "why": classify(r, aliases)} for r, n in sorted(counts.items())
                           if r not in PRICED},
        "examples_from": dict(sorted(examples.sources.items())),
    }  # fmt: skip


def _n(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}" if x >= 1 else f"{x:.2g}"


def markdown(rep: dict) -> str:
    """The bill as markdown: the README's block between <!-- bill:begin --> and <!-- bill:end -->."""
    from xlt.throughput import LENGTHS

    papers = rep["papers"]
    priced = sorted(rep["rules"])
    unit = "GPU-hours"
    peak = f"{rep['peak_tflops']:,.0f} TFLOP/s"
    params = ", ".join(f"{s} {n / 1e6:.1f}M" for s, n in rep["params"].items())
    formula = (f"FLOPs (6 · N · tokens training, 2 · N · tokens inference; N the encoder's non-embedding "
               f"parameters: {params})")
    if rep["benchmark"]:
        share = papers["total"]["measured"] / papers["total"]["ours"] if papers["total"]["ours"] else 0
        mfu = ", ".join(f"{k} {t:.1%} / {e:.1%}" for k, (t, e) in rep["mfu"].items()) or \
            f"none recorded: {rep['mfu_default']:.0%}"
        how = (f"{unit} of the work the GPU benchmark measured come from its tokens/s (benchmarks/gpu_throughput.json, "
               f"{rep['benchmark']['device']}, {rep['benchmark']['date']}: {share:.0%} of ours); the rest (encoder "
               f"shapes, workloads it did not measure) is an ESTIMATE from {formula} at the MFU it measured for the "
               f"same workload and side, training / evaluation ({mfu}; 'other': the side's mean, for MLM and "
               f"aligned pairs) of its bf16 dense peak ({peak}).")
    else:
        how = (f"{unit} are an ESTIMATE: no GPU throughput is measured yet (benchmarks/gpu_throughput.json); "
               f"from {formula} at {rep['mfu_default']:.0%} MFU of the {rep['gpu']} bf16 dense peak ({peak}). Until it is "
               "measured, ours and the Trainer's best flags are the same estimate.")
    lines = [
        f"Full-scale bill of `{rep['target']}` on `{rep['config']}`: {rep['jobs']:,} jobs of {len(priced) + len(rep['no_device_time'])} "
        f"rules; {len(priced)} rules run an encoder and are priced, the other {len(rep['no_device_time'])} cost no "
        f"device time. {how}",
        "",
        f"| paper | jobs | training tokens | inference tokens | ours ({unit}) | HF Trainer, best flags ({unit}) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for p in sorted(k for k in papers if k != "total") + ["total"]:
        r = papers[p]
        name = f"**{p}**" if p == "total" else p
        lines.append(f"| {name} | {r['jobs']:,} | {r['train_tokens']:.3g} | {r['eval_tokens']:.3g} | "
                     f"{_n(r['ours'])} | {_n(r['hf_best'])} |")
    lines += ["", f"| rule | jobs | training tokens | inference tokens | ours ({unit}) | priced from |",
              "|---|---:|---:|---:|---:|---|"]
    for rule in sorted(priced, key=lambda r: -rep["rules"][r]["ours"]):
        r = rep["rules"][rule]
        lines.append(f"| {rule} | {r['jobs']:,} | {r['train_tokens']:.3g} | {r['eval_tokens']:.3g} | {_n(r['ours'])} | {r['how']} |")
    lines += ["", "No device time: " + "; ".join(f"`{r}` ×{v['jobs']} ({v['why']})"
                                                 for r, v in rep["no_device_time"].items()) + "."]
    lines += ["", "Tokens per example are estimated means, not measured on the real data (xlt.throughput.LENGTHS): "
              + ", ".join(f"{t} {_mean(t):.0f}" for t in LENGTHS)
              + f"; one side of an aligned sentence pair {_mean('bitext'):.0f}. Example counts from: "
              + ", ".join(f"{k} ({n})" for k, n in rep["examples_from"].items()) + "."]
    if rep["benchmark_ignored"]:
        lines += ["", f"Not used: a throughput file {rep['benchmark_ignored']} (CPU tokens/s do not price GPU-hours)."]
    return "\n".join(lines) + "\n"
