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
    tokens      examples × the task's mean subwords per example (xlt.dag.throughput.LENGTHS:
                estimates, stated as such in the output); aligned sentences: BITEXT
    hours       tokens over the GPU benchmark's measured tokens/s (benchmarks/gpu_throughput.py
                --json) where it measured that encoder shape and workload (fine-tuning and
                evaluation of tagging, pair and QA tasks); otherwise, and for work no benchmark
                measures (MLM, aligned pairs and their anchors), FLOPs (6 · N · tokens training,
                2 · N · tokens inference, N the encoder's non-embedding parameters) at the MFU
                the benchmark measured for that workload and side (FlopRates), or 40% of an
                H100's bf16 peak while none was measured: an ESTIMATE, printed with its assumption

A fine-tune costs its epochs over its training data (times the multiple a paper declares for
an extra, e.g. both sides of every pair), its auxiliary streams (one batch of each per step:
tasks of multi-task learning; aligned pairs of continual learning, both sides, and the anchor's
forward pass through the released encoder) and its dev sets after each epoch. Every other rule
that runs an encoder is priced by the paper that asks for it (`Paper.bill`,
xlt/papers/<slug>/bill.py): the bill names no paper.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path

from xlt.workflow import paper_targets as P
from xlt.dag import resources as R
from xlt.dag import targets as T
from xlt.errors import XltError
from xlt.workflow.packs import PACK_RULE
from xlt.registry import get_task
from xlt.dag.throughput import encoder_shape, peak_tflops, shape_of
from xlt.dag.work import BITEXT, FLOPS, RUN, SPLIT_LANGSET, Work, mean_tokens, mlm_work, workload_of
from xlt.dag.throughput import LENGTHS

# Public sizes (examples per split, every language) of splits no paper table prints
# (docs/data.md): MARC 200k / 5k / 5k per language.
# XQuAD: 1,190 questions in each language (qa's test split beyond English SQuAD)
DATASET_SIZES = {("marc", "dev"): 5000, ("qa", "test"): 1190}
# Encoder shapes, by the Hub id (or local path) in the config's `encoders` block. XLM-R base is
# priced as mBERT: the same 12 × 768 transformer (the larger vocabulary is an embedding lookup).
# The FLOPs estimate, until a GPU benchmark measured the work: this GPU's bf16 dense peak
# (xlt.dag.throughput.PEAK_BF16_TFLOPS) at this model FLOP utilisation.
ESTIMATE_GPU = "NVIDIA H100 SXM"
ESTIMATE_MFU = 0.40
MLM_MASKED = 0.15  # the MLM head's vocabulary projection runs on the masked positions only
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
# Path grammar of the outputs of the shared rules priced here (relative to the results folder); the
# one output of a job that is priced (a second output, predictions or a CSV beside a JSON, is the
# same job). A paper's rules bring their own (PAPER_RULES).
PATTERNS = {
    "finetune": re.compile(rf"models/{RUN}$"),
    "evaluate": re.compile(rf"eval/{RUN}/{SPLIT_LANGSET}\.json$"),
    # the model of `dataset` scored on another dataset of its task (xlt.dag.targets.eval_file's testset)
    "evaluate_on": re.compile(rf"eval/{RUN}/on-(?P<testset>[^/]+)/{SPLIT_LANGSET}\.json$"),
    "build_encoder": re.compile(r"encoders/(?P<encoder>[^/]+)/pretrained$"),
}
TINY_ENCODER = "(tiny encoder)"  # what build_encoder's jobs are billed to: the tiny world's encoder, no paper's
# rule -> (paper, its BillRule): the rules that run an encoder for one paper
PAPER_RULES = {r.rule: (slug, r) for slug, paper in P.PAPERS.items() for r in paper.bill.rules}
# an extra's name -> a fine-tune's training work with it, as a multiple of the recipe's without it
TRAIN_MULTIPLES = {extra: m for paper in P.PAPERS.values() for extra, m in paper.bill.train_multiples.items()}
PRICED = set(PATTERNS) | set(PAPER_RULES)
# the papers' own rules that run no encoder, beside the shared ones
NO_DEVICE_TIME |= {rule: why for paper in P.PAPERS.values() for rule, why in paper.bill.no_device_time.items()}
# A pack of fine-tunes, K seeds of one model trained in one job (config engine.pack; xlt.workflow.packs'
# rule `finetune_pack_<seeds>`, whose outputs are the seeds' model directories): priced per model
# as a fine-tune, at the throughput of a pack of that many models
# the shared rules whose forwards run xlt.engine's evaluation path (config `evaluation`: bf16,
# token-budget batches); a paper's own say so in their BillRule (engine_eval)
ENGINE_EVAL = {"evaluate", "evaluate_on"}


def classify(rule: str, aliases=()) -> str:
    """'priced', or why the rule costs no device time; a rule that is neither is an error."""
    rule = R.kept_twin(rule)  # finetune_temp: a fine-tune whose models are removed once evaluated
    if rule in PRICED or PACK_RULE.fullmatch(rule):
        return "priced"
    if rule in NO_DEVICE_TIME:
        return NO_DEVICE_TIME[rule]
    if rule in aliases:
        return ALIAS
    raise XltError(f"rule {rule!r} is neither priced nor listed as costing no device time: give it a cost "
                   "model in xlt.workflow.bill (PATTERNS and job_costs, or a paper's bill_rules) or a reason in "
                   "xlt.workflow.bill.NO_DEVICE_TIME")


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
                       "xlt.workflow.bill.DATASET_SIZES")

    def tokens(self, dataset: str, langs, split: str) -> float:
        return sum(self.count(dataset, lang, split) for lang in langs) * mean_tokens(T.task_of(dataset))


