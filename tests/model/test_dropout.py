"""Uniform-drawn dropout: nn.Dropout's mask distribution and scale, and the model uses it everywhere asked."""

from __future__ import annotations

import os
import shutil

import pytest
import torch
from torch import nn

from scratchformer.config import ModelConfig
from scratchformer.model.classifier import TransformerClassifier
from scratchformer.model.dropout import UniformDropout


def test_it_zeroes_a_share_p_and_scales_the_rest_by_one_over_one_minus_p():
    torch.manual_seed(0)
    x = torch.rand(400, 500) + 0.5  # no zeros of its own
    y = UniformDropout(0.2).train()(x)
    dropped = (y == 0).float().mean().item()
    assert dropped == pytest.approx(0.2, abs=4 * (0.2 * 0.8 / x.numel()) ** 0.5)  # 4 standard errors
    kept = y != 0
    torch.testing.assert_close(y[kept], x[kept] / 0.8)
    assert y.mean().item() == pytest.approx(x.mean().item(), rel=0.01)  # the expected activation is unchanged


def test_it_is_the_identity_in_eval_mode_and_at_rate_zero():
    x = torch.randn(8, 16)
    assert torch.equal(UniformDropout(0.5).eval()(x), x)
    assert torch.equal(UniformDropout(0.0).train()(x), x)


def test_its_gradient_flows_through_the_kept_elements_only():
    x = torch.randn(50, 60, requires_grad=True)
    y = UniformDropout(0.3).train()(x)
    y.sum().backward()
    torch.testing.assert_close(x.grad, (y != 0).float() / 0.7)


@pytest.mark.parametrize(("draw", "kind"), [("bernoulli", nn.Dropout), ("uniform", UniformDropout)])
def test_the_model_draws_every_mask_as_its_config_says(draw, kind):
    config = ModelConfig(dropout=0.2, dropout_draw=draw, ngram_max=1, wide_ngrams=0, num_classes=2)
    layers = [m for m in TransformerClassifier(config, 30).modules() if isinstance(m, nn.Dropout)]
    assert len(layers) == 1 + 2 * config.n_layers  # after the positions; per block: attention weights, residuals
    assert all(type(m) is kind for m in layers)


needs_cxx = pytest.mark.skipif(
    shutil.which(os.environ.get("CXX", "g++")) is None, reason="Inductor needs a C++ compiler (CXX, or g++)"
)


@needs_cxx
def test_compiled_it_draws_the_eager_masks():
    """Under torch.compile the mask comes from ATen's generator, as in eager mode, not from Inductor's own.

    Inductor replaces a ``rand_like`` in its graph with its own per-element draw (slower on a CPU,
    and other numbers); :func:`~scratchformer.model.dropout.keep_mask` keeps ATen's.
    """
    x = torch.rand(3, 4, 40, 40) + 0.5  # no zeros of its own
    layer = UniformDropout(0.2).train()
    torch.manual_seed(0)
    eager = [layer(x), layer(x)]
    torch._dynamo.reset()
    compiled = torch.compile(layer, backend="inductor")
    torch.manual_seed(0)
    drawn = [compiled(x), compiled(x)]
    for e, c in zip(eager, drawn, strict=True):
        assert torch.equal(e == 0, c == 0)  # the same elements dropped, step after step
        torch.testing.assert_close(c, e)


@needs_cxx
def test_compiled_its_backward_keeps_the_float_mask_not_a_bool_one():
    """What the compiled forward saves for the backward pass: the scaled float mask, no bool tensor.

    Left to choose, the compiler saves ``uniform >= p`` as bool (the smallest tensor it could
    recompute the mask from), and Inductor's CPU kernels store bool outputs slowly: the compiled
    training step was slower than the eager one (docs/speed.md).
    """
    layer = UniformDropout(0.2).train()
    x = (torch.rand(3, 4, 40, 40) + 0.5).requires_grad_()
    torch._dynamo.reset()
    compiled = torch.compile(layer, backend="inductor")
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t.dtype) or t, lambda t: t):
        y = compiled(x)
    assert saved == [torch.float32]
    y.sum().backward()
    torch.testing.assert_close(x.grad, (y != 0).float() / 0.8)
