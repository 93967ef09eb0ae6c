"""Figure 1: how much fine-tuning moved each attention head.

A head h of layer l owns rows h·d … (h+1)·d − 1 of the query, key and value projections
(weights and biases) and the same columns of the attention output projection O (O's bias is
shared by all heads and belongs to none). Its update is the paper's "absolute weight update"
(Sect. 3.3.1), the L1 norm of the change over those slices:

    update(l, h) = Σ |W_ft − W_pre|

Figure 1 normalises each model's map (`figures.head_update_maps`): a head's share of its
model's total update, so a cross and a multi model, trained for different numbers of steps,
are compared by where their updates go, and multi − cross has both signs (fidelity
`head_update_normalisation`).
"""

from __future__ import annotations

import numpy as np
import torch
from pathlib import Path
import pandas as pd
from xlt.io import write_json
from xlt.papers.crossmulti.plan import model_setting
from xlt.provenance import provenance

PROJECTIONS = ("query", "key", "value")


def head_slices(state: dict[str, torch.Tensor], layer: int, head: int, head_dim: int) -> list[torch.Tensor]:
    """The weights of one head: Q/K/V rows (weight and bias) and O columns, BERT/XLM-R names."""
    rows = slice(head * head_dim, (head + 1) * head_dim)
    pre = f"encoder.layer.{layer}.attention"
    out = []
    for proj in PROJECTIONS:
        out.append(state[f"{pre}.self.{proj}.weight"][rows, :])
        out.append(state[f"{pre}.self.{proj}.bias"][rows])
    out.append(state[f"{pre}.output.dense.weight"][:, rows])
    return out


def head_updates(pretrained: dict[str, torch.Tensor], finetuned: dict[str, torch.Tensor], layers: int,
                 heads: int) -> np.ndarray:
    """(layers × heads) absolute (L1) updates of every head."""
    hidden = pretrained["encoder.layer.0.attention.self.query.weight"].shape[0]
    d = hidden // heads
    out = np.zeros((layers, heads))
    for layer in range(layers):
        for h in range(heads):
            pre = head_slices(pretrained, layer, h, d)
            ft = head_slices(finetuned, layer, h, d)
            out[layer, h] = sum(float((b.double() - a.double()).abs().sum()) for a, b in zip(pre, ft))
    return out


def encoder_state(path: str, revision: str | None = None) -> tuple[dict[str, torch.Tensor], int, int]:
    """An encoder's weights (base-model names) and its layers and heads."""
    # deferred: loads safetensors only when this runs
    from xlt.engine.model import load_encoder_weights

    enc = load_encoder_weights(path, revision)
    return enc.state_dict(), enc.config.num_hidden_layers, enc.config.num_attention_heads


def run_head_updates_job(pretrained: str, revision: str | None, models: list[str], out: str, provenance_out: str) -> None:
    """One row per (model, layer, head): task, setting, seed, update."""



    pre, layers, heads = encoder_state(pretrained, revision)
    rows = []
    for model in models:
        ft, _, _ = encoder_state(str(Path(model) / "encoder"))
        upd = head_updates(pre, ft, layers, heads)
        for layer in range(layers):
            for h in range(heads):
                rows.append({**model_setting(model), "layer": layer, "head": h, "update": upd[layer, h], "model": model})
    pd.DataFrame(rows).to_csv(out, index=False)
    write_json(provenance_out, {"layers": layers, "heads": heads,
                                "provenance": provenance({"pretrained": pretrained, "models": models}, None, [])})
