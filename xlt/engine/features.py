"""Turn normalised records into model features, one encoder input per feature.

Tagging and parsing label the first subword of each word. Sequences longer than the
maximum length are cut into overlapping windows; each word is scored in exactly one window,
the one where it sits farthest from an edge, so every word keeps as much context as it can.
QA uses the usual doc-stride windows over the context with offsets kept for decoding.
"""

from __future__ import annotations

from dataclasses import dataclass

from xlt.labels import label_index
from xlt.errors import XltError
from xlt.registry import Task


@dataclass
class Encoded:
    """Features plus what decoding needs to map them back to examples."""

    features: list[dict]
    lengths: list[int]


def _specials(tokenizer) -> tuple[int, int]:
    if tokenizer.cls_token_id is None or tokenizer.sep_token_id is None:
        raise XltError(f"tokenizer {tokenizer.name_or_path!r} has no CLS/SEP tokens")
    return tokenizer.cls_token_id, tokenizer.sep_token_id


def assign_windows(first_subword: list[int], n_subwords: int, window: int, stride: int):
    """Split n_subwords into windows [start, start+window); give each word one window.

    Returns a list of (start, end, [word indices scored in this window]).
    """
    if n_subwords <= window:
        return [(0, n_subwords, list(range(len(first_subword))))]
    starts = list(range(0, n_subwords - window + stride, stride))
    starts = sorted({min(s, n_subwords - window) for s in starts})
    owned: dict[int, list[int]] = {s: [] for s in starts}
    for w, p in enumerate(first_subword):
        best = max(
            (s for s in starts if s <= p < s + window),
            key=lambda s: min(p - s, s + window - 1 - p),
        )
        owned[best].append(w)
    return [(s, s + window, owned[s]) for s in starts if owned[s]]


def encode_token_task(task: Task, records: list[dict], tokenizer, max_length: int, stride: int, train: bool = False,
                      parse_max_words: int = 128, max_positions: int | None = None, parsing: bool = False) -> Encoded:
    """Tagging (labels per first subword) and, with `parsing`, the parser's word starts, heads
    and relations.

    Parsing: a training tree longer than one window is cut at the window; the words kept
    whose gold head lies past the cut carry no gold (-100: no arc or relation loss), as the
    authors' parser does, so no long sentence is dropped from training. At test time a
    sentence is parsed on its first `parse_max_words` words, however many subwords they
    take, up to the encoder's `max_positions` (default: `max_length`); the words left out
    get no head (predict.UNPARSED_HEAD), so they count as errors for UAS and LAS alike.
    """
    cls_id, sep_id = _specials(tokenizer)
    window = max_length - 2
    labels = label_index(task)
    feats: list[dict] = []
    for ex_i, rec in enumerate(records):
        words = rec["tokens"]
        enc = tokenizer(words, is_split_into_words=True, add_special_tokens=False)
        ids, word_ids = enc["input_ids"], enc.word_ids()
        first: list[int] = []
        for pos, w in enumerate(word_ids):
            if w is not None and (pos == 0 or word_ids[pos - 1] != w):
                first.append(pos)
        if len(first) != len(words):  # a word the tokenizer maps to nothing: give it [UNK]
            ids, first = _with_unk_words(tokenizer, words)
        gold = rec.get(task.label_field) if not parsing else rec.get("deprel")
        if parsing and train and len(ids) > window:
            windows = [(0, window, [w for w in range(len(words)) if first[w] < window])]
        elif parsing and not train:
            room = (max_positions or max_length) - 2
            n = min(len(words), parse_max_words)
            end = first[n] if n < len(words) else len(ids)
            keep = [w for w in range(n) if first[w] < room]
            windows = [(0, min(end, room), keep)]
        else:
            windows = assign_windows(first, len(ids), window, stride)
        for start, end, owned in windows:
            piece = [cls_id] + ids[start:end] + [sep_id]
            f = {"input_ids": piece, "example": ex_i}
            if parsing:
                f["word_starts"] = [first[w] - start + 1 for w in owned]
                f["word_index"] = owned
                f["n_words"] = len(owned)
                if gold is not None and train:
                    cut = [int(rec["head"][w]) > len(owned) for w in owned]  # head past the cut
                    f["word_heads"] = [-100 if c else int(rec["head"][w]) for w, c in zip(owned, cut)]
                    f["word_rels"] = [-100 if c else labels[gold[w]] for w, c in zip(owned, cut)]
            else:
                lab = [-100] * len(piece)
                wid = [-1] * len(piece)
                for w in owned:
                    pos = first[w] - start + 1
                    wid[pos] = w
                    if gold is not None:
                        lab[pos] = labels[gold[w]]
                f["word_ids"] = wid
                if gold is not None:
                    f["labels"] = lab
            feats.append(f)
    return Encoded(feats, [len(f["input_ids"]) for f in feats])


