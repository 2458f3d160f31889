"""Token relevance: which tokens a prediction rests on, and which way each pushed.

Relevance is integrated gradients (Sundararajan et al., 2017) of the class margin

    f(x) = z_k(x) − mean_{j≠k} z_j(x)      (two classes: z_k − z_other, the logit difference)

for the class of interest k (the predicted one unless asked otherwise), taken over
a gate g_t ∈ [0, 1] on each token's input vectors: token t's embedding (and, where
the model has them, its hashed n-gram embedding and its wide-branch rows) is
multiplied by g_t. The baseline g = 0 is the same text with every word token's
vector zeroed — the PAD row — while positions, [CLS], [SEP] and the attention mask
stay as they are; the input is g = 1. Along the straight path g = α·1,

    relevance_t = ∫₀¹ ∂f/∂g_t (α) dα      ≈ the midpoint rule over ``steps`` values of α,

which is integrated gradients on the token's embedding from a zero baseline,
summed over the embedding dimension (∂f/∂g_t = Σ_c e_tc ∂f/∂e_tc). Hence

- sign: relevance_t > 0 pushed toward class k, < 0 away from it (toward the other
  class when there are two); its unit is the logit;
- completeness: Σ_t relevance_t = f(input) − f(baseline), up to the quadrature
  error of ``steps`` points; only the model's margin on a blank text is left over.

An ensemble's n-gram member (:mod:`scratchformer.model.naive_bayes`) reads token ids,
not vectors, but its logits are a sum of one term per n-gram, each put on the token
where that n-gram first ends: the gate scales those per-token shares, so the blank
text's member says only its bias, and its n-grams are attributed to their tokens as
the wide branch's are. ``predict`` and the error report both use this one definition.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import NamedTuple

import torch
from torch import Tensor, nn

from scratchformer.model.classifier import Classifier, TransformerClassifier, eval_mode
from scratchformer.model.naive_bayes import NBLogistic

STEPS = 32  # points of the integral; the sum of the attributions is within ~1% of f(input) − f(baseline)


class Explained(NamedTuple):
    probabilities: Tensor  # (B, K): softmax of the logits
    relevance: Tensor  # (B, T): signed contribution to the margin of class ``toward``; 0 on PAD, [CLS], [SEP]
    toward: Tensor  # (B,): the class each row's relevance is toward (the predicted one unless given)


def margin(logits: Tensor, k: Tensor) -> Tensor:
    """z_k − mean of the other classes' logits, per row: (B, K), (B,) -> (B,)."""
    K = logits.size(-1)
    own = logits.gather(1, k[:, None]).squeeze(1)  # (B,)
    return own - (logits.sum(dim=-1) - own) / (K - 1)


def _gated_modules(model: nn.Module) -> list[nn.Module]:
    """Every module whose output is one vector (or row of class scores) per token, (…, B, T, ·)."""
    found = []
    for member in model.modules():
        if isinstance(member, TransformerClassifier):
            found.append(member.embed)
            if member.ngrams is not None:
                found.append(member.ngrams)  # (B, T, C): the n-grams ending at each token
            if member.wide is not None:
                found += [member.wide.unigrams, member.wide.table]  # (B, T, K) each call
        elif isinstance(member, NBLogistic):
            found.append(member.per_token)  # (B, T, K): each token's share of the member's logits
    return found


@contextmanager
def gated(model: Classifier, gate: Tensor) -> Iterator[None]:
    """Within the block, each token's input vectors are multiplied by ``gate`` (B, T): 0 blanks the token."""

    def scale(_module: nn.Module, _inputs: tuple, output: Tensor) -> Tensor:
        T = output.size(-2)  # a network reads the first model.max_len tokens, an n-gram member all
        return output * gate[:, :T, None].to(output.dtype)  # (…, B, T, C) * (B, T, 1)

    handles = [m.register_forward_hook(scale) for m in _gated_modules(model)]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def explain(
    model: Classifier,
    input_ids: Tensor,
    fixed_ids: Collection[int] = (),
    toward: Tensor | None = None,
    steps: int = STEPS,
) -> Explained:
    """Class probabilities and signed token relevance of ``input_ids`` (B, T), in eval mode.

    ``fixed_ids``: tokens kept in the baseline and given no relevance, besides PAD
    (``[CLS]`` and ``[SEP]``: the blank text still has its two ends). ``toward``: the
    class (B,) to explain, by default the predicted one. See the module docstring.
    """
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    with eval_mode(model):
        with torch.no_grad():
            probabilities = torch.softmax(model(input_ids).float(), dim=-1)  # (B, K)
        k = probabilities.argmax(dim=-1) if toward is None else toward.to(input_ids.device)  # (B,)
        fixed = torch.tensor(sorted({model.pad_id, *fixed_ids}), device=input_ids.device)
        attributed = ~torch.isin(input_ids, fixed)  # (B, T)
        total = torch.zeros(input_ids.shape, device=input_ids.device)  # (B, T)
        for step in range(steps):
            alpha = (step + 0.5) / steps  # midpoint rule
            gate = torch.where(attributed, alpha, 1.0).requires_grad_()  # (B, T)
            with torch.enable_grad(), gated(model, gate):
                score = margin(model(input_ids).float(), k)  # (B,)
                (grad,) = torch.autograd.grad(score.sum(), gate)  # rows are independent: one backward for all
            total += grad.float()
    relevance = (total / steps).masked_fill(~attributed, 0.0)  # (B, T); dg_t/dα = 1 where attributed
    return Explained(probabilities, relevance.detach(), k)
