"""The NB-weighted n-gram member: ratios by hand, presence not counts, padding-blind, a real fit, its share,
and the out-of-fold teacher: folds read from the text, and no text answered by a model that saw it."""

import math

import pytest
import torch
from test_classifier import VOCAB, make, sentences

from scratchformer.analysis.acceptance import padding_leak
from scratchformer.config import NBConfig
from scratchformer.data.tokenized_split import TokenizedSplit
from scratchformer.model.classifier import Ensemble
from scratchformer.model.naive_bayes import NBLogistic, OutOfFold, text_folds
from scratchformer.train.ensemble import fit_nb

PAD = 0


def test_the_ratio_is_the_log_count_ratio_of_presence_by_class():
    nb = NBLogistic(max_n=1, buckets=8, vocab_size=10, num_classes=2, pad_id=PAD)
    # Token 3 is in both positive texts (twice in one: counted once), token 4 in the negative one.
    ids = torch.tensor([[3, 3, 5], [3, 0, 0], [4, 5, 0]])
    labels = torch.tensor([1, 1, 0])
    nb.fit_scaling([(ids, labels)])
    # Class 1 counts p over features; the rest (class 0) q; both +1, normalised by their sums.
    p = {3: 1 + 2, 4: 1 + 0, 5: 1 + 1}
    q = {3: 1 + 0, 4: 1 + 1, 5: 1 + 1}
    features = 1 + 10 + 8
    p_sum = sum(p.values()) + (features - 1 - 3)  # every other feature but row 0: count 0, +1
    q_sum = sum(q.values()) + (features - 1 - 3)
    for token in (3, 4, 5):
        expected = math.log((p[token] / p_sum) / (q[token] / q_sum))
        assert abs(nb.ratio[token + 1, 1].item() - expected) < 1e-6, token
        assert abs(nb.ratio[token + 1, 0].item() + expected) < 1e-6, token  # two classes: r_0 = -r_1
    assert nb.ratio[0].abs().sum() == 0  # "no feature" says nothing


def test_tfidf_features_are_the_tfidf_baselines_and_ignore_what_train_never_held():
    from sklearn.feature_extraction.text import TfidfVectorizer

    train = torch.tensor([[3, 3, 3, 5, 6], [3, 4, 0, 0, 0], [4, 5, 5, 0, 0], [6, 6, 7, 0, 0]])
    labels = torch.tensor([1, 1, 0, 0])
    nb = NBLogistic(max_n=1, buckets=8, vocab_size=10, num_classes=2, pad_id=PAD, scaling="tfidf")
    nb.fit_scaling([(train, labels)])
    words = lambda ids: [" ".join(f"t{t}" for t in row if t != PAD) for row in ids.tolist()]  # noqa: E731
    tfidf = TfidfVectorizer(analyzer="word", token_pattern=r"\S+", sublinear_tf=True).fit(words(train))
    # Token 9 is in no train text: scikit-learn has no column for it, and here it has no idf.
    new = torch.tensor([[3, 3, 5, 9, 9, 9], [7, 9, 0, 0, 0, 0]])
    for ids in (train, new):
        expected = tfidf.transform(words(ids)).toarray()
        feats, values, _, _ = nb.features(ids)
        for i, row in enumerate(ids.tolist()):
            got = {f"t{f - 1}": v for f, v in zip(feats[i].tolist(), values[i].tolist(), strict=True) if f}
            for token in {f"t{t}" for t in row if t != PAD}:
                column = tfidf.vocabulary_.get(token)
                want = 0.0 if column is None else expected[i, column]
                assert abs(got[token] - want) < 1e-6, (i, token, got[token], want)


