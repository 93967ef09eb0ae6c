"""Task datasets of the tiny world, each built in its real source's raw form *and* in the
normalised form that `xlt.stages.prepare` must read back from those files.

Every builder returns a list of `Unit`s: one raw file (path under the raw root, a writer) and the
normalised records that file stands for, keyed by (task, lang, split).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from xlt.formats.conllu import write_conllu
from xlt.formats.hub_parquet import TYDIQA_LANGUAGES, write_parquet, write_squad_parquet
from xlt.formats.marc_jsonl import write_marc
from xlt.formats.squad_json import write_squad
from xlt.formats.tsv import WIKIMATRIX_THRESHOLD, write_pharaoh, write_wikimatrix
from xlt.registry import WIKIANN_TAGS, get_task
from xlt.world import translations
from xlt.world.grammar import NO_SPACE_BEFORE, NP, Clause, Sentence
from xlt.world.lexicon import rng_for, stable_seed

HUB_SPLIT = {"train": "train", "dev": "validation", "test": "test"}


@dataclass
class Unit:
    path: str  # relative to the raw root
    write: Callable[[Path], int]  # writes the file at the given absolute path, returns #rows
    records: dict = field(default_factory=dict)  # (task, lang, split) -> normalised records


# ---------------------------------------------------------------------------- unknown characters
# Georgian letters: no world script writes them (xlt.world.lexicon), so the pretraining text never
# holds one and a WordPiece vocabulary learnt from it reads a word that does as [UNK].
UNKNOWN_LETTERS = "აბგდევზთიკლმნოპრსტუფქღყშჩცძწჭხჯჰ"


def as_written(s: Sentence) -> Sentence:
    return s


def unknown_chars(world, split: str, path: str) -> Callable[[Sentence], Sentence]:
    """`world.noise.unknown_chars` for one file: in its test split, each sentence given to the
    returned function is, with that probability, respelt with one letter of one of its words
    (not a multiword token) replaced by an UNKNOWN_LETTERS letter: the same word misspelt, so
    its tags, tree, label and every character offset stay. Other splits pass unchanged. Its own
    random stream (per file), so nothing else the world draws moves."""
    share = world.cfg["noise"]["unknown_chars"] if split == "test" else 0.0
    if not share:
        return as_written
    rng = rng_for(world, "unknown-chars", path)

    def misspell(s: Sentence) -> Sentence:
        if rng.random() >= share:
            return s
        words = [k for k, (form, a, b) in enumerate(s.surface) if a == b and any(c.isalpha() for c in form)]
        if not words:
            return s
        k = rng.choice(words)
        form = s.surface[k][0]
        i = rng.choice([i for i, c in enumerate(form) if c.isalpha()])
        return s.respelt(k, form[:i] + rng.choice(UNKNOWN_LETTERS) + form[i + 1 :])

    return misspell


# ---------------------------------------------------------------------------- UD
def ud_dir(world, lang: str, textless: bool = False) -> str:
    name = world.languages[lang].name
    return f"UD_{name}-TinyNoText" if textless else f"UD_{name}-Tiny"


def ud_file(world, lang: str, split: str, textless: bool = False) -> str:
    tb = "tinynotext" if textless else "tiny"
    return f"ud-treebanks-v{world.cfg['ud']['version']}/{ud_dir(world, lang, textless)}/{lang}_{tb}-ud-{split}.conllu"


def _conllu_sentence(sent: Sentence, sent_id: str, textless: bool) -> dict:
    words, surface = sent.words, sent.surface
    rows = []

    def row(w, misc):
        head = w.head.i if w.head is not None else 0
        form, lemma = ("_", "_") if textless else (w.form, w.lemma)
        return [w.i, form, lemma, w.upos, "_", w.feats, head, w.rel, "_", misc]

    for k, (form, a, b) in enumerate(surface):
        nospace = k + 1 < len(surface) and surface[k + 1][0] in NO_SPACE_BEFORE
        misc = "SpaceAfter=No" if nospace and not textless else "_"
        if a != b and not textless:
            rows.append([f"{a + 1}-{b + 1}", form, "_", "_", "_", "_", "_", "_", "_", misc])
            rows += [row(words[i], "_") for i in range(a, b + 1)]
        else:
            rows += [row(words[i], misc) for i in range(a, b + 1)]
    comments = [f"sent_id = {sent_id}"] + ([] if textless else [f"text = {sent.text}"])
    return {"comments": comments, "rows": rows}


def _ud_record(sent: Sentence, rid: str) -> dict:
    return {
        "id": rid,
        "tokens": sent.tokens,
        "upos": [w.upos for w in sent.words],
        "head": sent.heads(),
        "deprel": [w.rel.split(":", 1)[0] for w in sent.words],
    }


def _ud_sentences(world, lang: str, split: str, n: int) -> tuple[list[Clause], list[Sentence]]:
    rng = rng_for(world, "ud", lang, split)
    clauses, sents = [], []
    for _ in range(n):
        clauses.append(world.sampler.any_sentence(rng))
        sents.append(world.realiser(lang).sentence(clauses[-1], rng))
    return clauses, sents


def _ner_sentences(world, lang: str, split: str, n: int) -> tuple[list[Clause], list[Sentence]]:
    rng = rng_for(world, "ner", lang, split)
    clauses, sents = [], []
    while len(sents) < n:
        c = world.sampler.clause(rng, p_name=0.6)
        s = world.realiser(lang).sentence(c, rng)
        if any(t != "O" for t in s.ner):
            clauses.append(c)
            sents.append(s)
    return clauses, sents


def build_ud(world, lang: str) -> list[Unit]:
    tasks = [t for t in ("pos", "parsing") if t in world.cfg["tasks"]]
    sizes = world.cfg["sizes"][tasks[0]]
    sampler, real = world.sampler, world.realiser(lang)
    units = []
    for split in ("train", "dev", "test"):
        path = ud_file(world, lang, split)
        sents = list(map(unknown_chars(world, split, path), _ud_sentences(world, lang, split, sizes[split])[1]))
        ids = [f"{lang}_tiny-{split}-{i + 1:05d}" for i in range(len(sents))]
        tb = ud_dir(world, lang)
        recs = [_ud_record(s, f"{tb}/{sid}") for s, sid in zip(sents, ids, strict=True)]
        conll = [_conllu_sentence(s, sid, False) for s, sid in zip(sents, ids, strict=True)]
        units.append(Unit(path, lambda p, c=conll: write_conllu(p, c), {(t, lang, split): recs for t in tasks}))
    if lang in world.cfg["ud"]["textless"]:
        rng = rng_for(world, "ud-textless", lang)
        n = max(1, sizes["train"] // 4)
        conll = [
            _conllu_sentence(real.sentence(sampler.any_sentence(rng), rng), f"{lang}_tinynotext-train-{i + 1:05d}", True)
            for i in range(n)
        ]
        # no records: a reader must skip every sentence of a text-less treebank
        units.append(Unit(ud_file(world, lang, "train", True), lambda p, c=conll: write_conllu(p, c), {}))
    return units


# ---------------------------------------------------------------------------- NER
def _wikiann(sents: list[Sentence], lang: str, id_prefix: str) -> tuple[dict, list[dict]]:
    """WikiANN's parquet columns and the normalised records of some sentences."""
    tag_id = {t: i for i, t in enumerate(WIKIANN_TAGS)}
    cols = {"tokens": [], "ner_tags": [], "langs": [], "spans": []}
    recs = []
    for i, s in enumerate(sents):
        tags = s.ner
        toks = s.surface_tokens
        spans, cur = [], None
        for t, tag in zip(toks, tags, strict=True):
            if tag.startswith("B-"):
                cur = [tag[2:], t]
                spans.append(cur)
            elif tag.startswith("I-"):
                cur.append(t)
        cols["tokens"].append(toks)
        cols["ner_tags"].append([tag_id[t] for t in tags])
        cols["langs"].append([lang] * len(toks))
        cols["spans"].append([f"{sp[0]}: {' '.join(sp[1:])}" for sp in spans])
        recs.append({"id": f"{id_prefix}{i}", "tokens": toks, "tags": tags})
    return cols, recs


