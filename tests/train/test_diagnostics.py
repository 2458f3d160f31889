import math

import pytest
import torch
import torch.nn.functional as F
from fixtures import tiny_config

from scratchformer.model.classifier import TransformerClassifier
from scratchformer.train.diagnostics import attention_diagnostics, attention_entropy, layer_grad_norms


def test_uniform_attention_has_entropy_log_t_and_one_hot_has_zero():
    T = 6
    uniform = torch.full((1, 2, T, T), 1 / T)
    pad = torch.zeros(1, T, dtype=torch.bool)
    stats = attention_entropy(uniform, pad)
    assert torch.allclose(stats["entropy"], torch.full((2,), math.log(T)))
    assert stats["max_entropy"].item() == pytest.approx(math.log(T))
    assert torch.allclose(stats["max_weight"], torch.full((2,), 1 / T))
    one_hot = torch.zeros(1, 2, T, T)
    one_hot[..., 0] = 1.0
    stats = attention_entropy(one_hot, pad)
    assert torch.all(stats["entropy"] == 0) and torch.all(stats["max_weight"] == 1)


def test_padded_keys_and_queries_never_count():
    # Sentence 0 has 4 real tokens of 6; attention uniform over them, PAD keys weight 0.
    T, real = 6, 4
    weights = torch.zeros(1, 1, T, T)
    weights[..., :real] = 1 / real
    weights[..., real:, :] = 1 / T  # what PAD *queries* compute must not matter
    pad = torch.arange(T)[None] >= real
    stats = attention_entropy(weights, pad)
    assert stats["entropy"].item() == pytest.approx(math.log(real))
    assert stats["max_entropy"].item() == pytest.approx(math.log(real))


def test_diagnostics_of_a_model_cover_every_layer_and_head():
    torch.manual_seed(0)
    model = TransformerClassifier(tiny_config(n_layers=3, ff_dim=128, dropout=0.1), 30)
    ids = F.pad(torch.randint(1, 30, (4, 8)), (0, 3))  # 3 PADs
    out = attention_diagnostics(model, ids)
    assert len(out) == 3 * 2 * 2 + 1
    for layer in range(3):
        for head in range(2):
            assert 0 < out[f"attention/layer{layer}/head{head}/entropy"] <= out["attention/max_entropy"] + 1e-6
    assert out["attention/max_entropy"] == pytest.approx(math.log(8))


def test_per_layer_gradient_norms_add_up_in_squares_to_the_global_norm():
    torch.manual_seed(0)
    model = TransformerClassifier(tiny_config(n_layers=3, ngram_max=2, ff_dim=128, dropout=0.1), 30)
    ids = torch.randint(1, 30, (4, 8))
    F.cross_entropy(model(ids), torch.tensor([0, 1, 0, 1])).backward()
    norms = layer_grad_norms(model)
    assert set(norms) == {
        "layer_grad_norm/embedding",
        "layer_grad_norm/layer0",
        "layer_grad_norm/layer1",
        "layer_grad_norm/layer2",
        "layer_grad_norm/head",
    }
    total = torch.nn.utils.clip_grad_norm_(model.parameters(), math.inf).item()
    assert math.sqrt(sum(v**2 for v in norms.values())) == pytest.approx(total, rel=1e-5)
    assert all(v > 0 for v in norms.values())