def test_a_tfidf_member_survives_the_checkpoint_as_tfidf(tmp_path):
    from scratchformer.model.checkpoint import load_checkpoint, save_checkpoint

    nb = NBLogistic(max_n=2, buckets=64, vocab_size=VOCAB, num_classes=2, pad_id=PAD, scaling="tfidf")
    nb.fit([(sentences(), torch.tensor([0, 1, 1]))], c=10.0)
    ensemble = Ensemble([make()], nb).eval()
    save_checkpoint(tmp_path / "m.pt", ensemble)
    loaded, _ = load_checkpoint(tmp_path / "m.pt")
    assert loaded.nb.scaling == "tfidf" and torch.equal(loaded.nb.idf, nb.idf)
    assert torch.equal(loaded(sentences()), ensemble(sentences()))


def random_member(max_n, seed):
    nb = NBLogistic(max_n=max_n, buckets=64, vocab_size=VOCAB, num_classes=2, pad_id=PAD)
    torch.manual_seed(seed)
    nb.ratio.normal_()
    nb.ratio[0] = 0  # as a fit leaves it: "no feature here" says nothing
    nb.weight.data.normal_()
    return nb


def test_a_repeated_ngram_counts_once_and_padding_changes_nothing():
    unigrams = random_member(1, seed=0)
    assert torch.equal(unigrams(torch.tensor([[7, 7, 7, 8]])), unigrams(torch.tensor([[8, 7]])))  # presence, order-free
    nb = random_member(3, seed=0)
    once, twice = torch.tensor([[7, 8, 9]]), torch.tensor([[7, 8, 9, 7, 8, 9]])
    # 789789 holds 7, 8, 9, 78, 89, 789 (each once, as in 789) and adds 97, 978, 897.
    assert set(nb.features(once)[0].unique().tolist()) < set(nb.features(twice)[0].unique().tolist())
    padded = torch.tensor([[5, 6, 7, 8, PAD, PAD, PAD]])
    assert torch.equal(nb(padded), nb(padded[:, :4]))


def test_the_fit_learns_a_sentiment_bigram_that_unigrams_cannot_see():
    # Class 1 iff the bigram (1, 2) occurs; the unigrams 1 and 2 occur equally in both classes.
    torch.manual_seed(0)
    rows, labels = [], []
    for i in range(200):
        body = torch.randint(3, VOCAB, (8,))
        if i % 2:
            body[2:4] = torch.tensor([1, 2])
        else:
            body[2:4] = torch.tensor([2, 1])
        rows.append(body)
        labels.append(i % 2)
    ids, y = torch.stack(rows), torch.tensor(labels)
    unigram = NBLogistic(max_n=1, buckets=256, vocab_size=VOCAB, num_classes=2, pad_id=PAD)
    bigram = NBLogistic(max_n=2, buckets=256, vocab_size=VOCAB, num_classes=2, pad_id=PAD)
    assert bigram.fit([(ids, y)], c=1.0) == 1.0
    assert unigram.fit([(ids, y)], c=1.0) < 0.9


def test_the_ensemble_gives_the_nb_member_half_the_vote():
    members = [make(), make(n_layers=1)]
    nb = random_member(2, seed=1)
    ids = sentences()
    ensemble = Ensemble(members, nb).eval()
    transformers = (members[0](ids).softmax(-1) + members[1](ids).softmax(-1)) / 2
    by_hand = (0.5 * transformers + 0.5 * nb(ids).softmax(-1)).log()
    assert torch.allclose(ensemble(ids), by_hand, atol=1e-6)
    assert padding_leak(ensemble, [ids[0, :4], ids[1]]).value < 1e-5


def test_an_ensemble_with_an_nb_member_survives_the_checkpoint(tmp_path):
    from scratchformer.model.checkpoint import load_checkpoint, save_checkpoint

    nb = random_member(2, seed=2)
    ensemble = Ensemble([make()], nb).eval()
    save_checkpoint(tmp_path / "m.pt", ensemble)
    loaded, _ = load_checkpoint(tmp_path / "m.pt")
    assert isinstance(loaded, Ensemble) and loaded.nb is not None
    assert torch.equal(loaded(sentences()), ensemble(sentences()))


