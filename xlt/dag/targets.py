"""The path grammar, the datasets and the downloads, computed here (tested) rather than in
.smk files. What each paper makes (its recipes, tables, figures) is its plugin's: xlt.papers.

    {raw_root}/manifests/{entry}.json                             a downloaded catalog source
    results/world/manifest.json                                   the synthetic world
    {raw_root}/encoders/{encoder}/                                a Hub encoder's snapshot at a commit
                                                                  (download_encoder; xlt.sources.encoders)
    results/encoders/{encoder}/{init}/                            an encoder made in the DAG: `pretrained`
                                                                  (built, tiny preset) or adapted (`mlm-…`)
    results/data/{task}/                                          normalised data ({lang}/{split}.jsonl)
    results/models/{encoder}/{init}/{task}/{recipe}/seed{seed}/   a fine-tuned model
    results/eval/{encoder}/{init}/{task}/{recipe}/seed{seed}/{split}.{langset}.json
    results/eval/{encoder}/{init}/{task}/{recipe}/seed{seed}/on-{testset}/{split}.{langset}.json
                                                                  the same model scored on another dataset of
                                                                  its task (`eval_file(..., testset=...)`)
    results/tables/{paper}/{table}.{csv,md,tex}
    results/figures/{paper}/{figure}.{png,pdf,csv}
    results/{paper}/…                                             a paper's own analyses (its plugin and
                                                                  rules/<paper>.smk; its wildcards: Paper.wildcards)

A recipe is `<training languages joined by '+'>.<hparams profile>[.<aux set>]`, e.g.
`en.<profile>` or `de+en+es+fr.<profile>` (languages sorted, so a recipe has one spelling);
an aux set (config `aux_sets`) adds auxiliary task streams: `en.<profile>.<aux set>`. A profile
`<profile>-<tag>` adds the extra a paper's tag names (xlt.workflow.paper_targets.hparams).

The `{task}` of a path is a *dataset*: the registry task, plus `.<set>` for a named data set of
it: a UD treebank selection a paper picks (`pos.es_ancora`, `pos.xtreme`; config `data.ud.sets`),
or a named set of another task (`qa.mlqa`, `xnli.mixed`; config `data.<task>.sets`), which
declares its own languages and splits and is prepared (`results/data/<task>.<set>/`) when a
job reads it, e.g. an evaluation `on-<testset>`.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from xlt.engine.train_config import TrainConfig
from xlt.errors import XltError, check_config_ref
from xlt.registry import TASKS, get_task
from xlt.stages.prepare import raw_files

TABLE_FORMATS = ("csv", "md", "tex", "html")  # html: the Markdown rendered, as the report shows it
FIGURE_FORMATS = ("png", "pdf", "csv")  # the CSV holds the numbers plotted
WILDCARDS = {
    "encoder": r"[A-Za-z0-9_]+",
    # see Init; the kinds the papers declare (InitKind, Paper.inits) join it in init_pattern()
    "init": r"pretrained|mlm-[a-z]+(\.[a-z0-9_]+)?-[A-Za-z0-9_]+",
    "task": r"[a-z]+(\.[a-z0-9_]+)?",  # a dataset: <task>[.<set>]
    "testset": r"[a-z]+(\.[a-z0-9_]+)?",  # another dataset of the model's task (an eval `on-<testset>`)
    "entry": r"[a-z0-9][a-z0-9.-]*",  # a catalog entry (xlt/sources/catalog.yaml)
    "recipe": r"[a-z]{2,3}(\+[a-z]{2,3})*\.[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)?",  # [.<aux set>]
    "seed": r"\d+",
    "split": r"train|dev|test",
    "langset": r"[A-Za-z0-9_]+",
    "paper": r"[a-z]+",
    "table": r"[a-z]+[0-9]*[a-z0-9_]*",
    "figure": r"fig[a-z]?[0-9]+[a-z_]*",  # fig2, fig2_encoder, figa1 (an appendix figure)
}


@dataclass(frozen=True)
class Recipe:
    train_langs: tuple[str, ...]
    hparams: str
    aux: str | None = None  # a set of auxiliary task streams (config `aux_sets`): multi-task learning

    @property
    def name(self) -> str:
        return f"{'+'.join(sorted(self.train_langs))}.{self.hparams}" + (f".{self.aux}" if self.aux else "")

    @classmethod
    def parse(cls, name: str) -> "Recipe":
        langs, sep, rest = name.partition(".")
        hparams, _, aux = rest.partition(".")
        if not sep or not langs or not hparams or "." in aux:
            raise XltError(f"recipe {name!r}: expected '<lang>[+<lang>…].<hparams>[.<aux set>]'")
        return cls(tuple(langs.split("+")), hparams, aux or None)


# An aux set's `kind` (none: task streams) -> its streams, (cfg, recipe, set name, the set,
# encoder, init) -> [{"kind", "data", "reference"?, …}]: a paper declares the kinds it adds
# (xlt.paperkit.base.Paper.aux_kinds; its schema.yaml's extends declares their config), and the
# caller hands them in (xlt.workflow.paper_targets.aux_streams: every registered paper's)
AuxKind = Callable[[dict, str, str, dict, "str | None", str], list[dict]]


def aux_streams(cfg: dict, recipe: str, dataset: str, encoder: str | None = None, init: str = "pretrained", *,
                kinds: dict[str, AuxKind]) -> list[dict]:
    """The auxiliary streams of a recipe's aux set for the main task of `dataset`. A task set
    gives [{"task", "data", "weight", "batch_size"?}] (none for a task it gives none), each
    reading the training split of its dataset in the recipe's languages. A set of another
    `kind` gives the streams that kind of `kinds` makes of it: [{"kind", "data",
    "reference"?, …}] (a "reference": the encoder as released, which an anchor term reads)."""
    name = Recipe.parse(recipe).aux
    if name is None:
        return []
    sets = cfg.get("aux_sets") or {}
    if name not in sets:
        raise XltError(f"recipe {recipe!r}: unknown aux set {name!r}; allowed: {', '.join(sorted(sets)) or '(none)'}")
    aux = sets[name]
    if "kind" in aux:
        if aux["kind"] not in kinds:
            raise XltError(f"aux set {name!r}: unknown kind {aux['kind']!r}; allowed: {', '.join(sorted(kinds)) or '(none)'}")
        return kinds[aux["kind"]](cfg, recipe, name, aux, encoder, init)
    return [{"task": task_of(d), "data": data_dir(cfg, d), "weight": aux["weight"],
             **({"batch_size": aux["batch_size"]} if "batch_size" in aux else {})}
            for d in aux["tasks"].get(task_of(dataset), [])]


def aux_inputs(cfg: dict, recipe: str, dataset: str, encoder: str, init: str, *, kinds: dict[str, AuxKind]) -> list[str]:
    """What a fine-tune's auxiliary streams read: their data, and an anchor's reference encoder."""
    out = []
    for a in aux_streams(cfg, recipe, dataset, encoder, init, kinds=kinds):
        out.append(a["data"])
        if "reference" in a:
            out += encoder_inputs(cfg, encoder)
    return out


def finetune_priority(hp: dict, recipe: str) -> int:
    """A fine-tune's scheduling priority: its expected cost, in epochs over one language's
    training set (epochs × training languages; data sizes are unknown before the data is
    prepared). The costliest fine-tunes then start first and a run ends on short jobs: a job
    left running alone at the end keeps one core of two idle."""
    epochs = hp.get("epochs", TrainConfig.__dataclass_fields__["epochs"].default)
    return int(epochs) * len(Recipe.parse(recipe).train_langs)


def model_dir(cfg: dict, encoder: str, init: str, task: str, recipe: str, seed: int) -> str:
    return f"{cfg['results']}/models/{encoder}/{init}/{task}/{recipe}/seed{seed}"


def eval_file(cfg: dict, encoder: str, init: str, task: str, recipe: str, seed: int, split: str, langset: str,
              testset: str | None = None) -> str:
    """The metrics of a model (trained on dataset `task`) on one split of a language set: of its
    own dataset, or, with `testset`, of another dataset of the same task (`qa` -> `qa.mlqa`),
    under `on-<testset>/` (checked: same task, a known set holding the split and the languages)."""
    where = f"{cfg['results']}/eval/{encoder}/{init}/{task}/{recipe}/seed{seed}"
    if testset is None:
        return f"{where}/{split}.{langset}.json"
    check_testset(cfg, task, testset, split, langset)
    return f"{where}/on-{testset}/{split}.{langset}.json"


# A single language may stand for a language set in an evaluation's path: a model whose table
# reads one column is scored on that language alone (e.g. a model adapted to one language).
ONE_LANGUAGE = re.compile(r"[a-z]{2,3}")


def langset_languages(cfg: dict, langset: str) -> list[str]:
    """The languages of an evaluation's language set: a named set (config `language_sets`), or
    one language code standing for itself."""
    sets = cfg.get("language_sets") or {}
    if langset in sets:
        return list(sets[langset])
    if ONE_LANGUAGE.fullmatch(langset):
        return [langset]
    raise XltError(f"unknown language set {langset!r}; allowed: {', '.join(sorted(sets))}, or one language code")


def check_testset(cfg: dict, dataset: str, testset: str, split: str, langset: str) -> str:
    """The data folder a model trained on `dataset` is scored on as `testset`; raises XltError
    for another task, the model's own dataset (its eval path has no `on-`), an unknown set, or a
    split or language the set does not have."""
    if task_of(testset) != task_of(dataset):
        raise XltError(f"evaluation on {testset!r}: a model trained on {dataset!r} (task {task_of(dataset)!r}) "
                       f"is scored on datasets of its own task only, not of task {task_of(testset)!r}")
    if testset == dataset:
        raise XltError(f"evaluation on {testset!r}: that is the model's own dataset (eval_file without testset)")
    check_languages(cfg, testset, langset_languages(cfg, langset), split)
    return data_dir(cfg, testset)


def table_outputs(cfg: dict, paper: str, table: str) -> dict[str, str]:
    return {ext: f"{cfg['results']}/tables/{paper}/{table}.{ext}" for ext in TABLE_FORMATS}


def figure_outputs(cfg: dict, paper: str, figure: str) -> dict[str, str]:
    return {ext: f"{cfg['results']}/figures/{paper}/{figure}.{ext}" for ext in FIGURE_FORMATS}


def table_files(cfg: dict, paper: str, table: str) -> list[str]:
    return list(table_outputs(cfg, paper, table).values())


def figure_files(cfg: dict, paper: str, figure: str) -> list[str]:
    return list(figure_outputs(cfg, paper, figure).values())


PRETRAINED = "pretrained"


@dataclass(frozen=True)
class InitKind:
    """An encoder init a paper's rule makes, `<method>-…` (declared in its Paper.inits):
    its names' regex (joined to the `init` wildcard), their grammar as messages spell it, and
    its parser (a name -> an object with `.name` and `.method`; XltError naming the grammar)."""

    method: str
    pattern: str
    grammar: str
    parse: Callable[[str], object]


def init_pattern(kinds: list[InitKind]) -> str:
    """The `init` wildcard's regex: the built-in inits' and each kind's of `kinds`."""
    return "|".join([WILDCARDS["init"], *(k.pattern for k in kinds)])