def build_ner(world, lang: str) -> list[Unit]:
    units = []
    for split in ("train", "dev", "test"):
        path = f"wikiann/{lang}/{HUB_SPLIT[split]}-00000-of-00001.parquet"
        sents = _ner_sentences(world, lang, split, world.cfg["sizes"]["ner"][split])[1]
        cols, recs = _wikiann(list(map(unknown_chars(world, split, path), sents)), lang, f"{lang}-{split}-")
        units.append(Unit(path, lambda p, c=cols: write_parquet(p, "wikiann", c), {("ner", lang, split): recs}))
    return units


def build_tagging_translations(world, ud_langs: list[str], ner_langs: list[str]) -> list[Unit]:
    """Translate-train for tagging: the English UD / WikiANN train sentences realised in each
    other language, with their exact tags and trees (CoNLL-U; WikiANN's parquet). XTREME ships
    no such files, so the paths are the world's own: `translate-train/{ud,wikiann}/en-<xx>.*`.
    Only exact copies: dropping or swapping words would need projected labels and trees."""
    units = []
    tasks = [t for t in ("pos", "parsing") if t in world.cfg["tasks"]]
    if tasks and "en" in ud_langs:
        clauses = _ud_sentences(world, "en", "train", world.cfg["sizes"][tasks[0]]["train"])[0]
        for lang in ud_langs:
            if lang == "en":
                continue
            rng, real = rng_for(world, "ud-translate-train", lang), world.realiser(lang)
            sents = [real.sentence(c, rng) for c in clauses]
            ids = [f"en-{lang}-train-{i + 1:05d}" for i in range(len(sents))]
            path = f"translate-train/ud/en-{lang}.conllu"
            recs = [_ud_record(s, sid) for s, sid in zip(sents, ids, strict=True)]
            conll = [_conllu_sentence(s, sid, False) for s, sid in zip(sents, ids, strict=True)]
            units.append(Unit(path, lambda p, c=conll: write_conllu(p, c), {(t, lang, "train", path): recs for t in tasks}))
    if "ner" in world.cfg["tasks"] and "en" in ner_langs:
        clauses = _ner_sentences(world, "en", "train", world.cfg["sizes"]["ner"]["train"])[0]
        for lang in ner_langs:
            if lang == "en":
                continue
            rng, real = rng_for(world, "ner-translate-train", lang), world.realiser(lang)
            path = f"translate-train/wikiann/en-{lang}.parquet"
            cols, recs = _wikiann([real.sentence(c, rng) for c in clauses], lang, f"{lang}-train-{Path(path).stem}-")
            units.append(Unit(path, lambda p, c=cols: write_parquet(p, "wikiann", c), {("ner", lang, "train", path): recs}))
    return units


