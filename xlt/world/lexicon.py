"""Concept inventory (shared by all languages) and per-language lexicons and scripts.

A word is kept as a tuple of syllables in an internal Latin alphabet; `Language.form` writes it
in the language's script (letter by letter; for `han`, one ideograph per syllable).
"""

from __future__ import annotations

import hashlib
import random
import zlib
from dataclasses import dataclass, field

CONSONANTS = "ptkbdgmnslrvfhjwz"
VOWELS = "aeiou"

_SCRIPT_TABLES = {
    "cyrillic": dict(zip(VOWELS + CONSONANTS, "аеиоу" + "птквдгмнслрбфхжшз", strict=True)),
    "greek": dict(zip(VOWELS + CONSONANTS, "αειου" + "πτκβδγμνσλρψφχξωζ", strict=True)),
    "arabic": dict(zip(VOWELS + CONSONANTS, "اىيوؤ" + "پتكبدغمنسلرڤفهجثز", strict=True)),
    "devanagari": dict(zip(VOWELS + CONSONANTS, "अएइओउ" + "पतकबदगमनसलरवफहजठझ", strict=True)),
}
_HAN_BASE, _HAN_RANGE = 0x4E00, 0x5000  # CJK Unified Ideographs, all \w (category Lo)

# Pronoun persons: (feature string, plural)
PRONOUNS = (("Number=Sing|Person=1", False), ("Number=Sing|Person=2", False),
            ("Number=Sing|Person=3", False), ("Number=Sing|Person=3", False),
            ("Number=Plur|Person=1", True), ("Number=Plur|Person=3", True))  # fmt: skip
PREPS = ("in", "near", "from", "to", "with")  # the last takes a person, the others a place
FUNCTION_WORDS = ("det_def", "det_indef", "neg", "fut", "pass", "cop", "past", "by", "of",
                  "and", "very", "who", "what", "where")  # fmt: skip


def stable_seed(*parts) -> int:
    """A 64-bit seed from any printable parts, stable across runs and Python versions."""
    h = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(h[:8], "big")


def rng_for(world, *parts) -> random.Random:
    """A random stream of its own for one file or stage of the world (its seed and `parts`)."""
    return random.Random(stable_seed(world.seed, *parts))


@dataclass
class Inventory:
    """Language-independent concepts (indices) with their semantic attributes."""

    noun_class: list[str]  # per noun: person | object | place | time | orgnoun
    by_class: dict[str, list[int]]
    verb_transitive: list[bool]
    verb_antonym: list[int | None]
    verb_polarity: list[int]
    adj_polarity: list[int]
    n_adverbs: int
    first_names: list[str]
    last_names: list[str]
    locations: list[tuple[str, ...]]
    org_bases: list[str]

    @property
    def n_verbs(self) -> int:
        return len(self.verb_transitive)

    @property
    def n_adjs(self) -> int:
        return len(self.adj_polarity)


def _name_word(rng: random.Random, used: set[str]) -> str:
    while True:
        n = rng.choice((2, 2, 3))
        s = "".join(
            (rng.choice(CONSONANTS) if rng.random() < 0.85 else "") + rng.choice(VOWELS)
            + (rng.choice("nrlsk") if rng.random() < 0.3 else "")
            for _ in range(n)
        ).capitalize()  # fmt: skip
        if s not in used and len(s) >= 3:
            used.add(s)
            return s


