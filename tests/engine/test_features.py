from tests.conftest import encode_with as encode
from xlt.engine.batching import collate, length_grouped_batches
from xlt.engine.features import assign_windows
from xlt.engine.kinds import kind_of
from xlt.io import read_jsonl
from xlt.registry import get_task


def test_short_sequence_is_one_window():
    assert assign_windows([0, 2, 3], 5, window=10, stride=5) == [(0, 5, [0, 1, 2])]


def test_long_sequence_scores_every_word_once_and_inside_its_window():
    first = list(range(0, 100, 2))  # 50 words of 2 subwords each
    windows = assign_windows(first, 100, window=30, stride=15)
    owned = [w for _, _, ws in windows for w in ws]
    assert sorted(owned) == list(range(50))
    for start, end, ws in windows:
        assert end - start == 30
        for w in ws:
            assert start <= first[w] < end
    # A word in an overlap goes to the window where it is farther from the edge.
    middle = {w for s, e, ws in windows for w in ws if s == 15}
    assert 15 in middle  # first subword at position 30: 15 from the start of window [15, 45)


def test_tagging_labels_only_first_subwords(tiny_encoder, toy_data):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_encoder)
    task = get_task("pos")
    recs = read_jsonl(toy_data / "pos" / "en" / "train.jsonl")[:5]
    enc = encode(task, recs, tok, max_length=64, stride=32, train=True)
    for f, r in zip(enc.features, recs):
        labelled = [i for i, lab in enumerate(f["labels"]) if lab != -100]
        assert len(labelled) == len(r["tokens"])
        assert [f["word_ids"][i] for i in labelled] == list(range(len(r["tokens"])))


def test_tagging_windows_when_sentence_exceeds_max_length(tiny_encoder, toy_data):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_encoder)
    rec = {"id": "long", "tokens": ["ka", "Berlin"] * 20, "upos": ["NOUN", "PROPN"] * 20}
    enc = encode(get_task("pos"), [rec], tok, max_length=12, stride=5, train=True)
    assert len(enc.features) > 1
    assert all(len(f["input_ids"]) <= 12 for f in enc.features)
    scored = sorted(w for f in enc.features for w in f["word_ids"] if w >= 0)
    assert scored == list(range(40))


def test_qa_answer_positions_point_at_the_answer(tiny_encoder, toy_data):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_encoder)
    recs = read_jsonl(toy_data / "qa" / "en" / "train.jsonl")[:8]
    enc = encode(get_task("qa"), recs, tok, max_length=64, stride=16, train=True)
    for f in enc.features:
        r = recs[f["example"]]
        if f["start_positions"] == 0:
            continue
        s, e = f["offsets"][f["start_positions"]], f["offsets"][f["end_positions"]]
        assert r["context"][s[0] : e[1]] == "Berlin"


def test_batches_are_a_function_of_seed_and_epoch():
    lengths = [5, 9, 3, 7, 2, 8, 6, 4, 1, 10]
    a = length_grouped_batches(lengths, 3, seed=1, epoch=0)
    assert a == length_grouped_batches(lengths, 3, seed=1, epoch=0)
    assert a != length_grouped_batches(lengths, 3, seed=1, epoch=1)
    assert sorted(i for b in a for i in b) == list(range(10))


def test_collate_pads_each_field():
    feats = [{"input_ids": [1, 2, 3], "labels": [-100, 4, -100], "label": 1}, {"input_ids": [1, 2], "labels": [-100, 5], "label": 0}]
    b = collate(feats, 0, kind_of("tagging").pad_values, scalars=("label",))
    assert b["input_ids"].tolist() == [[1, 2, 3], [1, 2, 0]]
    assert b["labels"].tolist() == [[-100, 4, -100], [-100, 5, -100]]
    assert b["attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]
    assert b["label"].tolist() == [1, 0]
