"""The optimizer, the lr schedule and the forward pass's precision that the training loop uses."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable

import torch
from torch import nn


def parameter_groups(modules: Iterable[nn.Module], weight_decay: float) -> list[dict]:
    """Two AdamW groups: the weight matrices of linear layers decay, nothing else does.

    Weight decay pulls a weight towards 0, which regularises the matrices that
    mix features. Biases, LayerNorm gains, embedding tables (token, n-gram and
    learned positional rows: each row is only updated when its token occurs, so
    decay would shrink rare tokens towards nothing) and the pooling query are
    offsets and scales, not mixers, and are left alone (as in nanoGPT's
    ``configure_optimizers``, with embeddings in the no-decay group). A
    parameter shared by two modules (a tied embedding) is listed once; a frozen
    one (a distillation teacher) is not listed.
    """
    decay, no_decay, seen = [], [], set()
    for module in modules:
        for sub in module.modules():
            for name, p in sub.named_parameters(recurse=False):
                if id(p) in seen or not p.requires_grad:
                    continue
                seen.add(id(p))
                (decay if isinstance(sub, nn.Linear) and name == "weight" else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def adamw(groups: list[dict], lr: float, device: torch.device | str) -> torch.optim.AdamW:
    """AdamW over ``parameter_groups``, with the fused kernel where PyTorch has one.

    The fused update is one pass over each tensor instead of a chain of
    elementwise ops, which matters for large embedding tables: every row is
    updated every step (benchmarks/encoder_throughput.py prints the ratio).
    """
    return torch.optim.AdamW(groups, lr=lr, fused=torch.device(device).type in ("cpu", "cuda"))


def lr_factor(step: int, total: int, schedule: str, warmup_ratio: float) -> float:
    """Multiplier of the base lr at ``step``: linear warm-up, then constant or cosine to 0."""
    warmup = int(total * warmup_ratio)
    if step < warmup:
        return (step + 1) / warmup
    if schedule == "constant":
        return 1.0
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """The forward pass's precision: fp32 as is, or autocast to bf16 / fp16.

    Under autocast, matrix products run in the low precision while reductions
    that need range (softmax, LayerNorm, the loss) stay fp32; the attention
    module computes its softmax in fp32 explicitly, so a fully blocked row stays
    finite whatever autocast decides.
    """
    if precision == "fp32":
        return contextlib.nullcontext()
    if precision == "fp16" and device.type != "cuda":
        raise ValueError(
            f"train.precision=fp16 needs CUDA (its gradients need loss scaling); on {device.type} use bf16 or fp32"
        )
    return torch.autocast(device.type, dtype=torch.bfloat16 if precision == "bf16" else torch.float16)
