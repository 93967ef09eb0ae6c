"""Validate the workflow configuration and resolve cross-references.

JSON-schema errors are rewritten as one line naming the key (dotted path) and, for an
enumeration, the allowed values; cross-references (a paper's encoder, hparams, language
set) are checked against what the config declares.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import math
import os
import re
import sys
from pathlib import Path

import jsonschema
import yaml

from xlt.workflow import paper_targets as P
from xlt.dag import targets as T
from xlt.align.targets import check as check_align
from xlt.process.cli import not_a_config_file, run, snakemake_configfiles
from xlt.engine.train_config import TrainConfig
from xlt.errors import XltError, check_config_ref, langset_hint
from xlt.io import pickle_only, read_yaml
from xlt.papers.config_files import with_paper_files
from xlt.registry import TASKS
from xlt.world.schema import resolve as resolve_world
from xlt.zeroshot import check as check_zero_shot

REPO = Path(__file__).resolve().parent.parent.parent
SCHEMA = REPO / "schemas" / "config.schema.yaml"
DEFAULT_CONFIG = REPO / "config.yaml"


# The one pattern of every name the config coins that becomes part of a result path (an
# encoder, a language set, a hparams profile, an aux set, a UD selection: `$defs.name` in the
# schema; a task's named data sets are its lowercase form, `$defs.set_name`): no `/`, no `.`
# (so no `..` and no hidden file), never empty, and inside every wildcard of the path grammar
# (xlt.dag.targets.WILDCARDS) that the name fills, so a name that passes is one the DAG can build.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_]*$"


class ConfigKeyError(XltError):
    """A bad value (or name) at a config key: `key` is its path (keys and list indices),
    `where` the path whose origin names the file that set it (default: `key`)."""

    def __init__(self, key, message: str, where=None, also=()):
        self.key, self.where = tuple(key), tuple(key if where is None else where)
        # other keys whose value makes the error (a paper's language set and that set's list):
        # the file named is the last of those that set any of them
        self.also = tuple(map(tuple, also))
        super().__init__(f"config key {_key(self.key)}: {message}")


def _key(path) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def _parse_key(key: str) -> tuple:
    """`a.b[3].c` → ("a", "b", 3, "c") (the inverse of `_key` for keys without dots)."""
    return tuple(int(i) if i else k for k, i in re.findall(r"([^.\[\]]+)|\[(\d+)\]", key))


def _depth(obj, path: tuple) -> int:
    """How many leading steps of `path` `obj` holds."""
    for n, step in enumerate(path):
        if isinstance(obj, dict) and step in obj:
            obj = obj[step]
        elif isinstance(obj, list) and isinstance(step, int) and step < len(obj):
            obj = obj[step]
        else:
            return n
    return len(path)


def origin(error: XltError, sources) -> str | None:
    """Where the key an error names was set: the label of the last of `sources` ((label,
    mapping) pairs in merge order: config.yaml, each --configfile, --config) that holds the
    longest part of its path; None when the error names no config key."""
    if isinstance(error, ConfigKeyError):
        paths = [error.where, *error.also]
    else:
        # "config key <key>: …", or "<key>: …" (the world's checks, xlt.world.schema)
        m = re.match(r"(?:config key )?([A-Za-z_][\w-]*(?:\.[\w-]+|\[\d+\])*):", str(error))
        if m is None:
            return None
        paths = [_parse_key(m[1])]
    found = []  # per path: the last source holding the longest part of it
    for path in paths:
        best, k = max(((_depth(data, path), k) for k, (_, data) in enumerate(sources)), default=(0, 0))
        if best:
            found.append(k)
    return sources[max(found)][0] if found else None


def located(error: XltError, sources) -> str:
    """The error's message with the config file that set its key first: `<file>: config key …`."""
    where = origin(error, sources)
    return f"{where}: {error}" if where else str(error)


