"""Raw source files -> normalised records (docs/data.md), one (task, language, split) at a time.

`prepare_split` maps the split to its raw files under the raw root (fixed layout of
docs/data.md) and calls the matching strict reader of `xlt.formats`. A small *source config*
says what the layout alone cannot::

    source_cfg = {
        "ud": {"version": "2.7",                              # ud-treebanks-v<version>/
               "treebanks": {"en": ["UD_English-EWT", ...]}}, # concatenated, as XTREME does
        "xnli": {"train_source": {"en": "mnli/train-*.parquet"}},  # MultiNLI for English train
        "qa": {"train_source": "mlqa-translate-train/{lang}.json"},
        "wikimatrix": {"threshold": 1.04, "max_pairs": None},
    }

`ud.treebanks` may also be ``"all"``: every treebank of the language (files named
``<lang>_*-ud-<split>.conllu``), as XTREME's POS does; a language whose treebanks lack a split
(test-only treebanks such as th-PUD) then raises `SplitAbsent`, which `prepare_task` records
instead of failing.

Any task may carry ``<split>_source`` overrides: a path (relative to the raw root, or absolute)
that may contain ``{lang}``, ``{split}`` and ``{hub_split}`` and glob characters; several matches
are concatenated in sorted order. A mapping ``{lang: path}`` overrides only those languages. The reader is chosen by extension (``.parquet``, ``.tsv``
XNLI-MT, ``.json`` SQuAD, ``.jsonl`` MARC, ``.conllu``) and, where one extension has several
formats, by the source folder: ``.parquet`` of task qa under ``tydiqa/`` is TyDiQA-GoldP
(filtered to the language by id prefix), otherwise SQuAD-column parquet (MLQA's
``mlqa/{lang}/{hub_split}-*.parquet``); ``.tsv`` under ``xtreme_translations/`` is XTREME's
5-column translate-train (xnli, pawsx), or, in a ``translate-test/`` folder, its translate-test
(`xlt.formats.tsv.read_xtreme_translate_test`: the English pair of each test row). MLQA's original JSON
(``mlqa-v1/{split}/{split}-context-{lang}-question-{lang}.json``, config.yaml's route) is SQuAD
JSON; SQuAD JSON under ``xtreme_translations/`` (machine-translated) skips misplaced answers.
A real file's known quirk is handled as its reference implementation does (docs/data.md, "Known
quirks"): the rows skipped or repaired are logged and counted in the manifest's
``reader_stats.quirks`` (`record_quirks`). So QA test
sets other than XQuAD are a ``qa.test_source`` override, e.g.
``tydiqa/validation-00000-of-00001.parquet`` (TyDiQA-GoldP has no test split). `xlt.world.World.source_cfg()` gives
the source config of the tiny world.

A task's block may also say which splits there are (``splits: [test]``: a named test set) and
build a split from two languages' records (`xlt.stages.bilingual_sets`): ``mix: {with: en, seed: 1}``
(XNLI: one side of each pair replaced by the parallel English one) or ``cross: {question: en}``
/ ``cross: {context: en}`` (QA: English questions with the language's paragraphs, or the
language's questions with English paragraphs, joined on the question id). `xlt.dag.targets.source_cfg`
writes a named set (`data.<task>.sets.<set>`) this way.

A sentence-pair task (xnli, pawsx) may pair each record with its translation in a source
language: ``translated: {source: en, <split>: <path pattern>}`` (xmixup's translate-train /
translate-test). The source language keeps the task's own splits, each record its own source
(`xlt.stages.bilingual_sets.self_source`: X-Mixup's authors train and test English mixed with itself). Another
language's split is read from its pattern: an XTREME translate-train TSV (under
``xtreme_translations/``) holds both sides, the translated pair at the top level and the
English original under ``"source": {"text", "text_pair"}``; any other file (XTREME's
translate-test ``xtreme_translations/XNLI/translate-test/test-{lang}-en-translated.tsv``, or
XNLI-MT's ``xnli-mt/xnli/xnli.test.{lang}.tsv``) is the translation of the language's own
split: the record stays the language's own test row, its English side is the file's row of the
same number (`xlt.stages.bilingual_sets.attach_source`: count and labels checked). A split without a pattern is absent for the other
languages (listed under the manifest's ``absent``): e.g. translate-train models select on the
English dev set only. No back-translation (target -> source) is published for these sets.
QA (task ``qa``) pairs by question id instead of by row (`_qa_translated`): its train pattern is
XTREME's translated SQuAD (``squad.translate.train.en-{lang}.json``), each question joined to
its English original (question, context, answer: the source side's own span); any other split's
pattern is translate-test (``xquad.translate.test.{lang}-en.json``), joined to the language's
own split.

Besides the registry's tasks there is ``bitext`` (split ``train`` only): WikiMatrix en-<lang>.

`raw_patterns` says which raw files a split is read from; the layout lives there only, and
`xlt.dag.targets` maps those paths onto the catalog entries (`xlt.sources`) that deliver them.
"""

