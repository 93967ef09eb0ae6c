"""The world config: schema, defaults, validation (see docs/world.md).

    world:
      seed: 13                       # int, required: everything is a function of it
      languages:                     # required; paper language code -> toy language properties
        en: {order: SVO}
        de: {order: SVO, case_suffix: true, agreement: true, related: en}
        hi: {order: SOV, script: devanagari, articles: false}
        ...
      sizes: {train: 600, dev: 150, test: 150,      # per task, per language, per split
              qa: {train: 400}, bitext: {train: 800}}  # per-task overrides
      tasks: [pos, ner, pawsx, marc, xnli, qa, parsing, bitext]
      noise: {typo: 0.01, homographs: 0.08, synonyms: 0.25, marc_star: 0.1,
              unknown_chars: 0.0}     # share of test sentences with one letter no pretraining text has
      ud: {version: "2.7", textless: [ar]}   # textless: languages given an extra all-'_' treebank
      bitext: {below_threshold: 0.15}         # share of WikiMatrix rows scored under 1.04
      translations: {drop: 0.1, swap: 0.1}    # "machine" translations: word drops, neighbour swaps
      qa: {sentences: [1, 1]}                 # sentences per QA context (min, max)
      vocab: {object: 30, verb: 24, ...}      # sizes of the concept inventory

Language properties (all optional except that `order` defaults to SVO):

    order:        SVO | SOV | VSO          clause word order
    script:       latin | cyrillic | greek | arabic | devanagari | han
    adj:          pre | post               adjective (and ORG head-noun) position
    postpositions: bool                    default: true for SOV
    articles:     bool                     definite/indefinite DET words (default true)
    morphology:   fusional | isolating     isolating: no suffixes, tense by particles
    case_suffix:  bool                     object / oblique nouns take case suffixes
    agreement:    bool                     adjectives and determiners take the plural suffix
    contractions: bool                     ADP + definite DET fuse into one surface token
                                           (a CoNLL-U multiword token `i-j`)
    neg:          pre | post               negation particle before / after the verb
    aux:          pre | post               auxiliaries before / after the verb (default post for SOV)
    pp:           final | preverbal        place of obliques (default preverbal for SOV)
    wh_front:     bool                     questions front the wh-word (default: not SOV/isolating)
    related:      <code>                   share `cognates` of content stems with that language
    cognates:     float                    default 0.3 when `related` is set
    transliterate_names: bool              write the shared names in the language's script
    name:         str                      language name for UD directory names
"""

from __future__ import annotations

from copy import deepcopy

from xlt.errors import XltError

TASK_NAMES = ("pos", "ner", "pawsx", "marc", "xnli", "qa", "parsing", "bitext")
SPLITS = ("train", "dev", "test")
SCRIPTS = ("latin", "cyrillic", "greek", "arabic", "devanagari", "han")

LANGUAGE_NAMES = {
    "en": "English", "de": "German", "es": "Spanish", "fr": "French", "ar": "Arabic",
    "hi": "Hindi", "ru": "Russian", "vi": "Vietnamese", "zh": "Chinese", "ja": "Japanese",
    "ko": "Korean", "bg": "Bulgarian", "el": "Greek", "sw": "Swahili", "th": "Thai",
    "tr": "Turkish", "ur": "Urdu",
}  # fmt: skip

_CHOICES = {
    "order": ("SVO", "SOV", "VSO"),
    "script": SCRIPTS,
    "adj": ("pre", "post"),
    "morphology": ("fusional", "isolating"),
    "neg": ("pre", "post"),
    "aux": ("pre", "post"),
    "pp": ("final", "preverbal"),
}
_BOOLS = ("postpositions", "articles", "case_suffix", "agreement", "contractions", "wh_front",
          "transliterate_names")  # fmt: skip
_OTHER = ("related", "cognates", "name")
LANGUAGE_KEYS = tuple(_CHOICES) + _BOOLS + _OTHER

# unknown_chars: the share of the test splits' sentences in which one word carries a letter that
# no world language writes, so a vocabulary learnt from the pretraining text reads it as [UNK]
# (real test text has some); off by default (xlt.world.datasets.unknown_chars)
DEFAULT_NOISE = {"typo": 0.01, "homographs": 0.08, "synonyms": 0.25, "marc_star": 0.1, "unknown_chars": 0.0}
DEFAULT_VOCAB = {
    "person": 16, "object": 30, "place": 12, "time": 5, "verb": 24, "adjective": 24,
    "adverb": 5, "first_name": 30, "last_name": 30, "location": 25, "organization": 20,
}  # fmt: skip
DEFAULT_SIZES = {"train": 600, "dev": 150, "test": 150}
DEFAULT_TRANSLATIONS = {"drop": 0.1, "swap": 0.1}  # noise of the "machine" translations
# Sentences per QA context: the tiny encoder does not learn to find the questioned sentence
# among several (EN dev F1 78 with one, 37-51 with one or two, 13-18 with 3-5; docs/world.md)
DEFAULT_QA = {"sentences": [1, 1]}
_TOP_KEYS = ("seed", "languages", "sizes", "tasks", "noise", "ud", "bitext", "vocab", "translations", "qa")


