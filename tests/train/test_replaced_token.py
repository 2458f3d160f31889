"""Replaced-token detection (ELECTRA): the sampling, what counts as replaced, and that it learns."""

import torch
from fixtures import tiny_config
from test_masked_lm import corpus

from scratchformer.config import PretrainConfig, TrainConfig
from scratchformer.model.classifier import TransformerClassifier, eval_mode
from scratchformer.train.loop import Loop
from scratchformer.train.optim import Settings
from scratchformer.train.replaced_token import ReplacedTokenDetection, replaced, sample_tokens

SPECIAL = [0, 2, 3]  # PAD, [CLS], [SEP] of the test corpus; 4 is [MASK]


def test_sampling_picks_the_first_token_whose_cumulative_probability_reaches_the_draw():
    probabilities = torch.tensor([[0.2, 0.5, 0.3]], dtype=torch.float64).expand(5, 3)
    uniform = torch.tensor([0.0, 0.1999, 0.2, 0.6999, 0.7], dtype=torch.float64)
    assert sample_tokens(probabilities, uniform).tolist() == [0, 0, 1, 1, 2]


def test_sampling_follows_the_distribution():
    g = torch.Generator().manual_seed(0)
    probabilities = torch.tensor([0.1, 0.0, 0.6, 0.3], dtype=torch.float64).expand(100_000, 4)
    picked = sample_tokens(probabilities, torch.rand(100_000, generator=g, dtype=torch.float64))
    share = torch.bincount(picked, minlength=4).double() / 100_000
    assert torch.allclose(share, probabilities[0], atol=0.005)  # and never the token of probability 0
    assert share[1] == 0


def test_a_sample_equal_to_the_original_is_not_a_replacement():
    originals = torch.tensor([[2, 10, 11, 12, 3]])
    chosen = torch.tensor([[False, True, False, True, False]])
    corrupted, is_replaced = replaced(originals, chosen, torch.tensor([10, 30]))  # the first sample is the original
    assert corrupted.tolist() == [[2, 10, 11, 30, 3]]
    assert is_replaced.tolist() == [[False, False, False, True, False]]


def objective_and_batch(seed=0):
    torch.manual_seed(seed)
    model = TransformerClassifier(tiny_config(d_model=32, n_layers=2, ff_dim=64), vocab_size=50)
    rtd = ReplacedTokenDetection(model, SPECIAL, mask_id=4, mask_prob=0.15)
    ids = torch.tensor([[2, 5, 6, 7, 8, 3, 0, 0], [2, 9, 10, 11, 12, 13, 14, 3]])
    return rtd, ids


def test_the_loss_is_averaged_over_the_real_tokens_and_the_generator_shares_the_embedding():
    rtd, ids = objective_and_batch()
    inputs, labels = rtd.prepare(ids, torch.zeros(2), torch.Generator().manual_seed(0))
    assert rtd.count(labels) == 10  # 4 + 6: not [CLS], [SEP] or PAD
    assert torch.equal(inputs[ids == 0], ids[ids == 0]) and torch.equal(inputs[:, 0], ids[:, 0])
    assert rtd.generator.embed is rtd.model.embed and rtd.head.embedding is rtd.model.embed
    assert len(rtd.generator.blocks) == 1 and rtd.generator.ngrams is None
    out = rtd(inputs, labels)
    out.loss.backward()
    for module in (rtd.model.blocks[0], rtd.generator.blocks[0], rtd.detector, rtd.model.embed):
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in module.parameters())
    assert 0 <= int(out.hits) <= 10


def balanced_detection(rtd: ReplacedTokenDetection, seed: int = 1) -> float:
    """Mean of the shares of replaced tokens called replaced and of originals called original.

    The corpus's texts with 15% of their real tokens replaced by random ones: 0.5 for a detector
    that says the same of every token, or guesses.
    """
    g = torch.Generator().manual_seed(seed)
    ids = torch.stack([corpus(256).sequence(i) for i in range(256)])  # (256, 12), no PAD
    real = ~torch.isin(ids, torch.tensor(SPECIAL))
    chosen = (torch.rand(ids.shape, generator=g) < 0.15) & real
    corrupted, is_replaced = replaced(ids, chosen, torch.randint(5, 45, (int(chosen.sum()),), generator=g))
    with torch.no_grad(), eval_mode(rtd):
        h, _, _ = rtd.model.encode(corrupted)
        said = rtd.detector(h).squeeze(-1) > 0  # (256, 12)
    found = said[is_replaced].float().mean()  # replaced tokens called replaced
    kept = (~said[real & ~is_replaced]).float().mean()  # original tokens called original
    return float(found + kept) / 2


def test_electra_pretraining_learns_to_find_the_replaced_tokens():
    """Trained on a counting language, the encoder and its detection head tell replaced tokens
    from original ones far better than before training."""
    torch.manual_seed(0)
    model = TransformerClassifier(tiny_config(d_model=32, n_layers=2, ff_dim=64), vocab_size=50)
    rtd = ReplacedTokenDetection(model, SPECIAL, mask_id=4, mask_prob=0.15)
    before = balanced_detection(rtd)
    config = PretrainConfig(epochs=15, batch_size=16, lr=1e-2, objective="electra")
    loop = Loop(rtd, Settings.pretraining(config, TrainConfig()), 0, 16, "cpu", label="pretraining")
    for _ in range(config.epochs):
        loop.run_epoch(corpus(256))
    after = balanced_detection(rtd)
    assert after > 0.65 and after > before + 0.1, (before, after)
