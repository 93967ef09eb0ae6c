import collections
import gzip
import json
import re
import unicodedata
from pathlib import Path

import pytest

from xlt.errors import XltError
from xlt.formats import read_conllu, read_pharaoh, read_wikimatrix, tokenize
from xlt.io import sha256_file
from xlt.stages.prepare import prepare_split
from xlt.registry import UD_DEPRELS, UPOS, get_task
from xlt.world import World, generate, pretraining_text
from xlt.world.schema import default_config

SMALL = {"train": 40, "dev": 12, "test": 12, "bitext": {"train": 40}}


def test_round_trip_every_split(tiny_world):
    """world -> raw files -> readers (via prepare) == the generator's own records."""
    world, raw, manifest = tiny_world
    keys = world.keys()
    assert sum(len(k) == 3 for k in keys) == 156
    for key in keys:
        # a 4-part key is a file read through a `<split>_source` override (tests/world/test_translations.py)
        cfg = manifest["source_cfg"] if len(key) == 3 else world.source_cfg(key)
        got = prepare_split(*key[:3], raw, cfg)
        assert got == world.records(*key), key


def test_layout_and_manifest(tiny_world):
    world, raw, manifest = tiny_world
    files = manifest["files"]
    for rel, info in files.items():
        assert sha256_file(raw / rel) == info["sha256"]
    on_disk = sorted(str(p.relative_to(raw)) for p in raw.rglob("*") if p.is_file())
    assert on_disk == sorted(files)
    assert "ud-treebanks-v2.7/UD_English-Tiny/en_tiny-ud-train.conllu" in files
    assert "ud-treebanks-v2.7/UD_Arabic-TinyNoText/ar_tinynotext-ud-train.conllu" in files
    assert "wikiann/hi/validation-00000-of-00001.parquet" in files
    assert "paws-x/zh/test-00000-of-00001.parquet" in files and "paws-x/ru/test-00000-of-00001.parquet" not in files
    assert "xnli/vi/train-00000-of-00001.parquet" in files
    assert "marc/fr/validation.jsonl" in files and "marc/ar/validation.jsonl" not in files
    assert {"squad/train-v1.1.json", "squad/dev-v1.1.json", "xquad/xquad.hi.json"} <= set(files)
    assert "xquad/xquad.fr.json" not in files  # qa has no French in the registry
    assert "wikimatrix/WikiMatrix.en-ru.tsv.gz" in files
    assert "wikimatrix/gold-alignments/en-ru.pharaoh" in files
    assert manifest["tasks"]["pawsx"] == ["en", "de", "es", "fr", "zh"]
    json.dumps(manifest)  # serialisable as provenance


def test_same_seed_same_bytes_other_seed_differs(tmp_path):
    m1 = generate(default_config(seed=5, sizes=SMALL), tmp_path / "a")
    m2 = generate(default_config(seed=5, sizes=SMALL), tmp_path / "b")
    assert m1["files"] == m2["files"]
    for rel in m1["files"]:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel
    m3 = generate(default_config(seed=6, sizes=SMALL), tmp_path / "c")
    assert m3["files"].keys() == m1["files"].keys()
    assert all(m3["files"][r]["sha256"] != m1["files"][r]["sha256"] for r in m1["files"])


def test_adding_a_language_leaves_the_others_unchanged():
    cfg = default_config(seed=5, sizes=SMALL, tasks=["pos", "xnli"])
    small = dict(cfg, languages={k: cfg["languages"][k] for k in ("en", "de", "es")}, ud={})
    a, b = World(cfg), World(small)
    assert a.records("pos", "es", "dev") == b.records("pos", "es", "dev")
    assert a.records("xnli", "de", "test") == b.records("xnli", "de", "test")