# ---------------------------------------------------------------------------- PAWS-X
def _swap_args(c: Clause) -> Clause:
    return replace(c, agent=c.patient, patient=c.agent)


def _change_word(sampler, c: Clause, rng) -> Clause:
    inv = sampler.inv
    opts = ["verb"]
    for role in ("agent", "patient", "place"):
        np = getattr(c, role)
        if np is not None and np.kind == "noun":
            opts.append(role)
    what = rng.choice(opts)
    if what == "verb":
        same = [v for v in range(inv.n_verbs) if inv.verb_transitive[v] == inv.verb_transitive[c.verb] and v != c.verb]
        return replace(c, verb=rng.choice(same))
    np = getattr(c, what)
    if np.adj is not None and rng.random() < 0.5:
        new = replace(np, adj=rng.choice([a for a in range(inv.n_adjs) if a != np.adj]))
    else:
        pool = [i for i in inv.by_class[inv.noun_class[np.idx]] if i != np.idx]
        new = replace(np, idx=rng.choice(pool))
    return replace(c, **{what: new})


def _paraphrase(c: Clause, rng) -> Clause:
    opts = []
    if c.patient is not None:
        opts.append("passive")
    if c.place is not None or c.time is not None:
        opts.append("front")
    what = rng.choice(opts)
    if what == "passive":
        return replace(c, passive=not c.passive)
    return replace(c, front=not c.front)


def pawsx_pairs(world, split: str) -> list[tuple[Clause, Clause, int]]:
    """Paraphrase = the same clause in the other voice or with the adjunct (un)fronted;
    non-paraphrase = agent and patient swapped (same words, other meaning) or one word changed;
    half and half.

    Both classes keep high word overlap and word order matters: a swap reorders the arguments
    without a voice change, a paraphrase reorders them with one. Which sentence of a pair comes
    first is drawn at random: with the edited sentence always second, the tiny encoder learnt
    "the second sentence gained a passive or a fronted adjunct => paraphrase" and got most
    paraphrases that undo one (the source clause was passive or fronted) wrong. No
    non-paraphrase is also reordered: those traps (15% of non-paraphrases, earlier 40%) were
    never learnt in the crossmulti budget (0-38% right in every model, cross and multi), and
    their share of the training set decided how far a seed got past the shortcut "reordered
    => paraphrase" (EN test F1 near 80 or near 88; docs/world.md, "PAWS-X: what the ~80
    plateau was")."""
    rng = rng_for(world, "pawsx", split)
    sampler = world.sampler
    out = []
    for _ in range(world.cfg["sizes"]["pawsx"][split]):
        while True:
            c = sampler.clause(rng, p_pp=0.5, p_time=0.3)
            if c.patient is not None or c.place is not None or c.time is not None:
                break
        if rng.random() < 0.5:
            c2, label = _paraphrase(c, rng), 1
        elif c.patient is not None and rng.random() < 0.5:
            c2, label = _swap_args(c), 0
        else:
            c2, label = _change_word(sampler, c, rng), 0
        out.append((c2, c, label) if rng.random() < 0.5 else (c, c2, label))
    return out


