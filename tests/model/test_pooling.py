"""Attention pooling with several heads: each head pools its own channels with its own query, over real tokens."""

import math

import pytest
import torch
from fixtures import tiny_config

from scratchformer.config import ModelConfig, from_dict
from scratchformer.model.classifier import TransformerClassifier
from scratchformer.model.pooling import AttentionPooling, MultiHeadAttentionPooling, make_pooling


def _tokens(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(2, 5, 8, generator=g)
    pad = torch.tensor([[False] * 5, [False, False, False, True, True]])  # the second text: 3 tokens, 2 PAD
    return h, pad


def test_each_head_is_a_softmax_over_the_real_tokens_of_its_own_channels():
    h, pad = _tokens()
    pool = MultiHeadAttentionPooling(8, heads=2)
    with torch.no_grad():
        pool.query.copy_(torch.randn(8, generator=torch.Generator().manual_seed(1)))
    pooled, weights = pool(h, pad)
    for b, n in ((0, 5), (1, 3)):  # by hand, one head at a time, on the real tokens only
        heads = []
        for channels in (slice(0, 4), slice(4, 8)):
            part = h[b, :n, channels]  # (n, 4)
            w = torch.softmax(part @ pool.query[channels] / math.sqrt(4), dim=0)
            heads.append((w, w @ part))
        torch.testing.assert_close(pooled[b], torch.cat([v for _, v in heads]))
        torch.testing.assert_close(weights[b, :n], (heads[0][0] + heads[1][0]) / 2)
    assert weights[1, 3:].abs().sum() == 0
    torch.testing.assert_close(weights.sum(dim=1), torch.ones(2))


def test_padding_changes_nothing_and_one_head_is_one_query():
    h, pad = _tokens()
    pool = MultiHeadAttentionPooling(8, heads=4)
    poisoned = h.clone()
    poisoned[1, 3:] = 1e4  # what a PAD position holds must not matter
    torch.testing.assert_close(pool(poisoned, pad)[0], pool(h, pad)[0])
    one, single = MultiHeadAttentionPooling(8, heads=1), AttentionPooling(8)
    single.load_state_dict(one.state_dict())  # the same parameter, the same shape
    for got, want in zip(one(h, pad), single(h, pad), strict=True):
        torch.testing.assert_close(got, want)


def test_the_heads_reach_the_model_and_are_checked():
    assert isinstance(make_pooling("attention", 8, 2), MultiHeadAttentionPooling)
    assert isinstance(make_pooling("attention", 8), AttentionPooling)
    assert from_dict({"model": {"pooling": "attention", "pool_heads": 4}}).model.pool_heads == 4
    with pytest.raises(ValueError, match=r"model.pool_heads=3 must be 1, or with model.pooling attention divide"):
        ModelConfig(pooling="attention", pool_heads=3)
    with pytest.raises(ValueError, match=r"model.pool_heads=2 must be 1, or with model.pooling attention"):
        ModelConfig(pooling="mean", pool_heads=2)
    with pytest.raises(ValueError, match=r"model.pool_heads=0 must be >= 1"):
        ModelConfig(pool_heads=0)


def test_the_classifier_pools_with_the_heads_its_config_names():
    config = tiny_config(max_len=16, d_model=32, n_heads=4, pooling="attention", pool_heads=4)
    pool = TransformerClassifier(config, vocab_size=50).pool
    assert isinstance(pool, MultiHeadAttentionPooling) and pool.heads == 4