def _named_part(err):
    """Inside a oneOf that failed, the failure of a name, dataset or treebank deeper down (a
    described pattern: say what such a name may be rather than that no branch fitted)."""
    below = [e for e in err.context or () if len(e.absolute_path) > len(err.absolute_path)]
    for sub in sorted(below, key=lambda e: -len(e.absolute_path)):
        if sub.validator == "pattern" and "description" in sub.schema:
            return sub
        found = _named_part(sub)
        if found is not None:
            return found
    return None


def _names_a_language_set(err) -> bool:
    return (err.validator in ("type", "oneOf") and isinstance(err.schema, dict)
            and "language set" in str(err.schema.get("description", "")))


def _explain(err) -> XltError:
    key = _key(err.absolute_path)
    v = err.validator
    if v == "pattern" and "propertyNames" in err.schema_path:  # a name the config coins
        what = err.schema.get("description", f"a name matching {err.validator_value}")
        return ConfigKeyError(err.absolute_path, f"the name {err.instance!r} is not allowed; expected {what} "
                              f"(pattern {err.validator_value})", (*err.absolute_path, err.instance))
    if v == "additionalProperties" and isinstance(err.instance, dict):  # the file that set the unknown key
        extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        message = _explain_value(err, key, v).split(": ", 1)[1]
        return ConfigKeyError(err.absolute_path, message, (*err.absolute_path, extra[0]) if extra else None)
    return XltError(_explain_value(err, key, v))


# YAML 1.1 (PyYAML, Snakemake) reads a number in exponent form without a dot as a string
_EXPONENT_WITHOUT_DOT = re.compile(r"([+-]?\d+)([eE][+-]?\d+)")
_NOT_FINITE = re.compile(r"[+-]?\.?(nan|inf|infinity)", re.IGNORECASE)


def _number_hint(instance, expected) -> str:
    """`2e-5` where a number belongs: say how to write it so that YAML reads a float."""
    wanted = {expected} if isinstance(expected, str) else set(expected)
    if isinstance(instance, str) and wanted & {"number", "integer"} and (m := _EXPONENT_WITHOUT_DOT.fullmatch(instance.strip())):
        return f" (YAML reads {instance} as a string: write {m[1]}.0{m[2]})"
    # JSON's NaN / Infinity (read as YAML: a string), YAML 1.2's nan: the same refusal as .nan's
    if isinstance(instance, str) and wanted & {"number", "integer"} and _NOT_FINITE.fullmatch(instance.strip()):
        return "; it is not a finite number; allowed: a finite number (no NaN, .nan, Infinity or .inf)"
    return ""


