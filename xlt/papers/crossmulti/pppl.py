"""Pseudo-perplexity (Salazar et al. 2020, as awslabs/mlm-scoring computes it): every token of a
sentence but the ones the tokenizer added ([CLS]/[SEP]; its special-tokens mask) is masked once
— an [UNK] the text itself holds is a token of the text and is scored like any other; the sentence's pseudo-log-likelihood is the sum of the
log-probabilities of its tokens at their masked copies; a corpus's PPPL is
exp(−ΣPLL / Σtokens).

All masked copies of all sentences are pooled, sorted by length and batched (each batch pads to
its own longest copy), and the MLM head runs on the masked positions only: one forward pass
scores many tokens of many sentences. A fine-tuned classifier has no MLM head: the encoder of
a fine-tuned model is scored with the *pretrained* encoder's MLM head (its transform and bias;
BERT's decoder is tied to the input embeddings, which are the fine-tuned model's).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch

from xlt.engine.kinds import IGNORE
from xlt.errors import XltError
import time
import pandas as pd
from xlt.engine.evalset import load_records
from xlt.stages.finetune import split_file
from xlt.io import write_json
from xlt.papers.crossmulti.plan import model_setting
from xlt.provenance import provenance
from xlt.registry import get_task


def masked_copies(added: list[list[int]]) -> list[tuple[int, int]]:
    """(sentence index, position) of every token to mask: all but those the tokenizer added
    (`added`: its special-tokens mask per sentence, 1 where it put [CLS], [SEP], padding).
    Which ids the tokens are does not matter: an [UNK] of the text is scored."""
    return [(s, p) for s, mask in enumerate(added) for p, a in enumerate(mask) if not a]


def pseudo_log_likelihoods(mlm, sequences: list[list[int]], added: list[list[int]], mask_id: int, pad_id: int,
                           batch_size: int = 256, device: str | torch.device = "cpu") -> tuple[np.ndarray, np.ndarray]:
    """Per sentence: PLL (Σ log p of each token at its masked copy, natural log) and the number
    of tokens scored; `added`: the tokenizer's special-tokens mask of each sentence (see
    `masked_copies`). `mlm` is a `recipes.mlm.MLMModel` (the head runs on masked positions only)."""
    copies = masked_copies(added)
    order = sorted(range(len(copies)), key=lambda i: (len(sequences[copies[i][0]]), i))  # batch by length
    pll = np.zeros(len(sequences), dtype=np.float64)
    counts = np.zeros(len(sequences), dtype=np.int64)
    mlm.eval()
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            chunk = [copies[i] for i in order[start:start + batch_size]]
            width = max(len(sequences[s]) for s, _ in chunk)
            ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
            labels = torch.full((len(chunk), width), IGNORE, dtype=torch.long)
            attn = torch.zeros((len(chunk), width), dtype=torch.long)
            for row, (s, p) in enumerate(chunk):
                seq = sequences[s]
                ids[row, : len(seq)] = torch.tensor(seq)
                attn[row, : len(seq)] = 1
                labels[row, p] = seq[p]
                ids[row, p] = mask_id
            batch = {"input_ids": ids.to(device), "attention_mask": attn.to(device), "mlm_labels": labels.to(device)}
            out = mlm(batch)  # rows: the masked positions in row order, one per copy
            logp = torch.log_softmax(out["logits"].double(), -1).gather(1, out["mlm_targets"][:, None])[:, 0].cpu()
            for (s, _), lp in zip(chunk, logp.tolist()):
                pll[s] += lp
                counts[s] += 1
    return pll, counts


def pll_one_copy_per_forward(hf, sequences: list[list[int]], added: list[list[int]], mask_id: int) -> list[float]:
    """The reference: one masked copy per forward pass of the Hugging Face MLM model (full
    vocabulary logits), every position but those the tokenizer added. The benchmark's baseline."""
    out = []
    with torch.no_grad():
        for seq, mask in zip(sequences, added):
            total = 0.0
            for p, tok in enumerate(seq):
                if mask[p]:
                    continue
                ids = torch.tensor([seq])
                ids[0, p] = mask_id
                logits = hf(input_ids=ids, attention_mask=torch.ones_like(ids)).logits[0, p].double()
                total += torch.log_softmax(logits, -1)[tok].item()
            out.append(total)
    return out


def corpus_pppl(pll: np.ndarray, counts: np.ndarray) -> float:
    """exp(−ΣPLL / Σtokens)."""
    n = int(np.sum(counts))
    return math.exp(-float(np.sum(pll)) / n) if n else float("nan")


