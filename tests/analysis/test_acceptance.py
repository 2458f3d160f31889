"""The acceptance checks measure, and each one fails on the bug it is there to catch."""

import dataclasses
import math

import pytest
import torch
from fixtures import tiny_config

import scratchformer.analysis.acceptance as acceptance
from scratchformer.analysis.acceptance import (
    attention_max_abs_err,
    failures,
    padding_leak,
    padding_sample,
)
from scratchformer.config import AcceptanceConfig
from scratchformer.model.classifier import TransformerClassifier
from scratchformer.model.pooling import MeanPooling

VOCAB = 50
MAX_LEN = 32


def make(**overrides):
    torch.manual_seed(0)
    config = dataclasses.replace(
        tiny_config(max_len=MAX_LEN, d_model=64, n_heads=4, n_layers=2, ff_dim=128, dropout=0.1), **overrides
    )
    return TransformerClassifier(config, vocab_size=VOCAB).eval()


def sentences(lengths=(3, 7, 12, 5, 20, 9, MAX_LEN)):
    """Real sentences (no PAD inside) of the given lengths; the last fills max_len."""
    g = torch.Generator().manual_seed(1)
    return [torch.randint(1, VOCAB, (n,), generator=g) for n in lengths]


@pytest.mark.parametrize(
    "option",
    [
        {},
        {"pooling": "cls"},
        {"pooling": "attention"},
        {"positional": "learned"},
        {"positional": "rope"},
        {"norm": "post"},
        {"ngram_max": 3, "ngram_buckets": 64},
    ],
)
def test_padding_changes_no_logit(option):
    leak = padding_leak(make(**option), sentences())
    assert leak.value < 1e-5
    # 6 sentences shorter than max_len, padded alone (a) and beside the longest (b).
    assert leak.checked == 12


def test_counts_each_comparison_it_can_make():
    # The longest is shorter than max_len: it too can be right-padded, but not batched beside itself.
    assert padding_leak(make(), sentences((4, 9, 16))).checked == 3 + 2
    # Nothing shorter than the longest: only the right-padding comparisons remain.
    assert padding_leak(make(), sentences((6, 6))).checked == 2


def test_no_comparison_is_an_error_not_a_zero():
    with pytest.raises(ValueError, match="no comparison"):
        padding_leak(make(), sentences((MAX_LEN, MAX_LEN)))


def test_a_mean_pooling_that_counts_pads_leaks(monkeypatch):
    original = MeanPooling.forward
    monkeypatch.setattr(MeanPooling, "forward", lambda self, h, pad: original(self, h, torch.zeros_like(pad)))
    assert padding_leak(make(), sentences()).value > 1e-2


def test_an_attention_that_ignores_the_key_mask_leaks():
    model = make()
    for block in model.blocks:
        block.attn.forward = lambda x, mask=None, f=block.attn.forward: f(x, None)
    assert padding_leak(model, sentences()).value > 1e-2


def test_a_nan_is_the_worst_leak():
    model = make()
    head = model.head.forward
    model.head.forward = lambda x: head(x) if len(x) == 1 else head(x) * math.nan  # NaN once batched
    assert math.isnan(padding_leak(model, sentences()).value)


def test_attention_without_the_sqrt_d_scale_fails_parity(monkeypatch):
    def unscaled(q, k, v, mask=None, dropout=None):
        scores = q @ k.transpose(-2, -1)
        if mask is not None:
            scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        return weights @ v, weights

    assert attention_max_abs_err() < 1e-5
    monkeypatch.setattr(acceptance, "scaled_dot_product_attention", unscaled)
    assert attention_max_abs_err() > 1e-2


def test_padding_sample_is_varied_mostly_short_and_ends_with_the_longest():
    lengths = [64] * 50 + list(range(3, 63)) + [64] * 10
    chosen = padding_sample(lengths, n=32)
    assert len(chosen) == 33 and len(set(chosen)) == 33
    assert lengths[chosen[-1]] == 64
    picked = [lengths[i] for i in chosen[:-1]]
    assert all(n < 64 for n in picked) and picked == sorted(picked)
    assert picked[0] == 3 and picked[-1] == 62 and len(set(picked)) == 32
    assert padding_sample(lengths, n=32) == chosen  # deterministic
    assert padding_sample([5, 9, 7], n=32) == [0, 2, 1]  # fewer than n: all of them


def test_failures_name_the_check_its_value_and_threshold():
    limits = dataclasses.asdict(AcceptanceConfig())
    good = {"attention_max_abs_err": 6e-7, "causal_mask_leak": 0.0, "padding_leak": 0.0}
    assert failures(good, limits) == []
    (message,) = failures({**good, "padding_leak": 0.25}, limits)
    assert message == "acceptance check padding_leak failed: 0.25 is not below the threshold 1e-05"
    assert len(failures({**good, "causal_mask_leak": math.nan}, limits)) == 1