def _init_grammars(kinds: list[InitKind]) -> str:
    names = ["'pretrained'", "'mlm-<dataset>-<language set>'", *(repr(k.grammar) for k in kinds)]
    return f"{', '.join(names[:-1])} or {names[-1]}"


@dataclass(frozen=True)
class Init:
    """Where fine-tuning starts: the encoder as released (`pretrained`), or the encoder
    adapted by a rule: `mlm-<dataset>-<language set>` is MLM on the training text of a
    dataset in the languages of a language set (domain adaptation), with config `adapt.mlm`;
    `<method>-…` of a paper's kind (InitKind) is parsed by that kind, where the caller hands it in."""

    method: str | None = None
    dataset: str | None = None
    langset: str | None = None

    @property
    def name(self) -> str:
        return PRETRAINED if self.method is None else f"{self.method}-{self.dataset}-{self.langset}"

    @classmethod
    def parse(cls, name: str, kinds: list[InitKind] = ()):
        """An Init, or the object one of `kinds` parses its names into (the registered papers':
        xlt.workflow.paper_targets.init_kinds)."""
        if name == PRETRAINED:
            return cls()
        method, _, rest = name.partition("-")
        for kind in kinds:
            if kind.method == method:
                return kind.parse(name)
        dataset, _, langset = rest.rpartition("-")
        if method != "mlm" or not dataset or not langset:
            raise XltError(f"encoder init {name!r}: expected {_init_grammars(kinds)}")
        return cls(method, dataset, langset)


