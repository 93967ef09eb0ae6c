"""Training batches (length-grouped, random, one language per batch) and dynamic padding.

Batches are drawn from a per-epoch generator seeded by (seed, epoch), so the order of
epoch e is a pure function of the seed: a resumed run regenerates it and skips the
batches it already did, which is what makes resumed runs bit-identical.
"""

from __future__ import annotations

import torch

from xlt.errors import XltError


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


def random_batches(n: int, batch_size: int, seed: int, epoch: int) -> list[list[int]]:
    """A uniform shuffle cut into batches (the last one shorter): the order PyTorch's
    RandomSampler gives the references that do not group by length."""
    g = torch.Generator().manual_seed(seed * 100_003 + epoch)
    order = torch.randperm(n, generator=g).tolist()
    return [order[k : k + batch_size] for k in range(0, n, batch_size)]


def one_language_batches(groups: list[int], batch_size: int, seed: int, epoch: int) -> list[list[int]]:
    """Batches each drawn from one group (a training language): each group shuffled and cut
    into batches, then all batches shuffled together, so languages interleave (bilingual
    training in the underspecification paper's code)."""
    g = torch.Generator().manual_seed(seed * 100_003 + epoch)
    members: dict[int, list[int]] = {}
    for j, group in enumerate(groups):
        members.setdefault(group, []).append(j)
    batches: list[list[int]] = []
    for group in sorted(members):
        own = members[group]
        order = [own[p] for p in torch.randperm(len(own), generator=g).tolist()]
        batches.extend(order[k : k + batch_size] for k in range(0, len(order), batch_size))
    perm = torch.randperm(len(batches), generator=g).tolist()
    return [batches[p] for p in perm]


def epoch_batches(sampler: str, lengths: list[int], batch_size: int, seed: int, epoch: int,
                  groups: list[int] | None = None) -> list[list[int]]:
    """Epoch `epoch`'s training batches by `sampler` (TrainConfig.sampler), a pure function of
    (seed, epoch): a resumed job regenerates the epoch and skips what it already did."""
    if sampler == "length_grouped":
        return length_grouped_batches(lengths, batch_size, seed, epoch)
    if sampler == "random":
        return random_batches(len(lengths), batch_size, seed, epoch)
    if sampler == "one_language_per_batch":
        if groups is None or len(groups) != len(lengths):
            raise XltError("sampler one_language_per_batch needs each training example's language")
        return one_language_batches(groups, batch_size, seed, epoch)
    raise XltError(f"sampler={sampler!r}; allowed: length_grouped, random, one_language_per_batch")


def sequential_batches(lengths: list[int], batch_size: int) -> list[list[int]]:
    """Evaluation batches: sorted by length for speed; callers restore the order."""
    order = sorted(range(len(lengths)), key=lambda j: -lengths[j])
    return [order[k : k + batch_size] for k in range(0, len(order), batch_size)]


def token_budget_batches(lengths: list[int], max_tokens: int, multiple: int = 1) -> list[list[int]]:
    """Evaluation batches by a token budget: sorted by length (longest first), each batch as
    many features as fit in `max_tokens` padded positions (rows x width rounded up to
    `multiple`), at least one: short sentences go many to a batch, long ones few, and the
    device does about the same work per batch."""
    order = sorted(range(len(lengths)), key=lambda j: -lengths[j])
    batches: list[list[int]] = []
    for j in order:
        if batches and (len(batches[-1]) + 1) * padded_width(lengths[batches[-1][0]], multiple) <= max_tokens:
            batches[-1].append(j)
        else:
            batches.append([j])
    return batches


def padded_width(longest: int, multiple: int = 1) -> int:
    """`longest` rounded up to a multiple of `multiple` (1: unchanged)."""
    return -(-longest // multiple) * multiple


def collate(features: list[dict], pad_id: int, pad_values: dict, scalars: tuple = (),
            pad_multiple: int = 1) -> dict[str, torch.Tensor]:
    """Pad the list fields of the features to the longest in the batch (dynamic padding),
    rounded up to a multiple of `pad_multiple` (1 on a CPU; on CUDA the loop asks for
    buckets, so that attention plans and compiled graphs see few shapes: the padding is
    masked, the maths the same up to float rounding).

    `pad_values` (field -> padding value, None for the tokenizer's pad id) and `scalars`
    come from the head kind (xlt.engine.kinds); fields named in neither stay on the Python
    side (offsets, word indices used by decoding).
    """
    out: dict[str, torch.Tensor] = {}
    for key, fill in pad_values.items():
        if key not in features[0]:
            continue
        fill = pad_id if fill is None else fill
        vals = [f[key] for f in features]
        width = padded_width(max(len(v) for v in vals), pad_multiple)
        out[key] = torch.tensor([v + [fill] * (width - len(v)) for v in vals], dtype=torch.long)
    for key in scalars:
        if key in features[0]:
            out[key] = torch.tensor([f[key] for f in features], dtype=torch.long)
    lengths = torch.tensor([len(f["input_ids"]) for f in features])
    out["attention_mask"] = (torch.arange(out["input_ids"].shape[1])[None, :] < lengths[:, None]).long()
    return out