from __future__ import annotations

import glob as _glob
import logging
from collections.abc import Mapping
from pathlib import Path

from xlt.stages import bilingual_sets
from xlt.errors import DataFormatError, XltError
from xlt.formats import conllu, hub_parquet, marc_jsonl, squad_json, tsv
from xlt.io import atomic_dir, sha256_file, write_json, write_jsonl
from xlt.provenance import code_version
from xlt.registry import check_language, get_task

log = logging.getLogger(__name__)

HUB_SPLIT = {"train": "train", "dev": "validation", "test": "test"}
SPLITS = ("train", "dev", "test")
ALL_TREEBANKS = "all"  # ud.treebanks: every treebank of each language (XTREME)
# The raw layout of docs/data.md for the sources read one file per (language, split).
LAYOUT = {
    "wikiann": "wikiann/{lang}/{hub_split}-00000-of-00001.parquet",
    "paws-x": "paws-x/{lang}/{hub_split}-00000-of-00001.parquet",
    "xnli": "xnli/{lang}/{hub_split}-00000-of-00001.parquet",
    "marc": "marc/{lang}/{hub_split}.jsonl",
}


class SplitAbsent(XltError):
    """The selected treebanks of a language have no file for this split (e.g. test-only)."""


def _missing(task: str, lang: str, split: str, what: str) -> XltError:
    return XltError(
        f"no raw data for task {task!r}, language {lang!r}, split {split!r}: {what} "
        "(download it first where there is network: `snakemake --cores 1 prefetch` with this run's "
        "--configfile; with the tiny preset, the world job; or set a source override)"
    )


def _override_pattern(task: str, lang: str, split: str, source_cfg: dict) -> str | None:
    pattern = (source_cfg.get(task) or {}).get(f"{split}_source")
    if isinstance(pattern, Mapping):  # per language; the others keep the layout
        pattern = pattern.get(lang)
    if pattern is None:
        return None
    return str(pattern).format(lang=lang, split=split, hub_split=HUB_SPLIT[split])


def _ud_selection(source_cfg: dict, lang: str) -> tuple[str, list[str] | str]:
    """(release folder, treebank directories of `lang` or ALL_TREEBANKS)."""
    ud = source_cfg.get("ud")
    if not ud or "treebanks" not in ud:
        raise XltError("source_cfg.ud.treebanks: required for pos / parsing (language -> treebank directories)")
    root = f"ud-treebanks-v{ud.get('version', '2.7')}"
    if ud["treebanks"] == ALL_TREEBANKS:
        return root, ALL_TREEBANKS
    tbs = ud["treebanks"].get(lang)
    if not tbs:
        raise XltError(f"source_cfg.ud.treebanks.{lang}: no treebank listed for language {lang!r}")
    return root, list(tbs)


TWO_LANGUAGES = ("mix", "cross")  # a split built from the records of two languages (xlt.stages.bilingual_sets)