def encoder_dir(cfg: dict, name: str, init: str = PRETRAINED) -> str:
    return f"{cfg['results']}/encoders/{name}/{init}"


def encoder_source(cfg: dict, name: str, init: str = PRETRAINED) -> str:
    """Where a job loads an encoder from: a directory the DAG makes (built or adapted), the
    snapshot of a Hub encoder (download_encoder), or a local path. Never the Hub itself: jobs
    run offline (compute nodes), the snapshot is fetched where Snakemake runs."""
    try:
        spec = cfg["encoders"][name]
    except KeyError:
        raise XltError(f"unknown encoder {name!r}; allowed: {', '.join(sorted(cfg['encoders']))}") from None
    if "build" in spec or init != PRETRAINED:
        return encoder_dir(cfg, name, init)
    return spec.get("path") or snapshot_dir(cfg, name)


def snapshot_dir(cfg: dict, name: str) -> str:
    """The local snapshot of the Hub encoder `name` (its files at the commit the lock names)."""
    return f"{cfg['raw_root']}/encoders/{name}"


def snapshot_revision_arg(cfg: dict, name: str) -> str:
    """The snapshot's pinned commit (config `encoders.<name>.revision`) as a download argument;
    none: the lock's commit, else `main` (then locked)."""
    rev = cfg["encoders"][name].get("revision")
    return f"--revision {rev}" if rev else ""


