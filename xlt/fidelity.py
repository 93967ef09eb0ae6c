"""A paper's fidelity ledger: every setting that can move a number, where the paper and the
reference code put it, where ours is, and whether they agree (xlt/papers/<slug>/fidelity.yaml,
schema schemas/fidelity.schema.yaml).

The ledger is the one place a deviation is written: the notes under each table and in the
index beside each figure (`item_notes`), and docs/papers.md's list (`ledger_block`), are
generated from it; tests/test_fidelity.py checks every `ours.key` against the resolved configs.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import jsonschema
import yaml

from xlt.errors import XltError

REPO = Path(__file__).resolve().parent.parent
SCHEMA = REPO / "schemas" / "fidelity.schema.yaml"
PAPERS_DIR = REPO / "xlt" / "papers"

# Each category a ledger covers with at least one entry, or names in `not_applicable` with why.
CATEGORIES = (
    "optimizer", "learning_rate", "schedule", "warmup", "epochs", "batch_size", "grad_accumulation",
    "grad_clipping", "dropout", "head", "max_length", "long_inputs", "sampler", "selection",
    "data_train", "data_dev", "data_test", "data_translate_train", "data_translate_test",
    "languages", "metric", "seeds",
)
MISSING = object()


def ledger_file(slug: str) -> Path:
    return PAPERS_DIR / slug / "fidelity.yaml"


def has_ledger(slug: str) -> bool:
    return ledger_file(slug).is_file()


@cache
def _schema() -> dict:
    return yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))


@cache
def load(slug: str) -> dict:
    """The paper's ledger, validated: schema, unique ids, every category covered."""
    path = ledger_file(slug)
    try:
        ledger = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise XltError(f"{path}: no fidelity ledger for paper {slug}") from None
    except yaml.YAMLError as e:
        raise XltError(f"{path}: not valid YAML: {e}") from None
    errors = sorted(jsonschema.Draft202012Validator(_schema()).iter_errors(ledger), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = ".".join(map(str, e.absolute_path)) or "(top)"
        entry = _entry_name(ledger, list(e.absolute_path))
        raise XltError(f"{path}: {where}{entry}: {e.message}")
    if ledger["paper"] != slug:
        raise XltError(f"{path}: paper: {ledger['paper']!r}, but the file is paper {slug!r}'s")
    ids = [e["id"] for e in ledger["entries"]]
    if dup := sorted({i for i in ids if ids.count(i) > 1}):
        raise XltError(f"{path}: entry ids used twice: {', '.join(dup)}")
    covered = {e["category"] for e in ledger["entries"]} | set(ledger.get("not_applicable") or {})
    if missing := [c for c in CATEGORIES if c not in covered]:
        raise XltError(f"{path}: no entry (nor a not_applicable reason) for the categories: {', '.join(missing)}")
    repos = {r["repo"] for r in ledger["references"]}
    for e in ledger["entries"]:
        ref = e["reference"]
        if isinstance(ref, dict) and ref["repo"] not in repos:
            raise XltError(f"{path}: entry {e['id']}: reference repo {ref['repo']} is not among `references` "
                           f"({', '.join(sorted(repos)) or 'none'}): name it there with the commit read")
    return ledger


def _entry_name(ledger, path: list) -> str:
    if len(path) >= 2 and path[0] == "entries" and isinstance(path[1], int):
        try:
            return f" (entry {ledger['entries'][path[1]]['id']})"
        except (KeyError, IndexError, TypeError):
            return ""
    return ""


def config_value(cfg: dict, key: str):
    """The value at a dotted key (`hparams.xmixup.lr`), or MISSING."""
    node = cfg
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return MISSING
        node = node[part]
    return node


def deviations(slug: str) -> list[dict]:
    return [e for e in load(slug)["entries"] if e["verdict"] == "deviation"]


def _affects(entry: dict, item: str) -> bool:
    return entry["affects"] == "all" or item in entry["affects"]


def _text(value) -> str:
    if value is None:
        return "null"  # as the config spells it
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_text(v)}" for k, v in value.items()) + "}"
    return str(value)


def _sources(entry: dict) -> str:
    paper = entry["paper"]
    said = "paper silent" if paper == "silent" else f"paper {_text(paper['value'])} ({paper['where']})"
    ref = entry["reference"]
    if isinstance(ref, dict):
        said += f"; {ref['repo']} {_text(ref['value'])} ({ref['file']})"
    where = entry["ours"].get("key") or entry["ours"].get("code")
    return f"{said}; ours {_text(entry['ours']['value'])} (`{where}`)"


def deviation_note(slug: str, entry: dict) -> str:
    return (f"Deviation ({slug} fidelity `{entry['id']}`), {entry['setting']}: {_sources(entry)}. "
            f"Why: {entry['why'].strip()} Effect: {entry['effect'].strip()}")