def build_pawsx(world, langs: list[str]) -> list[Unit]:
    labels = get_task("pawsx").labels
    units = []
    for split in ("train", "dev", "test"):
        pairs = pawsx_pairs(world, split)
        texts: dict[str, list[tuple[str, str]]] = {}
        for lang in langs:
            real = world.realiser(lang)
            rng = rng_for(world, "pawsx", split, lang)
            path = f"paws-x/{lang}/{HUB_SPLIT[split]}-00000-of-00001.parquet"
            unk = unknown_chars(world, split, path)
            cols = {"id": [], "sentence1": [], "sentence2": [], "label": []}
            recs = []
            texts[lang] = []
            for i, (c1, c2, lab) in enumerate(pairs, 1):
                wording: dict = {}  # the second sentence is an edit of the first: same words
                w1, w2 = real.sentence(c1, rng, wording), real.sentence(c2, rng, wording)
                texts[lang].append((w1.text, w2.text))  # translations: as written
                s1, s2 = unk(w1).text, unk(w2).text
                cols["id"].append(i)
                cols["sentence1"].append(s1)
                cols["sentence2"].append(s2)
                cols["label"].append(lab)
                recs.append({"id": str(i), "text": s1, "text_pair": s2, "label": labels[lab]})
            units.append(Unit(path, lambda p, c=cols: write_parquet(p, "pawsx", c), {("pawsx", lang, split): recs}))
        units += translations.pawsx_files(world, Unit, split, texts, [lab for *_, lab in pairs])
    return units


# ---------------------------------------------------------------------------- XNLI
_MODS = ("place", "time", "adv", "agent_adj", "patient_adj")


def _mods(c: Clause) -> tuple[list[str], list[str]]:
    present, absent = [], []
    for m in _MODS:
        if m in ("agent_adj", "patient_adj"):
            np = getattr(c, m.split("_")[0])
            if np is None or np.kind != "noun":
                continue
            (present if np.adj is not None else absent).append(m)
        else:
            (present if getattr(c, m) is not None else absent).append(m)
    return present, absent


def _drop(c: Clause, mods: list[str]) -> Clause:
    kw = {}
    for m in mods:
        if m == "place":
            kw.update(place=None, prep=None, front=False if c.time is None or "time" in mods else c.front)
        elif m == "time":
            kw["time"] = None
        elif m == "adv":
            kw["adv"] = None
        else:
            role = m.split("_")[0]
            kw[role] = replace(kw.get(role, getattr(c, role)), adj=None)
    c2 = replace(c, **kw)
    if c2.place is None and c2.time is None:
        c2.front = False
    return c2


def _add(sampler, c: Clause, mods: list[str], rng) -> Clause:
    inv = sampler.inv
    kw = {}
    for m in mods:
        if m == "place":
            prep = rng.randrange(4)  # a place preposition (not "with")
            kw.update(prep=prep, place=sampler.np(rng, "place"))
        elif m == "time":
            kw["time"] = rng.choice(sampler.times)
        elif m == "adv":
            kw["adv"] = rng.randrange(inv.n_adverbs)
        else:
            role = m.split("_")[0]
            kw[role] = replace(getattr(c, role), adj=rng.randrange(inv.n_adjs))
    return replace(c, **kw)


def xnli_triples(world, split: str) -> list[tuple[Clause, Clause, int]]:
    """(premise, hypothesis, label id) with 0 entailment, 1 neutral, 2 contradiction."""
    rng = rng_for(world, "xnli", split)
    sampler, inv = world.sampler, world.sampler.inv
    out = []
    for _ in range(world.cfg["sizes"]["xnli"][split]):
        while True:
            p = sampler.clause(rng, p_pp=0.6, p_time=0.4, p_adv=0.3, p_neg=0.15)
            present, absent = _mods(p)
            if present and absent:
                break
        label = rng.randrange(3)
        subset = lambda xs: rng.sample(xs, rng.randint(1, len(xs)))  # noqa: E731
        if label == 2:  # contradiction
            if p.neg:
                h = replace(p, neg=False)
            elif inv.verb_antonym[p.verb] is not None and rng.random() < 0.5:
                h = replace(p, verb=inv.verb_antonym[p.verb])
                if rng.random() < 0.5:
                    h = _drop(h, subset(present))
            else:
                h = replace(p, neg=True)
        elif (label == 0) != p.neg:  # positive premise: entailment drops facts; negated: neutral does
            h = _drop(p, subset(present))
        else:  # positive premise: neutral adds a fact; negated: entailment does
            h = _add(sampler, p, subset(absent), rng)
        if h.patient is not None and rng.random() < 0.3:
            h = replace(h, passive=not h.passive)
        if rng.random() < 0.3:
            h = replace(h, tense=p.tense)
        h = replace(h, front=h.front and (h.place is not None or h.time is not None))
        out.append((p, h, label))
    return out