def built_encoders(cfg: dict) -> list[str]:
    return [name for name, spec in cfg["encoders"].items() if "build" in spec]


def hub_encoders(cfg: dict) -> list[str]:
    """The encoders read from the Hub (snapshots the `prefetch` target fetches)."""
    return [name for name, spec in cfg["encoders"].items() if "build" not in spec and not spec.get("path")]


def encoder_inputs(cfg: dict, name: str, init: str = PRETRAINED) -> list[str]:
    """The DAG dependency of a job on its encoder: the directory it loads (none for a local path)."""
    if init == PRETRAINED and cfg["encoders"].get(name, {}).get("path"):
        return []
    return [encoder_source(cfg, name, init)]


def adapt_inputs(cfg: dict, encoder: str, init: str) -> dict[str, list[str]]:
    """An MLM adaptation's inputs: the encoder it starts from and the data whose text it reads."""
    it = Init.parse(init)
    if it.method != "mlm":
        raise XltError(f"{encoder_dir(cfg, encoder, init)}: `pretrained` is not made by adaptation")
    if it.langset not in cfg["language_sets"]:
        raise XltError(f"encoder init {init!r}: unknown language set {it.langset!r}; "
                       f"allowed: {', '.join(sorted(cfg['language_sets']))}")
    get_task(task_of(it.dataset))
    return {"encoder": encoder_inputs(cfg, encoder), "data": [data_dir(cfg, it.dataset)]}