def _explain_value(err, key: str, v: str) -> str:
    for e in [err, *(err.context or [])]:  # a oneOf's own errors: a per-task language set given as a list
        if _names_a_language_set(e) and (hint := langset_hint(e.instance)):
            return f"config key {_key(e.absolute_path)}: {hint}"
    if v == "type" and len(err.absolute_path) == 2 and err.absolute_path[0] == "language_sets":
        return f"config key {key}: {err.instance!r} should be a list of language codes, e.g. [en, de]"
    if v == "enum":
        return f"config key {key}: {err.instance!r} is not allowed; allowed: {', '.join(map(str, err.validator_value))}"
    if v == "additionalProperties":
        allowed = sorted(err.schema.get("properties", {}))
        extra = sorted(set(err.instance) - set(allowed))
        hint = ""
        if extra and allowed:
            close = difflib.get_close_matches(extra[0], allowed, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
        return f"config key {key}: unknown key(s) {extra}; allowed: {', '.join(allowed)}.{hint}"
    if v == "required":
        return f"config key {key}: {err.message}"
    if v == "type":
        return f"config key {key}: {err.instance!r} should be of type {err.validator_value}{_number_hint(err.instance, err.validator_value)}"
    if v == "pattern" and "description" in err.schema:
        return (f"config key {key}: {err.instance!r} is not allowed; expected {err.schema['description']} "
                f"(pattern {err.validator_value})")
    if v == "oneOf" and key.startswith("encoders."):
        return f"config key {key}: an encoder needs exactly one of hub, path, build"
    if v == "oneOf" and isinstance(err.schema, dict) and "description" in err.schema:
        return f"config key {key}: {err.instance!r} is not allowed; expected {err.schema['description']}"
    return f"config key {key}: {err.message}"


def deep_merge(base: dict, over: dict) -> dict:
    """Snakemake's --configfile semantics: nested mappings merge, other values replace."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _label(path) -> str:
    """A config file as the user would name it: relative to the working folder when under it."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve())) if path.is_absolute() else str(path)
    except ValueError:
        return str(path)


def config_sources(paths, default: bool = True) -> list[tuple[str, dict]]:
    """(file, its mapping) of config.yaml (`default`) and each file, in merge order, with the
    papers' own files where they belong (xlt.papers.config_files)."""
    return with_paper_files(_file_sources(paths, default))


def _file_sources(paths, default: bool) -> list[tuple[str, dict]]:
    out = []
    for path in [DEFAULT_CONFIG] * default + list(paths):
        if hint := not_a_config_file(path):
            raise XltError(hint)
        data = read_yaml(path)
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise XltError(f"{path}: expected a mapping of config keys, got {type(data).__name__}")
        out.append((_label(path), data))
    return out


def workflow_sources(configfiles, overrides) -> list[tuple[str, dict]]:
    """What a Snakemake run merged, in order: its config files (already read by Snakemake, so
    valid YAML) and its --config values (`overrides`), with the papers' own files where they belong."""
    return with_paper_files([*_file_sources(configfiles, default=False), ("--config", dict(overrides or {}))])


def load_configs(paths) -> dict:
    """config.yaml with each file deep-merged over it, in order (as `--configfile` does)."""
    return merged(config_sources(paths))


def merged(sources) -> dict:
    config: dict = {}
    for _, data in sources:
        config = deep_merge(config, data)
    return config


def check_workflow_config(config: dict) -> dict:
    """What the workflow checks before it builds a rule: the config, then every target list,
    so that a value pointing nowhere (a source override no download delivers) fails here."""
    validate(config)
    P.all_tables(config), P.data_all(config)
    if not config.get("world"):  # every named set's files: a catalog source must deliver them
        for dataset in all_named_sets(config):
            T.raw_sources(config, dataset)
    return config


def all_named_sets(config: dict) -> list[str]:
    """`<task>.<set>` of every named set of `data.<task>.sets` (UD's treebank sets aside)."""
    return [f"{task}.{name}" for task, block in config.get("data", {}).items()
            if task in TASKS and isinstance(block, dict) for name in block.get("sets") or {}]


def check_finite(obj, path: tuple = ()) -> None:
    """Refuse NaN and infinities anywhere (YAML's .nan / .inf): every range check of the
    schema is false for NaN, so it would pass validation and poison a run later."""
    if isinstance(obj, float) and not math.isfinite(obj):
        raise ConfigKeyError(path, f"{obj!r} is not a finite number; allowed: a finite number (no .nan, .inf or -.inf)")
    if isinstance(obj, dict):
        for k, v in obj.items():
            check_finite(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            check_finite(v, (*path, i))


def workflow_schema(schema_path: str | Path = SCHEMA) -> dict:
    """The shared schema with each registered paper's own (xlt/papers/<slug>/schema.yaml)
    composed in as `papers.<slug>`; a paper's `$defs` join the shared ones, and its `extends`
    add to the shared blocks (`extend_schema`)."""
    schema = yaml.safe_load(Path(schema_path).read_text())
    for slug, fragment in P.schema_fragments().items():
        for name, definition in fragment.pop("$defs", {}).items():
            if name in schema["$defs"]:
                raise XltError(f"xlt/papers/{slug}/schema.yaml: $defs.{name} is already defined in {schema_path}")
            schema["$defs"][name] = definition
        for pointer, addition in fragment.pop("extends", {}).items():
            extend_schema(schema, pointer, addition, f"xlt/papers/{slug}/schema.yaml: extends {pointer}")
        schema["properties"]["papers"]["properties"][slug] = fragment
    return schema


def extend_schema(schema: dict, pointer: str, addition, where: str) -> None:
    """Add a paper's `addition` at the JSON pointer `pointer` of the shared schema: to a
    mapping (e.g. a block's `properties`) its keys, none already there; to a list (a `oneOf`)
    its items, in order. So a block of the shared config that only a paper reads (an
    adaptation stage, an auxiliary stream kind) is declared by that paper, as strictly."""
    target = schema
    for part in pointer.removeprefix("/").split("/"):
        key = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(target, dict) or key not in target:
            raise XltError(f"{where}: {key!r} is not in the shared schema ({SCHEMA.relative_to(REPO)})")
        target = target[key]
    if isinstance(target, dict) and isinstance(addition, dict):
        if taken := sorted(set(target) & set(addition)):
            raise XltError(f"{where}: {taken} already defined in the shared schema or by another paper")
        target.update(addition)
    elif isinstance(target, list) and isinstance(addition, list):
        target.extend(addition)
    else:
        raise XltError(f"{where}: adds a {type(addition).__name__} to a {type(target).__name__}; "
                       "allowed: keys to a mapping, items to a list")


def validate(config: dict, schema_path: str | Path = SCHEMA) -> dict:
    if not isinstance(config, dict):
        raise XltError(f"the configuration must be a mapping of keys, got {type(config).__name__}")
    check_finite(config)
    validator = jsonschema.Draft202012Validator(workflow_schema(schema_path))
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(list(e.absolute_path)), str(e.absolute_path)))
    if errors:
        deepest = max(errors, key=lambda e: len(list(e.absolute_path)))
        raise _explain(_named_part(deepest) or deepest)
    if config.get("world"):
        resolve_world(config["world"])  # names the bad key, e.g. world.languages.hi.order
    _check_references(config)
    return config