def run_value(cfg: dict, entry: dict):
    """This run's value of an entry: the config's at its key, else the tiny value where `tiny`
    says the preset scales it in code, else the full-scale one."""
    ours = entry["ours"]
    if "key" in ours:
        value = config_value(cfg, ours["key"])
        return ours["value"] if value is MISSING else value
    return ours["tiny"].get("value", ours["value"]) if ours.get("tiny") and cfg.get("world") else ours["value"]


def scaling_note(slug: str, entry: dict, value) -> str:
    ours = entry["ours"]
    why = ours["tiny"]["why"].strip() if ours.get("tiny") else "set by this run's config."
    where = ours.get("key") or ours.get("code")
    return (f"This run ({slug} fidelity `{entry['id']}`), {entry['setting']}: {_text(value)} "
            f"(full scale {_text(ours['value'])}, `{where}`): {why}")


def item_notes(cfg: dict, slug: str, item: str) -> list[str]:
    """The notes a table or figure of `slug` carries: each deviation it is affected by, then
    each setting this run's config holds at another value than the full scale's (the tiny
    preset's scalings, or a user's change), in the ledger's order. None without a ledger."""
    if not has_ledger(slug):
        return []
    entries = [e for e in load(slug)["entries"] if _affects(e, item)]
    notes = [deviation_note(slug, e) for e in entries if e["verdict"] == "deviation"]
    for e in entries:
        value = run_value(cfg, e)
        if value != e["ours"]["value"] or (e["ours"].get("tiny") and "key" not in e["ours"] and cfg.get("world")):
            notes.append(scaling_note(slug, e, value))
    return notes


def figure_notes(cfg: dict, slug: str, figures: list[str]) -> list[list]:
    """[note, [figure ids]] for the figures of `slug` the index lists: each note once, with the
    figures it concerns, in the ledger's order (the index prints them under the paper's figures)."""
    grouped: dict[str, list[str]] = {}
    for fig in figures:
        for note in item_notes(cfg, slug, fig):
            grouped.setdefault(note, []).append(fig)
    return [[note, figs] for note, figs in grouped.items()]


def check_ours(slug: str, full: dict, tiny: dict) -> list[str]:
    """Every disagreement between the ledger's `ours` and the resolved configs: a full-scale
    value that is not config.yaml's, a tiny value that is not the tiny preset's, a tiny preset
    that changes a key the ledger gives no tiny reason for."""
    problems = []
    for e in load(slug)["entries"]:
        ours = e["ours"]
        if "key" not in ours:
            continue
        full_value = config_value(full, ours["key"])
        if full_value is MISSING:
            problems.append(f"{slug} {e['id']}: config.yaml has no key {ours['key']}")
        elif full_value != ours["value"]:
            problems.append(f"{slug} {e['id']}: {ours['key']} is {full_value!r} in config.yaml, the ledger says {ours['value']!r}")
        tiny_value = config_value(tiny, ours["key"])
        if tiny_value is MISSING or full_value is MISSING:
            continue
        if "value" in (ours.get("tiny") or {}) and tiny_value != ours["tiny"]["value"]:
            problems.append(f"{slug} {e['id']}: {ours['key']} is {tiny_value!r} on the tiny preset, the ledger says {ours['tiny']['value']!r}")
        if tiny_value != full_value and not ours.get("tiny"):
            problems.append(f"{slug} {e['id']}: the tiny preset sets {ours['key']} to {tiny_value!r} "
                            f"(full scale {full_value!r}) and the ledger gives no `tiny` reason")
    return problems


def counts(slug: str) -> dict[str, int]:
    entries = load(slug)["entries"]
    return {v: sum(e["verdict"] == v for e in entries) for v in ("same", "deviation")}


LEDGER_BEGIN = "<!-- fidelity: generated from the papers' fidelity ledgers; regenerate with: python -m xlt.workflow.status --write docs/papers.md -->"
LEDGER_END = "<!-- /fidelity -->"


def ledger_block(slugs) -> str:
    """docs/papers.md's list: per paper, its counts, then each deviation and each setting the
    paper is silent on (our choice), one line each, from the ledger."""
    lines = [LEDGER_BEGIN]
    for slug in slugs:
        if not has_ledger(slug):
            lines.append(f"- **{slug}**: no fidelity ledger yet.")
            continue
        n = counts(slug)
        lines.append(f"### {slug}: {n['same']} same, {n['deviation']} deviations "
                     f"([xlt/papers/{slug}/fidelity.yaml](../xlt/papers/{slug}/fidelity.yaml))")
        lines.append("")
        for e in load(slug)["entries"]:
            if e["verdict"] == "deviation":
                lines.append(f"- deviation `{e['id']}`, {e['setting']}: {_sources(e)}. {e['why'].strip()} "
                             f"Effect: {e['effect'].strip()}")
        for e in load(slug)["entries"]:
            if e["verdict"] == "same" and e["paper"] == "silent":
                lines.append(f"- our choice (paper silent) `{e['id']}`, {e['setting']}: {_sources(e)}.")
        lines.append("")
    lines.append(LEDGER_END)
    return "\n".join(lines)