@dataclass
class Cost:
    """The work of the jobs of one (paper, encoder shape, workload): tokens and model FLOPs."""

    train_tokens: float = 0.0
    eval_tokens: float = 0.0
    train_flops: float = 0.0
    eval_flops: float = 0.0
    jobs: dict = field(default_factory=lambda: defaultdict(int))


def dev_evaluations(hp: dict, steps: int) -> int:
    """How many times a fine-tune scores its dev sets: each epoch's end, and every `eval_steps`
    optimizer steps or `evals_per_epoch` times an epoch where the profile asks (the references'
    cadence: XTREME's every 100-1000 steps can cost more than the epochs' own)."""
    epochs = hp["epochs"]
    if hp.get("evals_per_epoch"):
        return epochs * hp["evals_per_epoch"]
    return epochs + (steps // hp["eval_steps"] if hp.get("eval_steps") else 0)


def _finetune(cfg: dict, w: dict, ex: Examples) -> list[Work]:
    dataset, recipe = w["dataset"], T.Recipe.parse(w["recipe"])
    hp = P.hparams(cfg, w["recipe"], dataset)
    epochs, bs = hp["epochs"], hp.get("batch_size", 32)
    n_train = sum(ex.count(dataset, lang, "train") for lang in recipe.train_langs)
    # an extra that trains more per example (a paper's PaperBill.train_multiples)
    multiple = math.prod(TRAIN_MULTIPLES.get(e.get("name"), 1) for e in hp.get("extras", []))
    steps = epochs * math.ceil(n_train / bs)
    main = Work(workload_of(dataset), train=multiple * epochs * n_train * mean_tokens(T.task_of(dataset)),
                # model selection: the dev sets of the training languages, or of the profile's own
                infer=dev_evaluations(hp, steps) * ex.tokens(dataset, hp.get("dev_languages") or recipe.train_langs, "dev"))
    out = [main]
    for a in P.aux_streams(cfg, w["recipe"], dataset, w["encoder"], w["init"]):
        n = steps * a.get("batch_size", bs)  # one batch of each stream per step; the streams cycle
        if a.get("kind") == "aligned_pairs":  # both sides trained; the anchor: English, released encoder
            out.append(Work(FLOPS, train=2 * n * mean_tokens("bitext"), infer=n * mean_tokens("bitext")))
        else:
            out.append(Work(workload_of(Path(a["data"]).name), train=n * mean_tokens(a["task"])))
    return out


def _evaluate(cfg: dict, w: dict, ex: Examples) -> list[Work]:
    scored = w.get("testset") or w["dataset"]
    return [Work(workload_of(scored), infer=ex.tokens(scored, T.langset_languages(cfg, w["langset"]), w["split"]))]


def _build_encoder(cfg: dict, w: dict, ex: Examples) -> list[Work]:
    m = cfg["encoders"][w["encoder"]]["build"]["mlm"]
    return mlm_work(m["steps"], m["batch_size"], m.get("max_length", 128))


COST_MODELS = {"finetune": _finetune, "evaluate": _evaluate, "evaluate_on": _evaluate, "build_encoder": _build_encoder}


def _paper_of(rule: str, w: dict) -> str:
    """The paper a shared rule's job is billed to: its recipe's profile's, or its extra tag's."""
    if rule == "build_encoder":
        return TINY_ENCODER
    # `<profile>-<extra tag>` is billed to the paper whose tag grammar it is
    profile, _, tag = T.Recipe.parse(w["recipe"]).hparams.partition("-")
    # a paper's second profile (`<slug>_<name>`, e.g. xmixup_qa) is billed to that paper
    own = next((slug for slug in P.PAPERS if profile.startswith(f"{slug}_")), profile)
    return P.tag_owner(tag)[0] if tag else own


def job_costs(cfg: dict, jobs: list[tuple[str, list[str]]], examples: Examples, aliases=()) -> tuple[dict, dict]:
    """({(paper, shape, workload, rule, models in its job, runs the engine's evaluation): Cost},
    {rule: jobs} of every rule): each rule priced or classified as costing no device time
    (`classify`). A pack's job is priced as its models' fine-tunes (rule `finetune`)."""
    costs: dict = defaultdict(Cost)
    counts: dict = defaultdict(int)
    results = cfg["results"].rstrip("/") + "/"
    for rule, outputs in jobs:
        classify(rule, aliases)
        counts[rule] += 1
        packed = bool(PACK_RULE.fullmatch(rule))
        base = "finetune" if packed else R.kept_twin(rule)
        if base not in PRICED:
            continue
        pattern = PAPER_RULES[base][1].output if base in PAPER_RULES else PATTERNS[base]
        found = [m for p in outputs if (m := pattern.search(p[len(results):] if p.startswith(results) else p))]
        if not found:
            raise XltError(f"rule {rule}: no output of its job matches the bill's path grammar ({', '.join(outputs)})")
        models = len(found) if packed else 1  # a pack: one model per output; other jobs: their first output
        for j, m in enumerate(found[:models]):
            w = m.groupdict()
            if base in PAPER_RULES:
                paper, priced = PAPER_RULES[base]
                works = priced.price(cfg, w, examples)
                encoder, engine_eval = w.get("encoder") or priced.encoder(cfg, w), priced.engine_eval
            else:
                paper, works = _paper_of(base, w), COST_MODELS[base](cfg, w, examples)
                encoder, engine_eval = w["encoder"], base in ENGINE_EVAL
            shape = shape_of(cfg, encoder)
            es = encoder_shape(cfg, shape)
            n, head = es.non_embedding_params(), es.hidden * es.vocab * MLM_MASKED
            for i, work in enumerate(works):
                c = costs[(paper, shape, work.workload, base, models, engine_eval)]
                c.train_tokens += work.train
                c.eval_tokens += work.infer
                c.train_flops += 6 * (n + (head if work.mlm else 0)) * work.train
                c.eval_flops += 2 * n * work.infer
                if i == 0 and j == 0:
                    c.jobs[base] += 1
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
        raise XltError(f"no bf16 peak known for GPU {gpu!r} (xlt.dag.throughput.PEAK_BF16_TFLOPS)")
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


# ---- the levers of issue 40: several models in one job, bf16 evaluation, several jobs on one GPU ----
# Each prices from a GPU run that measured it (benchmarks/gpu/*.json: gpu_throughput.py's
# ours_packed rows and ours' bf16_budget evaluation), else from FLOPs at the MFU stated here: an
# ESTIMATE, said so in the bill. None lowers a job's price below what it costs alone.
PACK_MFU = 0.20  # a pack's training at most: issue 40's batch-256 pair run on an H200 (20% MFU; no JSON on record)
EVAL_MFU = 0.30  # bf16 evaluation in token-budget batches: issue 40's target at mBERT shape (not measured)
SHARE = 4  # jobs on one GPU at once (a job that leaves most of it idle)
# their MFU together at most: issue 40's four copies of the pair job, 2.06x one alone at 5.5% (no JSON on record)
SHARE_MFU = 0.11
# the levers added one at a time: `ours_alone` one job per GPU (what the benchmark measured), then
# packing, then the evaluation path, then sharing (`ours`: all three)
STAGES = ("ours_alone", "ours_pack", "ours_pack_eval", "ours")
LEVERS = {"pack": "ours_pack", "eval": "ours_pack_eval", "share": "ours"}
LEVER_NAMES = {"pack": "several fine-tunes in one job", "eval": "evaluation in bf16, token-budget batches",
               "share": "several jobs on one GPU"}
SIDES = ("ours", "ours_alone", "ours_pack", "ours_pack_eval", "hf_best")


@dataclass
class Levers:
    """The levers' settings and what a GPU run measured of them."""

    pack: int = 1  # config engine.pack (the DAG's pack jobs say which fine-tunes pack)
    eval_bf16: bool = True  # config evaluation.precision is not fp32 (auto: bf16 on a GPU)
    share: int = SHARE  # jobs on one GPU, every job (a rule and shape in `shares` has its own)
    shares: dict = field(default_factory=dict)  # (rule, shape) -> jobs on one GPU (`sharing`: as configured)
    sharing_setting: str = ""  # how the sharing was configured, in words
    packed: dict = field(default_factory=dict)  # (shape, workload, K) -> a pack's training tokens/s, its models together
    evaluation: dict = field(default_factory=dict)  # (shape, workload) -> bf16 token-budget evaluation tokens/s
    measured_in: dict = field(default_factory=dict)  # lever -> the file that measured it


REPO = Path(__file__).resolve().parents[2]
_RULE_LINE = re.compile(r"^rule (\w+):|^use rule (\w+) as (\w+)")
_KIND = re.compile(r'job_resources\(config, "(\w+)"\)')


def gpu_runs(folder: Path) -> list[tuple[str, dict]]:
    """(file, JSON) of the GPU runs of issue 40's levers in `folder` (benchmarks/gpu), oldest first
    (by their date, then name)."""
    runs = [(f"{folder.relative_to(REPO)}/{f.name}" if folder.is_relative_to(REPO) else str(f), json.loads(f.read_text()))
            for f in sorted(folder.glob("*.json"))]
    return sorted(runs, key=lambda r: (str(r[1].get("date") or ""), r[0]))


def rule_kinds(repo: Path = REPO) -> dict[str, str]:
    """rule -> the job kind its resources come from (rules/*.smk: `R.job_resources(config, "<kind>")`;
    `use rule x as y` inherits x's); a pack of fine-tunes is a fine-tune."""
    kinds, uses, current = {}, {}, None
    for path in sorted((repo / "rules").glob("*.smk")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if m := _RULE_LINE.match(line):
                current = m.group(1) or m.group(3)
                if m.group(2):
                    uses[current] = m.group(2)
            elif current and (k := _KIND.search(line)):
                kinds[current] = k.group(1)
    for new, old in uses.items():
        kinds.setdefault(new, kinds.get(old))
    return {r: k for r, k in kinds.items() if k}


def sharing(cfg: dict, env) -> tuple[dict, str]:
    """({(rule, shape): jobs on one GPU, where more than one}, the setting in words) as
    xlt.dag.resources configures it: XLT_SLURM_GPU_SHARDS set and compute.jobs.<kind>.jobs_per_gpu."""
    kinds = rule_kinds()
    sizes = {}
    for enc in cfg.get("encoders") or {}:
        try:
            sizes.setdefault(shape_of(cfg, enc), R.size_class(cfg, enc))
        except XltError:
            continue
    out = {}
    for rule, kind in kinds.items():
        if kind not in R.KINDS:
            continue
        for shape, size in sizes.items():
            n = R.jobs_per_gpu(cfg, kind, size, env)
            if n > 1:
                out[(rule, shape)] = n
    per_kind = {k: v["jobs_per_gpu"] for k, v in ((cfg.get("compute") or {}).get("jobs") or {}).items()
                if "jobs_per_gpu" in v}  # fmt: skip
    said = "; ".join(f"{k} {', '.join(f'{s} {n}' for s, n in v.items()) if isinstance(v, dict) else v}"
                     for k, v in per_kind.items()) or "none"
    if out:
        return out, f"on: XLT_SLURM_GPU_SHARDS={env.get('XLT_SLURM_GPU_SHARDS')}, jobs per GPU {said}"
    why = "XLT_SLURM_GPU_SHARDS unset" if not env.get("XLT_SLURM_GPU_SHARDS") else "no job kind shares"
    return out, f"off ({why}): every GPU job takes a whole GPU"


def levers_of(cfg: dict, runs: list[tuple[str, dict]] = (), env=None) -> Levers:
    """The levers of `cfg` in environment `env` (GPU sharing: XLT_SLURM_GPU_SHARDS; None: unset),
    with the measurements of the GPU runs `runs` ((file, JSON of gpu_throughput.py), oldest
    first: a later run's measurement wins)."""
    shares, setting = sharing(cfg, env or {})
    lv = Levers(pack=int((cfg.get("engine") or {}).get("pack", 1)),
                eval_bf16=(cfg.get("evaluation") or {}).get("precision", "auto") != "fp32",
                share=1, shares=shares, sharing_setting=setting)  # fmt: skip
    for name, run in runs:
        if not run.get("gpu"):
            continue
        for r in run.get("rows", []):
            if r.get("side") == "ours_packed" and r.get("tokens_per_s"):
                lv.packed[(r["shape"], r["workload"], int(r.get("pack", 1)))] = r["tokens_per_s"]
                lv.measured_in["pack"] = name
            budget = (r.get("eval_variants") or {}).get("bf16_budget") or {}
            if r.get("side") == "ours" and budget.get("tokens_per_s"):
                lv.evaluation[(r["shape"], r["workload"])] = budget["tokens_per_s"]
                lv.measured_in["eval"] = name
    return lv


def _split_hours(key: tuple, c: Cost, rates: dict, util: FlopRates, side: str) -> tuple[float, float, bool]:
    """(training hours, evaluation hours, measured?) of one cost, one job per GPU: from the
    benchmark's tokens/s where it measured this (shape, workload, side), else from FLOPs at the
    utilisation `util` gives."""
    _, shape, workload, *_ = key
    if (shape, workload, side) in rates:
        train_rate, eval_rate = rates[(shape, workload, side)]
        return c.train_tokens / train_rate / 3600, c.eval_tokens / eval_rate / 3600, True
    train_rate, eval_rate = util(None if workload == FLOPS else workload, side)
    return c.train_flops / train_rate / 3600, c.eval_flops / eval_rate / 3600, False


def _at_mfu(flops: float, h: float, peak: float, mfu) -> float:
    """Hours of work `flops` that takes `h` hours alone, at the MFU `mfu(MFU alone)` (never slower)."""
    if not (flops and h):
        return h
    alone = flops / (h * 3600 * peak)
    return flops / (max(alone, mfu(alone)) * peak) / 3600


def hours(key: tuple, c: Cost, rates: dict, util: FlopRates, side: str, levers: Levers | None = None) -> tuple[float, float]:
    """(hours, of them priced from measured rates) of one cost on one side: `hf_best` and
    `ours_alone` one job per GPU; the other stages of ours with the levers added (STAGES)."""
    if side not in STAGES[1:]:
        t, e, measured = _split_hours(key, c, rates, util, "ours" if side == "ours_alone" else side)
        return t + e, (t + e if measured else 0.0)
    stage, lv = STAGES.index(side), levers or Levers()
    _, shape, workload, _, models, engine_eval = key if len(key) > 4 else (*key, 1, False)
    t, e, measured = _split_hours(key, c, rates, util, "ours")
    t_measured = e_measured = measured
    if stage >= 1 and models > 1:  # a pack: its models trained together
        if (shape, workload, models) in lv.packed:
            t, t_measured = c.train_tokens / lv.packed[(shape, workload, models)] / 3600, True
        else:
            t, t_measured = _at_mfu(c.train_flops, t, util.peak, lambda m: min(models * m, PACK_MFU)), False
    if stage >= 2 and engine_eval and lv.eval_bf16 and e:
        if (shape, workload) in lv.evaluation:
            e, e_measured = c.eval_tokens / lv.evaluation[(shape, workload)] / 3600, True
        else:
            e, e_measured = _at_mfu(c.eval_flops, e, util.peak, lambda m: EVAL_MFU), False
    n = lv.shares.get((key[3], shape), lv.share) if len(key) > 4 else lv.share
    if stage >= 3 and n > 1:  # what still leaves the GPU idle shares it
        shared = [_at_mfu(f, h, util.peak, lambda m: min(n * m, SHARE_MFU)) for f, h in
                  ((c.train_flops, t), (c.eval_flops, e))]  # fmt: skip
        t_measured, e_measured = t_measured and shared[0] == t, e_measured and shared[1] == e
        t, e = shared
    return t + e, (t if t_measured else 0.0) + (e if e_measured else 0.0)


def bill(costs: dict, rates: dict, util: FlopRates, sides=SIDES, by: int = 0, levers: Levers | None = None) -> dict:
    """{group | 'total': {side: hours, 'measured': the hours of ours one job per GPU priced from
    measured rates, 'measured_ours': of ours with the levers, 'jobs', 'train_tokens',
    'eval_tokens'}}, grouped by the cost key's part `by` (0 paper, 3 rule)."""
    out: dict = defaultdict(lambda: {**dict.fromkeys(sides, 0.0), "measured": 0.0, "measured_ours": 0.0,
                                     "jobs": 0, "train_tokens": 0.0, "eval_tokens": 0.0})  # fmt: skip
    for key, c in costs.items():
        for group in (key[by], "total"):
            row = out[group]
            row["jobs"] += sum(c.jobs.values())
            row["train_tokens"] += c.train_tokens
            row["eval_tokens"] += c.eval_tokens
            for side in sides:
                h, measured = hours(key, c, rates, util, side, levers)
                row[side] += h
                if side == "ours_alone":
                    row["measured"] += measured
                elif side == "ours":
                    row["measured_ours"] += measured
    return dict(out)


def _lever_source(lever: str, lv: Levers) -> str:
    if lever in lv.measured_in:
        return f"measured ({lv.measured_in[lever]})"
    return {"pack": f"ESTIMATE: a pack of K trains at K × one job's MFU, at most {PACK_MFU:.0%} (issue 40's batch-256 "
                    "pair run; no packing run on record)",
            "eval": f"ESTIMATE: {EVAL_MFU:.0%} MFU (issue 40's target at mBERT shape; no bf16 evaluation run on record)",
            "share": f"ESTIMATE: N jobs on one GPU run at N × one job's MFU, at most {SHARE_MFU:.0%} "
                     "(issue 40's four copies of the pair job, 2.06× one alone; no sharing run on record)"}[lever]


def _share_setting(lv: Levers) -> str:
    return lv.sharing_setting or f"{lv.share} jobs to a GPU"


def _sharing_alternative(cfg: dict, costs: dict, rates: dict, util, lv: Levers, env) -> dict:
    """The total of ours under the other sharing setting: without sharing where it is on, with
    the config's jobs_per_gpu (as if XLT_SLURM_GPU_SHARDS were set) where it is off."""
    on = bool(lv.shares) or lv.share > 1
    if on:
        alt, label = replace(lv, share=1, shares={}), "without sharing (whole GPUs)"
    else:
        shares, _ = sharing(cfg, {**(env or {}), "XLT_SLURM_GPU_SHARDS": "64"})
        alt = replace(lv, share=1, shares=shares)
        label = "with sharing (XLT_SLURM_GPU_SHARDS set, compute.jobs.<kind>.jobs_per_gpu as configured)"
    h = bill(costs, rates, util, sides=("ours",), levers=alt)["total"]["ours"] if costs else 0.0
    return {"label": label, "ours": h}


def job_minutes(cfg: dict, jobs, examples: Examples, rates: dict, util, lv: Levers) -> dict:
    """{rule: {size: {dataset | "*": minutes}}}: the wall-clock of the costliest job of each rule,
    encoder size and dataset, alone on the bill's GPU with the in-job levers (packing, bf16
    evaluation; sharing aside: xlt.dag.resources multiplies by the jobs sharing a GPU). A
    pack's rule is `finetune_pack`, its job all its models. What slurm/runtimes.json holds."""
    out: dict = defaultdict(lambda: defaultdict(dict))
    results = cfg["results"].rstrip("/") + "/"
    for rule, outputs in jobs:
        if classify_quiet(rule) != "priced":
            continue
        costs, _ = job_costs(cfg, [(rule, outputs)], examples)
        h = sum(hours(k, c, rates, util, "ours_pack_eval", lv)[0] for k, c in costs.items())
        base = "finetune" if PACK_RULE.fullmatch(rule) else R.kept_twin(rule)
        pattern = PAPER_RULES[base][1].output if base in PAPER_RULES else PATTERNS[base]
        w = next((m.groupdict() for p in outputs if (m := pattern.search(p[len(results):] if p.startswith(results) else p))), {})
        encoder = w.get("encoder") or (PAPER_RULES[base][1].encoder(cfg, w) if base in PAPER_RULES else None)
        size = R.size_class(cfg, encoder)
        cell = out[R.runtime_rule(rule)][size]
        for key in ("*", w.get("dataset")):
            if key:
                cell[key] = max(cell.get(key, 0.0), round(h * 60, 2))
    return {r: {s: dict(sorted(d.items())) for s, d in sorted(v.items())} for r, v in sorted(out.items())}


def classify_quiet(rule: str) -> str:
    """'priced' or not (no error for an unknown rule: `classify` reports those)."""
    return "priced" if R.kept_twin(rule) in PRICED or PACK_RULE.fullmatch(rule) else "no"


def report(cfg: dict, jobs: list[tuple[str, str]], examples: Examples, bench: dict | None, target: str,
           configfile: str, aliases=(), levers: Levers | None = None, env=None) -> dict:  # fmt: skip
    """The bill as data (what `make bill` writes as JSON and renders as markdown); `levers`:
    levers_of(cfg, env=env) (nothing measured) unless given; `env`: where GPU sharing is
    configured (XLT_SLURM_GPU_SHARDS; None: unset)."""
    costs, counts = job_costs(cfg, jobs, examples, aliases)
    lv = levers or levers_of(cfg, env=env)
    measured = bool(bench and bench.get("gpu"))
    rates = throughputs(bench) if measured else {}
    gpu = bench["device"] if measured else ESTIMATE_GPU
    util = flop_rates(bench)
    shapes = sorted({k[1] for k in costs})
    papers = bill(costs, rates, util, levers=lv)
    total = papers["total"]
    packs = [(r, outs) for r, outs in jobs if PACK_RULE.fullmatch(r)]
    settings = {"pack": f"engine.pack = {lv.pack}: {sum(len(o) for _, o in packs):,} fine-tunes in {len(packs):,} jobs",
                "eval": f"evaluation.precision {'bf16' if lv.eval_bf16 else 'fp32'}: evaluation jobs and grids",
                "share": _share_setting(lv)}  # fmt: skip
    before = dict(zip(LEVERS, ["ours_alone", *LEVERS.values()]))
    return {
        "target": target, "config": configfile, "jobs": sum(counts.values()),
        "gpu": gpu, "peak_tflops": util.peak / 1e12,
        "mfu": {f"{w or 'other'}/{side}": m for (w, side), m in sorted(util.mfu.items(), key=str)},
        "mfu_default": ESTIMATE_MFU,
        "benchmark": ({"device": bench["device"], "date": bench.get("date")} if measured else None),
        "benchmark_ignored": (f"measured on {bench.get('device')}, not a GPU" if bench and not measured else None),
        "params": {s: encoder_shape(cfg, s).non_embedding_params() for s in shapes},
        "papers": papers,
        "levers": {lever: {"setting": settings[lever], "saves": total[before[lever]] - total[stage],
                           "from": _lever_source(lever, lv)} for lever, stage in LEVERS.items()},
        "sharing_alternative": _sharing_alternative(cfg, costs, rates, util, lv, env),
        "runtimes": job_minutes(cfg, jobs, examples, rates, util, lv),
        "rules": {r: {**v, "how": "measured" if v["measured"] >= v["ours_alone"] > 0 else
                      "FLOPs estimate" if not v["measured"] else "measured + FLOPs"}
                  for r, v in bill(costs, rates, util, by=3, levers=lv).items() if r != "total"},
        "no_device_time": {r: {"jobs": n, "why": classify(r, aliases)} for r, n in sorted(counts.items())
                           if classify(r, aliases) != "priced"},
        "examples_from": dict(sorted(examples.sources.items())),
    }  # fmt: skip


def _n(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}" if x >= 1 else f"{x:.2g}"


def markdown(rep: dict) -> str:
    """The bill as markdown: the README's block between <!-- bill:begin --> and <!-- bill:end -->."""

    papers = rep["papers"]
    priced = sorted(rep["rules"])
    unit = "GPU-hours"
    peak = f"{rep['peak_tflops']:,.0f} TFLOP/s"
    params = ", ".join(f"{s} {n / 1e6:.1f}M" for s, n in rep["params"].items())
    formula = (f"FLOPs (6 · N · tokens training, 2 · N · tokens inference; N the encoder's non-embedding "
               f"parameters: {params})")
    if rep["benchmark"]:
        share = papers["total"]["measured"] / papers["total"]["ours_alone"] if papers["total"]["ours_alone"] else 0
        mfu = ", ".join(f"{k} {t:.1%} / {e:.1%}" for k, (t, e) in rep["mfu"].items()) or \
            f"none recorded: {rep['mfu_default']:.0%}"
        how = (f"{unit} of the work the GPU benchmark measured come from its tokens/s (benchmarks/gpu_throughput.json, "
               f"{rep['benchmark']['device']}, {rep['benchmark']['date']}: {share:.0%} of ours one job per GPU); the rest (encoder "
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
        f"device time. {how} Ours comes one job per GPU as measured, and with issue 40's levers: several "
        f"fine-tunes in one job, the evaluation path in bf16 with token-budget batches, several jobs on one GPU "
        f"(the levers' table says what each saves and from what; an ESTIMATE where no GPU run measured it).",
        "",
        f"| paper | jobs | training tokens | inference tokens | ours ({unit}) | ours, one job per GPU ({unit}) | "
        f"HF Trainer, best flags ({unit}) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for p in sorted(k for k in papers if k != "total") + ["total"]:
        r = papers[p]
        name = f"**{p}**" if p == "total" else p
        lines.append(f"| {name} | {r['jobs']:,} | {r['train_tokens']:.3g} | {r['eval_tokens']:.3g} | "
                     f"{_n(r['ours'])} | {_n(r['ours_alone'])} | {_n(r['hf_best'])} |")
    lines += ["", f"| lever (added in this order) | setting | saves ({unit}) | priced from |", "|---|---|---:|---|"]
    for lever, v in rep["levers"].items():
        lines.append(f"| {LEVER_NAMES[lever]} | {v['setting']} | {_n(v['saves'])} | {v['from']} |")
    t, alt = papers["total"], rep["sharing_alternative"]
    lines += ["", f"Ours in total: {_n(t['ours'])} {unit} on the {rep['gpu']} ({_n(t['measured_ours'])} priced from measured "
              f"rates, {_n(t['ours'] - t['measured_ours'])} estimated), GPU sharing {rep['levers']['share']['setting']}; "
              f"{alt['label']}: {_n(alt['ours'])} {unit}."]
    lines += ["", f"| rule | jobs | training tokens | inference tokens | ours ({unit}) | ours, one job per GPU ({unit}) | "
              "one job per GPU priced from |", "|---|---:|---:|---:|---:|---:|---|"]
    for rule in sorted(priced, key=lambda r: -rep["rules"][r]["ours_alone"]):
        r = rep["rules"][rule]
        lines.append(f"| {rule} | {r['jobs']:,} | {r['train_tokens']:.3g} | {r['eval_tokens']:.3g} | {_n(r['ours'])} | "
                     f"{_n(r['ours_alone'])} | {r['how']} |")
    lines += ["", "No device time: " + "; ".join(f"`{r}` ×{v['jobs']} ({v['why']})"
                                                 for r, v in rep["no_device_time"].items()) + "."]
    lines += ["", "Tokens per example are estimated means, not measured on the real data (xlt.dag.throughput.LENGTHS): "
              + ", ".join(f"{t} {mean_tokens(t):.0f}" for t in LENGTHS)
              + f"; one side of an aligned sentence pair {mean_tokens('bitext'):.0f}. Example counts from: "
              + ", ".join(f"{k} ({n})" for k, n in rep["examples_from"].items()) + "."]
    if rep["benchmark_ignored"]:
        lines += ["", f"Not used: a throughput file {rep['benchmark_ignored']} (CPU tokens/s do not price GPU-hours)."]
    return "\n".join(lines) + "\n"
