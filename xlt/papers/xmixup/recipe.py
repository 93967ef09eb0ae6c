"""X-Mixup (Yang et al. 2022, "Enhancing Cross-lingual Transfer by Manifold Mixup") on the
fine-tuning loop: the paired training stream, scheduled sampling and the loss terms, plugged
into the engine's fine-tuning as the xmixup extra's extension (`XMixupFinetune`, registered on
import; xlt.engine.recipes.extensions); importing it registers the extra too (extra.py).

Training records are the task's records in the target language (machine translations,
translate-train) with "source": the English original (xlt.engine.evalset.source_side:
{"text", "text_pair"} with the pair's label; {"tokens", <tags>} with its own gold tags;
{"question", "context", "answers"} with its own answer span), and optionally (classification)
"source_bt": a back-translation of the target into English. A step draws one
batch of the paired stream; the source side (gold, or the back-translation with scheduled
sampling) runs plainly, the target with the source mixed in at the mixup layer
(xlt.papers.xmixup.extra.XMixup, xlt.engine.model.TaskModel.with_source), one forward per step
whichever terms read it. The loss (§4.2): α·CE_src + (1−α)·CE_tgt + MSE(r_S, r_T) +
KL(p_S ‖ p_T), r the mean of the last layer's states over the real tokens, p the predicted
class distribution (KL: classification only). CE_tgt: classification, the pair's label;
span QA, the translation's own answer span; tagging, the soft labels of a source model (§4.2:
"the label probability distribution, predicted by the source language task model"): the
English-trained tagger's tag distribution at each target word, computed once before training
(`soft_labels`), as the authors' translate-train-logits files hold them per target word —
the model runs on the translation itself, so no word alignment is needed. A long sentence or
context cut into windows pairs each target window with its source's first window (the
authors' code keeps one English feature per example).
"""

from __future__ import annotations

import hashlib
import math

import torch
import torch.nn.functional as F

from xlt.engine.batching import collate, sequential_batches
from xlt.engine.evalset import load_records, source_side
from xlt.engine.extras import kind_not_built
from xlt.engine.kinds import Kind
from xlt.engine.model import SOURCE, load_model
from xlt.engine.objectives import Term
from xlt.engine.recipes.extensions import FinetuneExtension, FinetuneRun, register
from xlt.engine.streams import PairedStream
from xlt.errors import XltError
from xlt.papers.xmixup.extra import XMixup
from xlt.registry import Task

SOFT_LABELS = "soft_labels"  # tagging's auxiliary entry {"kind", "model"}: the source model whose tags the target side learns
SOURCE_BT = "source_bt"  # a training record's back-translation of its target side into English
HAS_BT = "has_bt"  # per pair: 1 where the record has its own back-translation
OUTPUTS = "xmixup_outputs"  # a step's batch caches the one paired forward here
NO_SOFT_LABELS = ("xmixup tagging: the target side's labels are a source model's soft labels; none given "
                  "(an auxiliary entry {'kind': 'soft_labels', 'model': <an English-trained tagger>})")
SOFT_ROWS = "soft_rows"  # tagging target feature: per position the row of its soft label (-1: none)


def check_config(extras: list[dict], kind: Kind, soft_labels: bool = False) -> None:
    """Fail before anything loads when X-Mixup is asked of a kind it does not handle, or of
    tagging without the source model whose soft labels the target side learns."""
    if not any(e.get("name") == "xmixup" for e in extras):
        return
    if kind.name not in XMixup.kinds:
        raise XltError(kind_not_built(XMixup, kind.name))
    if kind.name == "tagging" and not soft_labels:
        raise XltError(NO_SOFT_LABELS)


