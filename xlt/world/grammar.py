"""The latent grammar (language-independent meanings) and its realisation in each language.

A latent `Clause` is a small tree: a verb (or a copula with a predicate adjective), an agent
NP, an optional patient NP, an optional place / companion PP, an optional time word and manner
adverb, tense, negation, voice, adjunct fronting and an optional questioned constituent.
`Realiser.sentence` linearises it in one language and returns a `Sentence`: syntactic words
with UPOS, heads and UD relations (subtyped where UD subtypes them), surface tokens (a
contraction is one surface token spanning two words), BIO entity tags, the detokenised text
with character offsets, and an alignment key per word (what it expresses in the latent tree).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from xlt.world.lexicon import PREPS, PRONOUNS, Inventory, Language

NO_SPACE_BEFORE = frozenset({".", ",", "?", "!"})
CASED_SCRIPTS = frozenset({"latin", "cyrillic", "greek"})
_TENSES = ("pres", "past", "fut")
_TENSE_WEIGHTS = (0.45, 0.4, 0.15)


@dataclass(slots=True)
class NP:
    kind: str  # "noun" | "name" | "pron"
    idx: int = 0  # noun concept / pronoun person
    plural: bool = False
    definite: bool = True
    adj: int | None = None
    num: int | None = None
    poss: int | None = None  # possessive pronoun person (instead of a determiner)
    gen: NP | None = None  # genitive modifier: "the dog of Maria"
    conj: NP | None = None  # coordination: "X and Y"
    etype: str | None = None  # PER | ORG | LOC for names
    parts: tuple[str, ...] = ()  # shared name tokens
    orgnoun: int | None = None  # ORG head noun (a translated word: "Bank")


@dataclass(slots=True)
class Clause:
    kind: str = "verbal"  # "verbal" | "copular"
    verb: int = 0
    agent: NP | None = None  # subject (of the active / of the copula)
    patient: NP | None = None
    prep: int | None = None
    place: NP | None = None
    time: int | None = None  # noun concept of class "time"
    adv: int | None = None
    pred: int | None = None  # predicate adjective (copular)
    very: bool = False
    tense: str = "pres"
    neg: bool = False
    passive: bool = False
    front: bool = False
    wh: str | None = None  # "agent" | "patient" | "place"


MIN_WORDS = 5


def _np_min(np: NP | None) -> int:
    if np is None:
        return 0
    if np.kind == "pron":
        n = 1
    elif np.kind == "name":
        n = len(np.parts) + (np.orgnoun is not None)
    else:
        n = 1 + (np.adj is not None) + (np.num is not None) + (_np_min(np.gen) + 1 if np.gen else 0)
    return n + (_np_min(np.conj) + 1 if np.conj else 0)


def min_words(c: Clause) -> int:
    """Words (punctuation included) that every language spends on the clause: a lower bound."""
    if c.kind == "copular":
        return 3 + _np_min(c.agent) + c.very + c.neg + (c.tense == "fut")
    agent = 1 if c.wh == "agent" else _np_min(c.agent)
    patient = 1 if c.wh == "patient" else _np_min(c.patient)
    place = 0 if c.place is None else 1 if c.wh == "place" else 1 + _np_min(c.place)
    return (2 + agent + patient + place + (c.time is not None) + (c.adv is not None) + c.neg
            + (c.tense == "fut") + 2 * c.passive)  # fmt: skip


class Sampler:
    """Draws latent clauses; all randomness comes from the `rng` passed in."""

    def __init__(self, inv: Inventory):
        self.inv = inv
        self.persons = inv.by_class["person"]
        self.objects = inv.by_class["object"]
        self.places = inv.by_class["place"]
        self.times = inv.by_class["time"]
        self.orgnouns = inv.by_class["orgnoun"]
        self.person_set = frozenset(self.persons)

    def is_animate(self, np: NP) -> bool:
        if np.kind == "pron":
            return True
        if np.kind == "name":
            return np.etype == "PER"
        return np.idx in self.person_set

    def name(self, rng: random.Random, etype: str) -> NP:
        inv = self.inv
        if etype == "PER":
            parts = (rng.choice(inv.first_names),)
            if rng.random() < 0.6:
                parts += (rng.choice(inv.last_names),)
            return NP("name", etype="PER", parts=parts)
        if etype == "LOC":
            return NP("name", etype="LOC", parts=rng.choice(inv.locations))
        org = rng.randrange(len(self.orgnouns)) if rng.random() < 0.6 else None
        return NP("name", etype="ORG", parts=(rng.choice(inv.org_bases),), orgnoun=org)

    def noun(self, rng: random.Random, idx: int, mods: bool = True) -> NP:
        np = NP("noun", idx=idx, plural=rng.random() < 0.3, definite=rng.random() < 0.6)
        if not mods:
            return np
        if np.plural and rng.random() < 0.3:
            np.num = rng.randint(2, 20)
            np.definite = False
        if rng.random() < 0.3:
            np.adj = rng.randrange(self.inv.n_adjs)
        if np.num is None and rng.random() < 0.08:
            np.poss = rng.randrange(len(PRONOUNS))
        elif idx not in self.person_set and rng.random() < 0.06:
            np.gen = self.name(rng, "PER")
        return np

    def np(self, rng: random.Random, role: str, p_name: float = 0.3) -> NP:
        r = rng.random()
        if role == "agent":
            if r < p_name:
                return self.name(rng, "PER" if rng.random() < 0.8 else "ORG")
            if r < p_name + 0.12:
                return NP("pron", idx=rng.randrange(len(PRONOUNS)))
            return self.noun(rng, rng.choice(self.persons))
        if role == "patient":
            if r < p_name:
                return self.name(rng, rng.choice(("PER", "ORG", "LOC")))
            if r < p_name + 0.05:
                return NP("pron", idx=rng.randrange(len(PRONOUNS)))
            np = self.noun(rng, rng.choice(self.objects if rng.random() < 0.7 else self.persons))
            if rng.random() < 0.04:
                np.conj = self.noun(rng, rng.choice(self.objects), mods=False)
            return np
        if role == "place":
            if r < min(0.9, p_name * 1.3):
                return self.name(rng, "LOC")
            return self.noun(rng, rng.choice(self.places))
        if role == "person":
            if r < p_name:
                return self.name(rng, "PER")
            return self.noun(rng, rng.choice(self.persons))
        raise ValueError(role)

    def clause(self, rng: random.Random, p_name: float = 0.3, p_pp: float = 0.4,
               p_time: float = 0.2, p_adv: float = 0.15, p_neg: float = 0.12,
               p_passive: float = 0.12, verb: int | None = None) -> Clause:  # fmt: skip
        inv = self.inv
        v = rng.randrange(inv.n_verbs) if verb is None else verb
        c = Clause(verb=v, agent=self.np(rng, "agent", p_name))
        if inv.verb_transitive[v]:
            c.patient = self.np(rng, "patient", p_name)
        if rng.random() < p_pp:
            c.prep = rng.randrange(len(PREPS))
            c.place = self.np(rng, "person" if PREPS[c.prep] == "with" else "place", p_name)
        if rng.random() < p_time:
            c.time = rng.choice(self.times)
        if rng.random() < p_adv:
            c.adv = rng.randrange(inv.n_adverbs)
        c.tense = rng.choices(_TENSES, _TENSE_WEIGHTS)[0]
        c.neg = rng.random() < p_neg
        c.passive = c.patient is not None and rng.random() < p_passive
        self._pad(c, rng, p_name)
        c.front = (c.place is not None or c.time is not None) and rng.random() < 0.15
        return c

    def _pad(self, c: Clause, rng: random.Random, p_name: float = 0.3) -> None:
        """Add adjuncts until the clause is at least MIN_WORDS long in every language."""
        while min_words(c) < MIN_WORDS:
            if c.time is None:
                c.time = rng.choice(self.times)
            elif c.place is None and c.wh != "place":
                c.prep = rng.randrange(len(PREPS) - 1)
                c.place = self.np(rng, "place", p_name)
            elif c.adv is None:
                c.adv = rng.randrange(self.inv.n_adverbs)
            else:
                break

    def copular(self, rng: random.Random, subject: NP | None = None, pred: int | None = None) -> Clause:
        subj = subject or (self.np(rng, "agent") if rng.random() < 0.5 else self.noun(rng, rng.choice(self.objects)))
        c = Clause(
            kind="copular",
            agent=subj,
            pred=rng.randrange(self.inv.n_adjs) if pred is None else pred,
            very=rng.random() < 0.2,
            tense=rng.choices(_TENSES, _TENSE_WEIGHTS)[0],
            neg=rng.random() < 0.12,
        )
        if subject is None and min_words(c) < MIN_WORDS:
            if subj.kind == "noun" and subj.adj is None:
                c.agent = replace(subj, adj=rng.randrange(self.inv.n_adjs))
            c.very = c.very or min_words(c) < MIN_WORDS
            c.neg = c.neg or min_words(c) < MIN_WORDS
        return c

    def question(self, rng: random.Random, c: Clause | None = None) -> Clause:
        c = c or self.clause(rng)
        options = ["agent"] + (["patient"] if c.patient is not None else []) + (["place"] if c.place else [])
        q = replace(c, wh=rng.choice(options), front=False)
        self._pad(q, rng)
        return q

    def any_sentence(self, rng: random.Random, p_name: float = 0.3) -> Clause:
        r = rng.random()
        if r < 0.12:
            return self.copular(rng)
        if r < 0.2:
            return self.question(rng)
        return self.clause(rng, p_name=p_name)


class Word:
    __slots__ = ("form", "lemma", "upos", "feats", "head", "rel", "key", "ner", "fuse", "i")

    def __init__(self, form, lemma, upos, feats, rel, key, head=None, ner="O", fuse=False):
        self.form, self.lemma, self.upos, self.feats = form, lemma, upos, feats
        self.rel, self.key, self.head, self.ner, self.fuse = rel, key, head, ner, fuse
        self.i = 0


class Sentence:
    """A realised sentence: words (syntactic), surface tokens, text and offsets."""

    __slots__ = ("words", "surface", "text", "_offsets")

    def __init__(self, words: list[Word], surface: list[tuple[str, int, int]]):
        self.words = words
        self.surface = surface  # (form, first word index, last word index), 0-based
        text = " ".join([s[0] for s in surface])
        for p in NO_SPACE_BEFORE:  # punctuation tokens are single characters; words have none
            text = text.replace(" " + p, p)
        self.text = text
        self._offsets = None

    @property
    def offsets(self) -> list[tuple[int, int]]:
        """Character (start, end) of each surface token in `text`."""
        if self._offsets is None:
            offsets, pos = [], 0
            for k, (form, _a, _b) in enumerate(self.surface):
                if k and form not in NO_SPACE_BEFORE:
                    pos += 1
                offsets.append((pos, pos + len(form)))
                pos += len(form)
            self._offsets = offsets
        return self._offsets

    @property
    def tokens(self) -> list[str]:
        return [w.form for w in self.words]

    @property
    def surface_tokens(self) -> list[str]:
        return [s[0] for s in self.surface]

    @property
    def ner(self) -> list[str]:
        ws = self.words
        return [ws[a].ner if a == b else "O" for _f, a, b in self.surface]

    def heads(self) -> list[int]:
        return [w.head.i if w.head is not None else 0 for w in self.words]

    def span(self, pred) -> tuple[int, int] | None:
        """Character span of the surface tokens all of whose words satisfy `pred(word)`."""
        inside = [k for k, (_f, a, b) in enumerate(self.surface)
                  if all(pred(self.words[i]) for i in range(a, b + 1))]  # fmt: skip
        if not inside:
            return None
        return self.offsets[inside[0]][0], self.offsets[inside[-1]][1]

    def respelt(self, k: int, form: str) -> Sentence:
        """The same sentence with surface token `k` (one word) spelt `form`: lemma, tags, tree
        and the other words as they were (the words are shared, not copied)."""
        _old, a, b = self.surface[k]
        if a != b:
            raise ValueError(f"surface token {k} is a multiword token")
        w = self.words[a]
        new = Word(form, w.lemma, w.upos, w.feats, w.rel, w.key, w.head, w.ner, w.fuse)
        new.i = w.i  # other words' heads point at the old word: `heads()` reads its index
        surface = list(self.surface)
        surface[k] = (form, a, b)
        return Sentence(self.words[:a] + [new] + self.words[a + 1 :], surface)


def _typo(rng: random.Random, s: str) -> str:
    i = rng.randrange(1, len(s) - 1)
    if rng.random() < 0.5:
        return s[:i] + s[i + 1] + s[i] + s[i + 2 :]
    return s[:i] + s[i + 1 :]


class Realiser:
    """Writes latent clauses in one language."""

    def __init__(self, lang: Language, sampler: Sampler, noise: dict):
        self.lang = lang
        self.p = lang.props
        self.sampler = sampler
        self.typo = noise["typo"] if self.p["script"] != "han" else 0.0
        self.fusional = self.p["morphology"] == "fusional"
        self.cased = self.p["script"] in CASED_SCRIPTS
        self._wording: dict | None = None  # concept -> stem, shared by the sentences of one wording

    # -- words ----------------------------------------------------------------
    def _stem(self, key, rng: random.Random) -> tuple[str, ...]:
        stems = self.lang.stems[key]
        if len(stems) == 1:
            return stems[0]
        wording = self._wording
        if wording is not None and key in wording:
            return wording[key]
        stem = stems[1] if rng.random() < 0.35 else stems[0]
        if wording is not None:
            wording[key] = stem
        return stem

    def _content(self, key, upos, feats, rel, akey, rng, *suffixes) -> Word:
        stem = self._stem(key, rng)
        lang = self.lang
        form = lang.form(stem + sum((lang.suffix[s] for s in suffixes), ())) if suffixes else lang.form(stem)
        if self.typo and len(form) >= 4 and rng.random() < self.typo:
            form = _typo(rng, form)
        return Word(form, lang.form(stem), upos, feats, rel, akey)

    def _fn(self, key, upos, feats, rel, akey, *suffixes) -> Word:
        lang = self.lang
        stem = lang.stems[key][0]
        form = lang.form(stem + sum((lang.suffix[s] for s in suffixes), ())) if suffixes else lang.form(stem)
        return Word(form, lang.form(stem), upos, feats, rel, akey)

    # -- noun phrases ---------------------------------------------------------
    def _np(self, np: NP, role: str, case: str, rel: str, rng) -> tuple[list[Word], Word]:
        """Realise an NP; `case` is nom / acc / obl. Returns (words in order, head)."""
        p = self.p
        if np.kind == "pron":
            feats = PRONOUNS[np.idx][0] + "|PronType=Prs"
            w = self._fn(("PRON", np.idx, "nom" if case == "nom" else "acc"), "PRON",
                         ("Case=Nom|" if case == "nom" else "Case=Acc|") + feats, rel, (role, "head"))  # fmt: skip
            words, head = [w], w
        elif np.kind == "name":
            lang = self.lang
            toks = [Word(lang.name_form(t), lang.name_form(t), "PROPN", "Number=Sing", "flat:name", (role, "name", j))
                    for j, t in enumerate(np.parts)]  # fmt: skip
            if np.orgnoun is not None:
                on = self._fn(("N", self.sampler.orgnouns[np.orgnoun]), "PROPN", "Number=Sing", "flat:name",
                              (role, "name", "org"))  # fmt: skip
                if self.cased:
                    on.form = on.lemma = on.form.capitalize()
                toks = [on] + toks if p["adj"] == "post" else toks + [on]
            head = toks[0]
            head.rel = rel
            for k, t in enumerate(toks):
                t.ner = ("B-" if k == 0 else "I-") + np.etype
                if k:
                    t.head = head
            words = toks
        else:
            suff = []
            if np.plural and self.fusional:
                suff.append("plural")
            if p["case_suffix"] and case != "nom":
                suff.append("acc" if case == "acc" else "loc")
            feats = "Number=Plur" if np.plural else "Number=Sing"
            if p["case_suffix"]:
                feats = ("Case=Acc|" if case == "acc" else "Case=Loc|" if case == "obl" else "Case=Nom|") + feats
            head = self._content(("N", np.idx), "NOUN", feats, rel, (role, "head"), rng, *suff)
            pre: list[Word] = []
            post: list[Word] = []
            agree = ("plural",) if np.plural and p["agreement"] and self.fusional else ()
            if np.poss is not None:
                pre.append(self._fn(("POSS", np.poss), "PRON", "Poss=Yes|PronType=Prs", "nmod:poss",
                                    (role, "poss")))  # fmt: skip
            elif p["articles"]:
                if np.definite:
                    d = self._fn("det_def", "DET", "Definite=Def|PronType=Art", "det", (role, "det"), *agree)
                    d.fuse = not np.plural
                    pre.append(d)
                elif not np.plural:
                    pre.append(self._fn("det_indef", "DET", "Definite=Ind|PronType=Art", "det", (role, "det")))
            if np.num is not None:
                pre.append(Word(str(np.num), str(np.num), "NUM", "NumType=Card", "nummod", (role, "num")))
            if np.adj is not None:
                a = self._content(("A", np.adj), "ADJ", "Degree=Pos", "amod", (role, "adj"), rng, *agree)
                (pre if p["adj"] == "pre" else post).append(a)
            for w in pre + post:
                w.head = head
            words = pre + [head] + post
            if np.gen is not None:
                gw, gh = self._np(np.gen, role + "g", "obl", "nmod", rng)
                gh.head = head
                of = self._fn("of", "ADP", "_", "case", (role + "g", "case"))
                of.head = gh
                words = (gw + [of] + words) if p["postpositions"] else (words + [of] + gw)
        if np.conj is not None:
            cw, ch = self._np(np.conj, role + "c", case, "conj", rng)
            ch.head = head
            cc = self._fn("and", "CCONJ", "_", "cc", (role + "c", "cc"))
            cc.head = ch
            words = words + [cc] + cw
        return words, head

    def _wh(self, np: NP | None, role: str, rel: str) -> tuple[list[Word], Word]:
        who = np is not None and self.sampler.is_animate(np)
        w = self._fn("who" if who else "what", "PRON", "PronType=Int", rel, (role, "head"))
        return [w], w

    def _pp(self, words: list[Word], head: Word, adp_key, role: str) -> list[Word]:
        adp = self._fn(adp_key, "ADP", "_", "case", (role, "case"))
        adp.head = head
        return words + [adp] if self.p["postpositions"] else [adp] + words

    # -- verb group -----------------------------------------------------------
    def _group(self, main: Word, auxes: list[Word], neg: Word | None) -> list[Word]:
        p = self.p
        for w in auxes:
            w.head = main
        if neg is not None:
            neg.head = main
        if p["aux"] == "pre":
            core = auxes + [main]
        else:
            core = [main] + auxes[::-1]
        if neg is None:
            return core
        return [neg] + core if p["neg"] == "pre" else core + [neg]

    def _tense_auxes(self, tense: str, main_key, main_upos, feats, rel, akey, rng, passive=False):
        """Main verb (or copula) word and its auxiliaries, in 'outermost first' order."""
        auxes = []
        if self.fusional:
            if passive:
                main = self._content(main_key, main_upos, "VerbForm=Part|Voice=Pass", rel, akey, rng, "part")
                if tense == "fut":
                    auxes.append(self._fn("fut", "AUX", "Tense=Fut", "aux", ("X", "fut")))
                    auxes.append(self._fn("pass", "AUX", "VerbForm=Inf", "aux:pass", ("X", "pass")))
                else:
                    t = "Tense=Past" if tense == "past" else "Tense=Pres"
                    auxes.append(self._fn("pass", "AUX", t, "aux:pass", ("X", "pass"), tense))
                return main, auxes
            if tense == "fut":
                auxes.append(self._fn("fut", "AUX", "Tense=Fut", "aux", ("X", "fut")))
                if main_upos == "AUX":
                    return self._fn(main_key, "AUX", "VerbForm=Inf", rel, akey), auxes
                return self._content(main_key, main_upos, "VerbForm=Inf", rel, akey, rng), auxes
            t = "Tense=Past|VerbForm=Fin" if tense == "past" else "Tense=Pres|VerbForm=Fin"
            if main_upos == "AUX":
                return self._fn(main_key, "AUX", t, rel, akey, tense), auxes
            return self._content(main_key, main_upos, t + (feats or ""), rel, akey, rng, tense), auxes
        # isolating: bare forms, tense and voice by particles
        if tense == "fut":
            auxes.append(self._fn("fut", "AUX", "Tense=Fut", "aux", ("X", "fut")))
        elif tense == "past":
            auxes.append(self._fn("past", "AUX", "Aspect=Perf", "aux", akey))
        if passive:
            auxes.append(self._fn("pass", "AUX", "Voice=Pass", "aux:pass", ("X", "pass")))
        if main_upos == "AUX":
            return self._fn(main_key, "AUX", "_", rel, akey), auxes
        return self._content(main_key, main_upos, "_", rel, akey, rng), auxes

    # -- clauses --------------------------------------------------------------
    def sentence(self, c: Clause, rng: random.Random, wording: dict | None = None) -> Sentence:
        """Realise `c`. Sentences given the same `wording` dict pick the same synonym for a
        concept they share (one writer's choice of words), as in a pair made by editing one
        sentence; without it each synonym is drawn afresh."""
        self._wording = wording
        try:
            words = self._copular(c, rng) if c.kind == "copular" else self._verbal(c, rng)
        finally:
            self._wording = None
        return self._finish(words)

    def _neg(self) -> Word:
        return self._fn("neg", "PART", "Polarity=Neg", "advmod", ("NEG",))

    def _verbal(self, c: Clause, rng) -> list[Word]:
        p = self.p
        verb, auxes = self._tense_auxes(c.tense, ("V", c.verb), "VERB", "", "root", ("V",), rng, c.passive)
        verb.head = None
        vg = self._group(verb, auxes, self._neg() if c.neg else None)
        cons: dict[str, list[Word]] = {}
        wh_slot = None

        def attach(ws_head):
            ws, h = ws_head
            h.head = verb
            return ws

        # subject
        s_np, s_role = (c.patient, "P") if c.passive else (c.agent, "A")
        s_rel = "nsubj:pass" if c.passive else "nsubj"
        s_is_wh = c.wh == ("patient" if c.passive else "agent")
        cons["S"] = attach(self._wh(s_np, s_role, s_rel) if s_is_wh else self._np(s_np, s_role, "nom", s_rel, rng))
        if s_is_wh:
            wh_slot = "S"
        if c.passive:
            ws, h = self._wh(c.agent, "A", "obl:agent") if c.wh == "agent" else self._np(c.agent, "A", "obl", "obl:agent", rng)
            h.head = verb
            cons["AG"] = self._pp(ws, h, "by", "A")
            if c.wh == "agent":
                wh_slot = "AG"
        elif c.patient is not None:
            cons["O"] = attach(self._wh(c.patient, "P", "obj") if c.wh == "patient" else self._np(c.patient, "P", "acc", "obj", rng))
            if c.wh == "patient":
                wh_slot = "O"
        if c.place is not None:
            if c.wh == "place":
                w = self._fn("where", "ADV", "PronType=Int", "advmod", ("L", "head"))
                w.head = verb
                cons["PP"] = [w]
                wh_slot = "PP"
            else:
                ws, h = self._np(c.place, "L", "obl", "obl", rng)
                h.head = verb
                cons["PP"] = self._pp(ws, h, ("P", c.prep), "L")
        if c.time is not None:
            t = self._content(("N", c.time), "NOUN", "Number=Sing", "obl:tmod", ("T",), rng)
            t.head = verb
            cons["T"] = [t]
        if c.adv is not None:
            a = self._content(("R", c.adv), "ADV", "_", "advmod", ("M",), rng)
            a.head = verb
            cons["ADV"] = [a]
        order = p["order"]
        if order == "SOV":
            seq = ("S", "T", "PP", "AG", "O", "ADV", "VG")
        elif order == "VSO":
            seq = ("VG", "S", "O", "ADV", "AG", "PP", "T")
        elif p["pp"] == "preverbal":
            seq = ("S", "T", "PP", "AG", "VG", "O", "ADV")
        else:
            seq = ("S", "VG", "O", "ADV", "AG", "PP", "T")
        cons["VG"] = vg
        first: list[str] = []
        comma = False
        if wh_slot is not None and p["wh_front"]:
            first = [wh_slot]
        elif c.front and c.wh is None:
            first = ["PP" if "PP" in cons else "T"]
            comma = True
        out: list[Word] = []
        for k in first:
            out += cons[k]
        if comma:
            w = Word(",", ",", "PUNCT", "_", "punct", ("comma",), head=verb)
            out.append(w)
        for k in seq:
            if k in cons and k not in first:
                out += cons[k]
        end = "?" if c.wh else "."
        out.append(Word(end, end, "PUNCT", "_", "punct", ("punct",), head=verb))
        return out

    def _copular(self, c: Clause, rng) -> list[Word]:
        p = self.p
        s_np = c.agent
        agree = ("plural",) if (s_np.plural or (s_np.kind == "pron" and PRONOUNS[s_np.idx][1])) and \
            p["agreement"] and self.fusional else ()  # fmt: skip
        pred = self._content(("A", c.pred), "ADJ", "Degree=Pos", "root", ("pred",), rng, *agree)
        cop, auxes = self._tense_auxes(c.tense, "cop", "AUX", "", "cop", ("cop",), rng)
        group = self._group(cop, auxes, self._neg() if c.neg else None)
        cop.head = pred
        pp = [pred]
        if c.very:
            v = self._fn("very", "ADV", "_", "advmod", ("very",))
            v.head = pred
            pp = [v, pred]
        ws, h = self._np(s_np, "A", "nom", "nsubj", rng)
        h.head = pred
        order = p["order"]
        if order == "SOV":
            out = ws + pp + group
        elif order == "VSO":
            out = group + ws + pp
        else:
            out = ws + group + pp
        out.append(Word(".", ".", "PUNCT", "_", "punct", ("punct",), head=pred))
        return out

    def _finish(self, words: list[Word]) -> Sentence:
        for i, w in enumerate(words):
            w.i = i + 1
        if self.cased:  # sentence-initial capital: capitalisation alone does not mark names
            w = words[0]
            w.form = w.form[:1].upper() + w.form[1:]
        surface = []
        n = len(words)
        fuse = self.p["contractions"]
        i = 0
        while i < n:
            w = words[i]
            if fuse and w.upos == "ADP" and i + 1 < n and words[i + 1].fuse:
                surface.append((w.form + words[i + 1].form[-1], i, i + 1))
                i += 2
            else:
                surface.append((w.form, i, i))
                i += 1
        return Sentence(words, surface)
