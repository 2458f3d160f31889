import ast
import dataclasses
import pathlib

import pytest
import torch
import torch.nn.functional as F
from fixtures import tiny_config

from scratchformer.analysis.acceptance import padding_leak
from scratchformer.model.classifier import Ensemble, TransformerClassifier

VOCAB = 50


def make(**overrides):
    torch.manual_seed(0)
    config = dataclasses.replace(
        tiny_config(max_len=32, d_model=64, n_heads=4, n_layers=2, ff_dim=128, dropout=0.1), **overrides
    )
    return TransformerClassifier(config, vocab_size=VOCAB).eval()


def sentences():
    g = torch.Generator().manual_seed(1)
    return torch.randint(1, VOCAB, (3, 10), generator=g)


def test_logits_shape():
    assert make()(sentences()).shape == (3, 2)
    assert make(num_classes=5)(sentences()).shape == (3, 5)


def test_attention_weights_are_the_forward_pass_weights():
    model = make(n_layers=3)
    ids = F.pad(sentences(), (0, 4))  # 4 trailing PADs
    for layer in (0, 1, -1):
        weights = model.attention_weights(ids, layer=layer)
        assert weights.shape == (3, 4, 14, 14)
        assert torch.allclose(weights.sum(-1), torch.ones(3, 4, 14), atol=1e-6)
        assert torch.all(weights[..., 10:] == 0)  # PAD keys
    # Recompute layer 1 by hand from the blocks and compare with what the model returned.
    captured = []
    handle = model.blocks[1].attn.register_forward_hook(lambda m, i, o: captured.append(o[1]))
    model(ids)
    handle.remove()
    assert torch.equal(captured[0], model.attention_weights(ids, layer=1))


def test_too_long_sequence_is_a_clear_error():
    model = make()
    with pytest.raises(ValueError, match=r"longer than model\.max_len=32"):
        model(torch.ones(1, 33, dtype=torch.long))


def test_layer_out_of_range():
    with pytest.raises(IndexError, match="2-layer"):
        make().attention_weights(sentences(), layer=2)


@pytest.mark.parametrize(
    "option",
    [
        {"pooling": "mean"},
        {"pooling": "cls"},
        {"pooling": "attention"},
        {"pooling": "attention", "pool_heads": 4},
        {"attention_dropout": 0.0},
        {"positional": "sinusoidal"},
        {"positional": "learned"},
        {"positional": "rope"},
        {"norm": "pre"},
        {"norm": "post"},
        {"n_heads": 8},
        {"n_layers": 4},
        {"d_model": 48, "n_heads": 4},
        {"ff_dim": 32},
        {"ngram_max": 3, "ngram_buckets": 64},
    ],
)
def test_every_option_trains_one_step(option):
    model = make(**option).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)  # only the gradient moves weights
    ids, labels = F.pad(sentences(), (0, 3)), torch.tensor([0, 1, 1])  # 3 trailing PADs in every row
    ids[0, 6:] = 0  # and a shorter sentence
    assert (ids == 0).sum() == 3 * 3 + 4
    loss = F.cross_entropy(model(ids), labels)
    assert torch.isfinite(loss)
    loss.backward()
    grad = model.embed.weight.grad
    assert grad[ids[ids != 0].unique()].abs().sum(dim=1).gt(0).all()  # every real token learns
    assert torch.all(grad[0] == 0)  # the PAD row, present in the batch, gets no gradient
    assert model.head.weight.grad.abs().sum() > 0
    before = model.head.weight.detach().clone()
    optimizer.step()
    assert not torch.equal(before, model.head.weight)


def test_attention_dropout_acts_on_the_attention_weights_alone():
    """model.attention_dropout is the rate on the (B, H, T, T) weights; None leaves it at model.dropout."""
    x = torch.randn(2, 6, 64, generator=torch.Generator().manual_seed(2))
    cases = [({"dropout": 0.2}, 0.2), ({"dropout": 0.2, "attention_dropout": 0.0}, 0.0)]
    cases.append(({"dropout": 0.0, "attention_dropout": 0.5}, 0.5))
    for rates, rate in cases:
        model = make(**rates).train()
        attention = model.blocks[0].attn
        first, second = attention(x)[0], attention(x)[0]  # the same input twice, in training mode
        assert torch.equal(first, second) == (rate == 0)  # only a mask drawn on the weights tells them apart
        assert [block.attn.attn_dropout.p for block in model.blocks] == [rate, rate]
        assert [block.dropout.p for block in model.blocks] == [rates["dropout"]] * 2  # the branches' own rate
    with pytest.raises(ValueError, match=r"model.attention_dropout=1.0 must be in \[0, 1\)"):
        make(attention_dropout=1.0)