def _err(key: str, msg: str) -> XltError:
    return XltError(f"world.{key}: {msg}")


def _choice(key, value, allowed):
    if value not in allowed:
        raise _err(key, f"{value!r} is not one of {', '.join(map(str, allowed))}")
    return value


def _bool(key, value):
    if not isinstance(value, bool):
        raise _err(key, f"expected true/false, got {value!r}")
    return value


def _int(key, value, lo=0):
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise _err(key, f"expected an integer >= {lo}, got {value!r}")
    return value


def _prob(key, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise _err(key, f"expected a number in [0, 1], got {value!r}")
    return float(value)


def _unknown_keys(prefix, given, allowed):
    bad = sorted(set(given) - set(allowed))
    if bad:
        raise _err(f"{prefix}{bad[0]}", f"unknown key; allowed: {', '.join(allowed)}")


def resolve_language(code: str, props: dict | None) -> dict:
    """Fill in the defaults of one language's properties (validated)."""
    props = {} if props is None else props
    if not isinstance(props, dict):
        raise _err(f"languages.{code}", "expected a mapping of properties")
    _unknown_keys(f"languages.{code}.", props, LANGUAGE_KEYS)
    p = {k: _choice(f"languages.{code}.{k}", props[k], v) for k, v in _CHOICES.items() if k in props}
    p.update({k: _bool(f"languages.{code}.{k}", props[k]) for k in _BOOLS if k in props})
    order = p.setdefault("order", "SVO")
    p.setdefault("script", "latin")
    p.setdefault("adj", "pre")
    p.setdefault("morphology", "fusional")
    p.setdefault("neg", "pre")
    p.setdefault("postpositions", order == "SOV")
    p.setdefault("articles", True)
    p.setdefault("case_suffix", False)
    p.setdefault("agreement", False)
    p.setdefault("contractions", False)
    p.setdefault("aux", "post" if order == "SOV" else "pre")
    p.setdefault("pp", "preverbal" if order == "SOV" else "final")
    p.setdefault("wh_front", order != "SOV" and p["morphology"] != "isolating")
    p.setdefault("transliterate_names", False)
    related = props.get("related")
    if related is not None and not isinstance(related, str):
        raise _err(f"languages.{code}.related", f"expected a language code, got {related!r}")
    p["related"] = related
    p["cognates"] = _prob(f"languages.{code}.cognates", props.get("cognates", 0.3 if related else 0.0))
    name = props.get("name", LANGUAGE_NAMES.get(code))
    if not isinstance(name, str) or not name.isalpha():
        raise _err(f"languages.{code}.name", f"unknown language code {code!r}: give a name (letters only)")
    p["name"] = name
    if p["contractions"] and (p["postpositions"] or not p["articles"]):
        raise _err(f"languages.{code}.contractions", "needs prepositions and articles")
    return p


def resolve(world_cfg: dict) -> dict:
    """Validate a world config (the `world:` block, or a dict holding it) and fill defaults.

    Returns a new dict; raises XltError naming the offending key.
    """
    if not isinstance(world_cfg, dict):
        raise XltError("world: expected a mapping")
    if "world" in world_cfg and isinstance(world_cfg["world"], dict):
        world_cfg = world_cfg["world"]
    cfg = deepcopy(world_cfg)
    _unknown_keys("", cfg, _TOP_KEYS)
    if "seed" not in cfg:
        raise _err("seed", "required")
    out: dict = {"seed": _int("seed", cfg["seed"])}

    langs = cfg.get("languages")
    if not isinstance(langs, dict) or not langs:
        raise _err("languages", "required: a mapping of language code -> properties")
    out["languages"] = {code: resolve_language(code, props) for code, props in langs.items()}
    for code, p in out["languages"].items():
        if p["related"] is not None and p["related"] not in out["languages"]:
            raise _err(f"languages.{code}.related", f"{p['related']!r} is not a world language")
    # cycles in `related`
    for code in out["languages"]:
        seen, cur = set(), code
        while cur is not None:
            if cur in seen:
                raise _err(f"languages.{code}.related", "cycle of related languages")
            seen.add(cur)
            cur = out["languages"][cur]["related"]

    tasks = cfg.get("tasks", list(TASK_NAMES))
    if not isinstance(tasks, list):
        raise _err("tasks", "expected a list")
    for t in tasks:
        _choice("tasks", t, TASK_NAMES)
    out["tasks"] = [t for t in TASK_NAMES if t in tasks]
    if {"qa", "bitext", "pawsx", "xnli"} & set(out["tasks"]) and "en" not in out["languages"]:
        raise _err("languages", "tasks qa / bitext / pawsx / xnli need 'en' (the source language)")

    sizes = cfg.get("sizes", {})
    if not isinstance(sizes, dict):
        raise _err("sizes", "expected a mapping")
    _unknown_keys("sizes.", sizes, SPLITS + TASK_NAMES)
    base = {s: _int(f"sizes.{s}", sizes.get(s, DEFAULT_SIZES[s])) for s in SPLITS}
    per_task = {}
    for t in TASK_NAMES:
        over = sizes.get(t, {})
        if not isinstance(over, dict):
            raise _err(f"sizes.{t}", "expected a mapping of split -> size")
        _unknown_keys(f"sizes.{t}.", over, SPLITS)
        per_task[t] = {s: _int(f"sizes.{t}.{s}", over.get(s, base[s])) for s in SPLITS}
    out["sizes"] = per_task

    noise = cfg.get("noise", {})
    if not isinstance(noise, dict):
        raise _err("noise", "expected a mapping")
    _unknown_keys("noise.", noise, DEFAULT_NOISE)
    out["noise"] = {k: _prob(f"noise.{k}", noise.get(k, v)) for k, v in DEFAULT_NOISE.items()}

    ud = cfg.get("ud", {})
    if not isinstance(ud, dict):
        raise _err("ud", "expected a mapping")
    _unknown_keys("ud.", ud, ("version", "textless"))
    version = str(ud.get("version", "2.7"))
    textless = ud.get("textless", [])
    if not isinstance(textless, list) or any(c not in out["languages"] for c in textless):
        raise _err("ud.textless", f"expected a list of world languages, got {textless!r}")
    out["ud"] = {"version": version, "textless": list(textless)}

    bitext = cfg.get("bitext", {})
    if not isinstance(bitext, dict):
        raise _err("bitext", "expected a mapping")
    _unknown_keys("bitext.", bitext, ("below_threshold",))
    out["bitext"] = {"below_threshold": _prob("bitext.below_threshold", bitext.get("below_threshold", 0.15))}

    mt = cfg.get("translations", {})
    if not isinstance(mt, dict):
        raise _err("translations", "expected a mapping")
    _unknown_keys("translations.", mt, DEFAULT_TRANSLATIONS)
    out["translations"] = {k: _prob(f"translations.{k}", mt.get(k, v)) for k, v in DEFAULT_TRANSLATIONS.items()}

    qa = cfg.get("qa", {})
    if not isinstance(qa, dict):
        raise _err("qa", "expected a mapping")
    _unknown_keys("qa.", qa, DEFAULT_QA)
    sents = qa.get("sentences", DEFAULT_QA["sentences"])
    if not (isinstance(sents, list) and len(sents) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in sents)
            and 1 <= sents[0] <= sents[1]):
        raise _err("qa.sentences", f"expected [min, max] with 1 <= min <= max, got {sents!r}")
    out["qa"] = {"sentences": list(sents)}

    vocab = cfg.get("vocab", {})
    if not isinstance(vocab, dict):
        raise _err("vocab", "expected a mapping")
    _unknown_keys("vocab.", vocab, DEFAULT_VOCAB)
    out["vocab"] = {k: _int(f"vocab.{k}", vocab.get(k, v), lo=4) for k, v in DEFAULT_VOCAB.items()}
    if out["vocab"]["verb"] < 10 or out["vocab"]["adjective"] < 10:
        raise _err("vocab", "verb and adjective need at least 10 entries")
    return out