def build_xnli(world, langs: list[str]) -> list[Unit]:
    labels = get_task("xnli").labels
    units = []
    for split in ("train", "dev", "test"):
        triples = xnli_triples(world, split)
        texts: dict[str, list[tuple[str, str]]] = {}
        for lang in langs:
            real = world.realiser(lang)
            rng = rng_for(world, "xnli", split, lang)
            path = f"xnli/{lang}/{HUB_SPLIT[split]}-00000-of-00001.parquet"
            unk = unknown_chars(world, split, path)
            cols = {"premise": [], "hypothesis": [], "label": []}
            recs = []
            for i, (p, h, lab) in enumerate(triples):
                wording: dict = {}  # the hypothesis is written from the premise: same words
                sp, sh = real.sentence(p, rng, wording), real.sentence(h, rng, wording)
                texts.setdefault(lang, []).append((sp.text, sh.text))  # translations: as written
                tp, th = unk(sp).text, unk(sh).text
                cols["premise"].append(tp)
                cols["hypothesis"].append(th)
                cols["label"].append(lab)
                recs.append({"id": f"{lang}-{split}-{i}", "text": tp, "text_pair": th, "label": labels[lab]})
            units.append(Unit(path, lambda p, c=cols: write_parquet(p, "xnli", c), {("xnli", lang, split): recs}))
        units += translations.xnli_files(world, Unit, split, texts, [lab for *_, lab in triples])
    return units


# ---------------------------------------------------------------------------- MARC
_NEG_OF = {2: -1, 1: -1, -1: 1, -2: 1}  # polarity of "not <word of polarity q>"


def _polar_words(inv) -> tuple[dict[int, list[int]], dict[int, int]]:
    adjs: dict[int, list[int]] = {}
    for a, q in enumerate(inv.adj_polarity):
        adjs.setdefault(q, []).append(a)
    return adjs, {inv.verb_polarity[v]: v for v in range(4)}


def review(world, rng) -> tuple[list[Clause], int]:
    """A review (list of clauses) and its star rating 1-5."""
    sampler, inv = world.sampler, world.sampler.inv
    star = rng.randint(1, 5)
    target = star - 3
    product = rng.choice(sampler.objects)
    adjs_by_pol, verbs_by_pol = _polar_words(inv)
    clauses = []
    n = rng.choice((1, 2, 2, 3))
    opinions = 0
    for k in range(n):
        if rng.random() < 0.25 and (opinions or k + 1 < n):  # every review has an opinion
            clauses.append(sampler.clause(rng, p_name=0.2))
            continue
        # The first opinion states the rating; later ones may stray by one point.
        jitter = rng.choices((-1, 0, 1), (0.15, 0.7, 0.15))[0] if opinions else 0
        opinions += 1
        pol = max(-2, min(2, target + jitter))
        subj = NP("noun", idx=product, definite=True)
        neg = very = False
        r = rng.random()
        if pol != 0 and r < 0.25 and abs(pol) == 1:  # "not bad", "not good"
            q = rng.choice([x for x, v in _NEG_OF.items() if v == pol])
            neg = True
        elif abs(pol) == 2 and r < 0.35:  # "very good"
            q, very = pol // 2, True
        else:
            q = pol
        if q != 0 and not very and rng.random() < 0.4:
            c = Clause(verb=verbs_by_pol[q], agent=NP("pron", idx=0), patient=subj, neg=neg,
                       tense=rng.choice(("pres", "past")))  # fmt: skip
        else:
            c = sampler.copular(rng, subject=subj, pred=rng.choice(adjs_by_pol[q]))
            c.neg, c.very = neg, very
        clauses.append(c)
    if rng.random() < world.cfg["noise"]["marc_star"]:
        star = max(1, min(5, star + rng.choice((-1, 1))))
    return clauses, star


def build_marc(world, langs: list[str]) -> list[Unit]:
    labels = get_task("marc").labels
    units = []
    for lang in langs:
        real = world.realiser(lang)
        for split in ("train", "dev", "test"):
            rng = rng_for(world, "marc", lang, split)
            path = f"marc/{lang}/{HUB_SPLIT[split]}.jsonl"
            unk = unknown_chars(world, split, path)
            rows, recs = [], []
            for i in range(world.cfg["sizes"]["marc"][split]):
                clauses, star = review(world, rng)
                text = " ".join(unk(real.sentence(c, rng)).text for c in clauses)
                rid = f"{lang}_{split}_{i:06d}"
                rows.append({"id": rid, "text": text, "label": star - 1})
                recs.append({"id": rid, "text": text, "label": labels[star - 1]})
            units.append(Unit(path, lambda p, r=rows: write_marc(p, r), {("marc", lang, split): recs}))
    return units


# ---------------------------------------------------------------------------- QA
_ROLE_CODE = {"agent": "A", "patient": "P", "place": "L"}


def qa_paragraphs(world, split: str, stream: str = "qa") -> list[tuple[list[Clause], list[tuple[int, str]]]]:
    """Latent paragraphs: (sentences, [(sentence index, questioned role)]), ~sizes.qa[split] questions.
    Each `stream` (SQuAD / XQuAD, MLQA, one per TyDiQA language) draws its own paragraphs."""
    rng = rng_for(world, stream, split)
    sampler, n_verbs = world.sampler, world.sampler.inv.n_verbs
    target = world.cfg["sizes"]["qa"][split]
    out, n = [], 0
    while n < target:
        k = rng.randint(*world.cfg["qa"]["sentences"])
        verbs = rng.sample(range(n_verbs), k)
        sents = [sampler.clause(rng, p_name=0.5, p_pp=0.5, p_passive=0.1, verb=v) for v in verbs]
        cands = [(i, role) for i, c in enumerate(sents) for role in ("agent", "patient", "place")
                 if getattr(c, role) is not None and getattr(c, role).kind != "pron"]  # fmt: skip
        if not cands:
            continue
        qs = rng.sample(cands, min(len(cands), rng.randint(1, 3), target - n))
        out.append((sents, qs))
        n += len(qs)
    return out