def test_config_errors_name_the_key():
    base = default_config()
    with pytest.raises(XltError, match=r"world\.languages\.hi\.order: 'OVS' is not one of SVO, SOV, VSO"):
        World(dict(base, languages={"en": {}, "hi": {"order": "OVS"}}))
    with pytest.raises(XltError, match=r"world\.languages\.en\.scrpt: unknown key"):
        World(dict(base, languages={"en": {"scrpt": "latin"}}))
    with pytest.raises(XltError, match=r"world\.sizes\.qa\.validation: unknown key"):
        World(dict(base, sizes={"qa": {"validation": 3}}))
    with pytest.raises(XltError, match=r"world\.tasks: 'sentiment' is not one of"):
        World(dict(base, tasks=["sentiment"]))
    with pytest.raises(XltError, match=r"world\.seed: required"):
        World({"languages": {"en": {}}})
    with pytest.raises(XltError, match=r"world\.languages\.xx\.name: unknown language code"):
        World(dict(base, languages={"en": {}, "xx": {}}))
    with pytest.raises(XltError, match="cycle"):
        World(dict(base, languages={"en": {"related": "de"}, "de": {"related": "en"}}))
    with pytest.raises(XltError, match="need 'en'"):
        World(dict(base, languages={"de": {}}))
    # the `world:` block of a preset is accepted as is
    assert World({"world": dict(base, sizes=SMALL)}).cfg["sizes"]["qa"]["dev"] == 12


def test_per_task_size_overrides():
    w = World(default_config(seed=1, sizes={"train": 20, "dev": 5, "test": 5, "marc": {"train": 7},
                                            "bitext": {"train": 30}}, tasks=["marc", "bitext", "ner"]))  # fmt: skip
    assert len(w.records("marc", "de", "train")) == 7
    assert len(w.records("marc", "de", "dev")) == 5
    assert len(w.records("ner", "zh", "train")) == 20
    assert 20 <= len(w.records("bitext", "ru", "train")) < 30  # some rows fall under the threshold


# -- sanity of the world ------------------------------------------------------
def _ud(world, raw, lang, split="train", surface=False):
    return read_conllu(raw / f"ud-treebanks-v2.7/{world.source_cfg()['ud']['treebanks'][lang][0]}/"
                       f"{lang}_tiny-ud-{split}.conllu", surface=surface)  # fmt: skip


def test_every_language_has_the_upos_it_claims(tiny_world):
    world, raw, manifest = tiny_world
    for lang, info in manifest["languages"].items():
        seen = {u for r in _ud(world, raw, lang) for u in r["upos"]}
        assert seen == set(info["upos"]), lang
        assert seen <= set(UPOS)
    assert "DET" in manifest["languages"]["en"]["upos"]
    assert "DET" not in manifest["languages"]["zh"]["upos"]


def test_trees_have_one_root_and_no_cycles(tiny_world):
    world, raw, _ = tiny_world
    for lang in world.task_languages("parsing"):
        for split in ("train", "test"):
            for r in world.records("parsing", lang, split):
                heads, n = r["head"], len(r["head"])
                assert heads.count(0) == 1 and r["deprel"][heads.index(0)] == "root"
                assert set(r["deprel"]) <= set(UD_DEPRELS)
                assert len(r["tokens"]) == len(r["upos"]) == n and 5 <= n <= 20
                for i in range(n):  # walking up from every word reaches the root
                    seen, j = set(), i + 1
                    while j:
                        assert j not in seen
                        seen.add(j)
                        j = heads[j - 1]
                    assert 1 <= heads[i] <= n or heads[i] == 0


def test_word_orders_and_multiword_tokens(tiny_world):
    world, raw, _ = tiny_world

    def verb_position(lang):
        pos = collections.Counter()
        for r in world.records("pos", lang, "train"):
            root = r["head"].index(0)
            if r["upos"][root] != "VERB" or r["tokens"][-1] == "?":
                continue
            subj = [i for i, (h, d) in enumerate(zip(r["head"], r["deprel"])) if h == root + 1 and d == "nsubj"]
            obj = [i for i, (h, d) in enumerate(zip(r["head"], r["deprel"])) if h == root + 1 and d == "obj"]
            if subj and obj:
                order = sorted([("S", subj[0]), ("V", root), ("O", obj[0])], key=lambda x: x[1])
                pos["".join(x[0] for x in order)] += 1
        return pos.most_common(1)[0][0]

    assert verb_position("en") == "SVO"
    assert verb_position("hi") == "SOV"
    assert verb_position("ar") == "VSO"
    # Spanish contractions are CoNLL-U multiword tokens; nobody else has them
    es = _ud(world, raw, "es", surface=True)
    mwt = [m for r in es for m in r["mwt"]]
    assert len(mwt) > 20
    assert all(r["upos"][a - 1] == "ADP" and r["upos"][b - 1] == "DET" for r in es for a, b, _f in r["mwt"])
    assert not any(r["mwt"] for r in _ud(world, raw, "en", surface=True))
    text = (raw / "ud-treebanks-v2.7/UD_Spanish-Tiny/es_tiny-ud-train.conllu").read_text()
    assert re.search(r"^\d+-\d+\t", text, re.M)
    # subtypes are written in the files and cut by the reader
    assert "obl:tmod" in text and "nmod:poss" in text


