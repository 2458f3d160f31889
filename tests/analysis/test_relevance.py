"""Signed token relevance: integrated gradients of the class margin, checked against the model itself."""

import dataclasses

import pytest
import torch

from scratchformer.analysis.predict import Predictor
from scratchformer.analysis.relevance import explain, gated, margin
from scratchformer.data.tokenization import encode, load_tokenizer
from scratchformer.data.tokenized_split import pad_batch
from scratchformer.model.checkpoint import load_checkpoint

TEXTS = ["房间很好，服务很好。", "房间太脏，服务很差。", "房间很好，服务很差。", "电脑太吵"]


@pytest.fixture(scope="module")
def model_and_ids(trained):
    model_path, tokenizer_dir = trained
    model, _ = load_checkpoint(model_path)
    tokenizer = load_tokenizer(str(tokenizer_dir))
    encoded = encode(tokenizer, TEXTS, 24)["input_ids"]
    ids = pad_batch([torch.tensor(x) for x in encoded], model.pad_id)  # (B, T), the short ones padded
    ends = {tokenizer.cls_token_id, tokenizer.sep_token_id}
    return model, ids, ends


def margins(model, ids, k, gate=None):
    """The margin of class k (B,) with every token's vectors scaled by ``gate`` (None: as they are)."""
    with torch.no_grad():
        if gate is None:
            return margin(model(ids), k)
        with gated(model, gate):
            return margin(model(ids), k)


@pytest.mark.parametrize("steps", [32, 256])
def test_relevance_sums_to_the_margin_over_the_blank_text(model_and_ids, steps):
    model, ids, ends = model_and_ids
    explained = explain(model, ids, fixed_ids=ends, steps=steps)
    attributed = (ids != model.pad_id) & ~torch.isin(ids, torch.tensor(sorted(ends)))
    baseline = margins(model, ids, explained.toward, torch.where(attributed, 0.0, 1.0))
    moved = margins(model, ids, explained.toward) - baseline  # (B,)
    assert moved.abs().max() > 1  # the texts move the margin: the check below is not 0 ≈ 0
    # Completeness: up to the quadrature error, which shrinks with the number of steps.
    tolerance = 0.02 if steps == 32 else 0.002
    assert explained.relevance.sum(dim=1).tolist() == pytest.approx(moved.tolist(), rel=tolerance, abs=tolerance)
    # Nothing on PAD, [CLS] or [SEP]: they are the same in the baseline.
    assert explained.relevance[~attributed].abs().max() == 0


def test_relevance_is_toward_the_predicted_class_and_flips_with_it(model_and_ids):
    model, ids, ends = model_and_ids
    predicted = explain(model, ids, fixed_ids=ends, steps=8)
    assert predicted.toward.tolist() == predicted.probabilities.argmax(dim=1).tolist()
    assert len(set(predicted.toward.tolist())) == 2  # both classes among the answers
    other = explain(model, ids, fixed_ids=ends, toward=1 - predicted.toward, steps=8)
    # Two classes: z_0 − z_1 = −(z_1 − z_0), so every token's contribution changes sign.
    assert other.relevance.flatten().tolist() == pytest.approx((-predicted.relevance).flatten().tolist(), abs=1e-5)
    assert (predicted.relevance < 0).any() and (predicted.relevance > 0).any()


def test_a_one_word_change_moves_the_margin_as_its_relevance_says(model_and_ids):
    """A direct check per token: blanking one token alone moves the margin in the direction of its relevance."""
    model, ids, ends = model_and_ids
    explained = explain(model, ids[:1], fixed_ids=ends, steps=64)
    full = margins(model, ids[:1], explained.toward)
    strongest = int(explained.relevance[0].abs().argmax())
    gate = torch.ones(ids[:1].shape)
    gate[0, strongest] = 0.0
    without = margins(model, ids[:1], explained.toward, gate)
    assert torch.sign(full - without) == torch.sign(explained.relevance[0, strongest])


def test_predict_reports_the_signed_relevance_largest_magnitude_first(trained):
    model_path, tokenizer_dir = trained
    predictor = Predictor(model_path, tokenizer_dir)
    (answer,) = predictor.predict([TEXTS[2]], top_k=None)  # one clause of each sentiment
    model, _ = load_checkpoint(model_path)
    tokenizer = load_tokenizer(str(tokenizer_dir))
    ids = torch.tensor(encode(tokenizer, [TEXTS[2]], 24)["input_ids"])
    ends = {tokenizer.cls_token_id, tokenizer.sep_token_id}
    expected = explain(model, ids, fixed_ids=ends)
    assert answer.label == predictor.class_names[int(expected.toward[0])]
    by_position = sorted(answer.top_tokens, key=lambda t: t["position"])
    assert [t["relevance"] for t in by_position] == pytest.approx(expected.relevance[0, 1:-1].tolist(), abs=1e-4)
    sizes = [abs(t["relevance"]) for t in answer.top_tokens]
    assert sizes == sorted(sizes, reverse=True)
    assert {t["relevance"] > 0 for t in answer.top_tokens} == {True, False}  # a mixed text pushes both ways