def test_a_texts_fold_is_read_from_the_text_alone_and_the_folds_are_even():
    ids = torch.randint(3, VOCAB, (2000, 12), generator=torch.Generator().manual_seed(0))
    folds = text_folds(ids, 5, PAD)
    padded = torch.cat([ids, torch.full((2000, 4), PAD)], dim=1)
    assert torch.equal(text_folds(padded, 5, PAD), folds)  # blind to padding: any batch width gives the same fold
    assert torch.equal(text_folds(ids[[3, 3, 7]], 5, PAD), folds[[3, 3, 7]])  # a copy of a text is in its fold
    assert torch.bincount(folds, minlength=5).min() > 0.9 * 2000 / 5


class Vocabulary:
    """What :func:`fit_nb` reads of a tokenizer: its size and its PAD id."""

    pad_token_id, cls_token_id, sep_token_id = PAD, 1, 2

    def __len__(self) -> int:
        return VOCAB


def test_an_out_of_fold_teacher_answers_no_text_from_memory():
    """Random labels: fit on all of train, NB memorises them; out of fold, each text meets a model that never saw it."""
    g = torch.Generator().manual_seed(0)
    texts = [torch.randint(3, VOCAB, (12,), generator=g) for _ in range(400)]
    labels = torch.randint(0, 2, (400,), generator=g)
    train = TokenizedSplit.from_sequences(texts, labels)
    accuracy = {}
    for k in (1, 4):
        teach = NBConfig(ngrams=3, buckets=4096, role="teacher", distill=0.5, distill_folds=k)
        fitted = fit_nb(teach, 2, Vocabulary(), train_split=train, val_split=train)
        accuracy[k] = fitted.train_accuracy
        assert isinstance(fitted.model, OutOfFold) == (k > 1) and fitted.out_of_fold is None
    assert accuracy[1] > 0.95  # in sample: the labels, memorised
    assert 0.35 < accuracy[4] < 0.65  # out of fold: chance, as on any text it never saw
    # A base is the model fit on all of train (it memorised the labels); its k models answer train out of fold.
    base = NBConfig(ngrams=3, buckets=4096, role="base", distill_folds=4)
    fitted = fit_nb(base, 2, Vocabulary(), train_split=train, val_split=train)
    assert isinstance(fitted.model, NBLogistic) and fitted.val_accuracy > 0.95
    assert isinstance(fitted.out_of_fold, OutOfFold) and len(fitted.out_of_fold.models) == 4
    assert 0.35 < fitted.train_accuracy < 0.65
    assert fitted.base().train is fitted.out_of_fold and fitted.base().full is fitted.model


def test_the_fit_reads_the_longer_train_split_and_draws_each_text_fold_from_the_cut():
    """nb.fit_len: the fit learns from what the model's cut leaves out; out of fold, each text is still
    answered by the model that never saw it, as the networks' batches (the cut ids) route it."""
    g = torch.Generator().manual_seed(0)
    good, bad, n, cut = 3, 4, 400, 8
    labels = torch.randint(0, 2, (n,), generator=g)
    long = torch.randint(5, VOCAB, (n, 24), generator=g)
    long[:, 20] = torch.where(labels == 1, good, bad)  # the only sign of the label, past the cut
    short = torch.randint(5, VOCAB, (n, cut), generator=g)
    short[:, 2] = torch.where(labels == 1, good, bad)  # validation: short reviews that carry it
    split = TokenizedSplit.from_sequences
    train, whole, val = split(list(long[:, :cut]), labels), split(list(long), labels), split(list(short), labels)
    member = NBConfig(ngrams=1, buckets=64, scaling="tfidf")
    assert fit_nb(member, 2, Vocabulary(), train_split=train, val_split=val).val_accuracy < 0.65
    assert fit_nb(member, 2, Vocabulary(), train_split=train, val_split=val, fit_split=whole).val_accuracy > 0.95
    # Random labels, memorised: a text answered by a model that saw it (folds drawn from the longer ids) is right.
    noise = torch.randint(0, 2, (n,), generator=g)
    train, whole = split(list(long[:, :cut]), noise), split(list(long), noise)
    base = NBConfig(ngrams=2, buckets=4096, role="base", distill_folds=4)
    folded = fit_nb(base, 2, Vocabulary(), train_split=train, val_split=train, fit_split=whole).out_of_fold
    with torch.no_grad():
        right = (folded(long[:, :cut]).argmax(dim=1) == noise).float().mean().item()
    assert 0.35 < right < 0.65


