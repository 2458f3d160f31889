"""Acceptance checks: numbers that prove the hand-written math is right.

Each check measures something (0 is perfect) that the evaluate stage compares
with the thresholds in ``params.yaml`` (``acceptance``). The three math checks
are properties of the code, so a failure stops the stage; validation accuracy
is a property of a run and only sets the ``passed`` flag.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from scratchformer.config import UserError
from scratchformer.model.attention import causal_mask, scaled_dot_product_attention
from scratchformer.model.classifier import Classifier, eval_mode

# (B, H, T, D) shapes the parity check sweeps: tiny, odd-sized, and the model's own.
PARITY_SHAPES = ((1, 1, 1, 8), (2, 4, 16, 16), (3, 2, 7, 5), (4, 4, 64, 16))
MATH_CHECKS = ("attention_max_abs_err", "causal_mask_leak", "padding_leak")


def _worse(worst: float, value: float) -> float:
    """The larger of the two, where NaN counts as the worst of all (``max`` would drop it)."""
    return value if math.isnan(value) or value > worst else worst


def _random_padding_mask(B: int, T: int, generator: torch.Generator) -> Tensor:
    """(B, 1, 1, T) mask blocking a random-length tail; every row keeps >= 1 key."""
    lengths = torch.randint(1, T + 1, (B,), generator=generator)  # (B,)
    return (torch.arange(T) >= lengths[:, None])[:, None, None, :]


def attention_max_abs_err(
    seed: int = 0, dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu"
) -> float:
    """Largest |ours - F.scaled_dot_product_attention| over shapes x {no, padding, causal} mask.

    The inputs are drawn on the CPU (the same numbers on every device) and
    compared on ``device``.
    """
    g = torch.Generator().manual_seed(seed)
    worst = 0.0
    for B, H, T, D in PARITY_SHAPES:
        q, k, v = (torch.randn(B, H, T, D, generator=g, dtype=dtype).to(device) for _ in range(3))
        masks = (_random_padding_mask(B, T, g).to(device), causal_mask(T, device))
        for mask in (None, *masks):
            ours, _ = scaled_dot_product_attention(q, k, v, mask)
            # PyTorch's boolean attn_mask means the opposite: True = may attend.
            reference = F.scaled_dot_product_attention(q, k, v, attn_mask=None if mask is None else ~mask)
            worst = _worse(worst, (ours - reference).abs().max().item())
    return worst


def causal_mask_leak(seed: int = 0, T: int = 16, device: torch.device | str = "cpu") -> float:
    """How much a causal output at position t moves when keys/values after t change.

    For every cut t, everything at positions >= t is replaced by fresh noise; the
    outputs before t must not change at all. Computed on ``device``.
    """
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(2, 4, T, 8, generator=g).to(device) for _ in range(3))
    mask = causal_mask(T, device)
    base, _ = scaled_dot_product_attention(q, k, v, mask)
    worst = 0.0
    for t in range(1, T):
        k2, v2 = k.clone(), v.clone()
        k2[..., t:, :] = torch.randn(k2[..., t:, :].shape, generator=g).to(device) * 10
        v2[..., t:, :] = torch.randn(v2[..., t:, :].shape, generator=g).to(device) * 10
        out, _ = scaled_dot_product_attention(q, k2, v2, mask)
        worst = _worse(worst, (out[..., :t, :] - base[..., :t, :]).abs().max().item())
    return worst


def padding_sample(lengths: list[int], n: int = 32) -> list[int]:
    """Indices of ``n`` sentences for the padding check: varied lengths, mostly short.

    A sentence that already fills the longest length of the split has no room
    for padding, so the sample is drawn from the shorter ones, evenly spaced
    over their sorted lengths (deterministic: ties keep the split's order).
    The split's longest sentence is added last, as the partner the others are
    batched beside.
    """
    lengths_ = np.asarray(lengths)
    longest = int(lengths_.argmax())
    shorter = np.flatnonzero(lengths_ < lengths_[longest])
    shorter = shorter[np.argsort(lengths_[shorter], kind="stable")]
    if len(shorter) > n:
        shorter = shorter[np.linspace(0, len(shorter) - 1, n).round().astype(int)]
    return [*shorter.tolist(), longest]


class PaddingLeak(NamedTuple):
    value: float  # largest logit change over every comparison
    checked: int  # how many comparisons were made


@torch.no_grad()
def padding_leak(model: Classifier, sentences: list[Tensor]) -> PaddingLeak:
    """Largest logit change of a sentence when it is padded, against the sentence run alone.

    Each sentence (T_i,) of real tokens is first run alone, unpadded: the
    ground truth. It is then compared with (a) the same sentence right-padded
    with PAD up to the model's ``max_len`` and (b) the same sentence in one
    batch beside the longest of ``sentences``, padded to that length. Every
    comparison that can be made (a sentence needs room to be padded) is made
    and counted; none at all is an error, never a 0.
    """
    device = next(model.parameters()).device
    longest = max(len(s) for s in sentences)
    worst, checked = 0.0, 0
    with eval_mode(model):
        alone = [model(s[None].to(device))[0] for s in sentences]  # each (num_classes,)
        padded = [i for i, s in enumerate(sentences) if len(s) < model.config.max_len]
        beside = [i for i, s in enumerate(sentences) if len(s) < longest]
        # (a) only the sentences with room, each right-padded to max_len;
        # (b) all of them, the longest included, padded to the longest.
        for rows, members, width in ((padded, padded, model.config.max_len), (beside, range(len(sentences)), longest)):
            if not rows:
                continue
            members = list(members)
            batch = torch.full((len(members), width), model.pad_id, dtype=torch.long, device=device)
            for j, i in enumerate(members):
                batch[j, : len(sentences[i])] = sentences[i]
            logits = model(batch)  # (len(members), num_classes)
            for j, i in enumerate(members):
                if i in rows:
                    worst = _worse(worst, (logits[j] - alone[i]).abs().max().item())
            checked += len(rows)
    if checked == 0:
        raise ValueError(
            f"padding check made no comparison: all {len(sentences)} sentences are {longest} tokens long "
            f"and model.max_len is {model.config.max_len}; give it sentences of different lengths"
        )
    return PaddingLeak(worst, checked)


class AcceptanceError(UserError):
    """A math check failed: the code, not the data or the params, computes something wrong."""


def failures(checks: dict[str, float], thresholds: dict[str, float]) -> list[str]:
    """One message per math check whose value is not below its threshold (NaN fails too)."""
    return [
        f"acceptance check {name} failed: {checks[name]:.3g} is not below the threshold {thresholds[name]:.3g}"
        for name in MATH_CHECKS
        if not checks[name] < thresholds[name]
    ]