def _partner(task: str, source_cfg: dict) -> tuple[str, str, dict] | None:
    """(`mix` or `cross`, the partner language, the source config without it) of a task whose
    splits are built from two languages' records; None for any other."""
    block = source_cfg.get(task) or {}
    kinds = [k for k in TWO_LANGUAGES if k in block]
    if not kinds:
        return None
    if len(kinds) > 1 or (kinds[0] == "cross" and len(block["cross"]) != 1):
        raise XltError(f"source_cfg.{task}: one of mix: {{with: <lang>, seed: <int>}} or "
                       "cross: {question: <lang>} / {context: <lang>}")
    kind = kinds[0]
    partner = block["mix"].get("with", "en") if kind == "mix" else next(iter(block["cross"].values()))
    return kind, partner, {**source_cfg, task: {k: v for k, v in block.items() if k not in TWO_LANGUAGES}}


TRANSLATED_TASKS = ("xnli", "pawsx", "qa")  # tasks whose named sets may be `translated`
NO_BACK_TRANSLATION = ("no back-translation (target -> source) is published: `source` is the English original "
                       "(translate-train) or the target's translation into English (translate-test)")


def _translated(task: str, source_cfg: dict) -> tuple[dict, dict] | None:
    """(`translated` spec, the source config without it) of a task whose records are paired
    with a translation (`translated: {source: <lang>, <split>: <pattern>}`); None otherwise."""
    block = source_cfg.get(task) or {}
    spec = block.get("translated")
    if spec is None:
        return None
    if task not in TRANSLATED_TASKS or "source" not in spec:
        raise XltError(f"source_cfg.{task}.translated: {{source: <lang>, <split>: <path pattern>}} "
                       f"is for the tasks {', '.join(TRANSLATED_TASKS)}")
    return spec, {**source_cfg, task: {k: v for k, v in block.items() if k != "translated"}}


def _translation_pattern(spec: dict, lang: str, split: str) -> str | None:
    pattern = spec.get(split)
    return None if pattern is None else str(pattern).format(lang=lang, split=split, hub_split=HUB_SPLIT[split])


def _translation_is_target(task: str, split: str) -> bool:
    """QA's translate-train: the translated SQuAD is the language's training split, each
    question joined by id to its English original; any other split of a translated QA set
    is translate-test (the language's own split, joined by id to its English translation)."""
    return task == "qa" and split == "train"


def _xtreme_tsv(pattern: str | Path) -> bool:
    """An XTREME XNLI / PAWS-X translation TSV (translate-train or translate-test)."""
    return str(pattern).endswith(".tsv") and "xtreme_translations" in Path(pattern).parts


def _translate_test_tsv(pattern: str | Path) -> bool:
    """XTREME's XNLI / PAWS-X translate-test TSV (``.../translate-test/test-<lang>-en-translated.tsv``):
    a language's test set in English, read as the source side of that language's own test rows."""
    return _xtreme_tsv(pattern) and "translate-test" in Path(pattern).parts


def _both_sides(pattern: str | Path) -> bool:
    """An XTREME translate-train TSV: original and translated pair in one row, the translated
    pair being the record (a translate-test TSV's record is the language's own test row)."""
    return _xtreme_tsv(pattern) and not _translate_test_tsv(pattern)


def raw_files(task_name: str, lang: str, split: str, source_cfg: dict | None = None) -> list[tuple[str, str]]:
    """`raw_patterns`, each with the language whose data it holds (a two-language split reads
    its partner language's files too)."""
    source_cfg = source_cfg or {}
    translated = _translated(task_name, source_cfg) if task_name != "bitext" else None
    if translated is not None:
        spec, plain = translated
        pattern = _translation_pattern(spec, lang, split)
        if lang == spec["source"]:
            return raw_files(task_name, lang, split, plain)
        if pattern is None:
            return []  # absent: only the source language has this split
        if _translation_is_target(task_name, split):  # joined to the source language's own split
            return [*raw_files(task_name, spec["source"], split, plain), (pattern, lang)]
        return [(pattern, lang)] if _both_sides(pattern) else [*raw_files(task_name, lang, split, plain), (pattern, lang)]
    two = _partner(task_name, source_cfg) if task_name != "bitext" else None
    if two is not None:
        _, partner, plain = two
        return [*raw_files(task_name, lang, split, plain), *raw_files(task_name, partner, split, plain)]
    return [(p, lang) for p in _own_patterns(task_name, lang, split, source_cfg)]


