"""Dropout whose mask is drawn from uniform numbers: the same distribution as ``nn.Dropout``'s, drawn faster.

In training, dropout zeroes each element with probability ``p`` and scales the survivors by
``1 / (1 - p)``, so that the expected activation is unchanged. ``nn.Dropout`` draws that mask
with ``bernoulli_``, which on a CPU takes longer than drawing as many
uniform numbers in [0, 1) and keeping the elements whose number is at least ``p``: the same
Bernoulli(1 - p) mask, other random draws. The attention's dropout masks a
(B, H, T, T) tensor in every layer, so at 128 tokens the draw is a large part of a CPU
training step (``docs/speed.md``). ``model.dropout_draw`` chooses: ``bernoulli`` (PyTorch's,
which every earlier result used) or ``uniform`` (this module).

Under ``torch.compile`` the mask is still ATen's. :func:`keep_mask` draws and scales it in one
operator that the compiler calls as it is, so a compiled model draws the same vectorised numbers
from the same generator, in the same order, as the eager one (``tests/model/test_dropout.py``).
Left to itself, Inductor would do two things slower on a CPU: replace a ``rand_like`` in the
graph with its own generator, which draws one number at a time inside the fused kernel (and
gives other masks than the eager model's); and keep the comparison ``uniform >= p`` for the
backward pass as a bool tensor, which its vectorised kernels store slowly. The operator's
output is the float mask the product reads, so that is what the backward keeps
(``tests/model/test_dropout.py``; the speed in ``docs/speed.md``).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


@torch.library.custom_op("scratchformer::keep_mask", mutates_args=())
def keep_mask(x: Tensor, p: float) -> Tensor:
    """Dropout's scaled mask for ``x``: ``1 / (1 - p)`` where a uniform number in [0, 1) is at least ``p``, else 0.

    The numbers come from the default generator; the operator is opaque to the compiler.
    """
    keep = torch.rand_like(x) >= p  # each element kept with probability 1 - p
    return keep.to(x.dtype).mul_(1 / (1 - p))


@keep_mask.register_fake
def _(x: Tensor, p: float) -> Tensor:  # what the compiler traces in its place: a tensor of the same shape, no draw
    return torch.empty_like(x)


class UniformDropout(nn.Dropout):
    """``nn.Dropout`` with its mask drawn as ``uniform >= p``: identity in eval mode, as it is."""

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0:
            return x
        # detached: the mask takes no gradient (the operator has no backward of its own)
        return x * keep_mask(x.detach(), self.p)


def dropout(p: float, draw: str = "bernoulli") -> nn.Dropout:
    """A dropout layer of rate ``p`` whose mask ``draw`` makes: ``bernoulli`` (``nn.Dropout``) or ``uniform``."""
    return UniformDropout(p) if draw == "uniform" else nn.Dropout(p)