def test_scripts(tiny_world):
    world, _raw, _ = tiny_world

    def scripts(lang):
        out = collections.Counter()
        for r in world.records("pos", lang, "train")[:100]:
            for t in r["tokens"]:
                ch = t[0]
                if ch.isalpha() and not ch.isupper():  # skip shared (capitalised Latin) names
                    out[unicodedata.name(ch).split()[0]] += 1
        return out.most_common(1)[0][0]

    assert scripts("en") == "LATIN"
    assert scripts("ru") == "CYRILLIC"
    assert scripts("ar") == "ARABIC"
    assert scripts("hi") == "DEVANAGARI"
    assert scripts("zh") == "CJK"


def test_ner_bio_is_valid_and_names_are_shared(tiny_world):
    world, _raw, _ = tiny_world
    tags = set(get_task("ner").labels)
    names = {}
    for lang in world.task_languages("ner"):
        ents = collections.Counter()
        for r in world.records("ner", lang, "train"):
            assert len(r["tokens"]) == len(r["tags"])
            prev = "O"
            for t in r["tags"]:
                assert t in tags
                if t.startswith("I-"):
                    assert prev in ("B-" + t[2:], t), r
                prev = t
            assert any(t != "O" for t in r["tags"])
            ents.update(t[2:] for t in r["tags"] if t.startswith("B-"))
            names.setdefault(lang, set()).update(tok for tok, t in zip(r["tokens"], r["tags"]) if t == "B-PER")
        assert set(ents) == {"PER", "ORG", "LOC"}
        assert any(t.startswith("I-") for r in world.records("ner", lang, "train") for t in r["tags"])
    assert len(names["en"] & names["zh"]) > 5  # person names are shared tokens


def test_qa_answers_match_offsets(tiny_world):
    world, _raw, _ = tiny_world
    for lang in world.task_languages("qa"):
        recs = world.records("qa", lang, "test")
        assert len(recs) >= 140
        for r in recs:
            for text, start in zip(r["answers"]["text"], r["answers"]["answer_start"]):
                assert r["context"][start : start + len(text)] == text
                assert text.strip() == text and text
    assert len(world.records("qa", "en", "train")) >= 590
    # XQuAD is parallel: same question ids in every language
    ids = {lang: [r["id"] for r in world.records("qa", lang, "test")] for lang in ("en", "de", "zh")}
    assert ids["en"] == ids["de"] == ids["zh"]


def _qa_words(text: str) -> list[str]:
    return re.findall(r"[^\s.,?!]+", text.lower())


def test_qa_questions_are_worded_from_their_paragraph():
    """A question quotes its sentence: without typos, every word of it but the wh-word (and a
    preposition fronted with it) is a word of its paragraph, in every QA language. Before, the
    question drew its own synonyms: ~30% of English questions had a word the paragraph lacks."""
    w = World(default_config(seed=3, sizes=SMALL, tasks=["qa"], noise={"typo": 0.0}))
    for lang in w.task_languages("qa"):
        stems = w.realiser(lang).lang.stems
        wh = {w.realiser(lang).lang.form(stems[k][0]).lower() for k in ("who", "what", "where")}
        splits = ("train", "dev", "test") if lang == "en" else ("test",)
        recs = [r for split in splits for r in w.records("qa", lang, split)]
        assert len(recs) >= 12
        for r in recs:
            q, ctx = _qa_words(r["question"]), set(_qa_words(r["context"]))
            i = next(i for i, t in enumerate(q) if t in wh)
            rest = [t for j, t in enumerate(q) if j != i and not (j == i - 1 and q[j] not in ctx)]
            assert set(rest) <= ctx, (lang, r["question"], r["context"])


def test_qa_sentences_per_context():
    def n_sentences(lang, split, **qa):
        w = World(default_config(seed=2, sizes=SMALL, tasks=["qa"], **qa))
        return {r["context"].count(". ") + 1 for r in w.records("qa", lang, split)}

    assert n_sentences("en", "train") == {1}  # the default: one sentence (docs/world.md, QA learnability)
    assert n_sentences("de", "test", qa={"sentences": [2, 3]}) == {2, 3}
    with pytest.raises(XltError, match=r"world\.qa\.sentences: expected \[min, max\]"):
        World(default_config(qa={"sentences": [3, 2]}))
    with pytest.raises(XltError, match=r"world\.qa\.paragraphs: unknown key"):
        World(default_config(qa={"paragraphs": 2}))


