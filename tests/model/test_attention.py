import pytest
import torch
import torch.nn.functional as F

from scratchformer.analysis.acceptance import attention_max_abs_err, causal_mask_leak
from scratchformer.model.attention import MultiHeadSelfAttention, causal_mask, scaled_dot_product_attention
from scratchformer.model.positional import RotaryPositionalEncoding, SinusoidalPositionalEncoding


def reference(q, k, v, mask):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=None if mask is None else ~mask)


def padding_mask(lengths, T):
    return (torch.arange(T) >= torch.tensor(lengths)[:, None])[:, None, None, :]


@pytest.mark.parametrize("shape", [(1, 1, 1, 4), (2, 4, 16, 16), (3, 2, 9, 5), (2, 8, 64, 8)])
@pytest.mark.parametrize("kind", ["none", "padding", "causal"])
def test_matches_pytorch(shape, kind):
    torch.manual_seed(0)
    B, H, T, D = shape
    q, k, v = (torch.randn(shape) for _ in range(3))
    mask = {
        "none": None,
        "padding": padding_mask([max(1, T - i) for i in range(B)], T),
        "causal": causal_mask(T),
    }[kind]
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert out.shape == (B, H, T, D)
    assert weights.shape == (B, H, T, T)
    assert (out - reference(q, k, v, mask)).abs().max() < 1e-5
    assert torch.allclose(weights.sum(-1), torch.ones(B, H, T), atol=1e-6)


def test_padding_keys_get_exactly_zero_weight():
    q, k, v = (torch.randn(2, 2, 6, 4) for _ in range(3))
    mask = padding_mask([6, 3], 6)
    _, weights = scaled_dot_product_attention(q, k, v, mask)
    assert torch.all(weights[1, :, :, 3:] == 0)
    assert torch.all(weights[0] > 0)


def test_causal_mask_blocks_the_future():
    assert causal_mask(3).tolist() == [[False, True, True], [False, False, True], [False, False, False]]
    assert causal_mask_leak() == 0.0


def test_causal_leak_detects_a_broken_mask(monkeypatch):
    # The check must be able to fail: with no mask, later values reach earlier outputs.
    import scratchformer.analysis.acceptance as acceptance

    monkeypatch.setattr(
        acceptance, "causal_mask", lambda T, device=None: torch.zeros(T, T, dtype=torch.bool, device=device)
    )
    assert acceptance.causal_mask_leak() > 1e-3


def test_fully_blocked_row_is_finite_not_nan():
    q, k, v = (torch.randn(1, 1, 3, 4) for _ in range(3))
    mask = torch.ones(1, 1, 3, 3, dtype=torch.bool)
    mask[..., :2, 0] = False  # rows 0 and 1 see key 0; row 2 sees nothing
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert torch.isfinite(out).all() and torch.isfinite(weights).all()
    assert torch.allclose(weights[..., 2, :], torch.full((3,), 1 / 3))  # equal scores: uniform
    assert torch.allclose(out[..., 0, :], v[..., 0, :])  # one visible key: its value, exactly
    assert torch.all(weights[..., :2, 1:] == 0)


def test_acceptance_parity_is_tiny():
    assert attention_max_abs_err() < 1e-5


def test_multi_head_split_and_merge_match_a_per_head_loop():
    torch.manual_seed(0)
    B, T, C, H = 2, 5, 12, 3
    mha = MultiHeadSelfAttention(C, H).eval()
    x = torch.randn(B, T, C)
    y, weights = mha(x)
    q, k, v = mha.qkv(x).split(C, dim=-1)
    D = C // H
    heads = []
    for h in range(H):
        s = slice(h * D, (h + 1) * D)
        w = torch.softmax(q[..., s] @ k[..., s].transpose(1, 2) / D**0.5, dim=-1)  # (B, T, T)
        assert torch.allclose(w, weights[:, h], atol=1e-6)
        heads.append(w @ v[..., s])
    assert torch.allclose(y, mha.proj(torch.cat(heads, dim=-1)), atol=1e-5)


def test_multi_head_rejects_indivisible_heads():
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadSelfAttention(10, 3)


def test_attention_dropout_changes_output_but_not_returned_weights():
    torch.manual_seed(0)
    mha = MultiHeadSelfAttention(8, 2, dropout=0.5).train()
    x = torch.randn(1, 6, 8)
    (y1, w1), (y2, w2) = mha(x), mha(x)
    assert not torch.allclose(y1, y2)
    assert torch.allclose(w1, w2)


def test_sinusoidal_table_values():
    pe = SinusoidalPositionalEncoding(4, 10).pe
    p = torch.tensor(3.0)  # position 3; frequencies 1 and 1/100 for C = 4
    expected = torch.stack([p.sin(), p.cos(), (p / 100).sin(), (p / 100).cos()])
    assert torch.allclose(pe[3], expected)
    assert "pe" not in dict(SinusoidalPositionalEncoding(4, 10).named_parameters())


def test_rope_scores_depend_only_on_relative_offset():
    rope = RotaryPositionalEncoding(8, 32)
    q, k = torch.randn(8), torch.randn(8)

    def score(i, j):
        qs = torch.zeros(1, 1, 32, 8)
        ks = torch.zeros(1, 1, 32, 8)
        qs[0, 0, i], ks[0, 0, j] = q, k
        return (rope(qs)[0, 0, i] * rope(ks)[0, 0, j]).sum()

    assert torch.allclose(score(5, 2), score(13, 10), atol=1e-5)
    assert not torch.allclose(score(5, 2), score(5, 3), atol=1e-3)