def build_inventory(seed: int, vocab: dict) -> Inventory:
    rng = random.Random(stable_seed(seed, "inventory"))
    noun_class: list[str] = []
    by_class: dict[str, list[int]] = {}
    for cls, n in (("person", vocab["person"]), ("object", vocab["object"]), ("place", vocab["place"]),
                   ("time", vocab["time"]), ("orgnoun", 4)):  # fmt: skip
        by_class[cls] = list(range(len(noun_class), len(noun_class) + n))
        noun_class += [cls] * n
    nv = vocab["verb"]
    n_intr = max(2, nv // 5)
    n_pairs = (nv - n_intr) // 2
    transitive = [True] * (2 * n_pairs) + [False] * (nv - 2 * n_pairs)
    antonym: list[int | None] = [None] * nv
    for k in range(n_pairs):
        antonym[2 * k], antonym[2 * k + 1] = 2 * k + 1, 2 * k
    polarity = [0] * nv
    polarity[:4] = [2, -2, 1, -1]  # love / hate, like / dislike: the sentiment verbs
    na = vocab["adjective"]
    strong, mild = max(2, na // 8), max(2, na // 6)
    adj_pol = [2] * strong + [1] * mild + [0] * (na - 2 * strong - 2 * mild) + [-1] * mild + [-2] * strong
    used: set[str] = set()
    first = [_name_word(rng, used) for _ in range(vocab["first_name"])]
    last = [_name_word(rng, used) for _ in range(vocab["last_name"])]
    # some place and organisation names are also person names (type ambiguity, as in WikiANN)
    locs = []
    for i in range(vocab["location"]):
        w = rng.choice(first + last) if rng.random() < 0.15 else _name_word(rng, used)
        locs.append((w,) if i % 5 else (_name_word(rng, used), w))  # every 5th is two words
    orgs = [rng.choice(last) if rng.random() < 0.15 else _name_word(rng, used)
            for _ in range(vocab["organization"])]  # fmt: skip
    return Inventory(noun_class, by_class, transitive, antonym, polarity, adj_pol, vocab["adverb"],
                     first, last, locs, orgs)  # fmt: skip


@dataclass
class Language:
    """One toy language: properties, lexicon (concept -> stems) and affixes."""

    code: str
    props: dict
    stems: dict = field(default_factory=dict)  # concept key -> list of stems (syllable tuples)
    suffix: dict = field(default_factory=dict)  # plural / past / pres / part / acc / loc
    upos: frozenset = frozenset()
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.props["name"]

    def form(self, syls: tuple[str, ...]) -> str:
        """Write a syllable tuple in this language's script."""
        out = self._cache.get(syls)
        if out is None:
            script = self.props["script"]
            if script == "latin":
                out = "".join(syls)
            elif script == "han":
                out = "".join(chr(_HAN_BASE + zlib.crc32(s.encode()) % _HAN_RANGE) for s in syls)
            else:
                table = _SCRIPT_TABLES[script]
                out = "".join(table.get(ch, ch) for s in syls for ch in s)
            self._cache[syls] = out
        return out

    def name_form(self, token: str) -> str:
        """A shared name token, transliterated if the language asks for it."""
        if not self.props["transliterate_names"] or self.props["script"] == "latin":
            return token
        key = ("NAME", token)
        out = self._cache.get(key)
        if out is None:
            low = token.lower()
            if self.props["script"] == "han":
                out = "".join(chr(_HAN_BASE + zlib.crc32(low[i : i + 2].encode()) % _HAN_RANGE)
                              for i in range(0, len(low), 2))  # fmt: skip
            else:
                table = _SCRIPT_TABLES[self.props["script"]]
                out = "".join(table.get(ch, ch) for ch in low)
                out = out[:1].upper() + out[1:]
            self._cache[key] = out
        return out


def _phonology(rng: random.Random):
    cons = sorted(rng.sample(CONSONANTS, rng.randint(9, 13)))
    vows = sorted(rng.sample(VOWELS, rng.randint(3, 5)))
    codas = [c for c in cons if c in "nmrlskt"][: rng.randint(1, 4)]
    p_coda = rng.uniform(0.1, 0.45)
    p_onset = rng.uniform(0.75, 0.95)

    def syllable() -> str:
        return (
            (rng.choice(cons) if rng.random() < p_onset else "")
            + rng.choice(vows)
            + (rng.choice(codas) if codas and rng.random() < p_coda else "")
        )

    return syllable, vows


def build_language(code: str, props: dict, seed: int, inv: Inventory, noise: dict,
                   related: Language | None = None) -> Language:  # fmt: skip
    rng = random.Random(stable_seed(seed, "lexicon", code))
    syllable, vows = _phonology(rng)
    lang = Language(code, props)
    used: set[str] = set()

    def word(lo: int, hi: int) -> tuple[str, ...]:
        for _ in range(200):
            syls = tuple(syllable() for _ in range(rng.randint(lo, hi)))
            s = "".join(syls)
            if s not in used and len(s) >= 2:
                used.add(s)
                return syls
        raise RuntimeError(f"cannot make a new word for {code}")  # pragma: no cover

    def cognate(key) -> tuple[str, ...] | None:
        if related is None or rng.random() >= props["cognates"]:
            return None
        src = related.stems[key][0]
        syls = list(src)
        i = rng.randrange(len(syls))
        syls[i] = "".join(rng.choice(vows) if ch in VOWELS and rng.random() < 0.5 else ch for ch in syls[i])
        s = "".join(syls)
        if s in used:
            return None
        used.add(s)
        return tuple(syls)

    st = lang.stems
    for w in FUNCTION_WORDS:
        st[w] = [word(1, 1)]
    for p in range(len(PRONOUNS)):
        st[("PRON", p, "nom")] = [word(1, 2)]
        st[("PRON", p, "acc")] = (st[("PRON", p, "nom")] if props["morphology"] == "isolating"
                                  else [word(1, 2)])  # fmt: skip
        st[("POSS", p)] = [word(1, 2)]
    for i in range(len(PREPS)):
        st[("P", i)] = [word(1, 1)]
    content = ([("N", i) for i in range(len(inv.noun_class))] + [("V", i) for i in range(inv.n_verbs)]
               + [("A", i) for i in range(inv.n_adjs)] + [("R", i) for i in range(inv.n_adverbs)])  # fmt: skip
    for key in content:
        stem = cognate(key) if key[0] != "R" else None
        st[key] = [stem or word(1, 3)]
    # synonyms: a second stem for some content words
    for key in content:
        if key[0] in "VAN" and rng.random() < noise["synonyms"]:
            st[key].append(word(2, 3))
    # homographs: some verbs / adjectives written like an (object) noun
    objects = inv.by_class["object"]
    for key in content:
        if key[0] in "VA" and rng.random() < noise["homographs"]:
            st[key][0] = st[("N", rng.choice(objects))][0]
    if props["morphology"] == "fusional":
        lang.suffix = {
            "plural": (rng.choice(("", rng.choice(vows))) + rng.choice("snrlkt"),),
            "past": (syllable(),),
            "pres": (rng.choice(vows),) if rng.random() < 0.5 else (),
            "part": (syllable(),),
            "acc": (syllable(),),
            "loc": (syllable(),),
        }
    else:
        lang.suffix = {k: () for k in ("plural", "past", "pres", "part", "acc", "loc")}
    upos = {"VERB", "NOUN", "PROPN", "ADJ", "ADP", "PRON", "AUX", "PART", "ADV", "CCONJ", "NUM", "PUNCT"}
    if props["articles"]:
        upos.add("DET")
    lang.upos = frozenset(upos)
    return lang