def test_a_member_that_skips_the_markers_reads_only_the_texts_tokens(tmp_path):
    """nb.special_tokens false: [CLS] and [SEP] are padding to the member, so a text's features are its bare
    tokens' (no marker feature, no n-gram across one); the skip survives a checkpoint, and a description
    from before it skips nothing."""
    from scratchformer.model.checkpoint import load_checkpoint, save_checkpoint

    cls, sep = Vocabulary.cls_token_id, Vocabulary.sep_token_id
    ids = torch.tensor([[cls, 5, 6, 7, sep, PAD], [cls, 5, sep, PAD, PAD, PAD]])
    bare = ids.masked_fill((ids == cls) | (ids == sep), PAD)
    split = TokenizedSplit.from_sequences([row[row != PAD] for row in ids], torch.tensor([0, 1]))
    member = NBConfig(ngrams=3, buckets=64, special_tokens=False)
    skipping = fit_nb(member, 2, Vocabulary(), train_split=split, val_split=split).model
    assert skipping.skip == (cls, sep)
    plain = NBLogistic(max_n=3, buckets=64, vocab_size=VOCAB, num_classes=2, pad_id=PAD)
    for got, want in zip(skipping.distinct(ids), plain.distinct(bare), strict=True):
        assert torch.equal(got, want)
    assert not torch.equal(plain.distinct(ids)[0], plain.distinct(bare)[0])  # a plain member reads the markers
    save_checkpoint(tmp_path / "m.pt", Ensemble([make()], skipping).eval())
    assert load_checkpoint(tmp_path / "m.pt")[0].nb.skip == (cls, sep)
    old = {"max_n": 3, "buckets": 64, "scaling": "tfidf"}
    assert NBLogistic.from_description(old, VOCAB, 2, PAD).skip == ()


def test_a_tokenizer_without_a_marker_has_nothing_of_it_skipped():
    class NoCls(Vocabulary):
        cls_token_id = None  # a tokenizer that adds no [CLS]

    split = TokenizedSplit.from_sequences([torch.tensor([5, 6, 2]), torch.tensor([7, 2])], torch.tensor([0, 1]))
    member = NBConfig(ngrams=2, buckets=64, special_tokens=False)
    assert fit_nb(member, 2, NoCls(), train_split=split, val_split=split).model.skip == (NoCls.sep_token_id,)


@pytest.mark.parametrize("scaling", ["nb", "tfidf"])
def test_two_fits_give_the_same_weights_bit_for_bit(scaling):
    """The fit is full-batch and seedless, so a rerun must give the same member: the gradient's sums over texts
    that share a feature must come in a fixed order (an indexing gradient on CPU adds them in a racy one)."""
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1, 60, (3000, 48), generator=g)
    labels = (ids[:, :4] < 30).sum(dim=1).ge(2).long()
    weights = []
    for _ in range(3):
        nb = NBLogistic(max_n=2, buckets=32, vocab_size=64, num_classes=2, pad_id=PAD, scaling=scaling)
        nb.fit([(ids[i : i + 500], labels[i : i + 500]) for i in range(0, 3000, 500)], c=10.0, max_iter=30)
        weights.append(nb.weight.detach().clone())
    assert all(torch.equal(weights[0], w) for w in weights[1:])


def test_the_weightings_a_folder_may_name_are_those_the_config_takes():
    import typing

    from scratchformer.model.naive_bayes import SCALINGS

    assert typing.get_args(typing.get_type_hints(NBConfig)["scaling"]) == SCALINGS
