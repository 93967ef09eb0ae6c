"""Length-grouped batches and dynamic padding.

Batches are drawn from a per-epoch generator seeded by (seed, epoch), so the order of
epoch e is a pure function of the seed: a resumed run regenerates it and skips the
batches it already did, which is what makes resumed runs bit-identical.
"""

from __future__ import annotations

import torch

PAD_LABEL = -100


def length_grouped_batches(
    lengths: list[int], batch_size: int, seed: int, epoch: int, mega: int = 50
) -> list[list[int]]:
    """Shuffle, sort within mega-batches by length (less padding), shuffle batch order."""
    g = torch.Generator().manual_seed(seed * 100_003 + epoch)
    order = torch.randperm(len(lengths), generator=g).tolist()
    batches: list[list[int]] = []
    step = batch_size * mega
    for i in range(0, len(order), step):
        chunk = sorted(order[i : i + step], key=lambda j: -lengths[j])
        batches.extend(chunk[k : k + batch_size] for k in range(0, len(chunk), batch_size))
    perm = torch.randperm(len(batches), generator=g).tolist()
    return [batches[p] for p in perm]


def sequential_batches(lengths: list[int], batch_size: int) -> list[list[int]]:
    """Evaluation batches: sorted by length for speed; callers restore the order."""
    order = sorted(range(len(lengths)), key=lambda j: -lengths[j])
    return [order[k : k + batch_size] for k in range(0, len(order), batch_size)]


# Padding value of each list field a feature may carry; each is padded to its own
# longest length in the batch. Fields not listed here stay on the Python side.
PAD_VALUES = {
    "input_ids": None,  # the tokenizer's pad id
    "token_type_ids": 0,
    "labels": PAD_LABEL,  # tagging: one label per subword, -100 off first subwords
    "word_ids": -1,  # tagging: word index of a first subword, else -1
    "word_starts": 0,  # parsing: subword position of each word's first subword
    "word_heads": PAD_LABEL,
    "word_rels": PAD_LABEL,
}
SCALARS = ("label", "start_positions", "end_positions", "n_words")


def collate(features: list[dict], pad_id: int) -> dict[str, torch.Tensor]:
    """Pad the list fields of the features to the longest in the batch (dynamic padding)."""
    out: dict[str, torch.Tensor] = {}
    for key, fill in PAD_VALUES.items():
        if key not in features[0]:
            continue
        fill = pad_id if fill is None else fill
        vals = [f[key] for f in features]
        width = max(len(v) for v in vals)
        out[key] = torch.tensor([v + [fill] * (width - len(v)) for v in vals], dtype=torch.long)
    for key in SCALARS:
        if key in features[0]:
            out[key] = torch.tensor([f[key] for f in features], dtype=torch.long)
    lengths = torch.tensor([len(f["input_ids"]) for f in features])
    out["attention_mask"] = (torch.arange(out["input_ids"].shape[1])[None, :] < lengths[:, None]).long()
    return out