def _role_pred(code: str, strip_det: bool = False):
    roles = {code, code + "g", code + "c"}

    def pred(w) -> bool:
        k = w.key
        if k[0] not in roles or k == (code, "case"):
            return False
        return not (strip_det and k[0] == code and k[1] in ("det", "poss"))

    return pred


def _squad_paragraph(world, lang, paragraph, split, first_id, rng, multi: bool, question=None, unk=as_written):
    """One SQuAD paragraph in `lang`; `question` = (language, rng) asks the questions in another
    language on their own stream (MLQA's cross-lingual pairs), else they are in `lang`; `unk`
    (`unknown_chars`) respells context sentences (an answer is then the misspelt span)."""
    real = world.realiser(lang)
    qreal, qrng = (world.realiser(question[0]), question[1]) if question else (real, rng)
    own = question is None
    sents, qs = paragraph
    # each question is written from its sentence's wording (the same synonyms), as a reader's
    # question quotes the text it asks about; a question in another language draws its own
    wordings: list[dict] = [{} for _ in sents]
    realised = [unk(real.sentence(c, rng, wd)) for c, wd in zip(sents, wordings)]
    starts, pos = [], 0
    for s in realised:
        starts.append(pos)
        pos += len(s.text) + 1
    context = " ".join(s.text for s in realised)
    qas, recs = [], []
    for j, (si, role) in enumerate(qs):
        qid = f"{split}{first_id + j:06d}"
        code = _ROLE_CODE[role]
        s, off = realised[si], starts[si]
        wording = dict(wordings[si]) if own else None
        question = qreal.sentence(replace(sents[si], wh=role, front=False), qrng, wording).text
        texts, begins = [], []
        variants = (False, True) if multi else (False,)
        for strip in variants:
            sp = s.span(_role_pred(code, strip))
            if sp is None:
                continue
            text = context[off + sp[0] : off + sp[1]]
            if (text, off + sp[0]) not in zip(texts, begins):
                texts.append(text)
                begins.append(off + sp[0])
        if not texts:  # the phrase is hidden in a contraction: cannot be a span
            continue
        qas.append({"id": qid, "question": question,
                    "answers": [{"text": t, "answer_start": b} for t, b in zip(texts, begins, strict=True)]})  # fmt: skip
        recs.append({"id": qid, "context": context, "question": question,
                     "answers": {"text": texts, "answer_start": begins}})  # fmt: skip
    return {"context": context, "qas": qas}, recs


def _squad_articles(world, lang, paragraphs, split, rng, multi, question=None, unk=as_written):
    articles, recs, qid = [], [], 0
    for p0 in range(0, len(paragraphs), 4):
        paras = []
        for par in paragraphs[p0 : p0 + 4]:
            para, r = _squad_paragraph(world, lang, par, split, qid, rng, multi, question, unk)
            qid += len(par[1])
            if para["qas"]:
                paras.append(para)
                recs += r
        articles.append({"title": f"Tiny_{split}_{p0 // 4 + 1}", "paragraphs": paras})
    return articles, recs


MLQA_LANGUAGES = ("en", "ar", "de", "es", "hi", "vi", "zh")


def _squad_rows(articles: list[dict], ids=None) -> list[dict]:
    """SQuAD articles -> rows with SQuAD's parquet columns (MLQA / TyDiQA on the Hub)."""
    return [{"id": ids(q["id"]) if ids else q["id"], "title": a["title"], "context": p["context"], "question": q["question"],
             "answers": {"text": [x["text"] for x in q["answers"]], "answer_start": [x["answer_start"] for x in q["answers"]]}}
            for a in articles for p in a["paragraphs"] for q in p["qas"]]  # fmt: skip


def _qa_records(rows: list[dict]) -> list[dict]:
    return [{k: r[k] for k in ("id", "context", "question", "answers")} for r in rows]


def _parquet_unit(path: str, rows: list[dict], keys: list[tuple], records) -> Unit:
    return Unit(path, lambda p, r=rows: write_squad_parquet(p, r), {k: records(k) for k in keys})