def _with_unk_words(tokenizer, words: list[str]) -> tuple[list[int], list[int]]:
    ids: list[int] = []
    first: list[int] = []
    for w in words:
        sub = tokenizer(w, add_special_tokens=False)["input_ids"] or [tokenizer.unk_token_id]
        first.append(len(ids))
        ids.extend(sub)
    return ids, first


def encode_sequence_task(task: Task, records: list[dict], tokenizer, max_length: int) -> Encoded:
    """Sentence or sentence-pair classification."""
    labels = label_index(task)
    pair = task.input == "text_pair"
    enc = tokenizer(
        [r["text"] for r in records],
        [r["text_pair"] for r in records] if pair else None,
        truncation=True,
        max_length=max_length,
    )
    feats = []
    for i, rec in enumerate(records):
        f = {"input_ids": enc["input_ids"][i], "example": i}
        if "token_type_ids" in enc:
            f["token_type_ids"] = enc["token_type_ids"][i]
        if rec.get("label") is not None:
            f["label"] = labels[str(rec["label"])]
        feats.append(f)
    return Encoded(feats, [len(f["input_ids"]) for f in feats])


def encode_qa(records: list[dict], tokenizer, max_length: int, stride: int, train: bool) -> Encoded:
    """SQuAD-style windows over the context (question first, context second)."""
    enc = tokenizer(
        [r["question"].lstrip() for r in records],
        [r["context"] for r in records],
        truncation="only_second",
        max_length=max_length,
        stride=stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
    )
    feats = []
    for i, ex_i in enumerate(enc["overflow_to_sample_mapping"]):
        seq_ids = enc.sequence_ids(i)
        offsets = [o if seq_ids[k] == 1 else None for k, o in enumerate(enc["offset_mapping"][i])]
        f = {"input_ids": enc["input_ids"][i], "example": ex_i, "offsets": offsets}
        if "token_type_ids" in enc:
            f["token_type_ids"] = enc["token_type_ids"][i]
        answers = records[ex_i].get("answers")
        if train and answers and answers["text"]:
            s_char = answers["answer_start"][0]
            e_char = s_char + len(answers["text"][0])
            ctx = [k for k, o in enumerate(offsets) if o is not None]
            s_tok = e_tok = 0  # the [CLS] position means "no answer in this window"
            if ctx and offsets[ctx[0]][0] <= s_char and offsets[ctx[-1]][1] >= e_char:
                s_tok = next(k for k in ctx if offsets[k][1] > s_char)
                e_tok = next(k for k in reversed(ctx) if offsets[k][0] < e_char)
            f["start_positions"], f["end_positions"] = s_tok, e_tok
        feats.append(f)
    return Encoded(feats, [len(f["input_ids"]) for f in feats])


# Which subwords make a word's vector in an aligned pair (Cao et al. 2020; a study of the
# adjustment's choices compares them): the first, the last, or the average of all; or
# "subword": the pair's tokens are already the encoder's subwords, aligned as such (the
# alignment stage's subword branch, xlt.align.subword), each its own vector.
WORD_VECTORS = ("start", "end", "avg", "subword")
# Which tokens of a pair are aligned (a study of the adjustment's choices compares them): its
# words and both specials (the main setting), the words only, [CLS] only, or [CLS] and [SEP] only.
ALIGNED_TOKENS = ("all", "words", "cls", "cls_sep")