def aligned_pairs_file(cfg: dict, xx: str, size: int, seed: int, subwords_of: str | None = None) -> str:
    """The alignment stage's sample of `size` en–`xx` pairs drawn with `seed`, from the
    configured aligner's links (xlt.align.targets); `subwords_of`: an encoder, whose subwords
    were aligned instead of the words (the stage's subword branch, xlt.align.subword)."""
    pair = f"{cfg['results']}/align/en-{xx}" + (f"/subword-{subwords_of}" if subwords_of else "")
    return f"{pair}/{cfg['align']['backend']}/samples/n{size}.seed{seed}.jsonl"


def adapt_languages(cfg: dict, init: str) -> list[str]:
    return list(cfg["language_sets"][Init.parse(init).langset])


def engine_options(cfg: dict, training: dict) -> dict:
    """A training block (an hparams profile, an MLM block) with the config's `engine` options
    (e.g. `fast_path`) under it: the block's own setting wins. `pack` is the workflow's
    (xlt.workflow.packs: how many seeds one job trains), not a training setting."""
    return {**{k: v for k, v in (cfg.get("engine") or {}).items() if k != "pack"}, **training}


def hparams(cfg: dict, recipe: str, dataset: str | None = None,
            extra_of_tag: Callable[[str], dict] | None = None) -> dict:
    """The recipe's hparams profile, with the task's own settings (`per_task.<task>`) over it
    when `dataset` is given. Model selection uses the profile's `select_metric`: one metric, or
    one per task (a paper's profile names the number its tables print; a task it does not list
    selects on the task's first metric). A profile `<profile>-<extra tag>` is the
    profile with one more extra, which `extra_of_tag` reads from the tag (the papers' tag
    grammars: xlt.workflow.paper_targets.hparams passes them)."""
    name = Recipe.parse(recipe).hparams
    name, _, tag = name.partition("-") if name not in cfg["hparams"] else (name, "", "")
    if name not in cfg["hparams"]:
        raise XltError(f"recipe {recipe!r}: unknown hparams profile {name!r}; allowed: {', '.join(sorted(cfg['hparams']))}")
    hp = engine_options(cfg, cfg["hparams"][name])
    per_task = hp.pop("per_task", None) or {}
    if dataset is not None:
        hp.update(per_task.get(task_of(dataset), {}))
    if tag:
        if extra_of_tag is None:
            raise XltError(f"recipe {recipe!r}: an extra tag ({tag!r}) is read by a paper's tag grammar (xlt.workflow.paper_targets.hparams)")
        hp["extras"] = [*hp.get("extras", []), extra_of_tag(tag)]
    if isinstance(hp.get("select_metric"), dict):  # per task: the training job gets its task's
        per_task_metric = hp.pop("select_metric")
        if dataset is not None and task_of(dataset) in per_task_metric:
            hp["select_metric"] = per_task_metric[task_of(dataset)]
    return hp


# ---- datasets: a task's prepared data, per named set ------------------------------------


def paper_language_set(paper: dict, task: str) -> str:
    """The language set a paper names for `task` (one for all tasks, or one per task)."""
    langs = paper["languages"]
    return langs[task] if isinstance(langs, dict) else langs


def paper_languages(cfg: dict, paper: str, task: str) -> list[str]:
    return list(cfg["language_sets"][paper_language_set(cfg["papers"][paper], task)])


def dataset_name(cfg: dict, paper: str, task: str) -> str:
    """The data folder a paper's task reads: the task, `.<set>` added for a named UD selection
    (a paper's other named sets are datasets it names itself, e.g. `eval_file(..., testset=...)`)."""
    tb_set = cfg["papers"][paper].get("treebanks")
    return f"{task}.{tb_set}" if tb_set and get_task(task).source == "ud" else task


