"""Three ways to tell the encoder where each token is.

- sinusoidal (Vaswani et al., 2017): fixed sines and cosines added to the
  embeddings, PE[p, 2i] = sin(p / 10000^(2i/C)), PE[p, 2i+1] = cos(same).
  A buffer, not a parameter: it is saved with the model but never trained.
- learned: one trainable vector per position (BERT, GPT-2).
- rope (Su et al., 2021): nothing is added to the embeddings; queries and keys
  are rotated by an angle proportional to their position, so q·k depends only on
  the *relative* offset of the two tokens.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class SinusoidalPositionalEncoding(nn.Module):
    def __init__(self, d_model: int, max_len: int) -> None:
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)  # (T, 1)
        inv_freq = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))  # (C/2,)
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * inv_freq)
        pe[:, 1::2] = torch.cos(position * inv_freq[: d_model // 2])
        self.register_buffer("pe", pe, persistent=False)  # (max_len, C)

    def forward(self, x: Tensor) -> Tensor:
        """x (B, T, C) -> x + PE[:T]."""
        return x + self.pe[: x.size(1)]


class LearnedPositionalEncoding(nn.Module):
    def __init__(self, d_model: int, max_len: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(max_len, d_model)
        nn.init.normal_(self.embedding.weight, std=0.02)

    def forward(self, x: Tensor) -> Tensor:
        """x (B, T, C) -> x + P[:T]."""
        return x + self.embedding.weight[: x.size(1)]


class RotaryPositionalEncoding(nn.Module):
    """Rotates consecutive channel pairs (x_2i, x_2i+1) of q or k by angle p·θ_i."""

    def __init__(self, head_dim: int, max_len: int, base: float = 10000.0) -> None:
        super().__init__()
        if head_dim % 2:
            raise ValueError(f"rotary encoding needs an even head dim, got {head_dim}")
        inv_freq = base ** (-torch.arange(0, head_dim, 2) / head_dim)  # (D/2,)
        angles = torch.outer(torch.arange(max_len), inv_freq)  # (max_len, D/2)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        """x (B, H, T, D) -> x rotated pairwise by its position; same shape."""
        T = x.size(-2)
        cos, sin = self.cos[:T], self.sin[:T]  # (T, D/2)
        x1, x2 = x[..., 0::2], x[..., 1::2]  # (B, H, T, D/2) each
        rotated = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)  # (B, H, T, D/2, 2)
        return rotated.flatten(-2)  # (B, H, T, D), pairs interleaved back
