"""Biaffine dependency parser head (Dozat & Manning, 2017) as a plain `nn.Module`.

Conventions
-----------
- Input: one vector per *word* (`words[B, W, H]`, the encoder's first subword of each word;
  `gather_words` builds it), `word_mask[B, W]` True for real words. Padding may sit anywhere
  but is normally a suffix.
- ROOT: head index 0 is ROOT, word k (1-based) is index k, so heads are in 0..W. ROOT's
  representation is, by `root=`:
    "cls"     (default) the caller's sentence vector (the encoder's CLS/<s> output), passed as
              `forward(..., root=[B, H])`. This is what the paper's authors do: their parser
              scores the subword sequence with the special first token in the ROOT slot
              (crosslingual-nlp, src/model/dependency_parser.py).
    "learned" a trained vector of size H, the same for every sentence.
- Scores: `arc_scores[b, i, j]` is the score of word i+1 taking head j (j = 0 ROOT), shape
  [B, W, W+1]: dep_i·U·head_j + u·head_j (the dependent-only term would cancel in the
  softmax over heads). Padding heads and self-loops are −inf, so padding is never scored as a
  head and never predicted. Rows of padding dependents are meaningless; the loss and the
  decoder never read them.
  Labels: s(i, j, r) = dep_i·U_r·head_j + W_dep·dep_i + W_head·head_j + b_r (the full
  biaffine classifier); `rel_scores[b, i, r]` is taken at the gold head (at the argmax head
  when no gold heads are given).
- MLPs are Linear → ELU → dropout with one mask per sentence shared over positions
  ("variational", as in Dozat & Manning and in the authors' code). Sizes default to the
  authors' settings: arc 512, rel 128, dropout 0.33. Biaffine weights start at zero.
- Loss: mean over real words of CE(head) + mean over real words of CE(relation at the gold
  head).
- Decoding (`decode`): "mst" (default) — maximum spanning arborescence (Chu-Liu-Edmonds) on
  log P(head) + max_r log P(rel | head) and the relation is that argmax, as the authors'
  evaluation does; ROOT may take several children unless `single_root=True` (their decoder
  does not restrict it). The tree maximises the summed log-probabilities (their AllenNLP
  decoder sums probabilities instead; the two rarely differ). "argmax" — each word's best
  head independently (may produce cycles), then the best relation at that head.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from xlt.errors import XltError

IGNORE = -100  # a word with no gold head (its head was cut off with a long training sentence)

__all__ = ["BiaffineParser", "attachment_scores", "chu_liu_edmonds", "gather_words"]


def gather_words(hidden: torch.Tensor, word_index: torch.Tensor, word_mask: torch.Tensor) -> torch.Tensor:
    """hidden[B, T, H], word_index[B, W] (position of each word's first subword) -> [B, W, H].

    Padding positions (word_mask False) are zero.
    """
    idx = word_index.clamp(min=0).unsqueeze(-1).expand(-1, -1, hidden.size(-1))
    out = hidden.gather(1, idx)
    return out * word_mask.unsqueeze(-1).to(out.dtype)


class _SharedDropout(nn.Module):
    """Dropout with one mask per sequence, shared across positions ([B, 1, D])."""

    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        keep = x.new_empty(x.size(0), 1, x.size(2)).bernoulli_(1.0 - self.p)
        return x * keep / (1.0 - self.p)


class _MLP(nn.Module):
    def __init__(self, d_in: int, d_out: int, dropout: float):
        super().__init__()
        self.linear = nn.Linear(d_in, d_out)
        self.drop = _SharedDropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(F.elu(self.linear(x)))


class BiaffineParser(nn.Module):
    def __init__(
        self,
        hidden_size: int,
        n_rels: int,
        arc_dim: int = 512,
        rel_dim: int = 128,
        dropout: float = 0.33,
        root: str = "cls",
    ):
        super().__init__()
        if root not in ("cls", "learned"):
            raise XltError(f"BiaffineParser: root must be 'cls' or 'learned', got {root!r}")
        if n_rels < 1:
            raise XltError(f"BiaffineParser: n_rels must be >= 1, got {n_rels}")
        self.hidden_size = hidden_size
        self.n_rels = n_rels
        self.root_mode = root
        if root == "learned":
            self.root = nn.Parameter(torch.randn(hidden_size) * 0.02)
        self.arc_dep = _MLP(hidden_size, arc_dim, dropout)
        self.arc_head = _MLP(hidden_size, arc_dim, dropout)
        self.rel_dep = _MLP(hidden_size, rel_dim, dropout)
        self.rel_head = _MLP(hidden_size, rel_dim, dropout)
        self.arc_U = nn.Parameter(torch.zeros(arc_dim, arc_dim))
        self.arc_u = nn.Parameter(torch.zeros(arc_dim))
        self.rel_U = nn.Parameter(torch.zeros(n_rels, rel_dim, rel_dim))
        self.rel_W_dep = nn.Linear(rel_dim, n_rels, bias=True)
        self.rel_W_head = nn.Linear(rel_dim, n_rels, bias=False)
        for lin in (self.rel_W_dep, self.rel_W_head):
            nn.init.zeros_(lin.weight)
        nn.init.zeros_(self.rel_W_dep.bias)

    # ------------------------------------------------------------------ scoring

    def _with_root(self, words: torch.Tensor, root: torch.Tensor | None) -> torch.Tensor:
        B, _, H = words.shape
        if self.root_mode == "cls":
            if root is None:
                raise XltError("BiaffineParser(root='cls'): forward needs root=[B, H] (the CLS vector)")
            if tuple(root.shape) != (B, H):
                raise XltError(f"BiaffineParser: root must have shape {(B, H)}, got {tuple(root.shape)}")
            r = root.unsqueeze(1)
        else:
            if root is not None:
                raise XltError("BiaffineParser(root='learned'): do not pass root=")
            r = self.root.to(words.dtype).expand(B, 1, H)
        return torch.cat([r, words], dim=1)

    def _rel_at(self, rel_dep: torch.Tensor, rel_head: torch.Tensor, heads: torch.Tensor) -> torch.Tensor:
        """Relation scores [B, W, R] of each word at head heads[b, i] (0..W)."""
        idx = heads.clamp(min=0).unsqueeze(-1).expand(-1, -1, rel_head.size(-1))
        h = rel_head.gather(1, idx)  # [B, W, D]
        bil = torch.einsum("bwd,rde,bwe->bwr", rel_dep, self.rel_U, h)
        return bil + self.rel_W_dep(rel_dep) + self.rel_W_head(h)

    def _rel_pairwise(self, rel_dep: torch.Tensor, rel_head: torch.Tensor) -> torch.Tensor:
        """Relation scores [B, W, W+1, R] for every (dependent, head) pair."""
        left = torch.einsum("bid,rde->bire", rel_dep, self.rel_U)
        bil = torch.einsum("bire,bje->bijr", left, rel_head)
        return bil + self.rel_W_dep(rel_dep).unsqueeze(2) + self.rel_W_head(rel_head).unsqueeze(1)

    @staticmethod
    def _check_gold(heads: torch.Tensor, rels: torch.Tensor | None, word_mask: torch.Tensor, n_rels: int,
                    gold: torch.Tensor | None = None) -> None:
        """`gold`: the words that carry gold (default: every real word)."""
        gold = word_mask if gold is None else gold
        B, W = word_mask.shape
        if tuple(heads.shape) != (B, W):
            raise XltError(f"BiaffineParser: heads must have shape {(B, W)}, got {tuple(heads.shape)}")
        pos = torch.arange(1, W + 1, device=heads.device).expand(B, W)
        valid_target = torch.cat([torch.ones_like(word_mask[:, :1]), word_mask], dim=1)
        h = heads.clamp(0, W)
        bad = gold & (
            (heads < 0) | (heads > W) | (heads == pos) | ~valid_target.gather(1, h)
        )
        if rels is not None:
            if tuple(rels.shape) != (B, W):
                raise XltError(f"BiaffineParser: rels must have shape {(B, W)}, got {tuple(rels.shape)}")
            bad = bad | (gold & ((rels < 0) | (rels >= n_rels)))
        if bool(bad.any()):
            b, i = (int(v) for v in bad.nonzero()[0])
            raise XltError(
                f"BiaffineParser: bad gold at sentence {b}, word {i + 1}: head {int(heads[b, i])}"
                + (f", rel {int(rels[b, i])}" if rels is not None else "")
                + f" (heads must be 0..{W}, not the word itself nor padding; rels 0..{n_rels - 1})"
            )

    def forward(
        self,
        words: torch.Tensor,
        word_mask: torch.Tensor,
        heads: torch.Tensor | None = None,
        rels: torch.Tensor | None = None,
        root: torch.Tensor | None = None,
    ) -> dict[str, torch.Tensor | None]:
        """Scores, and the loss when `heads` and `rels` are given.

        Returns a dict: loss, arc_loss, rel_loss (None without gold), arc_scores [B, W, W+1],
        rel_scores [B, W, R] (at gold heads, else at argmax heads), rel_dep, rel_head (the
        label MLP outputs, which `decode` reuses).
        """
        if words.dim() != 3 or word_mask.shape != words.shape[:2]:
            raise XltError(
                f"BiaffineParser: expected words [B, W, H] and word_mask [B, W], got "
                f"{tuple(words.shape)} and {tuple(word_mask.shape)}"
            )
        word_mask = word_mask.bool()
        B, W, _ = words.shape
        x = self._with_root(words, root)  # [B, W+1, H]

        arc_dep = self.arc_dep(x[:, 1:])  # [B, W, A]
        arc_head = self.arc_head(x)  # [B, W+1, A]
        arc = (arc_dep @ self.arc_U) @ arc_head.transpose(1, 2)  # [B, W, W+1]
        arc = arc + (arc_head @ self.arc_u).unsqueeze(1)
        head_ok = torch.cat([torch.ones_like(word_mask[:, :1]), word_mask], dim=1)  # [B, W+1]
        self_loop = torch.zeros(W, W + 1, dtype=torch.bool, device=words.device)
        self_loop[:, 1:] = torch.eye(W, dtype=torch.bool, device=words.device)  # word i+1 -> itself
        arc = arc.masked_fill(~head_ok.unsqueeze(1) | self_loop, float("-inf"))

        rel_dep = self.rel_dep(x[:, 1:])
        rel_head = self.rel_head(x)

        out: dict[str, torch.Tensor | None] = {
            "arc_scores": arc,
            "rel_dep": rel_dep,
            "rel_head": rel_head,
            "loss": None,
            "arc_loss": None,
            "rel_loss": None,
        }
        if heads is None:
            out["rel_scores"] = self._rel_at(rel_dep, rel_head, arc.argmax(-1))
            return out
        # A word whose gold head was cut off with its sentence (-100) carries no gold.
        gold = word_mask & (heads != IGNORE)
        self._check_gold(heads, rels, word_mask, self.n_rels, gold)
        rel_scores = self._rel_at(rel_dep, rel_head, heads)
        out["rel_scores"] = rel_scores
        if not bool(gold.any()):
            raise XltError("BiaffineParser: the batch has no real word with a gold head")
        arc_loss = F.cross_entropy(arc[gold].float(), heads[gold])
        out["arc_loss"] = arc_loss
        if rels is not None:
            rel_loss = F.cross_entropy(rel_scores[gold].float(), rels[gold])
            out["rel_loss"] = rel_loss
            out["loss"] = arc_loss + rel_loss
        else:
            out["loss"] = arc_loss
        return out

    # ------------------------------------------------------------------ decoding

    @torch.no_grad()
    def decode(
        self,
        out: dict[str, torch.Tensor | None],
        word_mask: torch.Tensor,
        method: str = "mst",
        single_root: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Predicted heads and relations, LongTensor [B, W] each, −1 at padding."""
        arc = out["arc_scores"]
        rel_dep, rel_head = out["rel_dep"], out["rel_head"]
        word_mask = word_mask.bool()
        B, W, _ = arc.shape
        if method == "argmax":
            heads = arc.argmax(-1)
            rels = self._rel_at(rel_dep, rel_head, heads).argmax(-1)
        elif method == "mst":
            arc_lp = arc.float().log_softmax(-1)  # [B, W, W+1]
            rel_lp = self._rel_pairwise(rel_dep, rel_head).float().log_softmax(-1)
            best_rel_lp, best_rel = rel_lp.max(-1)  # [B, W, W+1]
            energy = (arc_lp + best_rel_lp).cpu().numpy()
            mask_np = word_mask.cpu().numpy()
            heads_np = np.zeros((B, W), dtype=np.int64)
            for b in range(B):
                idx = np.flatnonzero(mask_np[b])
                if idx.size == 0:
                    continue
                cols = np.concatenate([[0], idx + 1])
                # S[h, d] over nodes 0 (ROOT) and the real words, in order.
                S = np.full((idx.size + 1, idx.size + 1), -np.inf)
                S[:, 1:] = energy[b][np.ix_(idx, cols)].T
                tree = chu_liu_edmonds(S, single_root=single_root)
                heads_np[b, idx] = cols[tree[1:]]
            heads = torch.from_numpy(heads_np).to(arc.device)
            rels = best_rel.gather(2, heads.unsqueeze(-1)).squeeze(-1)
        else:
            raise XltError(f"decode: method must be 'mst' or 'argmax', got {method!r}")
        heads = heads.masked_fill(~word_mask, -1)
        rels = rels.masked_fill(~word_mask, -1)
        return heads, rels


# --------------------------------------------------------------------------- MST


def _find_cycle(heads: np.ndarray) -> list[int] | None:
    n = heads.size
    color = np.zeros(n, dtype=np.int8)  # 0 new, 1 on the current path, 2 done
    color[0] = 2
    for start in range(1, n):
        path = []
        v = start
        while color[v] == 0:
            color[v] = 1
            path.append(v)
            v = int(heads[v])
        if color[v] == 1:
            return path[path.index(v):]
        for u in path:
            color[u] = 2
    return None


def _cle(S: np.ndarray) -> np.ndarray:
    n = S.shape[0]
    heads = S.argmax(axis=0)
    heads[0] = -1
    cycle = _find_cycle(heads)
    if cycle is None:
        return heads
    cyc = np.array(cycle)
    in_cyc = np.zeros(n, dtype=bool)
    in_cyc[cyc] = True
    rest = np.flatnonzero(~in_cyc)  # rest[0] == 0: ROOT has no head, so is never on a cycle
    m = rest.size
    T = np.full((m + 1, m + 1), -np.inf)
    T[:m, :m] = S[np.ix_(rest, rest)]
    enter = S[np.ix_(rest, cyc)] - S[heads[cyc], cyc][None, :]  # gain of entering at each v
    enter_at = enter.argmax(axis=1)
    T[:m, m] = enter[np.arange(m), enter_at]
    leave = S[np.ix_(cyc, rest)]
    leave_from = leave.argmax(axis=0)
    T[m, :m] = leave[leave_from, np.arange(m)]
    T[m, 0] = -np.inf
    sub = _cle(T)
    out = heads.copy()
    for k in range(1, m):
        h = sub[k]
        out[rest[k]] = cyc[leave_from[k]] if h == m else rest[h]
    u = sub[m]
    out[cyc[enter_at[u]]] = rest[u]
    return out


def chu_liu_edmonds(scores: np.ndarray, single_root: bool = False) -> np.ndarray:
    """Maximum spanning arborescence rooted at node 0.

    `scores[h, d]` is the score of the arc h -> d over nodes 0..n (0 = ROOT); −inf forbids an
    arc. Returns heads[0..n] with heads[0] = −1. With `single_root`, ROOT takes exactly one
    child: every ROOT arc is lowered by more than any tree's score range, which leaves the
    best one-child tree on top.
    """
    S = np.array(scores, dtype=np.float64, copy=True)
    if S.ndim != 2 or S.shape[0] != S.shape[1]:
        raise XltError(f"chu_liu_edmonds: expected a square matrix, got shape {S.shape}")
    n = S.shape[0]
    if n == 1:
        return np.array([-1])
    np.fill_diagonal(S, -np.inf)
    S[:, 0] = -np.inf
    if not np.isfinite(S[0, 1:]).any() and not np.isfinite(S[1:, 1:]).any():
        raise XltError("chu_liu_edmonds: no finite arc")
    if single_root and n > 2:
        finite = S[np.isfinite(S)]
        S[0, 1:] -= 1.0 + n * (finite.max() - finite.min())
    return _cle(S)


# --------------------------------------------------------------------------- metric


def attachment_scores(
    pred_heads: torch.Tensor,
    pred_rels: torch.Tensor,
    gold_heads: torch.Tensor,
    gold_rels: torch.Tensor,
    mask: torch.Tensor,
) -> dict[str, float]:
    """UAS / LAS over the words in `mask` (pass the word mask minus PUNCT and SYM words).

    Returns counts too (n, head_correct, labeled_correct) so batches can be summed.
    """
    mask = mask.bool()
    head_ok = (pred_heads == gold_heads) & mask
    lab_ok = head_ok & (pred_rels == gold_rels)
    n = int(mask.sum())
    hc, lc = int(head_ok.sum()), int(lab_ok.sum())
    return {
        "n": n,
        "head_correct": hc,
        "labeled_correct": lc,
        "uas": hc / n if n else float("nan"),
        "las": lc / n if n else float("nan"),
    }
