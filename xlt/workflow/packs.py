"""Packed fine-tunes in the workflow: which seeds of one model train together in one job
(config `engine.pack: K`, xlt.engine.packed), computed here so that rules/finetune.smk only
declares one rule per pack of seeds.

A model family is (encoder, init, dataset, recipe); its seeds are the ones the configured
tables and figures read (their inputs' paths: `…/<encoder>/<init>/<dataset>/<recipe>/seed<n>`,
and the models a paper's own rules read: Paper.models_read), taken in order K at a time. A
pack of two or more seeds is one job, `finetune_pack_<seeds>`, whose outputs are the seeds'
own model directories: asking for one of them runs the pack. A seed in no pack (K = 1, a
family that cannot pack, a seed no table reads) is the plain `finetune` job. Nothing is
trained that no table asked for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xlt.workflow import paper_targets as P
from xlt.dag import resources as R
from xlt.dag import targets as T
from xlt.errors import XltError
from xlt.registry import get_task
from xlt.stages.finetune_job import FinetuneJob

RULE = "finetune"  # the one-model rule; a pack's rule is `<RULE>_pack_<seeds>`
PACK_RULE = re.compile(rf"{RULE}_pack(?:_\d+)+(?:{R.TEMP_SUFFIX})?")
PACKABLE_KINDS = ("tagging", "classification", "span_qa")  # the heads xlt.engine.packed stacks
_RUN = re.compile(r"(?:^|/)([^/]+)/([^/]+)/([^/]+)/([^/]+\.[^/]+)/seed(\d+)(?:/|$)")


def pack_size(cfg: dict) -> int:
    """`engine.pack` (default 1: every fine-tune its own job)."""
    k = (cfg.get("engine") or {}).get("pack", 1)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise XltError(f"engine.pack={k!r}: the number of seeds trained in one job, an integer >= 1 "
                       "(1: no packing; config.yaml's GPU value: 4)")
    return k


def base_rule(rule: str) -> str:
    """A pack's rule is the fine-tune rule (its stage, its price per model), as is the rule of
    models removed once evaluated (finetune_temp); others are themselves."""
    return RULE if PACK_RULE.fullmatch(rule) else R.kept_twin(rule)


def pack_models(rule: str) -> int:
    """The models one job of `rule` trains: a pack's seeds, else 1."""
    m = PACK_RULE.fullmatch(rule)
    return len(R.kept_twin(rule).split("_")) - 2 if m else 1


def why_not(cfg: dict, family: tuple[str, str, str, str]) -> str | None:
    """None if the family's fine-tunes can train in a pack (xlt.engine.packed.why_not_packable,
    read from the config: the encoder's architecture is checked when the job starts, and a pack
    that cannot stack trains its models one after another)."""
    encoder, init, dataset, recipe = family
    head = get_task(T.task_of(dataset)).head
    if head not in PACKABLE_KINDS:
        return f"a {head} head is not packable"
    if T.Recipe.parse(recipe).aux:
        return "a recipe with auxiliary streams trains alone"
    hp = P.hparams(cfg, recipe, dataset)
    if hp.get("extras"):
        return "a model with extras trains alone"
    if hp.get("fast_path") == "off":
        return "fast_path off: the Hugging Face forward draws other dropout masks than a pack"
    return None


@dataclass(frozen=True)
class Pack:
    seeds: tuple[int, ...]
    families: tuple[tuple[str, str, str, str], ...]  # (encoder, init, dataset, recipe), sorted
    temp: bool = False  # its models are removed once evaluated (xlt.workflow.footprint)

    @property
    def rule(self) -> str:
        return f"{RULE}_pack_" + "_".join(map(str, self.seeds)) + (R.TEMP_SUFFIX if self.temp else "")

    @property
    def stem(self) -> str:
        """What names the pack beside its models' seed<n> (its log, its loop's checkpoint)."""
        return pack_stem(self.seeds)

    def encoder_constraint(self) -> str:
        """The rule's `encoder` wildcard pattern: a look-ahead admits these families only (a
        family is four wildcards; one pattern sees the whole path after `encoder`)."""
        alternatives = "|".join(re.escape("/".join(f)) for f in self.families)
        return rf"(?=(?:{alternatives})/seed\d+$)[^/]+"