def task_of(dataset: str) -> str:
    return dataset.partition(".")[0]


def set_of(dataset: str) -> str | None:
    """The named set of a dataset (`mlqa` of `qa.mlqa`), None for the task's own data."""
    return dataset.partition(".")[2] or None


treebank_set_of = set_of  # a UD task's set is a treebank selection


def task_sets(cfg: dict, task: str) -> tuple[str, dict]:
    """(config key, named sets) of a registry task: `data.ud.sets` (treebank selections) for a UD
    task, `data.<task>.sets` for any other."""
    block = "ud" if get_task(task).source == "ud" else task
    return f"data.{block}.sets", (cfg["data"].get(block) or {}).get("sets") or {}


def named_set(cfg: dict, dataset: str) -> dict | None:
    """The config of a named set of a task other than UD (`data.<task>.sets.<set>`), None for a
    task's own data or a UD selection; an unknown set raises XltError naming the allowed ones.
    Its `languages` may name a language set (config `language_sets`): returned as its list."""
    task, name = task_of(dataset), set_of(dataset)
    key, sets = task_sets(cfg, task)
    if name is not None and name not in sets:
        if get_task(task).source == "ud":  # the message of ud_selection, as before
            ud_selection(cfg, name)
        raise XltError(f"dataset {dataset!r}: unknown set {name!r} of task {task!r} (config key {key}); "
                       f"allowed: {', '.join(sorted(sets)) or '(none)'}")
    if name is None or get_task(task).source == "ud":
        return None
    spec = sets[name]
    langs = spec.get("languages")
    if isinstance(langs, str):  # a language set's name (config language_sets): one list for both presets
        if langs not in cfg.get("language_sets", {}):
            raise XltError(f"config key {key}.{name}.languages: unknown language set {langs!r}; "
                           f"allowed: {', '.join(sorted(cfg.get('language_sets', {})))}")
        spec = {**spec, "languages": list(cfg["language_sets"][langs])}
    return spec


# A named set's keys that say how its test split is scored, not how it is prepared: left out of
# `source_cfg` (prepare_task's params), so declaring them re-prepares nothing.
SCORING_KEYS = ("answer_normalisation", "answer_language")


def answer_languages(cfg: dict, dataset: str, langs: list[str]) -> dict[str, str] | None:
    """QA's answer normalisation of an evaluation of `dataset` on `langs` (evaluate's
    --answer-languages): None for SQuAD v1.1's (every dataset but a named set declaring
    `answer_normalisation: mlqa`); for such a set, each language -> the answer language the MLQA
    script (mlqa_evaluation_v1.py, its `answer_language` argument) normalises it with: the set's
    `answer_language` when it declares one (a cross-lingual set's context language), else the
    evaluated language itself."""
    spec = named_set(cfg, dataset)
    if spec is None or spec.get("answer_normalisation", "squad") != "mlqa":
        return None
    return {lang: spec.get("answer_language") or lang for lang in langs}


def answer_languages_arg(cfg: dict, dataset: str, langset: str) -> str:
    """evaluate.py's `--answer-languages` option of an evaluation (shell-quoted), or ''."""
    langs = answer_languages(cfg, dataset, langset_languages(cfg, langset))
    return "" if langs is None else f"--answer-languages {shlex.quote(json.dumps(langs, sort_keys=True))}"


def check_dataset(cfg: dict, dataset: str, key: str) -> None:
    """A dataset name (`<task>[.<set>]`) at config key `key`: a known task and, if named, a known set."""
    check_config_ref("task", key, task_of(dataset), TASKS)
    try:
        named_set(cfg, dataset)
    except XltError as e:
        raise XltError(f"config key {key}: {e}") from None


