import pytest
import torch
from fixtures import tiny_config

from scratchformer.config import PretrainConfig
from scratchformer.data.tokenized_split import TokenizedSplit
from scratchformer.model.checkpoint import load_pretrained, save_checkpoint, save_no_pretraining
from scratchformer.model.classifier import TransformerClassifier
from scratchformer.train.masked_lm import IGNORE, MaskedLMHead, mask_tokens
from scratchformer.train.pretraining import pretrain
from scratchformer.train.recording import Recorder


def test_masking_follows_the_80_10_10_rule():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(10, 1000, (200, 100))
    special = torch.zeros_like(ids, dtype=torch.bool)
    special[:, 0] = True  # e.g. [CLS]
    inputs, labels = mask_tokens(ids, special, mask_id=3, vocab_size=1000, p=0.15, generator=g)
    chosen = labels != IGNORE
    assert abs(chosen.float().mean().item() - 0.15 * 99 / 100) < 0.01
    assert not chosen[:, 0].any() and torch.equal(inputs[:, 0], ids[:, 0])
    assert torch.equal(labels[chosen], ids[chosen])
    masked = (inputs[chosen] == 3).float().mean().item()
    kept = (inputs[chosen] == ids[chosen]).float().mean().item()
    assert abs(masked - 0.8) < 0.02 and abs(kept - 0.1) < 0.02
    assert torch.equal(inputs[~chosen], ids[~chosen])  # nothing else is touched


def test_mlm_head_ties_the_embedding():
    model = TransformerClassifier(tiny_config(n_layers=2, ff_dim=128, dropout=0.1), vocab_size=50)
    head = MaskedLMHead(model.embed)
    assert head.embedding.weight is model.embed.weight
    assert head(torch.randn(7, 16)).shape == (7, 50)


def corpus(n=64):
    g = torch.Generator().manual_seed(0)
    # A learnable language: each sequence counts up from a random start.
    ids = [
        torch.cat([torch.tensor([2]), (torch.arange(10) + s) % 40 + 5, torch.tensor([3])])
        for s in torch.randint(0, 40, (n,), generator=g)
    ]
    return TokenizedSplit.from_sequences(ids, torch.zeros(n, dtype=torch.long))


def test_pretraining_learns_the_corpus_and_round_trips(tmp_path):
    torch.manual_seed(0)
    config = tiny_config(d_model=32, n_layers=2, ff_dim=64)
    model = TransformerClassifier(config, vocab_size=50)
    short = pretrain(model, corpus(256), PretrainConfig(epochs=1, batch_size=16, lr=1e-2), [0, 2, 3], 4, 0, "cpu")
    longer = pretrain(model, corpus(256), PretrainConfig(epochs=20, batch_size=16, lr=1e-2), [0, 2, 3], 4, 0, "cpu")
    assert longer["mlm_loss"] < short["mlm_loss"] * 0.7
    assert longer["masked_accuracy"] > 0.25  # chance is 1/40 over the corpus's tokens
    save_checkpoint(tmp_path / "pre.pt", model, pretrained=True)
    fresh = TransformerClassifier(config, vocab_size=50)
    assert load_pretrained(fresh, tmp_path / "pre.pt")
    assert torch.equal(fresh.embed.weight, model.embed.weight)
    save_no_pretraining(tmp_path / "none.pt")
    assert not load_pretrained(fresh, tmp_path / "none.pt")
    other = TransformerClassifier(tiny_config(d_model=32, n_heads=4, n_layers=2, ff_dim=64, dropout=0.1), 50)
    with pytest.raises(ValueError, match="pretrained with"):
        load_pretrained(other, tmp_path / "pre.pt")


@pytest.mark.parametrize("objective", ["mlm", "electra"])
def test_a_resumed_pretraining_ends_bit_identical_to_an_uninterrupted_one(objective):
    config = PretrainConfig(epochs=3, batch_size=16, lr=1e-2, objective=objective)
    model_config = tiny_config(d_model=32, ff_dim=64, dropout=0.1)

    def fresh():
        torch.manual_seed(0)  # dropout on: the RNG state must travel with the state too
        return TransformerClassifier(model_config, vocab_size=50)

    whole = fresh()
    expected = pretrain(whole, corpus(64), config, [0, 2, 3], 4, 0, "cpu")
    named = {"mlm": {"mlm_loss", "masked_accuracy"}, "electra": {"detection_loss", "detection_accuracy"}}[objective]
    assert expected["objective"] == objective and named < set(expected)

    class KilledError(Exception):
        pass

    saved = []

    class KillAfterFirstEpoch(Recorder):
        def state(self, state):
            saved.append(state)
            raise KilledError

    with pytest.raises(KilledError):
        pretrain(fresh(), corpus(64), config, [0, 2, 3], 4, 0, "cpu", recorder=KillAfterFirstEpoch())
    assert saved[0]["epoch"] == 1
    resumed = fresh()
    torch.manual_seed(123)  # whatever the new process's generator holds, the state's takes over
    got = pretrain(resumed, corpus(64), config, [0, 2, 3], 4, 0, "cpu", resume=saved[0])
    assert got == expected
    for name, value in whole.state_dict().items():
        assert torch.equal(resumed.state_dict()[name], value), name