def build_qa(world, langs: list[str]) -> list[Unit]:
    units = []
    if "en" in langs:
        for split, fname in (("train", "squad/train-v1.1.json"), ("dev", "squad/dev-v1.1.json")):
            arts, recs = _squad_articles(world, "en", qa_paragraphs(world, split), split,
                                         rng_for(world, "qa", split, "en"), multi=split != "train")  # fmt: skip
            units.append(Unit(fname, lambda p, a=arts: write_squad(p, a), {("qa", "en", split): recs}))
    paragraphs = qa_paragraphs(world, "test")
    for lang in langs:
        path = f"xquad/xquad.{lang}.json"
        arts, recs = _squad_articles(world, lang, paragraphs, "test", rng_for(world, "qa", "test", lang), True,
                                     unk=unknown_chars(world, "test", path))  # fmt: skip
        units.append(Unit(path, lambda p, a=arts: write_squad(p, a), {("qa", lang, "test"): recs}))
    if "en" not in langs:
        return units
    # translate-test stands for xx's XQuAD translated: English XQuAD as written, no unknown letters
    xquad_en = _squad_articles(world, "en", paragraphs, "test", rng_for(world, "qa", "test", "en"), True)[0]
    # XTREME translate-train / -dev (English SQuAD train / dev in xx) and translate-test (XQuAD xx in English)
    train, dev = qa_paragraphs(world, "train"), qa_paragraphs(world, "dev")
    for lang in langs:
        if lang == "en":
            continue
        for split, paragraphs, stream in (("train", train, "squad"), ("dev", dev, "squad-dev")):
            arts, _ = _squad_articles(world, lang, paragraphs, split, rng_for(world, "qa", split, lang), split != "train")
            path = f"xtreme_translations/SQuAD/translate-{split}/squad.translate.{split}.en-{lang}.json"
            units.append(translations.squad_file(Unit, path, lang, split, arts, translations.Noise(world, stream, lang)))
            units.append(translations.squad_file(Unit, translations.gold_path(path), lang, split, arts))
        path = f"xtreme_translations/XQuAD/translate-test/xquad.translate.test.{lang}-en.json"
        units.append(translations.squad_file(Unit, path, lang, "test", xquad_en, translations.Noise(world, "xquad", lang)))
        units.append(translations.squad_file(Unit, translations.gold_path(path), lang, "test", xquad_en))
    units += _mlqa(world, [c for c in langs if c in MLQA_LANGUAGES])
    units += _tydiqa(world, [c for c in langs if c in TYDIQA_LANGUAGES.values()])
    return units


def _mlqa(world, langs: list[str]) -> list[Unit]:
    """MLQA: parallel paragraphs, the same question ids in every language; the Hub's parquet per
    language, and the original zip's SQuAD JSON for each language and for the cross-lingual
    pairs with English."""
    units = []
    for split in ("dev", "test"):
        paragraphs = qa_paragraphs(world, split, stream="mlqa")
        for ctx in langs:
            # questions on their own stream, so the contexts are the same in every pair file
            arts, _ = _squad_articles(world, ctx, paragraphs, split, rng_for(world, "mlqa", split, ctx), True,
                                      question=(ctx, rng_for(world, "mlqa", split, ctx, "question", ctx)))  # fmt: skip
            path = f"mlqa/{ctx}/{HUB_SPLIT[split]}-00000-of-00001.parquet"
            rows = _squad_rows(arts)
            units.append(_parquet_unit(path, rows, [("qa", ctx, split, path)], lambda k, r=rows: _qa_records(r)))
            # the same questions in the zip's SQuAD JSON (the route config.yaml reads)
            units.append(translations.squad_file(Unit, f"mlqa-v1/{split}/{split}-context-{ctx}-question-{ctx}.json",
                                                 ctx, split, arts))
            for q in langs:
                if q != ctx and "en" in (q, ctx):
                    arts, _ = _squad_articles(world, ctx, paragraphs, split, rng_for(world, "mlqa", split, ctx), True,
                                              question=(q, rng_for(world, "mlqa", split, ctx, "question", q)))  # fmt: skip
                    path = f"mlqa-v1/{split}/{split}-context-{ctx}-question-{q}.json"
                    units.append(translations.squad_file(Unit, path, ctx, split, arts))
    return units


def _tydiqa(world, langs: list[str]) -> list[Unit]:
    """TyDiQA-GoldP's validation file: every language's own paragraphs (not parallel) in one
    parquet; the language is only in the id prefix."""
    if not langs:
        return []
    names = {code: name for name, code in TYDIQA_LANGUAGES.items()}
    rows, by_lang = [], {}
    for lang in langs:
        arts, _ = _squad_articles(world, lang, qa_paragraphs(world, "test", stream=f"tydiqa-{lang}"), "test",
                                  rng_for(world, "tydiqa", lang), True)  # fmt: skip
        own = _squad_rows(arts, ids=lambda qid, n=names[lang]: f"{n}-{stable_seed(world.seed, 'tydiqa', qid) % 10**19}-0")
        by_lang[lang] = own
        rows += own
    path = "tydiqa/validation-00000-of-00001.parquet"
    units = [_parquet_unit(path, rows, [("qa", c, "test", path) for c in langs], lambda k: _qa_records(by_lang[k[1]]))]
    return units + (_tydiqa_train(world, [c for c in langs if c != "en"]) if "en" in langs else [])