def wanted_seeds(cfg: dict) -> dict[tuple[str, str, str, str], set[int]]:
    """Each model family the configured tables and figures read, and its seeds (their
    inputs' paths, and the models a paper's own rules read: Paper.models_read)."""
    out: dict = {}
    for slug in P.configured(cfg):
        paper = P.get_paper(slug)
        readers = [*(t.inputs for t in paper.tables), *([paper.figure_inputs] if P.figure_names(cfg, slug) else []),
                   *([paper.models_read] if paper.models_read else [])]
        for f in (f for read in readers for f in _read(read, cfg)):
            m = _RUN.search(f)
            if m and m.group(1) in cfg["encoders"]:
                out.setdefault(m.groups()[:4], set()).add(int(m.group(5)))
    return out


def _read(read, cfg: dict) -> list[str]:
    """A table's (figures', a paper's rules') inputs; none where this config cannot name them
    (a table the run does not ask for may not fit a trimmed config: asking for it says why)."""
    try:
        return read(cfg)
    except XltError:
        return []


def packs(cfg: dict, removed=frozenset()) -> list[Pack]:
    """The packs of `cfg` (none when engine.pack is 1), one per distinct tuple of seeds and, where
    `removed` (families whose models are removed once evaluated) names some, one more for them."""
    k = pack_size(cfg)
    if k == 1 or R.processes(cfg, RULE) > 1:  # a DDP fine-tune (several GPUs a job) trains alone
        return []
    by_seeds: dict[tuple[int, ...], list] = {}
    for family, seeds in wanted_seeds(cfg).items():
        if why_not(cfg, family) is not None:
            continue
        ordered = sorted(seeds)
        for i in range(0, len(ordered), k):
            chunk = tuple(ordered[i:i + k])
            if len(chunk) > 1:
                by_seeds.setdefault(chunk, []).append(family)
    out = []
    for seeds, fams in sorted(by_seeds.items()):
        for temp in (False, True):
            if part := tuple(sorted(f for f in fams if (f in removed) == temp)):
                out.append(Pack(seeds, part, temp))
    return out


def pack_resources(cfg: dict, pack: Pack) -> dict:
    """A fine-tune's resources; its time limit the bill's priced time of a pack (xlt.dag.resources),
    else a fine-tune's times the pack's size: an upper bound (a pack of K costs less than K jobs
    where it pays, at most K where it trains one model after another); within the cap either way."""
    res = R.job_resources(cfg, RULE)
    runtime = res["runtime"]

    def pack_runtime(wildcards, attempt, rulename=None):
        return runtime(wildcards, attempt, rulename=rulename or pack.rule, models=len(pack.seeds))

    return {**res, "runtime": pack_runtime}


def pack_stem(seeds) -> str:
    """What names a pack of `seeds` beside its models' seed<n> (its log, its loop's checkpoint)."""
    return "pack-seeds" + "-".join(map(str, seeds))


def finetune_job(cfg: dict, wildcards, outputs: list[str]) -> FinetuneJob:
    """The job that makes the models `outputs` (results/models/<family>/seed<n>, one per seed:
    several, a pack), read from the config once, here."""
    w, results = wildcards, cfg["results"]
    outs = [str(o) for o in outputs]
    seeds = [int(o.rsplit("/seed", 1)[1]) for o in outs]
    family = f"{w.encoder}/{w.init}/{w.task}/{w.recipe}"
    packed = len(seeds) > 1
    return FinetuneJob(
        task=T.task_of(w.task),
        encoder=T.encoder_source(cfg, w.encoder, w.init),
        data=f"{results}/data/{w.task}",
        train_langs=list(T.Recipe.parse(w.recipe).train_langs),
        hparams=P.hparams(cfg, w.recipe, w.task),
        seeds=seeds,
        outs=outs,
        checkpoint_dirs=[o.replace(f"{results}/models/", f"{results}/checkpoints/models/", 1) for o in outs],
        aux=P.aux_streams(cfg, w.recipe, w.task, w.encoder, w.init),
        # target-dev (oracle) selection beside the model's own, where a paper's table shows it
        oracle_langs=[P.oracle_languages(cfg, o) for o in outs],
        pack_checkpoint_dir=f"{results}/checkpoints/models/{family}/{pack_stem(seeds)}" if packed else None,
        tensorboard_dir=None if packed else f"{results}/logs/tensorboard/models/{family}/seed{seeds[0]}",
        collapse_retries=cfg["collapse"]["retries"],
        collapse_rule={k: v for k, v in cfg["collapse"].items() if k != "retries"},
        # under DDP the job's threads are shared by its processes (one per GPU)
        threads=R.process_threads(cfg, RULE),
    )