def raw_patterns(task_name: str, lang: str, split: str, source_cfg: dict | None = None) -> list[str]:
    """The raw files (glob patterns, relative to the raw root unless an override is absolute)
    that `prepare_split` reads for one (task, language, split)."""
    return [p for p, _ in raw_files(task_name, lang, split, source_cfg)]


def _own_patterns(task_name: str, lang: str, split: str, source_cfg: dict) -> list[str]:
    if task_name == "bitext":
        return [f"wikimatrix/WikiMatrix.en-{lang}.tsv.gz"]
    source = get_task(task_name).source
    pattern = _override_pattern(task_name, lang, split, source_cfg)
    if pattern is not None:
        return [pattern]
    if source == "ud":
        root, tbs = _ud_selection(source_cfg, lang)
        if tbs == ALL_TREEBANKS:
            return [f"{root}/UD_*/{lang}_*-ud-{split}.conllu"]
        return [f"{root}/{tb}/*-ud-{split}.conllu" for tb in tbs]
    if source in LAYOUT:
        return [LAYOUT[source].format(lang=lang, hub_split=HUB_SPLIT[split])]
    if source == "squad":
        if split == "test":
            return [f"xquad/xquad.{lang}.json"]
        if lang == "en":
            return [f"squad/{split if split == 'train' else 'dev'}-v1.1.json"]
        raise _missing(task_name, lang, split, f"SQuAD {split} is English only; set source_cfg.qa.{split}_source")
    raise XltError(f"task {task_name!r}: no raw layout for source {source!r}")  # pragma: no cover


def _override(task: str, lang: str, split: str, raw_root: Path, source_cfg: dict) -> list[Path] | None:
    pattern = _override_pattern(task, lang, split, source_cfg)
    if pattern is None:
        return None
    full = pattern if Path(pattern).is_absolute() else str(raw_root / pattern)
    files = sorted(Path(p) for p in _glob.glob(full))
    if not files:
        raise _missing(task, lang, split, f"{split}_source {pattern!r} matches no file under {raw_root}")
    return files


def _need(path: Path, task: str, lang: str, split: str) -> Path:
    if not path.is_file():
        raise _missing(task, lang, split, f"{path} does not exist")
    return path


def record_quirks(stats: dict | None, lang: str, split: str, path: Path, counts: dict) -> None:
    """Log the rows a reader skipped or repaired (a real file's known quirk, handled as the
    reference implementation does) and record the counts in the manifest's
    ``reader_stats.quirks["<lang>/<split>"][<file name>]``."""
    counts = {k: v for k, v in counts.items() if v}
    if not counts:
        return
    log.warning("%s (language %s, split %s): %s", path, lang, split, ", ".join(f"{k} {v}" for k, v in counts.items()))
    if stats is not None:
        stats.setdefault("quirks", {}).setdefault(f"{lang}/{split}", {})[path.name] = counts


def _translated_squad(path: Path) -> bool:
    """XTREME's machine-translated SQuAD / TyDiQA-GoldP (SQuAD JSON): some answers misplaced."""
    return path.name.endswith(".json") and "xtreme_translations" in path.parts