TYDIQA_TRANSLATE_TRAIN = "xtreme_translations/TyDiQA-GoldP/translate-train/tydiqa.translate.train.en-{lang}.json"


def _tydiqa_train(world, targets: list[str]) -> list[Unit]:
    """TyDiQA-GoldP's English train split (the Hub's train parquet: English rows only here) and
    XTREME's translation of it into each target (SQuAD JSON; a translated question keeps its
    English original's id, as XTREME's files do). Small, as the real one is next to SQuAD
    (3.7k questions vs 87.6k): the world's QA dev size."""
    paragraphs = qa_paragraphs(world, "dev", stream="tydiqa-train")

    def english_id(qid: str) -> str:
        return f"english-{stable_seed(world.seed, 'tydiqa-train', qid) % 10**19}-0"

    arts, _ = _squad_articles(world, "en", paragraphs, "train", rng_for(world, "tydiqa-train", "en"), False)
    rows = _squad_rows(arts, ids=english_id)
    path = "tydiqa/train-00000-of-00001.parquet"
    units = [_parquet_unit(path, rows, [("qa", "en", "train", path)], lambda k, r=rows: _qa_records(r))]
    for lang in targets:
        arts, _ = _squad_articles(world, lang, paragraphs, "train", rng_for(world, "tydiqa-train", lang), False)
        arts = [{**a, "paragraphs": [{**p, "qas": [{**q, "id": english_id(q["id"])} for q in p["qas"]]}
                                     for p in a["paragraphs"]]} for a in arts]  # fmt: skip
        path = TYDIQA_TRANSLATE_TRAIN.format(lang=lang)
        units.append(translations.squad_file(Unit, path, lang, "train", arts, translations.Noise(world, "tydiqa-train", lang)))
        units.append(translations.squad_file(Unit, translations.gold_path(path), lang, "train", arts))
    return units


# ---------------------------------------------------------------------------- bitext
def gold_alignment(src: Sentence, tgt: Sentence) -> list[tuple[int, int]]:
    """Surface-token links between two realisations of one latent clause: tokens whose words
    express the same part of the latent tree (same key) are linked."""
    where: dict = {}
    for j, (_f, a, b) in enumerate(tgt.surface):
        for w in tgt.words[a : b + 1]:
            where.setdefault(w.key, set()).add(j)
    links = set()
    for i, (_f, a, b) in enumerate(src.surface):
        for w in src.words[a : b + 1]:
            for j in where.get(w.key, ()):
                links.add((i, j))
    return sorted(links)


def alignment_file(xx: str) -> str:
    return f"wikimatrix/gold-alignments/en-{xx}.pharaoh"


def build_bitext(world, xx: str) -> list[Unit]:
    sampler = world.sampler
    en, tgt = world.realiser("en"), world.realiser(xx)
    rng = rng_for(world, "bitext", xx)
    rng_en, rng_xx = rng_for(world, "bitext", xx, "en"), rng_for(world, "bitext", xx, xx)
    below = world.cfg["bitext"]["below_threshold"]
    rows = []
    for i in range(world.cfg["sizes"]["bitext"]["train"]):
        c = sampler.any_sentence(rng)
        s_en = en.sentence(c, rng_en)
        r = rng.random()
        if r < below / 2:  # a mined pair that is not a translation
            s_xx = tgt.sentence(sampler.any_sentence(rng), rng_xx)
            score, links = rng.uniform(0.9, 1.0399), []
        else:
            s_xx = tgt.sentence(c, rng_xx)
            links = gold_alignment(s_en, s_xx)
            if r < below:  # a translation the margin scores too low
                score = rng.uniform(1.0, 1.0399)
            else:
                score = min(1.6, WIKIMATRIX_THRESHOLD + 0.0001 + rng.expovariate(1 / 0.06))
        rows.append((round(score, 8), i, s_en, s_xx, links))
    rows.sort(key=lambda r: (-r[0], r[1]))  # WikiMatrix files are sorted by score
    tsv = [(sc, a.text, b.text) for sc, _i, a, b, _l in rows]
    recs = [
        {"id": f"en-{xx}-{k}", "src": a.surface_tokens, "tgt": b.surface_tokens}
        for k, (sc, _i, a, b, _l) in enumerate(rows, 1)
        if sc >= WIKIMATRIX_THRESHOLD
    ]
    aligns = [links for *_rest, links in rows]
    return [
        Unit(f"wikimatrix/WikiMatrix.en-{xx}.tsv.gz", lambda p, t=tsv: write_wikimatrix(p, t),
             {("bitext", xx, "train"): recs}),
        Unit(alignment_file(xx), lambda p, a=aligns: write_pharaoh(p, a), {}),
    ]  # fmt: skip
