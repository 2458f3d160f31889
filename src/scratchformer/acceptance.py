"""Acceptance checks: numbers that prove the hand-written math is right.

Each returns a float (0 is perfect) that the evaluate stage compares with the
thresholds in ``params.yaml`` (``acceptance``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from scratchformer.attention import causal_mask, scaled_dot_product_attention
from scratchformer.model import Classifier

# (B, H, T, D) shapes the parity check sweeps: tiny, odd-sized, and the model's own.
PARITY_SHAPES = ((1, 1, 1, 8), (2, 4, 16, 16), (3, 2, 7, 5), (4, 4, 64, 16))


def _random_padding_mask(B: int, T: int, generator: torch.Generator) -> Tensor:
    """(B, 1, 1, T) mask blocking a random-length tail; every row keeps >= 1 key."""
    lengths = torch.randint(1, T + 1, (B,), generator=generator)  # (B,)
    return (torch.arange(T) >= lengths[:, None])[:, None, None, :]


def attention_max_abs_err(seed: int = 0, dtype: torch.dtype = torch.float32) -> float:
    """Largest |ours - F.scaled_dot_product_attention| over shapes x {no, padding, causal} mask."""
    g = torch.Generator().manual_seed(seed)
    worst = 0.0
    for B, H, T, D in PARITY_SHAPES:
        q, k, v = (torch.randn(B, H, T, D, generator=g, dtype=dtype) for _ in range(3))
        for mask in (None, _random_padding_mask(B, T, g), causal_mask(T)):
            ours, _ = scaled_dot_product_attention(q, k, v, mask)
            # PyTorch's boolean attn_mask means the opposite: True = may attend.
            reference = F.scaled_dot_product_attention(q, k, v, attn_mask=None if mask is None else ~mask)
            worst = max(worst, (ours - reference).abs().max().item())
    return worst


def causal_mask_leak(seed: int = 0, T: int = 16) -> float:
    """How much a causal output at position t moves when keys/values after t change.

    For every cut t, everything at positions >= t is replaced by fresh noise; the
    outputs before t must not change at all.
    """
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(2, 4, T, 8, generator=g) for _ in range(3))
    mask = causal_mask(T)
    base, _ = scaled_dot_product_attention(q, k, v, mask)
    worst = 0.0
    for t in range(1, T):
        k2, v2 = k.clone(), v.clone()
        k2[..., t:, :] = torch.randn(k2[..., t:, :].shape, generator=g) * 10
        v2[..., t:, :] = torch.randn(v2[..., t:, :].shape, generator=g) * 10
        out, _ = scaled_dot_product_attention(q, k2, v2, mask)
        worst = max(worst, (out[..., :t, :] - base[..., :t, :]).abs().max().item())
    return worst


@torch.no_grad()
def padding_leak(model: Classifier, input_ids: Tensor) -> float:
    """Largest logit change when PADs are appended to ``input_ids`` (B, T), in eval mode.

    Two ways a real batch pads a sentence: trailing PADs up to the model's
    ``max_len``, and being batched beside a longer sentence.
    """
    was_training = model.training
    model.eval()
    B, T = input_ids.shape
    base = model(input_ids)
    room = model.config.max_len - T
    worst = 0.0
    if room > 0:
        padded = F.pad(input_ids, (0, room), value=model.pad_id)  # (B, max_len)
        worst = (model(padded) - base).abs().max().item()
        longer = torch.full((1, model.config.max_len), input_ids[0, 0].item())  # a full-length real sentence
        batched = torch.cat([padded, longer])  # (B + 1, max_len)
        worst = max(worst, (model(batched)[:B] - base).abs().max().item())
    model.train(was_training)
    return worst
