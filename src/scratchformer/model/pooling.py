"""Turn T token vectors into one sentence vector, ignoring padding.

Every pooling returns ``(pooled (B, C), weights (B, T))``: the weight each token
has in the sentence vector. PAD tokens always get weight 0, so appending padding
cannot change the result, and the weights say which tokens the classifier saw.
``pad`` is the (B, T) boolean padding mask, True = PAD (blocked).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class MeanPooling(nn.Module):
    """h = Σ_t m_t H_t / max(1, Σ_t m_t), m_t = 1 for real tokens."""

    def forward(self, h: Tensor, pad: Tensor) -> tuple[Tensor, Tensor]:
        keep = (~pad).to(h.dtype)  # (B, T)
        weights = keep / keep.sum(dim=1, keepdim=True).clamp(min=1.0)  # (B, T)
        return (weights.unsqueeze(-1) * h).sum(dim=1), weights  # (B, C), (B, T)


class ClsPooling(nn.Module):
    """h = H_0: the first token ([CLS]) stands for the sentence, as in BERT."""

    def forward(self, h: Tensor, pad: Tensor) -> tuple[Tensor, Tensor]:
        weights = torch.zeros(h.shape[:2], dtype=h.dtype, device=h.device)  # (B, T)
        weights[:, 0] = 1.0
        return h[:, 0], weights  # (B, C), (B, T)


def softmax_over_tokens(scores: Tensor, pad: Tensor, dtype: torch.dtype) -> Tensor:
    """Softmax of ``scores`` (B, T, …) over the tokens (dim 1), in fp32, PAD blocked and given weight 0 exactly.

    ``pad`` (B, T, …) broadcasts against ``scores``; the weights come back in ``dtype``, the
    token vectors' (under autocast the scores' may be lower).
    """
    scores = scores.masked_fill(pad, torch.finfo(scores.dtype).min)
    return torch.softmax(scores.float(), dim=1).to(dtype).masked_fill(pad, 0.0)


class AttentionPooling(nn.Module):
    """h = Σ_t softmax_t(q·H_t / √C) H_t over the real tokens, q a learned query."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.query = nn.Parameter(torch.randn(d_model) * 0.02)

    def forward(self, h: Tensor, pad: Tensor) -> tuple[Tensor, Tensor]:
        scores = h @ self.query / math.sqrt(h.size(-1))  # (B, T)
        weights = softmax_over_tokens(scores, pad, h.dtype)  # (B, T)
        return (weights.unsqueeze(-1) * h).sum(dim=1), weights  # (B, C), (B, T)


class MultiHeadAttentionPooling(nn.Module):
    """Attention pooling with k heads: head j pools its own C/k channels of H with its own query.

    h_j = Σ_t softmax_t(q_j·H_t,j / √(C/k)) H_t,j, and h = [h_1; …; h_k] (C channels again).
    Each head is a distribution over the tokens of its own, so one can weigh the praise of a
    mixed review and another its complaint; one query must choose. The k queries are the k
    slices of one vector of C, initialised as :class:`AttentionPooling`'s; its weights are the
    heads' mean (still a distribution over the real tokens).
    """

    def __init__(self, d_model: int, heads: int) -> None:
        super().__init__()
        if d_model % heads:
            raise ValueError(f"{heads} pooling heads do not divide d_model={d_model}")
        self.heads = heads
        self.query = nn.Parameter(torch.randn(d_model) * 0.02)

    def forward(self, h: Tensor, pad: Tensor) -> tuple[Tensor, Tensor]:
        B, _, C = h.shape
        parts = h.unflatten(-1, (self.heads, C // self.heads))  # (B, T, k, C/k): each head's channels
        scores = (parts * self.query.view(self.heads, -1)).sum(-1) / math.sqrt(C // self.heads)  # (B, T, k)
        weights = softmax_over_tokens(scores, pad.unsqueeze(-1), h.dtype)  # (B, T, k)
        pooled = (weights.unsqueeze(-1) * parts).sum(dim=1)  # (B, k, C/k)
        return pooled.reshape(B, C), weights.mean(dim=-1)  # (B, C), (B, T)


def make_pooling(name: str, d_model: int, heads: int = 1) -> nn.Module:
    if name == "mean":
        return MeanPooling()
    if name == "cls":
        return ClsPooling()
    if name == "attention":
        return AttentionPooling(d_model) if heads == 1 else MultiHeadAttentionPooling(d_model, heads)
    raise ValueError(f"unknown pooling {name!r}: use mean, cls or attention")