def _word_side(words: list[str], pieces: dict[str, list[int]], cls: int, sep: int, max_length: int,
               mode: str) -> tuple[dict, int]:
    """One side of an aligned pair: its subword ids and, per subword, the row of the word vector
    it enters (-1: none). Rows: [CLS] 0, word k at k+1, [SEP] after the last word kept. Words
    past `max_length` subwords are cut. Returns (feature, words kept)."""
    ids, rows = [cls], [0]
    kept = 0
    for k, w in enumerate(words):
        sub = pieces[w]
        if len(ids) + len(sub) + 1 > max_length:
            break
        take = {"start": [0], "end": [len(sub) - 1], "avg": range(len(sub)), "subword": [0]}[mode]
        r = [-1] * len(sub)
        for t in take:
            r[t] = k + 1
        ids += sub
        rows += r
        kept = k + 1
    ids.append(sep)
    rows.append(kept + 1)
    return {"input_ids": ids, "word_rows": rows}, kept


def _word_pieces(tokenizer, words: list[str]) -> dict[str, list[int]]:
    ids = tokenizer(words, add_special_tokens=False)["input_ids"] if words else []
    return {w: x or [tokenizer.unk_token_id] for w, x in zip(words, ids)}


def _subword_ids(tokenizer, subwords: list[str]) -> dict[str, list[int]]:
    """Each token's id; a token outside the vocabulary means the pairs were tokenised by another
    encoder's tokenizer (it would silently become the unknown token)."""
    ids = tokenizer.convert_tokens_to_ids(subwords) if subwords else []
    for t, i in zip(subwords, ids):
        if i is None or (i == tokenizer.unk_token_id and t != tokenizer.unk_token):
            raise XltError(f"subword {t!r} is not in the vocabulary of tokenizer {tokenizer.name_or_path!r}: "
                           "were these pairs tokenised by another encoder's?")
    return {t: [i] for t, i in zip(subwords, ids)}


def encode_aligned_pairs(records: list[dict], tokenizer, max_length: int, mode: str = "avg",
                         tokens: str = "all") -> Encoded:
    """Aligned sentence pairs {"src": words, "tgt": words, "links": [[i, j], …]} as paired
    features (xlt.engine.streams.PairedStream): each side's subword ids and word rows ([CLS],
    every word, [SEP]: what the anchor term keeps in place), and the pair's `links` as [source
    row, target row] (word i is row i+1): the word links, [CLS]–[CLS] and [SEP]–[SEP], as
    `tokens` says (ALIGNED_TOKENS). Each word is tokenised on its own (an empty one as the
    unknown token), as the authors' code does; links to words cut by `max_length` are dropped.
    Mode "subword" reads pairs whose tokens are subwords (records with ``"unit": "subword"``):
    each token is its vocabulary id, its own row, and a link joins exactly two subwords."""
    if mode not in WORD_VECTORS:
        raise XltError(f"word vectors mode={mode!r}; allowed: {', '.join(WORD_VECTORS)}")
    if tokens not in ALIGNED_TOKENS:
        raise XltError(f"aligned tokens={tokens!r}; allowed: {', '.join(ALIGNED_TOKENS)}")
    cls, sep = _specials(tokenizer)
    unit = "subword" if mode == "subword" else "word"
    vocab = sorted({w for r in records for side in ("src", "tgt") for w in r[side]})
    pieces = _subword_ids(tokenizer, vocab) if unit == "subword" else _word_pieces(tokenizer, vocab)
    feats = []
    for n, r in enumerate(records):
        if r.get("unit", "word") != unit:
            raise XltError(f"aligned pair {n + 1}: its tokens are {r.get('unit', 'word')}s, but word vectors mode "
                           f"{mode!r} reads {unit}s (a subword sample goes with an init ending in -subword)")
        try:
            src, n_src = _word_side(r["src"], pieces, cls, sep, max_length, mode)
            tgt, n_tgt = _word_side(r["tgt"], pieces, cls, sep, max_length, mode)
            words = [[int(i) + 1, int(j) + 1] for i, j in r["links"] if int(i) < n_src and int(j) < n_tgt]
        except (KeyError, TypeError, ValueError) as e:
            raise XltError(f"aligned pair {n + 1}: expected {{'src': [words], 'tgt': [words], 'links': [[i, j], ...]}} "
                           f"({e.__class__.__name__}: {e})") from None
        links = words if tokens in ("all", "words") else []
        if tokens != "words":
            links = [[0, 0], *links]
        if tokens in ("all", "cls_sep"):
            links.append([n_src + 1, n_tgt + 1])
        feats.append({"source": src, "target": tgt, "links": links})
    return Encoded(feats, [max(len(f["source"]["input_ids"]), len(f["target"]["input_ids"])) for f in feats])