def test_n_gram_and_wide_branches_are_attributed_to_their_tokens():
    """With hashed n-gram embeddings and a wide bag, the tokens still account for the whole margin moved."""
    from scratchformer.config import ModelConfig
    from scratchformer.model.classifier import TransformerClassifier

    torch.manual_seed(0)
    config = ModelConfig(
        d_model=16, n_heads=2, n_layers=1, ff_dim=32, max_len=16, num_classes=2, ngram_max=2, ngram_buckets=64
    )
    model = TransformerClassifier(dataclasses.replace(config, wide_ngrams=2), 30)
    model.eval()  # no dropout in the margins measured here either
    with torch.no_grad():  # the wide rows start at zero: give them something to say
        model.wide.unigrams.weight.normal_()
        model.wide.table.weight.normal_()
        model.wide.unigrams.weight[model.pad_id] = 0  # PAD and "no n-gram here" say nothing, as in training
        model.wide.table.weight[0] = 0
    ids = torch.tensor([[1, 5, 9, 7, 2], [1, 4, 4, 2, 0]])
    explained = explain(model, ids, fixed_ids={1, 2}, steps=256)
    attributed = torch.isin(ids, torch.tensor([4, 5, 7, 9]))
    moved = margins(model, ids, explained.toward) - margins(
        model, ids, explained.toward, torch.where(attributed, 0.0, 1.0)
    )
    assert explained.relevance.sum(dim=1).tolist() == pytest.approx(moved.tolist(), rel=0.002, abs=0.002)
    # With the Transformer's head silenced the logits are the wide bag's alone, which says
    # nothing on a text of zeroed tokens: the relevance is all of the margin, measured without gates.
    with torch.no_grad():
        model.head.weight.zero_()
        model.head.bias.zero_()
    wide_only = explain(model, ids, steps=8)
    assert wide_only.relevance.abs().sum() > 0.1
    assert wide_only.relevance.sum(dim=1).tolist() == pytest.approx(
        margins(model, ids, wide_only.toward).tolist(), abs=1e-4
    )


def test_an_n_gram_members_terms_are_attributed_to_their_tokens():
    """A member's n-grams are relevant where they end, with their sign; a network that says nothing adds nothing."""
    from scratchformer.config import ModelConfig
    from scratchformer.model.classifier import Ensemble, TransformerClassifier
    from scratchformer.model.naive_bayes import NBLogistic

    torch.manual_seed(0)
    network = TransformerClassifier(ModelConfig(d_model=16, n_heads=2, n_layers=1, ff_dim=32, num_classes=2), 50)
    with torch.no_grad():  # the network's logits: its head's bias, on every text
        network.head.weight.zero_()
    nb = NBLogistic(max_n=2, buckets=64, vocab_size=50, num_classes=2, pad_id=0, scaling="tfidf")
    with torch.no_grad():
        nb.idf.fill_(1.0)
        nb.idf[0] = 0
        nb.weight[1 + 7] = torch.tensor([-2.0, 2.0])  # token 7 pushes toward class 1
        nb.weight[1 + 9] = torch.tensor([1.5, -1.5])  # token 9 toward class 0
    model = Ensemble([network], nb).eval()
    ids = torch.tensor([[3, 7, 4, 9, 5, 0]])
    shares = []
    nb.per_token.register_forward_hook(lambda _m, _i, out: shares.append(out))
    with torch.no_grad():
        logits = nb(ids)
    assert torch.allclose(shares[0].sum(dim=1) + nb.bias, logits)  # the shares add up to the logits
    assert shares[0][0, [0, 2, 4, 5]].abs().sum() == 0  # no weight on 3, 4, 5 or their bigrams; PAD says nothing
    explained = explain(model, ids, toward=torch.tensor([1]), steps=64)
    relevance = explained.relevance[0]
    assert relevance[1] > 0.05 and relevance[3] < -0.05  # 7 toward class 1, 9 away from it
    assert relevance[[0, 2, 4, 5]].abs().max() < 1e-6
    moved = margins(model, ids, explained.toward) - margins(model, ids, explained.toward, torch.zeros(1, 6))
    assert relevance.sum().item() == pytest.approx(moved.item(), abs=0.01)  # all of the margin the member moved
    # Past the networks' positional table (model.max_len 4), the member still reads token 9 and is credited for it.
    config = ModelConfig(d_model=16, n_heads=2, n_layers=1, ff_dim=32, num_classes=2, max_len=4)
    short = Ensemble([TransformerClassifier(config, 50)], nb).eval()
    relevance = explain(short, ids, toward=torch.tensor([1]), steps=64).relevance[0]
    assert relevance[3] < -0.05