LIBRARY_ATTENTION = [
    (torch.nn.functional, "scaled_dot_product_attention"),
    (torch.nn.functional, "multi_head_attention_forward"),
    (torch, "_native_multi_head_attention"),
]


def test_no_library_attention_in_the_model(monkeypatch):
    """Whatever it is called or imported as: a forward pass that reaches PyTorch's attention fails."""
    model = make()
    kinds = {type(m).__name__ for m in model.modules()}
    assert "MultiheadAttention" not in kinds and not any("TransformerEncoder" in k for k in kinds)

    def refuse(*args, **kwargs):
        raise AssertionError("the model called PyTorch's attention")

    for owner, name in LIBRARY_ATTENTION:
        monkeypatch.setattr(owner, name, refuse)
    ids = torch.randint(1, 50, (2, 7))
    for variant in ({}, {"positional": "rope"}, {"pooling": "attention"}, {"norm": "post"}):
        make(**variant).eval()(ids)
        make(**variant).train()(ids)
    # An alias bound at import time (``from torch.nn.functional import scaled_dot_product_attention
    # as sdpa``) would escape the patch: no model module may hold a reference to it.
    import scratchformer.model as package

    for module in sorted(pathlib.Path(package.__file__).parent.glob("*.py")):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        names = {a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
        names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        banned = {"scaled_dot_product_attention", "multi_head_attention_forward", "MultiheadAttention"}
        assert not names & banned, f"{module.name} reaches {names & banned}"
        assert not any(n.startswith("TransformerEncoder") for n in names), module.name


def test_sinusoidal_positions_are_a_buffer_learned_are_parameters():
    names = {n for n, _ in make().named_parameters()}
    assert not any(n.startswith("position") for n in names)
    names = {n for n, _ in make(positional="learned").named_parameters()}
    assert "position.embedding.weight" in names


def test_ensemble_predicts_the_mean_probability_of_its_members():
    members = [make(), make(pooling="attention"), make(n_layers=1)]
    ensemble = Ensemble(members).eval()
    ids = sentences()
    probabilities = [m(ids).softmax(-1) for m in members]
    assert not torch.allclose(probabilities[0], probabilities[1], atol=1e-3)  # the members disagree
    by_hand = ((probabilities[0] + probabilities[1] + probabilities[2]) / 3).log()
    assert torch.allclose(ensemble(ids), by_hand, atol=1e-6)
    mean_logits = torch.stack([m(ids) for m in members]).mean(0).log_softmax(-1)
    assert not torch.allclose(ensemble(ids), mean_logits, atol=1e-4)  # not an average of logits
    assert torch.equal(ensemble.attention_weights(ids), members[0].attention_weights(ids))
    assert padding_leak(ensemble, [ids[0, :4], ids[1]]).value < 1e-5
    single = Ensemble([members[0]])
    assert torch.allclose(single(ids), members[0](ids).log_softmax(-1), atol=1e-6)


def test_an_ensembles_networks_read_their_first_max_len_tokens_and_its_n_gram_member_all():
    """A cut longer than the networks' positional table: each network reads the first model.max_len
    tokens, the n-gram member every token, so a word past the networks' reach still counts."""
    from scratchformer.model.naive_bayes import NBLogistic

    network = make(max_len=8)
    nb = NBLogistic(max_n=1, buckets=8, vocab_size=VOCAB, num_classes=2, pad_id=0, scaling="tfidf")
    with torch.no_grad():
        nb.idf.fill_(1.0)
        nb.weight[1 + 7] = torch.tensor([-3.0, 3.0])  # token 7: class 1
    model = Ensemble([network], nb).eval()
    ids = torch.tensor([[3, 4, 5, 6, 3, 4, 5, 6, 3, 7, 4, 0]])  # token 7 at position 9, past the networks' 8
    with torch.no_grad():
        blended = (network(ids[:, :8]).softmax(-1) + nb(ids).softmax(-1)) / 2
        assert torch.allclose(model(ids), blended.log(), atol=1e-6)
        assert not torch.allclose(nb(ids), nb(ids[:, :8]), atol=1e-3)  # the member read token 7
    with pytest.raises(ValueError, match=r"longer than model\.max_len=8"):
        network(ids)  # a network alone still refuses what it cannot read


def test_ensemble_checkpoint_round_trip(tmp_path):
    from scratchformer.model.checkpoint import load_checkpoint, save_checkpoint

    ensemble = Ensemble([make(), make(n_layers=2)])
    torch.manual_seed(5)
    for p in ensemble.members[1].parameters():  # make the members differ
        p.data.add_(0.1 * torch.randn_like(p))
    save_checkpoint(tmp_path / "m.pt", ensemble)
    loaded, _ = load_checkpoint(tmp_path / "m.pt")
    assert isinstance(loaded, Ensemble) and len(loaded.members) == 2
    assert torch.equal(loaded(sentences()), ensemble.eval()(sentences()))
