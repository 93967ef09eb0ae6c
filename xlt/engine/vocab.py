"""A WordPiece vocabulary that is a pure function of its corpus.

The vocabulary of a new encoder (the tiny preset's) is learnt with SentencePiece's BPE trainer
and written as an mBERT-style WordPiece vocabulary. Hugging Face `tokenizers`' own
WordPieceTrainer is not used: it breaks ties between equally frequent pairs in its hash maps'
order, which is seeded per process, so two processes learn vocabularies that differ in a few
entries (and so does every model and table after them). SentencePiece's BPE trainer orders its
candidates by (frequency, shorter piece, piece string); on one thread that is a total order.

BPE learns the same kind of vocabulary the WordPiece trainer does (frequent merges, both build
on the characters); only the spelling differs: a word-initial piece "▁ab" is WordPiece's "ab",
a word-internal "ab" is "##ab". Greedy longest-match WordPiece tokenisation then segments with
it, as BERT does.
"""

from __future__ import annotations

import io
import tempfile
from collections import Counter
from pathlib import Path

from xlt.errors import XltError

CONTINUATION = "##"  # WordPiece's mark of a word-internal piece
WORD_START = "\u2581"  # SentencePiece's mark of a word-initial piece ("▁")


def word_counts(texts, pre_split) -> Counter:
    """How often each word occurs, a word being what `pre_split` (the tokenizer's own
    normalizer and pre-tokenizer) makes of a text, so that pieces never cross its boundaries."""
    counts: Counter = Counter()
    for text in texts:
        counts.update(pre_split(text))
    return counts


def alphabet(counts: Counter) -> list[str]:
    """Every character as a word-initial piece ("a") where some word starts with it and as a
    word-internal piece ("##a") where some word has it inside: no word of the corpus is [UNK]."""
    initial = {w[0] for w in counts}
    inner = {c for w in counts for c in w[1:]}
    return sorted(initial) + sorted(CONTINUATION + c for c in inner)


def bpe_merges(counts: Counter, n_pieces: int, seed: int = 0) -> list[str]:
    """The multi-character pieces SentencePiece's BPE learns from `counts`, most frequent merge
    first, spelt the WordPiece way. One thread and a fixed seed: the same counts give the same
    list in every process."""
    # deferred: loads sentencepiece only when this runs
    import sentencepiece as spm

    spm.set_random_generator_seed(seed)
    model = io.BytesIO()
    with tempfile.TemporaryDirectory(prefix="xlt-vocab-") as tmp:
        tsv = Path(tmp) / "words.tsv"
        # Sorted so that the file itself does not depend on the order words were first seen.
        tsv.write_text("".join(f"{w}\t{n}\n" for w, n in sorted(counts.items())), encoding="utf-8")
        spm.SentencePieceTrainer.train(
            input=str(tsv), input_format="tsv", model_writer=model, model_type="bpe",
            vocab_size=n_pieces, hard_vocab_limit=False,  # a small corpus may hold fewer merges
            character_coverage=1.0, normalization_rule_name="identity", add_dummy_prefix=True,
            split_by_whitespace=True, split_by_unicode_script=False, split_by_number=False,
            split_digits=False, max_sentencepiece_length=16, byte_fallback=False,
            unk_id=0, bos_id=-1, eos_id=-1, pad_id=-1, input_sentence_size=0,
            shuffle_input_sentence=False, num_threads=1, minloglevel=2,
        )
    proc = spm.SentencePieceProcessor(model_proto=model.getvalue())
    pieces = [proc.id_to_piece(i) for i in range(proc.get_piece_size())
              if not (proc.is_unknown(i) or proc.is_control(i))]
    # A BPE model's scores are minus the merge rank: keep that order, drop the characters.
    ranked = sorted(range(len(pieces)), key=lambda i: -proc.get_score(proc.piece_to_id(pieces[i])))
    merges = []
    for i in ranked:
        piece = pieces[i]
        word = piece[len(WORD_START):] if piece.startswith(WORD_START) else CONTINUATION + piece
        if len(word.removeprefix(CONTINUATION)) >= 2:
            merges.append(word)
    return merges


def wordpiece_vocab(counts: Counter, vocab_size: int, specials: list[str]) -> list[str]:
    """`specials`, the alphabet, then the most frequent merges: `vocab_size` entries (fewer
    only when the corpus holds no more merges)."""
    base = specials + alphabet(counts)
    if len(base) > vocab_size:
        raise XltError(f"vocab_size {vocab_size} is smaller than the corpus's {len(base) - len(specials)}-piece "
                       f"alphabet plus {len(specials)} special tokens: raise encoders.*.build.vocab_size")
    # Ask for enough merges to fill the vocabulary even where a merge is a word-initial
    # character ("▁a" -> "a", already in the alphabet) or repeats one.
    merges = bpe_merges(counts, vocab_size + len(base))
    vocab, seen = list(base), set(base)
    for piece in merges:
        if len(vocab) == vocab_size:
            break
        if piece not in seen:
            vocab.append(piece)
            seen.add(piece)
    return vocab