def _read_by_extension(task: str, lang: str, split: str, path: Path, stats: dict | None) -> list[dict]:
    name = path.name
    prefix = f"{lang}-{split}-{path.stem}-"
    quirks: dict = {}
    if name.endswith(".parquet"):
        if task == "ner":
            return hub_parquet.read_wikiann(path, lang=lang, id_prefix=prefix)
        if task == "xnli":
            return hub_parquet.read_xnli(path, id_prefix=prefix)
        if task == "pawsx":
            return hub_parquet.read_pawsx(path)
        if task == "qa" and "tydiqa" in path.parts:  # all languages in one file: keep `lang`
            records = hub_parquet.read_tydiqa(path, lang=lang, stats=quirks)
            record_quirks(stats, lang, split, path, quirks)
            return records
        if task == "qa":  # MLQA's refs/convert/parquet (SQuAD's columns)
            return hub_parquet.read_squad_parquet(path)
    elif task in ("xnli", "pawsx") and _translate_test_tsv(path):
        return tsv.read_xtreme_translate_test(path, task, id_prefix=prefix)
    elif name.endswith(".tsv") and task in ("xnli", "pawsx") and "xtreme_translations" in path.parts:
        records = tsv.read_xtreme_translated(path, task, id_prefix=prefix, stats=quirks)
        record_quirks(stats, lang, split, path, quirks)
        return records
    elif name.endswith((".tsv", ".tsv.gz")) and task == "xnli":
        return tsv.read_xnli_mt(path, id_prefix=prefix)
    elif name.endswith(".jsonl") and task == "marc":
        return marc_jsonl.read_marc(path)
    elif name.endswith(".json") and task == "qa":
        return read_squad_file(path, lang, split, stats)
    elif name.endswith(".conllu") and task in ("pos", "parsing"):
        return conllu.read_conllu(path, stats=stats)
    raise XltError(f"{path}: no reader for a {name.rsplit('.', 1)[-1]!r} file of task {task!r}")


def read_squad_file(path: Path, lang: str, split: str, stats: dict | None, *, allow_unanswerable: bool = False) -> list[dict]:
    """SQuAD JSON, strictly; XTREME's translations skip (and count) misplaced answers, as
    XTREME's SQuAD reader drops a training answer it cannot find in its context."""
    if not _translated_squad(path):
        return squad_json.read_squad(path, allow_unanswerable=allow_unanswerable)
    skipped: dict = {}
    records = squad_json.read_squad(path, allow_unanswerable=allow_unanswerable, skipped=skipped)
    record_quirks(stats, lang, split, path, {"answers_misplaced": skipped.get("answers", 0),
                                             "questions_without_answer": skipped.get("questions", 0)})
    return records


def _ud(task: str, lang: str, split: str, raw_root: Path, source_cfg: dict, stats: dict | None) -> list[dict]:
    release, tbs = _ud_selection(source_cfg, lang)
    root = raw_root / release
    if tbs == ALL_TREEBANKS:
        return _ud_all(task, lang, split, root, stats)
    out: list[dict] = []
    found = False
    for tb in tbs:
        d = root / tb
        if not d.is_dir():
            raise _missing(task, lang, split, f"treebank directory {d} does not exist")
        files = sorted(d.glob(f"*-ud-{split}.conllu"))
        if len(files) > 1:
            raise XltError(f"{d}: several {split} files: {', '.join(f.name for f in files)}")
        if not files:
            continue  # e.g. a test-only treebank
        found = True
        out += [{**r, "id": f"{tb}/{r['id']}"} for r in conllu.read_conllu(files[0], stats=stats)]
    if not found:
        raise _missing(task, lang, split, f"none of the treebanks {', '.join(tbs)} under {root} has a {split} file")
    return out


def _ud_all(task: str, lang: str, split: str, root: Path, stats: dict | None) -> list[dict]:
    """Every treebank of `lang` in the release, concatenated in directory order (XTREME)."""
    files = sorted(root.glob(f"UD_*/{lang}_*-ud-{split}.conllu"))
    if not files:
        if not any(root.glob(f"UD_*/{lang}_*-ud-*.conllu")):
            raise _missing(task, lang, split, f"no treebank of language {lang!r} under {root}")
        raise SplitAbsent(f"task {task!r}, language {lang!r}: no treebank under {root} has a {split} file")
    return [{**r, "id": f"{f.parent.name}/{r['id']}"} for f in files for r in conllu.read_conllu(f, stats=stats)]


