import torch
import torch.nn.functional as F

from scratchformer.ngrams import HashedNgramEmbedding, ngram_ids

PAD = 0


def test_same_ngram_same_bucket_anywhere():
    ids = torch.tensor([[5, 6, 7, 5, 6, 7], [9, 5, 6, 7, 0, 0]])
    bigrams = ngram_ids(ids, 2, buckets=1000, pad_id=PAD)
    trigrams = ngram_ids(ids, 3, buckets=1000, pad_id=PAD)
    # (5, 6) ends at positions 1 and 4 of row 0 and at position 2 of row 1.
    assert bigrams[0, 1] == bigrams[0, 4] == bigrams[1, 2]
    assert trigrams[0, 2] == trigrams[0, 5] == trigrams[1, 3]  # (5, 6, 7)
    assert bigrams[0, 1] != bigrams[0, 2]  # (5, 6) vs (6, 7)
    assert trigrams[0, 2] != bigrams[0, 2]  # the order is part of the key


def test_ngram_order_matters():
    forward = ngram_ids(torch.tensor([[5, 6]]), 2, buckets=10**6, pad_id=PAD)
    backward = ngram_ids(torch.tensor([[6, 5]]), 2, buckets=10**6, pad_id=PAD)
    assert forward[0, 1] != backward[0, 1]


def test_ngrams_before_the_start_or_touching_pad_get_row_zero():
    ids = torch.tensor([[5, 6, 7, 0, 0]])
    bigrams = ngram_ids(ids, 2, 1000, PAD)[0]
    assert bigrams[0] == 0 and bigrams[1:3].min() > 0 and bigrams[3:].tolist() == [0, 0]
    trigrams = ngram_ids(ids, 3, 1000, PAD)[0]
    assert trigrams[:2].tolist() == [0, 0] and trigrams[2] > 0 and trigrams[3:].tolist() == [0, 0]


def test_buckets_stay_in_range():
    ids = torch.randint(1, 21128, (64, 100), generator=torch.Generator().manual_seed(0))
    for n in (2, 3, 4):
        b = ngram_ids(ids, n, buckets=97, pad_id=PAD)
        assert b[:, n - 1 :].min() >= 1 and b.max() <= 97
        assert len(b.unique()) > 90  # spread over (nearly) all rows


def test_embedding_ignores_padding_and_trains_only_seen_rows():
    emb = HashedNgramEmbedding(max_n=3, buckets=50, d_model=8, pad_id=PAD)
    ids = torch.tensor([[5, 6, 7]])
    out = emb(ids)
    padded = emb(F.pad(ids, (0, 4)))
    assert torch.equal(padded[:, :3], out)
    assert torch.all(padded[:, 3:] == 0)
    assert torch.all(out[0, 0] == 0)  # no n-gram ends at the first token
    out.sum().backward()
    rows = torch.cat([ngram_ids(ids, n, 50, PAD) for n in (2, 3)], dim=1).unique()
    touched = emb.table.weight.grad.abs().sum(1).nonzero().flatten()
    assert set(touched.tolist()) == set(rows.tolist()) - {0}