def test_labels_are_balanced_and_parallel(tiny_world):
    world, _raw, _ = tiny_world
    for task in ("pawsx", "xnli", "marc"):
        labels = get_task(task).labels
        for split in ("train", "test"):
            c = collections.Counter(r["label"] for r in world.records(task, "en", split))
            assert set(c) == set(labels), (task, split, c)
            assert min(c.values()) >= 0.5 * max(c.values()) / (1 if split == "train" else 1.5)
    # PAWS-X and XNLI are translations: same labels in every language
    for task in ("pawsx", "xnli"):
        langs = world.task_languages(task)
        per = [[r["label"] for r in world.records(task, lang, "dev")] for lang in langs]
        assert all(p == per[0] for p in per)
        assert world.records(task, langs[0], "dev")[0]["text"] != world.records(task, langs[1], "dev")[0]["text"]


def test_marc_text_reflects_stars(tiny_world):
    """Reviews carry graded sentiment: star ratings differ in their word statistics."""
    world, _raw, _ = tiny_world
    recs = world.records("marc", "en", "train")
    by_star = collections.defaultdict(collections.Counter)
    for r in recs:
        by_star[r["label"]].update(set(re.findall(r"\w+", r["text"])))
    distinctive = (set(by_star["5"]) - set(by_star["1"])) | (set(by_star["1"]) - set(by_star["5"]))
    assert distinctive


def test_bitext_threshold_and_gold_alignments(tiny_world):
    world, raw, _ = tiny_world
    for xx in world.task_languages("bitext"):
        tsv = raw / f"wikimatrix/WikiMatrix.en-{xx}.tsv.gz"
        rows = gzip.decompress(tsv.read_bytes()).decode().splitlines()
        scores = [float(r.split("\t")[0]) for r in rows]
        assert scores == sorted(scores, reverse=True)
        kept = read_wikimatrix(tsv)
        assert 0 < len(rows) - len(kept) < 0.3 * len(rows)
        all_rows = read_wikimatrix(tsv, threshold=float("-inf"))
        gold = read_pharaoh(raw / f"wikimatrix/gold-alignments/en-{xx}.pharaoh")
        assert len(gold) == len(all_rows) == len(rows)
        linked = 0
        for rec, links in zip(all_rows, gold):
            for i, j in links:
                assert 0 <= i < len(rec["src"]) and 0 <= j < len(rec["tgt"])
            linked += bool(links)
            if links:  # the final punctuation is aligned
                assert (len(rec["src"]) - 1, len(rec["tgt"]) - 1) in links
        assert linked > 0.8 * len(rows)


def test_pretraining_text_is_deterministic():
    cfg = default_config(seed=3)
    a = pretraining_text(cfg, 200)
    assert set(a) == set(cfg["languages"])
    assert all(len(v) == 200 and all(5 <= len(s) for s in v) for v in a.values())
    assert a == pretraining_text(default_config(seed=3), 200)
    assert a["en"] != pretraining_text(default_config(seed=4), 200)["en"]
    lengths = [len(tokenize(s)) for s in a["de"]]
    assert 4 <= min(lengths) and max(lengths) <= 25


def test_unknown_records_key_raises(tiny_world):
    world, _raw, _ = tiny_world
    with pytest.raises(XltError, match="no data for task 'pawsx', language 'ru'"):
        world.records("pawsx", "ru", "train")


def test_determinism_does_not_depend_on_hash_seed(tmp_path):
    import os
    import subprocess
    import sys

    code = (
        "import json, sys; from xlt.world import generate; from xlt.world.schema import default_config; "
        "m = generate(default_config(seed=9, sizes={'train': 10, 'dev': 5, 'test': 5}), sys.argv[1]); "
        "print(json.dumps({k: v['sha256'] for k, v in m['files'].items()}))"
    )
    out = []
    for hs, d in (("1", "x"), ("2", "y")):
        env = dict(os.environ, PYTHONHASHSEED=hs, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
        res = subprocess.run([sys.executable, "-c", code, str(tmp_path / d)], env=env, capture_output=True,
                             text=True, check=True)  # fmt: skip
        out.append(json.loads(res.stdout))
    assert out[0] == out[1] and len(out[0]) > 100
