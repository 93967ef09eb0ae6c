"""Zero-shot transfer of any encoder on any task, paper-independent:

    snakemake zero_shot --config encoder=<encoder> task=<task> langs=<language set>

fine-tunes `<encoder>` on the source language (config `zero_shot.source`, English) with the
profile `zero_shot.hparams`, once per seed of `zero_shot.seeds`, scores every seed on the test
split of each language of the language set, and writes one table (mean ± std over seeds per
language and metric, and the averages over languages):

    results/tables/zero_shot/{encoder}.{task}.{langset}.{csv,md,tex}

Its models and evaluations are the shared rules' (finetune, evaluate) at the paths of
xlt.dag.targets, `results/models/{encoder}/pretrained/{task}/<source>.<hparams>/seed{seed}/`:
where a paper trains the same recipe (the paper whose profile is zero_shot.hparams: its English
models; on the tiny preset, the papers that share that profile's models too), the model is trained
once and both read it.

`<encoder>` is a name of config `encoders`, a local Hugging Face model directory, or a Hub id
(`owner/name`). One not in `encoders` is declared there (`declared_encoders`) under a name
made from it, so every rule reads it as it reads a configured encoder: a Hub id is loaded by
`from_pretrained` in the fine-tuning job, as config.yaml's mBERT and XLM-R are (a Hub id equal
to a configured encoder's `hub` is that encoder, and shares its models); a directory by its
path. `<task>` is a registry task (`xlt.registry.TASKS`) or a named set of one (`pos.xtreme`);
`<langs>` names a language set (config `language_sets`), never a bare language. The three keys
are read by this target only (docs/adding-an-encoder.md, docs/adding-a-language.md).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from xlt.dag import targets as T
from xlt.errors import XltError, check_config_ref, unknown
from xlt.io import pickle_only, read_json
from xlt.registry import TASKS, get_task
from xlt.tables import COLLAPSE_NOTE, cell_text, paper_vs_ours, render_grid, write_table

KEYS = ("encoder", "task", "langs")  # the question, given on the command line (--config)
USAGE = "snakemake zero_shot --config encoder=<name, local dir or Hub id owner/name> task=<task> langs=<language set>"
NOT_ASKED = f"the zero_shot target needs --config keys encoder, task and langs: {USAGE}"
HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*")
AVERAGES = {"avg": "average over the set's languages, the source included (as XTREME)",
            "avg_targets": "average over the target languages (the source left out)"}


@dataclass(frozen=True)
class ZeroShot:
    encoder: str  # a name of config `encoders` (declared by `declared_encoders` if given as a dir or a Hub id)
    task: str  # the dataset: <task>[.<set>]
    langset: str


def asked(cfg: dict) -> bool:
    return any(cfg.get(k) is not None for k in KEYS)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:8]


def resolve_encoder(cfg: dict, given: str) -> tuple[str, dict | None]:
    """(encoder name, the `encoders` entry to declare or None) of the `encoder` key: a configured
    name; a local Hugging Face directory (`<its name>_<hash of its path>`: two directories of one
    name never share a model); a Hub id (`owner/name` with non-alphanumerics as `_`). A directory
    or Hub id a configured encoder already names is that encoder."""
    encoders = cfg["encoders"]
    if given in encoders:
        return given, None
    if Path(given).is_dir():
        path = Path(given).resolve()
        if not (path / "config.json").is_file():
            raise XltError(f"config key encoder: {given} is not a Hugging Face model directory (no config.json there)")
        if problem := pickle_only(given):
            raise XltError(f"config key encoder: {problem}")
        for name, spec in encoders.items():
            if "path" in spec and Path(spec["path"]).resolve() == path:
                return name, None
        return f"{_slug(path.name) or 'local'}_{_digest(str(path))}", {"path": str(path)}
    if HUB_ID.fullmatch(given):
        for name, spec in encoders.items():
            if spec.get("hub") == given and not spec.get("revision"):
                return name, None
        name = _slug(given)  # a configured encoder of that name is another one: the id's hash tells them apart
        return (f"{name}_{_digest(given)}" if name in encoders else name), {"hub": given, "revision": None}
    raise XltError(f"config key encoder: {unknown('encoder', given, encoders)} Or a local Hugging Face directory "
                   "(none there), or a Hub id owner/name")


def check(cfg: dict) -> None:
    """`zero_shot.languages` (tasks, language sets, languages the task's source offers) and the
    zero_shot keys, when any is given: all three, each naming what the config declares (one
    line naming the key and the allowed values), and the languages in the task's data."""
    for dataset, langset in ((cfg.get("zero_shot") or {}).get("languages") or {}).items():
        key = f"zero_shot.languages.{dataset}"
        T.check_dataset(cfg, dataset, key)
        check_config_ref("language set", key, langset, cfg["language_sets"])
        offered = TASKS[T.task_of(dataset)].languages
        missing = [lang for lang in cfg["language_sets"][langset] if lang not in offered]
        if missing:
            raise XltError(f"config key {key}: task {T.task_of(dataset)} has no data for {missing}; "
                           f"its source offers: {', '.join(offered)}")
    if not asked(cfg):
        return
    missing = [k for k in KEYS if cfg.get(k) is None]
    if missing:
        raise XltError(f"config key {', '.join(missing)}: missing; the zero_shot target needs all three: {USAGE}")
    question(cfg)


def question(cfg: dict) -> ZeroShot:
    """The checked question of the zero_shot keys (XltError naming the key when one is wrong)."""
    if not asked(cfg):
        raise XltError(NOT_ASKED)
    block = cfg.get("zero_shot")
    if block is None:
        raise XltError("config key zero_shot: missing (the zero_shot target's hparams, seeds and source; config.yaml has it)")
    check_config_ref("hparams profile", "zero_shot.hparams", block["hparams"], cfg["hparams"])
    name, _ = resolve_encoder(cfg, str(cfg["encoder"]))
    dataset, langset = str(cfg["task"]), str(cfg["langs"])
    T.check_dataset(cfg, dataset, "task")
    check_config_ref("language set", "langs", langset, cfg["language_sets"])
    prepared = T.task_languages(cfg, dataset)
    wanted = [block["source"], *cfg["language_sets"][langset]]
    absent = [lang for lang in dict.fromkeys(wanted) if lang not in prepared]
    if absent:
        raise XltError(f"config key langs: {langset!r} has {', '.join(absent)}, which {T.data_dir(cfg, dataset)} does not "
                       f"hold; it holds {', '.join(prepared)} (the configured papers' languages and "
                       f"zero_shot.languages.{dataset}: docs/adding-a-language.md)")
    return ZeroShot(name, dataset, langset)


def declared_encoders(cfg: dict) -> dict[str, dict]:
    """The `encoders` entry of an encoder given as a directory or a Hub id ({} otherwise)."""
    if not asked(cfg) or cfg.get("encoder") is None:
        return {}
    name, spec = resolve_encoder(cfg, str(cfg["encoder"]))
    return {name: spec} if spec else {}


def recipe(cfg: dict) -> str:
    block = cfg["zero_shot"]
    return T.Recipe((block["source"],), block["hparams"]).name


def models(cfg: dict, encoder: str, task: str) -> list[str]:
    return [T.model_dir(cfg, encoder, T.PRETRAINED, task, recipe(cfg), seed) for seed in cfg["zero_shot"]["seeds"]]


def table_inputs(cfg: dict, encoder: str, task: str, langset: str) -> list[str]:
    """Every seed's evaluation on the test split of the language set."""
    T.encoder_source(cfg, encoder)  # an unknown encoder: the config's one line
    return [T.eval_file(cfg, encoder, T.PRETRAINED, task, recipe(cfg), seed, "test", langset)
            for seed in cfg["zero_shot"]["seeds"]]


def table_outputs(cfg: dict, encoder: str, task: str, langset: str) -> dict[str, str]:
    return {ext: f"{cfg['results']}/tables/zero_shot/{encoder}.{task}.{langset}.{ext}" for ext in T.TABLE_FORMATS}


def table_files(cfg: dict) -> list[str]:
    """The zero_shot target: the table of the question the config keys ask."""
    q = question(cfg)
    return list(table_outputs(cfg, q.encoder, q.task, q.langset).values())


def table_spec(cfg: dict, encoder: str, task: str, langset: str) -> dict:
    return {"encoder": encoder, "loaded_from": T.encoder_source(cfg, encoder), "task": task, "langset": langset,
            "languages": T.langset_languages(cfg, langset), "source": cfg["zero_shot"]["source"],
            "recipe": recipe(cfg), "hparams": cfg["zero_shot"]["hparams"], "seeds": list(cfg["zero_shot"]["seeds"])}


# ---- the table ---------------------------------------------------------------------------


def scores(spec: dict, inputs: list[str]) -> pd.DataFrame:
    """Per-seed rows (lang, metric, seed, value, collapsed) of the evaluation files (×100), with
    the averages over languages (AVERAGES) as languages `avg` and `avg_targets`."""
    rows = []
    for path in inputs:
        report = read_json(path)
        missing = [lang for lang in spec["languages"] if lang not in report["metrics"]]
        if missing:
            raise XltError(f"{path}: no scores for language {missing[0]!r}; has {', '.join(report['metrics'])}")
        for lang in spec["languages"]:
            for metric in get_task(report["task"]).metrics:
                if metric not in report["metrics"][lang]:
                    raise XltError(f"{path}: no metric {metric!r} for language {lang!r}; has "
                                   f"{', '.join(k for k in report['metrics'][lang] if k != 'n')}")
                rows.append({"lang": lang, "metric": metric, "seed": report["seed"],
                             "value": report["metrics"][lang][metric], "collapsed": bool(report.get("collapsed", False))})
    per_lang = pd.DataFrame(rows, columns=["lang", "metric", "seed", "value", "collapsed"])
    subsets = {"avg": per_lang["lang"].notna(), "avg_targets": per_lang["lang"] != spec["source"]}
    averages = [per_lang[keep].groupby(["metric", "seed"], sort=False).agg(value=("value", "mean"), collapsed=("collapsed", "max"))
                .reset_index().assign(lang=name) for name, keep in subsets.items() if keep.any()]
    return pd.concat([per_lang, *averages], ignore_index=True)


def _ours(row) -> str:
    return cell_text(row)[1]


def build_table(spec: dict, inputs: list[str]) -> tuple[pd.DataFrame, str, str]:
    """One row per language (then the averages), one column per metric of the task: mean ± std
    over seeds. No published column: XTREME's per-language numbers are not in the repository."""
    ours = scores(spec, inputs)
    no_paper = pd.DataFrame(columns=["lang", "metric", "value"])
    table = paper_vs_ours(ours, no_paper, ["lang", "metric"])  # its outer merge sorts the keys: the set's order back
    rows = {lang: i for i, lang in enumerate([*spec["languages"], *AVERAGES])}
    metrics = list(dict.fromkeys(ours["metric"]))
    table = table.sort_values(["lang", "metric"], key=lambda c: c.map(rows if c.name == "lang" else metrics.index),
                              ignore_index=True)
    title = f"Zero-shot {spec['task']}: {spec['encoder']} fine-tuned on {spec['source']} ({spec['recipe']})"
    notes = [
        f"Encoder: {spec['encoder']} (loaded from {spec['loaded_from']}). Recipe {spec['recipe']}: hparams profile "
        f"{spec['hparams']!r} (its model selection), fine-tuned on {spec['source']} only.",
        f"Test split of language set {spec['langset']} ({', '.join(spec['languages'])}); scores ×100; "
        f"seeds {sorted(ours['seed'].unique().tolist())}.",
        *(f"{k}: {v}." for k, v in AVERAGES.items()),
        COLLAPSE_NOTE,
    ]
    md, tex = render_grid(table, ["lang"], "metric", title, notes, cell=_ours,
                          legend="Each cell: mean ± std over seeds", labels={m: m for m in metrics})
    table = table.drop(columns=["paper", "delta"])
    for i, key in enumerate(("encoder", "task", "recipe")):
        table.insert(i, key, spec[key])
    return table, md, tex


def make_table(spec: dict, inputs: list[str], out_prefix: str) -> pd.DataFrame:
    table, md, tex = build_table(spec, inputs)
    write_table(table, out_prefix, md, tex)
    return table