# The default world (what presets/tiny.yaml is expected to spell out): the nine languages of the
# papers' UD / WikiANN / XNLI experiments, with typologically varied properties.
DEFAULT_LANGUAGES = {
    "en": {"order": "SVO"},
    "de": {"order": "SVO", "case_suffix": True, "agreement": True, "neg": "post", "related": "en"},
    "es": {"order": "SVO", "adj": "post", "contractions": True, "agreement": True},
    "fr": {"order": "SVO", "adj": "post", "agreement": True, "related": "es"},
    "ar": {"order": "VSO", "script": "arabic", "adj": "post"},
    "hi": {"order": "SOV", "script": "devanagari", "articles": False, "case_suffix": True},
    "ru": {"order": "SVO", "script": "cyrillic", "articles": False, "case_suffix": True, "agreement": True},
    "vi": {"order": "SVO", "adj": "post", "articles": False, "morphology": "isolating"},
    "zh": {"order": "SVO", "script": "han", "articles": False, "morphology": "isolating",
           "pp": "preverbal", "aux": "post"},
}  # fmt: skip


def default_config(seed: int = 13, **overrides) -> dict:
    """The default world config (a fresh dict); keyword arguments replace top-level keys."""
    cfg = {
        "seed": seed,
        "languages": deepcopy(DEFAULT_LANGUAGES),
        "sizes": dict(DEFAULT_SIZES),
        "tasks": list(TASK_NAMES),
        "ud": {"version": "2.7", "textless": ["ar"]},
    }
    cfg.update(overrides)
    return cfg