def dataset_splits(cfg: dict, dataset: str) -> tuple[str, ...]:
    """The splits a dataset is prepared with: its task's, or those its named set declares."""
    spec = named_set(cfg, dataset)
    return tuple(spec.get("splits") or get_task(task_of(dataset)).splits) if spec else get_task(task_of(dataset)).splits


def check_languages(cfg: dict, dataset: str, langs: list[str], split: str | None = None) -> None:
    """Raise XltError when a named set lacks one of `langs` (or `split`); other datasets hold the
    languages the papers ask for."""
    spec = named_set(cfg, dataset)
    if spec is None:
        return
    key = f"data.{task_of(dataset)}.sets.{set_of(dataset)}"
    missing = [lang for lang in langs if lang not in spec["languages"]]
    if missing:
        raise XltError(f"dataset {dataset!r} has no language {', '.join(missing)}; "
                       f"config key {key}.languages: {', '.join(spec['languages'])}")
    if split is not None and split not in dataset_splits(cfg, dataset):
        raise XltError(f"dataset {dataset!r} has no {split} split; config key {key}.splits: "
                       f"{', '.join(dataset_splits(cfg, dataset))}")


def datasets(cfg: dict) -> dict[str, list[str]]:
    """Every dataset the configured papers read, with the languages they need, stable order;
    and the languages config `zero_shot.languages` adds to a dataset."""
    out: dict[str, list[str]] = {}
    for slug, paper in cfg["papers"].items():
        for task in paper.get("tasks", []):
            out.setdefault(dataset_name(cfg, slug, task), []).extend(paper_languages(cfg, slug, task))
    # languages only the zero_shot target scores, declared once (xlt.zeroshot; docs/adding-a-language.md)
    for dataset, langset in ((cfg.get("zero_shot") or {}).get("languages") or {}).items():
        out.setdefault(dataset, []).extend(cfg["language_sets"][langset])
    return {d: list(dict.fromkeys(langs)) for d, langs in out.items()}


def task_languages(cfg: dict, task: str) -> list[str]:
    """Every language any configured paper needs for `task` (a dataset name), in a stable order;
    for a named set of a task other than UD, the languages the set declares."""
    spec = named_set(cfg, task)
    if spec is not None:
        return list(spec["languages"])
    try:
        return datasets(cfg)[task]
    except KeyError:
        raise XltError(f"no configured paper uses task {task!r}") from None


def named_sets(cfg: dict) -> list[str]:
    """The named sets (`<task>.<set>`, UD selections aside) of every task a configured paper reads."""
    tasks = dict.fromkeys(task_of(d) for d in datasets(cfg))
    return [f"{t}.{name}" for t in tasks if get_task(t).source != "ud" for name in task_sets(cfg, t)[1]]


def data_dir(cfg: dict, dataset: str) -> str:
    return f"{cfg['results']}/data/{dataset}"


def ud_selection(cfg: dict, set_name: str | None = None) -> dict:
    """`{version, treebanks}` of the default UD selection, or of a named set laid over it."""
    ud = cfg["data"].get("ud") or {}
    out = {"version": ud.get("version", "2.7"), "treebanks": ud.get("treebanks", {})}
    if set_name is None:
        return out
    sets = ud.get("sets") or {}
    if set_name not in sets:
        raise XltError(f"unknown treebank set {set_name!r}; allowed: {', '.join(sorted(sets)) or '(none: data.ud.sets is empty)'}")
    chosen = sets[set_name]
    out["version"] = chosen.get("version", out["version"])
    tbs = chosen.get("treebanks")
    if tbs == "all" or (tbs and out["treebanks"] == "all"):
        out["treebanks"] = tbs
    elif tbs:
        out["treebanks"] = {**out["treebanks"], **tbs}
    return out