def _check_references(config: dict) -> None:
    if config["collapse"]["retries"] and config["compute"].get("ddp"):
        raise XltError("config key collapse.retries: retrying a collapsed run is not supported with compute.ddp: true "
                       "(set retries: 0; collapsed runs are still flagged)")
    for name, spec in config.get("encoders", {}).items():
        # A local encoder is no DAG input (nothing makes it): a wrong path would only fail
        # inside the first fine-tuning job.
        if "path" in spec and not (Path(spec["path"]) / "config.json").is_file():
            raise XltError(f"config key encoders.{name}.path: {spec['path']} is not a Hugging Face model directory "
                           "(no config.json there)")
        if "path" in spec and (problem := pickle_only(spec["path"])):  # else it would fail inside its first job
            raise ConfigKeyError(("encoders", name, "path"), problem)
    for name, profile in config.get("hparams", {}).items():
        base = {k: v for k, v in profile.items() if k != "per_task"}
        if isinstance(base.get("select_metric"), dict):  # one per task (xlt.dag.targets.hparams)
            _check_task_metrics(f"hparams.{name}.select_metric", base.pop("select_metric"))
        TrainConfig.from_dict({"task": "pos", "encoder": "", **base}, where=f"config key hparams.{name}")
        for task, own in (profile.get("per_task") or {}).items():
            where = f"config key hparams.{name}.per_task.{task}"
            if task not in TASKS:
                raise XltError(f"{where}: unknown task {task!r}; allowed: {', '.join(TASKS)}")
            TrainConfig.from_dict({"task": task, "encoder": "", **base, **own}, where=where)
    check_align(config)  # before the papers, whose checks read the align block
    sets = (config.get("data", {}).get("ud") or {}).get("sets") or {}
    for name, aux in (config.get("aux_sets") or {}).items():
        for main, datasets in (aux.get("tasks") or {}).items():  # an aligned-pairs set reads no dataset
            check_config_ref("task", f"aux_sets.{name}.tasks", main, TASKS)
            for k, dataset in enumerate(datasets):
                T.check_dataset(config, dataset, f"aux_sets.{name}.tasks.{main}[{k}]")
    for slug, paper in config.get("papers", {}).items():
        if slug in P.PAPERS and P.PAPERS[slug].check:  # a block not of the one-encoder shape (xlt.papers)
            P.PAPERS[slug].check(config, paper)
        # Papers whose experiments are not configured yet declare only their data side.
        if "encoder" in paper:
            check_config_ref("encoder", f"papers.{slug}.encoder", paper["encoder"], config["encoders"])
        if "hparams" in paper:
            check_config_ref("hparams profile", f"papers.{slug}.hparams", paper["hparams"], config["hparams"])
        if "treebanks" in paper:
            check_config_ref("treebank set", f"papers.{slug}.treebanks", paper["treebanks"], sets)
        per_task = isinstance(paper["languages"], dict)
        if not per_task:
            check_config_ref("language set", f"papers.{slug}.languages", paper["languages"], config["language_sets"])
            if "source" in paper:
                check_config_ref("source language", f"papers.{slug}.source", paper["source"], config["language_sets"][paper["languages"]])
        for task in paper.get("tasks", []):
            check_config_ref("task", f"papers.{slug}.tasks", task, TASKS)
            key = f"papers.{slug}.languages" + (f".{task}" if per_task else "")
            if per_task and task not in paper["languages"]:
                raise XltError(f"config key {key}: no language set for task {task}")
            set_name = T.paper_language_set(paper, task)
            check_config_ref("language set", key, set_name, config["language_sets"])
            langs = config["language_sets"][set_name]
            if per_task and "source" in paper:
                check_config_ref("source language", f"papers.{slug}.source", paper["source"], langs)
            if isinstance(paper.get("metric"), dict):
                if task not in paper["metric"]:
                    raise XltError(f"config key papers.{slug}.metric: no metric for task {task}")
                check_config_ref(f"metric of task {task}", f"papers.{slug}.metric.{task}", paper["metric"][task], TASKS[task].metrics)
            missing = [lang for lang in langs if lang not in TASKS[task].languages]
            if missing:
                raise ConfigKeyError(
                    _parse_key(key), f"task {task} has no data for {missing} (in language_sets.{set_name}); "
                    f"its source offers: {', '.join(TASKS[task].languages)}", also=[("language_sets", set_name)])
            if TASKS[task].source == "ud":
                _check_treebanks(config, slug, paper.get("treebanks"), task, langs)
    _check_named_sets(config)  # after the papers: a set may name a paper's language set, reported there first
    check_zero_shot(config)  # the zero_shot target's keys, when given