def load_scorer(pretrained: str, finetuned_encoder: str | None = None, revision: str | None = None):
    """The pretrained MLM model (its tokenizer too); with `finetuned_encoder` (a saved model's
    `encoder/`), its base model's weights replaced by the fine-tuned encoder's, every one."""
    # deferred: loads transformers only when this runs
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    # deferred: loads safetensors only when this runs
    from xlt.engine.model import require_local
    from xlt.engine.recipes.mlm import MLMModel

    kw = {"revision": revision} if revision else {}
    require_local(pretrained)
    try:
        tokenizer = AutoTokenizer.from_pretrained(pretrained, **kw)
        hf = AutoModelForMaskedLM.from_pretrained(pretrained, use_safetensors=True, **kw)
    except (OSError, ValueError) as e:
        raise XltError(f"PPPL: cannot load the MLM model {pretrained!r}: {e.__class__.__name__}: {str(e).splitlines()[0]}") from None
    if finetuned_encoder is not None:
        put_encoder(hf, finetuned_encoder, pretrained)
    return MLMModel(hf), tokenizer


def put_encoder(hf, finetuned_encoder: str, pretrained: str) -> None:
    """Replace every weight of the MLM model's base encoder by the fine-tuned encoder's (its
    prediction head stays the pretrained one)."""
    # deferred: loads safetensors only when this runs
    from xlt.engine.model import load_encoder_weights

    enc = load_encoder_weights(finetuned_encoder)
    missing, unexpected = hf.base_model.load_state_dict(enc.state_dict(), strict=False)
    if missing or unexpected:
        raise XltError(f"PPPL: {finetuned_encoder} does not fit the encoder of {pretrained} "
                       f"(missing: {missing[:5]}, unexpected: {unexpected[:5]})")


def tokenize_texts(tokenizer, texts: list[str], max_length: int) -> tuple[list[list[int]], list[list[int]]]:
    """The ids of each text cut at `max_length` subwords, and the tokenizer's special-tokens
    mask of each (1 where it added a token); texts with no token of their own dropped."""
    enc = tokenizer(list(texts), truncation=True, max_length=max_length, return_special_tokens_mask=True)
    kept = [i for i, mask in enumerate(enc["special_tokens_mask"]) if not all(mask)]
    return [enc["input_ids"][i] for i in kept], [enc["special_tokens_mask"][i] for i in kept]


def score_texts(mlm, tokenizer, texts: list[str], max_length: int, batch_size: int = 256,
                device: str | torch.device = "cpu", seqs: tuple[list[list[int]], list[list[int]]] | None = None) -> dict:
    """PLL sum, tokens and corpus PPPL of `texts` (each cut at `max_length` subwords; `seqs`:
    what `tokenize_texts` made of them, already tokenised)."""
    ids, added = tokenize_texts(tokenizer, texts, max_length) if seqs is None else seqs
    pll, counts = pseudo_log_likelihoods(mlm, ids, added, tokenizer.mask_token_id, tokenizer.pad_token_id,
                                         batch_size, device)
    return {"pll": float(pll.sum()), "tokens": int(counts.sum()), "sentences": len(ids), "pppl": corpus_pppl(pll, counts)}


def run_pppl_job(task: str, data_dir: str, langs: list[str], pretrained: str, revision: str | None,
                 models: list[str], max_length: int, batch_size: int, out: str, provenance_out: str,
                 max_sentences: int | None = None) -> None:
    """One row per (model, language): the vanilla encoder (setting `vanilla`) and every
    fine-tuned model (its setting: `cross` for the source language alone, else `multi`)."""


    # deferred: loads safetensors only when this runs
    from xlt.engine.recipes.mlm import task_texts

    t = get_task(task)
    files = {lang: split_file(data_dir, lang, "test") for lang in langs}
    texts = {lang: task_texts(t, load_records([f], max_sentences)) for lang, f in files.items()}  # the first N
    rows, started = [], time.perf_counter()
    # One pretrained MLM model and one tokenisation for the job: the vanilla encoder is scored
    # first, then each fine-tuned encoder's weights replace the base model's (every one).
    mlm, tokenizer = load_scorer(pretrained, None, revision)
    seqs = {lang: tokenize_texts(tokenizer, texts[lang], max_length) for lang in langs}
    for model in [None, *models]:
        which = {"task": task, "setting": "vanilla", "seed": None} if model is None else model_setting(model)
        if model is not None:
            put_encoder(mlm.mlm, str(Path(model) / "encoder"), pretrained)
        for lang in langs:
            r = score_texts(mlm, tokenizer, texts[lang], max_length, batch_size, seqs=seqs[lang])
            rows.append({**which, "lang": lang, "model": model or pretrained, **r})
    seconds = time.perf_counter() - started
    pd.DataFrame(rows).to_csv(out, index=False)
    tokens = sum(r["tokens"] for r in rows)
    write_json(provenance_out, {"seconds": seconds, "tokens": tokens, "tokens_per_second": tokens / seconds,
                                "provenance": provenance({"task": task, "langs": langs, "pretrained": pretrained,
                                                          "models": models, "max_length": max_length,
                                                          "max_sentences": max_sentences}, 0,
                                                         list(files.values()))})