def prepare_split(
    task_name: str,
    lang: str,
    split: str,
    raw_root: str | Path,
    source_cfg: dict | None = None,
    *,
    stats: dict | None = None,
) -> list[dict]:
    """Normalised records of one (task, language, split), read from the raw files.

    `stats`, if given, collects reader counts (e.g. ``skipped_textless`` for UD).
    Raises XltError for an unknown task / language / split or a missing file, and
    DataFormatError for a malformed one.
    """
    raw_root = Path(raw_root)
    source_cfg = source_cfg or {}
    if split not in SPLITS:
        raise XltError(f"unknown split {split!r}; allowed: {', '.join(SPLITS)}")
    if task_name == "bitext":
        return _bitext(lang, split, raw_root, source_cfg)
    task = get_task(task_name)
    check_language(task, lang)
    if _partner(task_name, source_cfg) is not None:
        return _two_languages(task_name, lang, split, raw_root, source_cfg, stats)
    if _translated(task_name, source_cfg) is not None:
        return _translated_split(task_name, lang, split, raw_root, source_cfg, stats)
    read = _existing_files(task_name, lang, split, raw_root, source_cfg)
    for path in read:  # a truncated download or an interrupted copy
        if path.stat().st_size == 0:
            raise DataFormatError(path, None, f"empty file (task {task_name!r}, language {lang!r}, split {split!r})")
    files = _override(task_name, lang, split, raw_root, source_cfg)
    if files is not None:
        records = [r for f in files for r in _read_by_extension(task_name, lang, split, f, stats)]
    elif task.source == "ud":
        records = _ud(task_name, lang, split, raw_root, source_cfg, stats)
    else:
        path = _need(raw_root / raw_patterns(task_name, lang, split, source_cfg)[0], task_name, lang, split)
        if task.source == "wikiann":
            records = hub_parquet.read_wikiann(path, lang=lang, id_prefix=f"{lang}-{split}-")
        elif task.source == "paws-x":
            records = hub_parquet.read_pawsx(path)
        elif task.source == "xnli":
            records = hub_parquet.read_xnli(path, id_prefix=f"{lang}-{split}-")
        elif task.source == "marc":
            records = marc_jsonl.read_marc(path)
        elif task.source == "squad":
            records = squad_json.read_squad(path)
        else:  # pragma: no cover - a registry entry without a reader
            raise XltError(f"task {task_name!r}: no reader for source {task.source!r}")
    if not records:
        raise XltError(f"{', '.join(map(str, read)) or raw_root}: no records for task {task_name!r}, "
                       f"language {lang!r}, split {split!r}")
    return records


def _two_languages(task: str, lang: str, split: str, raw_root: Path, source_cfg: dict, stats: dict | None) -> list[dict]:
    """A split built from `lang`'s records and its partner's (`mix` or `cross`, xlt.stages.bilingual_sets)."""
    kind, partner, plain = _partner(task, source_cfg)
    spec = source_cfg[task][kind]
    if partner == lang:
        raise XltError(f"source_cfg.{task}.{kind}: language {lang!r} would be paired with itself")
    own, other = (prepare_split(task, x, split, raw_root, plain, stats=stats) for x in (lang, partner))
    own_file, other_file = (", ".join(map(str, _existing_files(task, x, split, raw_root, plain))) for x in (lang, partner))
    stats = {} if stats is None else stats
    if kind == "mix":
        if "text_pair" not in own[0]:
            raise XltError(f"source_cfg.{task}.mix: task {task!r} has no sentence pairs to mix")
        out = bilingual_sets.mix_pairs(own, other, lang=lang, seed=spec["seed"], partner=partner,
                                 target_file=own_file, english_file=other_file)
        sides = stats.setdefault("mixed", {}).setdefault(f"{lang}/{split}", dict.fromkeys(bilingual_sets.SIDES, 0))
        for r in out:
            sides[r["mixed"]["replaced"]] += 1
        return out
    if task != "qa":
        raise XltError(f"source_cfg.{task}.cross: cross-lingual question / paragraph pairs are QA's (task 'qa')")
    (side,) = spec
    if side not in ("question", "context"):
        raise XltError(f"source_cfg.{task}.cross: {side!r} is not allowed; allowed: question, context")
    (questions, q_file), (contexts, c_file) = (((other, other_file), (own, own_file)) if side == "question"
                                               else ((own, own_file), (other, other_file)))
    count: dict = {}
    out = bilingual_sets.cross_qa(questions, contexts, stats=count, question_file=q_file, context_file=c_file)
    stats.setdefault("cross_unmatched", {})[f"{lang}/{split}"] = count["unmatched"]
    return out