def _check_task_metrics(key: str, metrics: dict) -> None:
    for task, metric in metrics.items():
        check_config_ref("task", key, task, TASKS)
        check_config_ref(f"metric of task {task}", f"{key}.{task}", metric, TASKS[task].metrics)


def _check_named_sets(config: dict) -> None:
    """The named sets of `data.<task>.sets`: languages (and a mixed or cross-lingual set's
    partner language) that the task's source offers, splits the task has."""
    for dataset in all_named_sets(config):
        task, name = T.task_of(dataset), T.set_of(dataset)
        key = f"data.{task}.sets.{name}"
        spec = T.named_set(config, dataset)  # `languages` may name a language set
        offered = TASKS[task].languages
        missing = [lang for lang in spec["languages"] if lang not in offered]
        if missing:
            raise XltError(f"config key {key}.languages: task {task} has no data for {missing}; "
                           f"its source offers: {', '.join(offered)}")
        bad = [s for s in spec.get("splits") or () if s not in TASKS[task].splits]
        if bad:
            raise XltError(f"config key {key}.splits: task {task} has no split {bad[0]!r}; allowed: {', '.join(TASKS[task].splits)}")
        if "translated" in spec:
            check_config_ref("language", f"{key}.translated.source", spec["translated"]["source"], offered)
        _check_answer_normalisation(key, spec)
        partner = (spec.get("mix") or {}).get("with") or next(iter((spec.get("cross") or {}).values()), None)
        if partner is not None:
            where = f"{key}.{'mix.with' if 'mix' in spec else 'cross'}"
            check_config_ref("language", where, partner, offered)
            if partner in spec["languages"]:
                raise XltError(f"config key {where}: {partner!r} is one of the set's own languages "
                               f"({key}.languages): a pair would mix a language with itself")


