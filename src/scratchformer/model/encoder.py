"""One Transformer encoder block: self-attention then a feed-forward net, each
wrapped in a residual connection with LayerNorm.

Pre-LN (default; GPT-2, nanoGPT) normalises the input of each sub-layer and
leaves the residual stream untouched, so gradients reach early layers through a
clean identity path and training is stable without warm-up. Post-LN (the 2017
paper) normalises after each residual sum; it is kept for comparison.
"""

from __future__ import annotations

from torch import Tensor, nn

from scratchformer.model.attention import MultiHeadSelfAttention
from scratchformer.model.dropout import dropout as make_dropout
from scratchformer.model.positional import RotaryPositionalEncoding


class FeedForward(nn.Module):
    """Position-wise MLP: Linear(C, F) -> GELU -> Linear(F, C)."""

    def __init__(self, d_model: int, ff_dim: int) -> None:
        super().__init__()
        self.up = nn.Linear(d_model, ff_dim)
        self.act = nn.GELU()
        self.down = nn.Linear(ff_dim, d_model)

    def forward(self, x: Tensor) -> Tensor:
        return self.down(self.act(self.up(x)))  # (B, T, C) -> (B, T, F) -> (B, T, C)


class EncoderBlock(nn.Module):
    """Self-attention then feed-forward, each a residual branch; LayerNorm before or after the sum.

    Pre-LN:  x = x + Drop(Attn(LN1(x)));  x = x + Drop(FFN(LN2(x)))
    Post-LN: x = LN1(x + Drop(Attn(x)));  x = LN2(x + Drop(FFN(x)))
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        ff_dim: int,
        dropout: float = 0.0,
        norm: str = "pre",
        rope: RotaryPositionalEncoding | None = None,
        draw: str = "bernoulli",
        attention_dropout: float | None = None,
    ) -> None:
        """``dropout`` on each branch's output, ``attention_dropout`` (None: ``dropout``) on the attention weights."""
        super().__init__()
        if norm not in ("pre", "post"):
            raise ValueError(f"norm must be 'pre' or 'post', got {norm!r}")
        self.norm = norm
        self.ln1 = nn.LayerNorm(d_model)
        attention_rate = dropout if attention_dropout is None else attention_dropout
        self.attn = MultiHeadSelfAttention(d_model, n_heads, attention_rate, rope, draw)
        self.ln2 = nn.LayerNorm(d_model)
        self.ffn = FeedForward(d_model, ff_dim)
        self.dropout = make_dropout(dropout, draw)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """x (B, T, C) -> (x (B, T, C), attention weights (B, H, T, T))."""
        if self.norm == "pre":
            a, weights = self.attn(self.ln1(x), mask)
            x = x + self.dropout(a)  # x + Drop(Attn(LN1(x)))
            x = x + self.dropout(self.ffn(self.ln2(x)))  # x + Drop(FFN(LN2(x)))
        else:
            a, weights = self.attn(x, mask)
            x = self.ln1(x + self.dropout(a))  # LN1(x + Drop(Attn(x)))
            x = self.ln2(x + self.dropout(self.ffn(x)))  # LN2(x + Drop(FFN(x)))
        return x, weights
