"""The tiny world: a deterministic synthetic multilingual world for offline runs.

Several toy languages share one latent grammar (`xlt.world.grammar`): a sentence is a small
tree (subject NP, verb, object NP, optional PP / adjective / number / name / negation / time
word / manner adverb, tense, voice). Each language has its own generated lexicon, morphology,
word order and script (`xlt.world.lexicon`); names, digits and punctuation are shared. From the
latent meanings the world derives every task of the papers (`xlt.world.datasets`) and writes
each in its real source's raw form (docs/data.md), so the tiny run goes through the same
readers as the full one. Config schema: `xlt.world.schema` and docs/world.md.

Public API::

    generate(world_cfg, raw_root) -> manifest          # write every dataset
    pretraining_text(world_cfg, n_sentences) -> {lang: [str]}
    World(world_cfg)                                    # .records(task, lang, split), .source_cfg()

Everything is a function of the config (seed included): no global random state is used.
"""

from __future__ import annotations

import random
from pathlib import Path

from xlt.errors import XltError
from xlt.io import sha256_file
from xlt.registry import get_task
from xlt.world import datasets as ds
from xlt.world.schema import resolve
from xlt.world.grammar import Realiser, Sampler
from xlt.world.lexicon import build_inventory, build_language, stable_seed

__all__ = ["World", "generate", "pretraining_text", "resolve"]

WORLD_FORMAT = 1