# The languages MLQA's script normalises (xlt.metrics.MLQA_LANGUAGES, copied: importing xlt.metrics
# loads scikit-learn at every config check; tests/test_metrics.py checks the two agree).
MLQA_ANSWER_LANGUAGES = ("ar", "de", "en", "es", "hi", "vi", "zh")


def _check_answer_normalisation(key: str, spec: dict) -> None:
    """A QA set's answer normalisation (xlt.dag.targets.answer_languages): MLQA's needs an
    answer language MLQA's script defines for every language it scores."""
    if "answer_language" in spec and spec.get("answer_normalisation") != "mlqa":
        raise XltError(f"config key {key}.answer_language: only with answer_normalisation: mlqa "
                       f"(SQuAD v1.1's normalisation has no language); got {spec.get('answer_normalisation', 'squad')!r}")
    if spec.get("answer_normalisation") != "mlqa":
        return
    where = f"{key}.answer_language" if "answer_language" in spec else f"{key}.languages"
    bad = [lang for lang in ([spec["answer_language"]] if "answer_language" in spec else spec["languages"])
           if lang not in MLQA_ANSWER_LANGUAGES]
    if bad:
        raise XltError(f"config key {where}: MLQA's answer normalisation (answer_normalisation: mlqa) has no rule for "
                       f"{', '.join(bad)}; it defines {', '.join(MLQA_ANSWER_LANGUAGES)}")


def _check_treebanks(config: dict, slug: str, set_name: str | None, task: str, langs: list[str]) -> None:
    treebanks = T.ud_selection(config, set_name)["treebanks"]
    if treebanks == "all":
        return
    key = f"data.ud.sets.{set_name}.treebanks" if set_name else "data.ud.treebanks"
    missing = [lang for lang in langs if lang not in treebanks]
    if missing:
        raise XltError(f"config key {key}: no treebank for {missing} (papers.{slug} needs them for task {task})")


def main(argv: list[str] | None = None) -> None:
    """`python -m xlt.workflow.config [FILE ...]`: check config.yaml with FILEs merged over it, as
    `snakemake --configfile FILE ...` would read it; one line `error: ...` (the file and line,
    or the file that set the key and the key) and exit 1 if bad.

    `python -m xlt.workflow.config -- COMMAND ...`: check the --configfile files of a Snakemake command
    line the same way, then run the command (`make tables` does both in two steps).

    Snakemake reads config files itself, before the workflow runs, and its message for a file
    that is not YAML names neither the file nor the line; the workflow's own check (rules/
    common.smk) runs only once Snakemake has read them all."""
    argv = sys.argv[1:] if argv is None else list(argv)
    command = argv[argv.index("--") + 1:] if "--" in argv else None
    ap = argparse.ArgumentParser(prog="python -m xlt.workflow.config", description=main.__doc__.split("\n\n")[0])
    ap.add_argument("configfiles", nargs="*", help="config files merged over config.yaml, in order")
    a = ap.parse_args(argv if command is None else argv[: argv.index("--")])
    if command is not None:
        if not command or a.configfiles:
            ap.error("give either config files or `-- COMMAND ...`, not both")
        a.configfiles = snakemake_configfiles(command)
    sources: list = []
    try:
        sources = config_sources(a.configfiles)
        check_workflow_config(merged(sources))
    except XltError as e:
        raise XltError(f"invalid configuration: {located(e, sources)}") from None
    print(f"config OK: {', '.join(map(str, [DEFAULT_CONFIG.name, *a.configfiles]))}", file=sys.stderr)
    if command is not None:
        sys.stderr.flush()
        os.execvp(command[0], command)


if __name__ == "__main__":
    run(main)