def read_paired_records(task: Task, files, cap: int | None = None) -> tuple[list[dict], int]:
    """The paired training records of `files` and how many carry a back-translation; a record
    without its source side (or, tagging and QA, without the source's own gold) is named by
    file and line."""
    records = []
    gold = None if task.input in ("text", "text_pair") else task.label_field
    for path in files:
        for n, rec in enumerate(load_records([path], cap), 1):
            where = f"{path}: record {n}"
            if SOURCE not in rec:
                raise XltError(f"{where} (id {rec.get('id')!r}) has no 'source' (its English original): "
                               "xmixup trains on paired records {…, 'source': {…}}")
            if gold and SOURCE_BT in rec:
                raise XltError(f"{where} (id {rec.get('id')!r}): 'source_bt' (scheduled sampling) is built for "
                               f"classification only; a back-translated {task.name} source has no gold of its own")
            for key in (SOURCE, SOURCE_BT):
                if key in rec:
                    source_side(task, rec, key, where=where)
            if gold and gold not in rec[SOURCE]:
                raise XltError(f"{where} (id {rec.get('id')!r}): its 'source' has no {gold!r} (the English side's gold)")
            records.append(rec)
    return records, sum(SOURCE_BT in r for r in records)


def _first_per_example(features: list[dict], n: int, what: str) -> list[dict]:
    first: dict[int, dict] = {}
    for f in features:
        first.setdefault(f["example"], f)
    if len(first) != n:
        raise XltError(f"xmixup: {n - len(first)} of {n} {what} records give no features")
    return [first[i] for i in range(n)]


def paired_stream(name: str, task: Task, kind: Kind, records: list[dict], tokenizer, cfg) -> PairedStream:
    """Each target feature (a window) as {"source": its record's English side's first feature,
    "target": its own, "source_bt": the back-translation's (its source where it has none;
    HAS_BT says which), the last only when some record has one}: all encoded by the task's
    kind for training. A tagging target has no gold (its soft labels come later: SOFT_ROWS)."""
    def first(recs: list[dict], what: str) -> list[dict]:
        return _first_per_example(kind.encode(task, recs, tokenizer, cfg, train=True).features, len(recs), what)

    target = kind.encode(task, records, tokenizer, cfg, train=True).features
    source = first([source_side(task, r) for r in records], "source")
    features = [{"source": source[t["example"]], "target": t} for t in target]
    sides: tuple = ("source", "target")
    if any(SOURCE_BT in r for r in records):
        bt = first([source_side(task, r, SOURCE_BT if SOURCE_BT in r else SOURCE) for r in records], "back-translated")
        for f in features:
            i = f["target"]["example"]
            f[SOURCE_BT] = {**bt[i], HAS_BT: int(SOURCE_BT in records[i])}
        sides += (SOURCE_BT,)
    return PairedStream(name, features, cfg.batch_size, cfg.seed, tokenizer.pad_token_id,
                        {**kind.pad_values, SOFT_ROWS: -1}, (*kind.scalars, HAS_BT), sides=sides)


@torch.no_grad()
def soft_labels(teacher, stream: PairedStream, batch_size: int, device) -> torch.Tensor:
    """Tagging's target labels: `teacher` (the source-language task model, trained on English)
    tags each target window of `stream`; each target word's tag distribution (softmax at its
    first subword) becomes a row of the returned table (rows, labels), fp32 on the CPU, and
    the window's SOFT_ROWS field points at it (-1 where no word starts). Eval mode, sequential
    batches: a resumed job recomputes the same table."""
    targets = [f["target"] for f in stream.features]
    teacher.eval()
    rows: list[torch.Tensor] = []
    n = 0
    for idx in sequential_batches([len(f["input_ids"]) for f in targets], batch_size):
        batch = collate([targets[i] for i in idx], stream.pad_id, {"input_ids": None, "token_type_ids": 0})
        probs = teacher({k: v.to(device) for k, v in batch.items()})["logits"].float().softmax(-1).cpu()
        for b, i in enumerate(idx):
            f = targets[i]
            f[SOFT_ROWS] = [-1] * len(f["input_ids"])
            for pos, w in enumerate(f["word_ids"]):
                if w >= 0:
                    f[SOFT_ROWS][pos] = n
                    rows.append(probs[b, pos])
                    n += 1
    return torch.stack(rows) if rows else torch.zeros(0, 1)