def _translated_split(task: str, lang: str, split: str, raw_root: Path, source_cfg: dict, stats: dict | None) -> list[dict]:
    """A split of a `translated` set: the source language's own records (each its own source),
    or the language's records each with its source-language side under `source` (see the
    module's docstring)."""
    spec, plain = _translated(task, source_cfg)
    if lang == spec["source"]:
        out = bilingual_sets.self_source(task, prepare_split(task, lang, split, raw_root, plain, stats=stats))
        _translated_stats(stats, spec, "self_paired", lang, split, len(out))
        return out
    pattern = _translation_pattern(spec, lang, split)
    if pattern is None:
        raise SplitAbsent(f"task {task!r}, language {lang!r}: no {split} split in this translated set "
                          f"(source_cfg.{task}.translated has no {split!r}; only {spec['source']!r} has it)")
    full = pattern if Path(pattern).is_absolute() else str(raw_root / pattern)
    files = sorted(Path(p) for p in _glob.glob(full))
    if len(files) != 1:
        raise _missing(task, lang, split, f"translated.{split} {pattern!r} matches {len(files) or 'no'} files under "
                                          f"{raw_root} (one expected)")
    path = files[0]
    if path.stat().st_size == 0:
        raise DataFormatError(path, None, f"empty file (task {task!r}, language {lang!r}, split {split!r})")
    if task == "qa":
        out = _qa_translated(lang, split, path, raw_root, spec, plain, stats)
    elif _both_sides(path):
        quirks: dict = {}
        out = tsv.read_xtreme_translated(path, task, id_prefix=f"{lang}-{split}-{path.stem}-", keep_source=True,
                                         stats=quirks)
        record_quirks(stats, lang, split, path, quirks)
    else:
        own = prepare_split(task, lang, split, raw_root, plain, stats=stats)
        own_file = ", ".join(map(str, _existing_files(task, lang, split, raw_root, plain)))
        out = bilingual_sets.attach_source(own, _read_by_extension(task, lang, split, path, stats),
                                     target_file=own_file, translated_file=path)
    if not out:
        raise XltError(f"{path}: no records for task {task!r}, language {lang!r}, split {split!r}")
    _translated_stats(stats, spec, "pairs", lang, split, len(out))
    return out


def _translated_stats(stats: dict | None, spec: dict, key: str, lang: str, split: str, n: int) -> None:
    """Count a translated split's records in the manifest's `translated` stats, under `key`
    ("pairs": joined to a translation; "self_paired": the source language, its own source)."""
    if stats is not None:
        info = stats.setdefault("translated", {"source": spec["source"], "note": NO_BACK_TRANSLATION, "pairs": {}})
        info.setdefault(key, {})[f"{lang}/{split}"] = n


def _qa_translated(lang: str, split: str, path: Path, raw_root: Path, spec: dict, plain: dict,
                   stats: dict | None) -> list[dict]:
    """A translated QA split, joined by question id: translate-train (the translated SQuAD,
    each question with its English original's question, context and answer), or translate-test
    (the language's own questions, each with its English translation's question and context;
    one without a translation is kept on its own, predicted from the target side alone).
    A translated question whose id the English side lacks is paired with itself, as the xmixup
    authors' code does (XTREME's TyDiQA-GoldP translations need not keep TyDiQA's ids).
    Misplaced translated answers are skipped (`squad_json.read_squad`); both counts, and the
    questions without a partner, go to the manifest's `translated` stats and the log."""
    skipped: dict = {}
    train = _translation_is_target("qa", split)
    translated = squad_json.read_squad(path, allow_unanswerable=not train, skipped=skipped)
    home = spec["source"] if train else lang
    own = prepare_split("qa", home, split, raw_root, plain, stats=stats)
    own_file = ", ".join(map(str, _existing_files("qa", home, split, raw_root, plain)))
    target, source = (translated, own) if train else (own, translated)
    files = {"target_file": path, "source_file": own_file} if train else {"target_file": own_file, "source_file": path}
    count: dict = {}
    out = bilingual_sets.attach_source_by_id(target, source, ("question", "context", "answers") if train else ("question", "context"),
                                       stats=count, unmatched="self" if train else "keep", **files)
    counts = {"skipped_answers": skipped.get("answers", 0), "skipped_questions": skipped.get("questions", 0),
              "unmatched": count["unmatched"]}
    if train and count["unmatched"] == len(out):  # paired with itself: as the xmixup authors' code does
        log.warning("%s: no translated question has its English original's id in %s: each of the %d is paired with "
                    "itself (no source-side partner)", path, own_file, len(out))
    record_quirks(None, lang, split, path, counts)  # the log; the manifest keeps them under translated_qa
    if stats is not None:
        stats.setdefault("translated_qa", {})[f"{lang}/{split}"] = counts
    return out