def source_cfg(cfg: dict, dataset: str) -> dict:
    """The `data` block `prepare_task` reads for `dataset`, `ud` resolved to its selection and a
    named set of another task laid over its task's block (its `languages` left out: they are
    the job's)."""
    out = {k: {f: x for f, x in v.items() if f != "sets"} if isinstance(v, dict) else v
           for k, v in cfg["data"].items() if k != "ud"}
    if "ud" in cfg["data"]:
        out["ud"] = ud_selection(cfg, set_of(dataset) if get_task(task_of(dataset)).source == "ud" else None)
    spec = named_set(cfg, dataset)
    if spec is not None:
        task = task_of(dataset)
        out[task] = {**out.get(task, {}), **{k: v for k, v in spec.items() if k not in ("languages", *SCORING_KEYS)}}
    return out


# ---- downloads: the catalog sources behind each dataset -----------------------------------


def raw_sources(cfg: dict, dataset: str) -> dict[str, list[str]]:
    """The catalog sources whose files `prepare_task` reads for `dataset`, each with the
    languages to fetch (empty for a source holding all languages in one file).

    Computed from `xlt.stages.prepare.raw_files` (the raw layout; a two-language set reads the files of
    its partner language too) and the catalog's file paths, so a path the catalog does not
    deliver fails here, when the DAG is built.
    """
    # deferred: loads requests, yaml only when this runs
    from xlt.sources.catalog import providers

    task, cfg_for_task = task_of(dataset), source_cfg(cfg, dataset)
    out: dict[str, list[str]] = {}
    for own in task_languages(cfg, dataset):
        for split in dataset_splits(cfg, dataset):
            for pattern, lang in raw_files(task, own, split, cfg_for_task):
                if Path(pattern).is_absolute():
                    continue  # a file of the user's own, outside the raw root
                found = providers(pattern, lang)
                if len(found) != 1:
                    what = "no catalog source delivers" if not found else (
                        f"several catalog sources ({', '.join(s.name for s, _ in found)}) deliver"
                    )
                    raise XltError(
                        f"dataset {dataset!r}, language {lang!r}, split {split!r}: {what} {pattern} "
                        "(xlt/sources/catalog.yaml); check the config's data block"
                    )
                source, fetch_lang = found[0]
                langs = out.setdefault(source.name, [])
                if fetch_lang and fetch_lang not in langs:
                    langs.append(fetch_lang)
    return out


def download_plan(cfg: dict, *, more: list[dict[str, list[str]]]) -> dict[str, list[str]]:
    """Every catalog source the configured papers read, with its languages; none with the world.
    The named sets of a task a paper reads (`data.<task>.sets`: test sets other jobs evaluate on)
    are read too: they are prepared only when a job asks for them, but fetched with the rest;
    so is what a stage besides the tasks reads, `more` ({source: languages} each: the alignment
    stage's bitext when a configured paper reads aligned pairs, xlt.workflow.paper_targets.download_plan,
    which hands it in, so that this module imports neither)."""
    if cfg.get("world"):
        return {}
    plan: dict[str, list[str]] = {}
    sources = [raw_sources(cfg, dataset) for dataset in [*datasets(cfg), *named_sets(cfg)]]
    sources += list(more)
    for found in sources:
        for source, langs in found.items():
            plan[source] = list(dict.fromkeys(plan.get(source, []) + langs))
    return dict(sorted(plan.items()))


def download_manifest(cfg: dict, source: str) -> str:
    return f"{cfg['raw_root']}/manifests/{source}.json"


def raw_inputs(cfg: dict, dataset: str) -> list[str]:
    """What a prepare job waits for: the world (tiny preset), or its sources' download manifests."""
    if cfg.get("world"):
        return [f"{cfg['results']}/world/manifest.json"]
    return [download_manifest(cfg, source) for source in raw_sources(cfg, dataset)]


def ensure_dir(path: str | Path) -> Path:
    Path(path).mkdir(parents=True, exist_ok=True)
    return Path(path)