def check_teacher(teacher, task: Task, tokenizer, teacher_tokenizer, where: str) -> None:
    """The soft labels' model must tag the same task with the same subwords."""
    if teacher.task.name != task.name or list(teacher.task.labels) != list(task.labels):
        raise XltError(f"{where}: a {teacher.task.name} model; xmixup's soft labels need a {task.name} model "
                       "(the same labels)")
    if teacher_tokenizer.get_vocab() != tokenizer.get_vocab():
        raise XltError(f"{where}: its tokenizer differs from the encoder's; the soft labels are read per subword")


def sampling_probability(step: int, k: float) -> float:
    """Scheduled sampling's p = k / (k + exp(step / k)) (inverse sigmoid decay, Bengio et al.
    2015): the chance that step `step` feeds the gold source. As σ(ln k − step/k), which
    never overflows."""
    return 1.0 / (1.0 + math.exp(min(step / k - math.log(k), 700.0)))


def _coin_seed(seed: int, step: int) -> int:
    return int.from_bytes(hashlib.sha256(f"xmixup:{seed}:{step}".encode()).digest()[:8], "little") >> 1


def scheduled_source(batch: dict, step: int, seed: int, k: float, pad_id: int) -> dict:
    """The source side of step `step`'s batch: per pair the gold source with probability
    `sampling_probability(step, k)`, else its back-translation where it has one. The coins
    come from a generator seeded by (seed, step), so a resumed run draws the same."""
    gold = batch["source"]
    if SOURCE_BT not in batch:
        return gold  # no back-translations in the data: always the gold source
    bt = batch[SOURCE_BT]
    coins = torch.rand(len(bt[HAS_BT]), generator=torch.Generator().manual_seed(_coin_seed(seed, step)))
    use_bt = (coins.to(bt[HAS_BT].device) > sampling_probability(step, k)) & bt[HAS_BT].bool()
    if not bool(use_bt.any()):
        return gold
    width = max(gold["input_ids"].shape[1], bt["input_ids"].shape[1])
    out = {}
    for key, a in gold.items():
        b = bt[key]
        if a.dim() == 2:  # token fields: both padded to one width (the pad id, else 0: masked)
            fill = pad_id if key == "input_ids" else 0
            a, b = (F.pad(x, (0, width - x.shape[1]), value=fill) for x in (a, b))
        out[key] = torch.where(use_bt.view(-1, *[1] * (a.dim() - 1)), b, a)
    return out