class World:
    """A resolved world: languages (lexicons), the latent sampler, and its datasets."""

    def __init__(self, world_cfg: dict):
        self.cfg = resolve(world_cfg)
        self.seed = self.cfg["seed"]
        self.inventory = build_inventory(self.seed, self.cfg["vocab"])
        self.sampler = Sampler(self.inventory)
        self.languages = {}
        pending = dict(self.cfg["languages"])
        while pending:  # related languages first
            for code, props in list(pending.items()):
                rel = props["related"]
                if rel is None or rel in self.languages:
                    self.languages[code] = build_language(
                        code, props, self.seed, self.inventory, self.cfg["noise"],
                        self.languages.get(rel),
                    )  # fmt: skip
                    del pending[code]
        self._realisers: dict[str, Realiser] = {}
        self._units: list[ds.Unit] | None = None

    def realiser(self, lang: str) -> Realiser:
        r = self._realisers.get(lang)
        if r is None:
            r = self._realisers[lang] = Realiser(self.languages[lang], self.sampler, self.cfg["noise"])
        return r

    def task_languages(self, task: str) -> list[str]:
        """World languages the task is generated for: those its real source offers
        (registry), in config order; for `bitext`, every language but English."""
        if task == "bitext":
            return [c for c in self.languages if c != "en"]
        offered = get_task(task).languages
        return [c for c in self.languages if c in offered]

    # -- datasets ---------------------------------------------------------------
    def units(self) -> list[ds.Unit]:
        if self._units is None:
            tasks = self.cfg["tasks"]
            units: list[ds.Unit] = []
            if "pos" in tasks or "parsing" in tasks:
                langs = self.task_languages("pos" if "pos" in tasks else "parsing")
                for lang in langs:
                    units += ds.build_ud(self, lang)
            if "ner" in tasks:
                for lang in self.task_languages("ner"):
                    units += ds.build_ner(self, lang)
            units += ds.build_tagging_translations(
                self, self.task_languages("pos" if "pos" in tasks else "parsing"), self.task_languages("ner")
            )
            if "pawsx" in tasks:
                units += ds.build_pawsx(self, self.task_languages("pawsx"))
            if "xnli" in tasks:
                units += ds.build_xnli(self, self.task_languages("xnli"))
            if "marc" in tasks:
                units += ds.build_marc(self, self.task_languages("marc"))
            if "qa" in tasks:
                units += ds.build_qa(self, self.task_languages("qa"))
            if "bitext" in tasks:
                for xx in self.task_languages("bitext"):
                    units += ds.build_bitext(self, xx)
            self._units = units
        return self._units

    def records(self, task: str, lang: str, split: str, source: str | None = None) -> list[dict]:
        """The normalised records that `xlt.stages.prepare.prepare_split` must read back from the
        written files (with `source_cfg(...)`); `source` names a file read through a
        ``<split>_source`` override (translations, MultiNLI, MLQA, TyDiQA: see `keys`)."""
        key = (task, lang, split) if source is None else (task, lang, split, source)
        for u in self.units():
            if key in u.records:
                return u.records[key]
        raise XltError(f"the world has no data for task {task!r}, language {lang!r}, split {split!r}"
                       + (f", source {source!r}" if source else ""))  # fmt: skip

    def keys(self) -> list[tuple]:
        """(task, lang, split) of each default split, and (task, lang, split, source) of each
        file that is read through a source override."""
        return [k for u in self.units() for k in u.records]

    def source_cfg(self, override: tuple | None = None) -> dict:
        """The `source_cfg` for `xlt.stages.prepare` that points at what `write` produces; given a
        4-part key of `keys()`, with that file as its ``<split>_source`` override."""
        cfg = self._source_cfg()
        if override is not None:
            task, lang, split, source = override
            cfg[task] = {f"{split}_source": {lang: source}}
        return cfg

    def _source_cfg(self) -> dict:
        ud_langs = [c for c in self.languages if c in get_task("pos").languages or c in get_task("parsing").languages]
        treebanks = {}
        for c in ud_langs:
            treebanks[c] = [ds.ud_dir(self, c)]
            if c in self.cfg["ud"]["textless"]:
                treebanks[c].append(ds.ud_dir(self, c, textless=True))
        return {
            "ud": {"version": self.cfg["ud"]["version"], "treebanks": treebanks},
            "wikimatrix": {"threshold": ds.WIKIMATRIX_THRESHOLD},
        }

    def write(self, raw_root: str | Path) -> dict:
        raw_root = Path(raw_root)
        files = {}
        for u in self.units():
            target = raw_root / u.path
            n = u.write(target)
            files[u.path] = {"sha256": sha256_file(target), "rows": n}
        return {
            "format": WORLD_FORMAT,
            "seed": self.seed,
            "config": self.cfg,
            "languages": {
                c: {"name": lang.name, "upos": sorted(lang.upos),
                    "treebanks": self.source_cfg()["ud"]["treebanks"].get(c, [])}
                for c, lang in self.languages.items()
            },  # fmt: skip
            "tasks": {t: self.task_languages(t) for t in self.cfg["tasks"]},
            "source_cfg": self.source_cfg(),
            "files": dict(sorted(files.items())),
        }


def generate(world_cfg: dict, raw_root: str | Path) -> dict:
    """Write every dataset of the world under `raw_root` (layout of docs/data.md).

    Returns the manifest: ``{"format", "seed", "config" (resolved), "languages" {code: {name,
    upos, treebanks}}, "tasks" {task: [langs]}, "source_cfg" (for xlt.stages.prepare), "files"
    {relative path: {"sha256", "rows"}}}``.
    """
    return World(world_cfg).write(raw_root)


def pretraining_text(world_cfg: dict, n_sentences: int) -> dict[str, list[str]]:
    """Unlabelled text, `n_sentences` sentences per world language (statements, copular
    sentences, questions, review sentences), for tokenizer training and MLM pretraining.
    Deterministic; drawn from its own random streams, so it does not reuse task examples."""
    world = World(world_cfg)
    out = {}
    for lang in world.languages:
        rng = random.Random(stable_seed(world.seed, "pretrain", lang))
        real = world.realiser(lang)
        texts = []
        while len(texts) < n_sentences:
            if rng.random() < 0.1:
                clauses, _star = ds.review(world, rng)
                texts += [real.sentence(c, rng).text for c in clauses]
            else:
                texts.append(real.sentence(world.sampler.any_sentence(rng), rng).text)
        out[lang] = texts[:n_sentences]
    return out
