"""adjust's adjusted encoders in the path grammar: the init `adjust-<xx>-n<size>-seed<seed>[…]`
(registered with xlt.dag.targets as an init kind: `Paper.inits`), what its rule reads and the
settings it runs with, and continual learning's aux-set kind `aligned_pairs` (`Paper.aux_kinds`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from xlt.dag.targets import Init, InitKind, aligned_pairs_file, encoder_dir, encoder_inputs, encoder_source, engine_options
from xlt.errors import XltError


@dataclass(frozen=True)
class Adjusted:
    """An encoder adjusted across languages (Cao et al. 2020) on a sample of `size` aligned
    en–`pair` sentence pairs drawn with `seed` (the alignment stage's sample), with config
    `adapt.adjust`: `adjust-<pair>-n<size>-seed<seed>[-<word vectors>][-<tokens>]`. The defaults
    (subwords averaged, every token aligned) are not spelt, so a setting has one name; `-start` /
    `-end` / `-subword` and `-words` / `-cls` / `-cls_sep` are Tables 6 and 7's variants
    (`-subword`: links between the encoder's subwords, the stage's subword branch)."""

    pair: str
    size: int
    seed: int
    word_vectors: str = "avg"
    tokens: str = "all"
    method = "adjust"
    GRAMMAR = "adjust-<xx>-n<size>-seed<seed>[-start|-end|-subword][-words|-cls|-cls_sep]"
    PATTERN = r"adjust-[a-z]{2,3}-n\d+-seed\d+(-(start|end|subword))?(-(words|cls|cls_sep))?"

    @property
    def name(self) -> str:
        return (f"{self.method}-{self.pair}-n{self.size}-seed{self.seed}"
                + ("" if self.word_vectors == "avg" else f"-{self.word_vectors}")
                + ("" if self.tokens == "all" else f"-{self.tokens}"))

    @classmethod
    def parse(cls, name: str) -> "Adjusted":
        m = re.fullmatch(r"adjust-([a-z]{2,3})-n(\d+)-seed(\d+)(?:-(start|end|subword))?(?:-(words|cls|cls_sep))?", name)
        if not m:
            raise XltError(f"encoder init {name!r}: expected {cls.GRAMMAR!r}")
        return cls(m[1], int(m[2]), int(m[3]), m[4] or "avg", m[5] or "all")


INIT_KIND = InitKind(Adjusted.method, Adjusted.PATTERN, Adjusted.GRAMMAR, Adjusted.parse)


def adjusted_pairs_file(cfg: dict, encoder: str, it: Adjusted) -> str:
    """The aligned pairs an adjusted init reads: its sample of words, or of `encoder`'s subwords."""
    return aligned_pairs_file(cfg, it.pair, it.size, it.seed, encoder if it.word_vectors == "subword" else None)


CONTINUAL_DRAW = "continual"  # the alignment stage's draw of continual learning's samples (rules/align.smk)


def continual_pairs_file(cfg: dict, it: Adjusted, size: int, draw: str = "adjustment") -> str:
    """Continual learning's sample of `size` aligned pairs of the init's pair, drawn with its seed.
    `adjustment`: the alignment stage's sample of that size and seed, the adjustment's own draw.
    The authors' code draws it so: each of their scripts calls random.sample(pool, max_sent)
    right after set_seed(seed), so with equal seeds the continual 30K are the adjustment's 30K
    (alignment/utils_alignment.py, load_align_corpus). `continual`: a second draw of the pool
    (rule align_continual_sample), another sample than the adjustment's."""
    if it.word_vectors == "subword":
        raise XltError(f"encoder init {it.name!r}: continual learning reads word pairs; an init "
                       "ending in -subword (pairs aligned as subwords) has none (not built: no table asks for it)")
    if draw == "adjustment":
        return aligned_pairs_file(cfg, it.pair, size, it.seed)
    if draw != "continual":
        raise XltError(f"continual learning's draw {draw!r}: expected adjustment or continual")
    pair = f"{cfg['results']}/align/en-{it.pair}/{cfg['align']['backend']}"
    return f"{pair}/samples/{CONTINUAL_DRAW}/n{size}.seed{it.seed}.jsonl"


def adjust_inputs(cfg: dict, encoder: str, init: str) -> dict[str, list[str]]:
    """An adjustment's inputs: the encoder it starts from and its sample of aligned pairs."""
    it = Init.parse(init, [INIT_KIND])
    if not isinstance(it, Adjusted):
        raise XltError(f"{encoder_dir(cfg, encoder, init)}: not made by cross-lingual adjustment ({Adjusted.GRAMMAR})")
    return {"encoder": encoder_inputs(cfg, encoder), "pairs": [adjusted_pairs_file(cfg, encoder, it)]}


def adjust_config(cfg: dict, init: str) -> dict:
    """The AdjustConfig of an adjusted init: config `adapt.adjust` (with the `engine` options),
    the init's seed and its variant (word vectors, aligned tokens)."""
    it = Adjusted.parse(init)
    block = (cfg.get("adapt") or {}).get("adjust")
    if block is None:
        raise XltError(f"encoder init {init!r} needs config key adapt.adjust (the adjustment's settings)")
    return {**engine_options(cfg, block), "seed": it.seed, "word_vectors": it.word_vectors, "tokens": it.tokens,
            "max_length": block.get("max_length", 512)}  # AdjustConfig's default


def aligned_pairs_streams(cfg: dict, recipe: str, name: str, aux: dict, encoder: str | None, init: str) -> list[dict]:
    """An aux set of kind `aligned_pairs` (continual learning): one stream of the adjusted init's
    sample of aligned pairs, anchored to the encoder as released; its pairs: the set's `size`
    drawn as its `draw` says (continual_pairs_file)."""
    it = Init.parse(init, [INIT_KIND])
    if not isinstance(it, Adjusted):
        raise XltError(f"recipe {recipe!r}: aux set {name!r} (aligned pairs) needs an adjusted encoder init "
                       f"({Adjusted.GRAMMAR}); got {init!r}")
    return [{"kind": "aligned_pairs", "data": continual_pairs_file(cfg, it, aux["size"], aux.get("draw", "adjustment")),
             "reference": encoder_source(cfg, encoder),
             "weight": aux["weight"],
             "anchor_weight": aux.get("anchor_weight", 1.0), "word_vectors": it.word_vectors, "tokens": it.tokens,
             "max_length": adjust_config(cfg, init)["max_length"],
             **({"batch_size": aux["batch_size"]} if "batch_size" in aux else {})}]


AUX_KINDS = {"aligned_pairs": aligned_pairs_streams}