def _existing_files(task: str, lang: str, split: str, raw_root: Path, source_cfg: dict) -> list[Path]:
    """The raw files of one (task, language, split) that exist (what the readers will open)."""
    try:
        patterns = raw_patterns(task, lang, split, source_cfg)
    except XltError:
        return []  # the reader raises its own message (e.g. no SQuAD dev for a language)
    return sorted({Path(f) for pat in patterns
                   for f in _glob.glob(pat if Path(pat).is_absolute() else str(raw_root / pat))})


def _bitext(lang: str, split: str, raw_root: Path, source_cfg: dict) -> list[dict]:
    if split != "train":
        raise XltError(f"bitext has only a 'train' split, not {split!r}")
    if lang == "en" or not lang.isalpha():
        raise XltError(f"bitext: language must be a non-English language code, got {lang!r}")
    wm = source_cfg.get("wikimatrix") or {}
    path = _need(raw_root / raw_patterns("bitext", lang, split)[0], "bitext", lang, split)
    if path.stat().st_size == 0:
        raise DataFormatError(path, None, "empty file (task 'bitext')")
    records = tsv.read_wikimatrix(
        path, threshold=wm.get("threshold", tsv.WIKIMATRIX_THRESHOLD), max_pairs=wm.get("max_pairs")
    )
    if not records:
        raise XltError(f"{path}: no sentence pair scores above the threshold")
    return records


def write_normalised(records: list[dict], out_path: str | Path) -> int:
    """Write records as JSON lines atomically; return how many were written."""
    return write_jsonl(out_path, records)


def prepare_task(task_name: str, langs: list[str], raw_root: str | Path, source_cfg: dict, out_dir: str | Path) -> dict:
    """Normalise every (language, split) of a task into `out_dir/<lang>/<split>.jsonl`.

    The folder is written whole or not at all (a temp dir renamed into place), with a
    `manifest.json` of record counts, reader statistics and the sha256 of every file. A split
    that the selected treebanks of a language do not have (`SplitAbsent`, only with
    ``ud.treebanks: all``) is listed under ``absent`` and has no file.
    """

    splits = get_task(task_name).splits if task_name != "bitext" else ("train",)
    splits = (source_cfg.get(task_name) or {}).get("splits") or splits  # a named set's own
    counts: dict[str, dict[str, int]] = {}
    stats: dict = {}
    files: dict[str, str] = {}
    absent: dict[str, list[str]] = {}
    with atomic_dir(out_dir) as tmp:
        for lang in langs:
            for split in splits:
                try:
                    records = prepare_split(task_name, lang, split, raw_root, source_cfg, stats=stats)
                except SplitAbsent as e:
                    log.warning("%s", e)
                    absent.setdefault(lang, []).append(split)
                    continue
                rel = f"{lang}/{split}.jsonl"
                counts.setdefault(lang, {})[split] = write_normalised(records, Path(tmp) / rel)
                files[rel] = sha256_file(Path(tmp) / rel)
        manifest = {"task": task_name, "raw_root": str(raw_root), "counts": counts, "absent": absent,
                    "reader_stats": stats,
                    "sha256": files, "code": code_version()}
        write_json(Path(tmp) / "manifest.json", manifest)
    return manifest
