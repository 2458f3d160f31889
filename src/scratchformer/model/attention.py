"""Scaled dot-product attention and multi-head self-attention, written out by hand.

Shape legend used in every comment below:
    B batch, T tokens, H heads, D head dim (C // H), C model dim,
    Tq / Tk query / key positions (both T in self-attention).

Mask convention (the only one in this package): a **boolean** tensor,
**True = blocked**, broadcastable to (B, H, Tq, Tk). Padding masks are
(B, 1, 1, Tk), a causal mask is (Tq, Tk). Blocked scores are filled with the
most negative finite value of the dtype before the softmax, so a blocked key
gets exactly zero weight and nothing overflows to NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

from scratchformer.model.dropout import dropout as make_dropout
from scratchformer.model.positional import RotaryPositionalEncoding


def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    dropout: Callable[[Tensor], Tensor] | None = None,
) -> tuple[Tensor, Tensor]:
    """softmax(q kᵀ / √D) v, returning ``(output, weights)``.

    Dividing by √D keeps the scores' variance near 1 whatever the head size, so
    the softmax does not saturate at initialisation. ``weights`` are the softmax
    probabilities before ``dropout`` (what the model *computed*, not the random
    subset used in one training step). Blocked keys get exactly zero weight: their
    score is the dtype's most negative value, whose exponential underflows to 0.
    A query whose keys are *all* blocked (only possible for an all-PAD sequence)
    gets equal scores everywhere and so uniform weights: finite, never NaN.

    Under mixed precision (bf16/fp16 autocast) the products run in the low
    precision, but the softmax is taken in fp32: exponentials of bf16 scores
    would keep only 8 bits of each weight, and the rows would not sum to 1.
    ``weights`` are then fp32; they are cast back to v's dtype for the product.
    """
    d = q.size(-1)
    # Scale q (T x D numbers) rather than the scores (T x T): same result, less work.
    scores = (q / math.sqrt(d)) @ k.transpose(-2, -1)  # (B, H, Tq, Tk)
    if mask is not None:
        scores.masked_fill_(mask, torch.finfo(scores.dtype).min)  # in place: scores is ours alone
    weights = torch.softmax(scores.float(), dim=-1)  # (B, H, Tq, Tk), rows sum to 1; fp32 (a no-op in fp32)
    attended = dropout(weights) if dropout is not None else weights
    return attended.to(v.dtype) @ v, weights  # (B, H, Tq, D), (B, H, Tq, Tk)


def causal_mask(t: int, device: torch.device | None = None) -> Tensor:
    """(T, T) mask blocking every key after its query: True above the diagonal."""
    return torch.ones(t, t, dtype=torch.bool, device=device).triu(diagonal=1)


class MultiHeadSelfAttention(nn.Module):
    """H attention heads over one sequence, each of size D = C / H.

    One linear layer makes Q, K and V for all heads at once; the heads are then
    split out of the channel dimension, attend independently, and are merged back
    before the output projection.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        dropout: float = 0.0,
        rope: RotaryPositionalEncoding | None = None,
        draw: str = "bernoulli",
    ) -> None:
        super().__init__()
        if d_model % n_heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.attn_dropout = make_dropout(dropout, draw)  # on the (B, H, T, T) weights: see model/dropout.py
        self.rope = rope

    def forward(self, x: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """x (B, T, C) -> (output (B, T, C), weights (B, H, T, T))."""
        B, T, C = x.shape
        H, D = self.n_heads, C // self.n_heads
        q, k, v = self.qkv(x).split(C, dim=-1)  # 3 x (B, T, C)
        q = q.view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        k = k.view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        v = v.view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        if self.rope is not None:
            q, k = self.rope(q), self.rope(k)  # rotate by position; shapes unchanged
        y, weights = scaled_dot_product_attention(q, k, v, mask, self.attn_dropout)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C): heads side by side
        return self.proj(y), weights