def _mean_over_tokens(h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    m = mask.unsqueeze(-1).to(h.dtype)
    return (h * m).sum(1) / m.sum(1).clamp(min=1)


def xmixup_terms(extra: XMixup, stream: str, seed: int, pad_id: int, kind: Kind,
                 soft: torch.Tensor | None = None) -> list[Term]:
    """§4.2's four terms over the paired stream `stream`, weighted by the extra's settings:
    α·CE_src, (1−α)·CE_tgt, MSE of the mean-pooled last layer (`mse`), KL(p_S ‖ p_T) (`kl`,
    classification only). CE_src is the kind's loss on the source side's gold; CE_tgt the
    kind's loss on the target's own gold, or (tagging) the cross-entropy with the soft labels
    `soft` (`soft_labels`) averaged over the target words. A zero-weighted term costs nothing
    (Objective skips it)."""
    if kind.name == "tagging" and soft is None:
        raise XltError(NO_SOFT_LABELS)
    on_device: dict = {}

    def outputs(model, batch: dict, step: int) -> dict:
        if OUTPUTS not in batch:
            source = scheduled_source(batch, step, seed, extra.schedule_k, pad_id)
            batch[OUTPUTS] = {**model({**batch["target"], SOURCE: source}), "source": source}
        return batch[OUTPUTS]

    def src(model, batch, step):
        out = outputs(model, batch, step)
        return kind.loss({"logits": out["source_logits"]}, out["source"])

    def tgt(model, batch, step):
        out = outputs(model, batch, step)
        if soft is None:
            return kind.loss({"logits": out["target_logits"]}, batch["target"])
        rows = batch["target"][SOFT_ROWS]
        keep = rows >= 0
        if not bool(keep.any()):
            return out["target_logits"].sum() * 0.0
        if rows.device not in on_device:  # moved once per device, not every step
            on_device[rows.device] = soft.to(rows.device)
        table = on_device[rows.device]
        log_p = out["target_logits"].float()[keep].log_softmax(-1)
        return -(table[rows[keep]] * log_p).sum(-1).mean()

    def mse(model, batch, step):
        out = outputs(model, batch, step)
        return F.mse_loss(_mean_over_tokens(out["source_features"].float(), out["source"]["attention_mask"]),
                          _mean_over_tokens(out["target_features"].float(), batch["target"]["attention_mask"]))

    def kl(model, batch, step):
        out = outputs(model, batch, step)
        log_s, log_t = (out[f"{side}_logits"].float().log_softmax(-1) for side in ("source", "target"))
        return F.kl_div(log_t, log_s, log_target=True, reduction="batchmean")  # Σ p_S (log p_S − log p_T)

    use_kl = extra.kl and kind.name == "classification"
    return [Term("src", stream, extra.alpha, src), Term("tgt", stream, 1.0 - extra.alpha, tgt),
            Term("mse", stream, 1.0 if extra.mse else 0.0, mse), Term("kl", stream, 1.0 if use_kl else 0.0, kl)]


@register
class XMixupFinetune(FinetuneExtension):
    """Fine-tuning with the xmixup extra: the training records are paired (each with its
    English "source"), and so is the task's stream; its terms are `xmixup_terms`; dev records
    that carry a "source" are predicted from both sides, those without from their own.
    Tagging reads one auxiliary entry {"kind": "soft_labels", "model": <dir>}: the source model
    (a saved English-trained tagger) whose tag distributions on the target side are that
    side's labels (`soft_labels`). The model's metadata gets an "xmixup" block."""

    name = "xmixup"
    extra = "xmixup"
    aux_kinds = (SOFT_LABELS,)
    paired_eval = True
    soft: torch.Tensor | None = None  # tagging: the soft labels' table (`soft_labels`)
    back_translated = 0  # training records with a back-translation

    def check(self, cfg, kind: Kind) -> None:
        teachers = [a["model"] for a in self.entries]
        if len(teachers) > 1 or (teachers and not any(e.get("name") == "xmixup" for e in cfg.extras)):
            raise XltError(f"an auxiliary {SOFT_LABELS!r} entry is X-Mixup's source model: at most one, "
                           f"with the xmixup extra; got {len(teachers)}")
        check_config(cfg.extras, kind, bool(teachers))

    def train_records(self, task: Task, files, cap: int | None) -> list[dict]:
        records, self.back_translated = read_paired_records(task, files, cap)
        return records

    def task_stream(self, run: FinetuneRun, records: list[dict]) -> tuple[PairedStream, list[Term]]:
        task, kind, cfg, tokenizer = run.task, run.kind, run.cfg, run.tokenizer
        stream = paired_stream(task.name, task, kind, records, tokenizer, cfg)
        if kind.name == "tagging" and self.entries:
            where = self.entries[0]["model"]
            with torch.random.fork_rng(devices=[]):  # loading it leaves the training RNG as it was
                teacher, teacher_tok, _ = load_model(where, run.device)
            check_teacher(teacher, task, tokenizer, teacher_tok, where)
            self.soft = soft_labels(teacher, stream, cfg.eval_batch_size, run.device)
            del teacher
        return stream, xmixup_terms(run.model.source_reader, task.name, cfg.seed, tokenizer.pad_token_id, kind, self.soft)

    def meta(self) -> dict:
        soft = self.soft
        return {"xmixup": {
            "back_translated": self.back_translated,
            "scheduled_sampling": ("gold source or back-translation, p = k / (k + exp(step / k))" if self.back_translated
                                   else "gold source always: no back-translations in the training data"),
            **({"soft_labels": {"model": str(self.entries[0]["model"]), "words": int(soft.shape[0])}} if soft is not None else {}),
        }}
