import torch
import torch.nn.functional as F
from fixtures import tiny_config

from scratchformer.model.ngrams import HashedNgramEmbedding, ngram_ids

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


def test_the_init_std_scales_the_same_draw_and_zero_rows_learn_only_what_a_batch_read():
    torch.manual_seed(3)
    default = HashedNgramEmbedding(max_n=3, buckets=50, d_model=8, pad_id=PAD)
    torch.manual_seed(3)
    small = HashedNgramEmbedding(max_n=3, buckets=50, d_model=8, pad_id=PAD, init_std=0.1)
    assert default.table.weight.std() > 0.5  # nn.Embedding's N(0, 1)
    torch.testing.assert_close(small.table.weight, 0.1 * default.table.weight, rtol=0, atol=0)

    zero = HashedNgramEmbedding(max_n=3, buckets=50, d_model=8, pad_id=PAD, init_std=0.0)
    ids = torch.tensor([[5, 6, 7, 8]])
    assert torch.equal(zero(ids), torch.zeros(1, 4, 8))  # an untrained n-gram adds nothing
    zero(ids).sum().backward()
    with torch.no_grad():
        zero.table.weight -= 0.1 * zero.table.weight.grad
    moved = zero.table.weight.abs().sum(1).nonzero().flatten()
    rows = torch.cat([ngram_ids(ids, n, 50, PAD) for n in (2, 3)], dim=1).unique()
    assert set(moved.tolist()) == set(rows.tolist()) - {0}  # a row the batch did not read stays zero


def _order_task(n=200, seed=0):
    """Sequences of 1s and 2s with as many of each; label = whether the bigram (1, 2) occurs more than (2, 1)."""
    g = torch.Generator().manual_seed(seed)
    ids, labels = [], []
    while len(ids) < n:
        x = torch.tensor([1, 2] * 4)[torch.randperm(8, generator=g)]
        a = int(((x[:-1] == 1) & (x[1:] == 2)).sum())
        b = int(((x[:-1] == 2) & (x[1:] == 1)).sum())
        if a != b:
            ids.append(torch.cat([x, torch.zeros(4, dtype=torch.long)]))  # padded to 12
            labels.append(int(a > b))
    return torch.stack(ids), torch.tensor(labels)


def _fit_wide(max_n):
    from scratchformer.model.ngrams import WideNgramBag

    ids, labels = _order_task()
    wide = WideNgramBag(max_n, 1024, vocab_size=5, num_classes=2, pad_id=0)
    assert torch.equal(wide(ids), torch.zeros(len(ids), 2))  # zero rows: the untrained branch says nothing
    optimizer = torch.optim.Adam(wide.parameters(), lr=0.1)
    for _ in range(200):
        loss = torch.nn.functional.cross_entropy(wide(ids), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return wide, (wide(ids).argmax(1) == labels).float().mean().item()


def test_the_wide_branch_reads_word_order_through_its_bigrams_and_ignores_padding():
    # Every sequence has four 1s and four 2s: unigrams alone cannot tell the classes apart.
    _, unigram_accuracy = _fit_wide(1)
    wide, bigram_accuracy = _fit_wide(2)
    assert unigram_accuracy < 0.65 and bigram_accuracy > 0.95
    ids, _ = _order_task(20, seed=1)
    assert torch.allclose(wide(ids), wide(ids[:, :8]), atol=1e-6)  # the padded and unpadded texts agree
    assert wide.unigrams.weight[0].abs().sum() == 0 and wide.table.weight[0].abs().sum() == 0


def test_a_wide_and_deep_model_has_no_padding_leak():
    from scratchformer.analysis import acceptance
    from scratchformer.model.classifier import TransformerClassifier

    torch.manual_seed(0)
    model = TransformerClassifier(
        tiny_config(wide_ngrams=3, d_model=64, n_heads=4, n_layers=2, ff_dim=128, dropout=0.1), 30
    ).eval()
    torch.nn.init.normal_(model.wide.table.weight)  # trained-looking rows (row 0 included: it must stay unused)
    torch.nn.init.normal_(model.wide.unigrams.weight)
    model.wide.unigrams.weight.data[0] = 0
    model.wide.table.weight.data[0] = 0
    sentences = [torch.randint(1, 30, (n,)) for n in (3, 5, 8, 11)]
    leak = acceptance.padding_leak(model, sentences)
    assert leak.checked > 0 and leak.value < 1e-5


def test_the_model_hashes_once_and_both_readers_get_their_own_orders():
    from scratchformer.model.classifier import TransformerClassifier

    torch.manual_seed(0)
    for ngram_max, wide in ((3, 2), (2, 3)):
        model = TransformerClassifier(
            tiny_config(
                ngram_max=ngram_max, wide_ngrams=wide, d_model=64, n_heads=4, n_layers=2, ff_dim=128, dropout=0.1
            ),
            50,
        )
        model.eval()
        torch.nn.init.normal_(model.wide.table.weight)
        model.wide.table.weight.data[0] = 0
        ids = torch.randint(1, 50, (3, 10))
        h, pad, _ = model.encode(ids)  # each reader hashing on its own
        alone = model.head(model.pool(h, pad)[0]) + model.wide(ids)
        assert torch.allclose(model(ids), alone, atol=1e-6)


def test_under_torch_compile_only_the_sparse_lookup_leaves_the_graph():
    """Eval compiles whole; training with sparse n-gram rows breaks the graph at that lookup only.

    ``_sparse_lookup`` is kept out of the graph (Inductor cannot build a sparse gradient);
    everything else must stay in it, or a compiled step pays a graph break per call. (Dynamo
    counts one break in each frame the call sits in, so the count is not 1; every reason is it.)
    """
    from scratchformer.model.classifier import TransformerClassifier
    from scratchformer.train.optim import sparse_tables

    torch.manual_seed(0)
    model = TransformerClassifier(tiny_config(ngram_max=3, wide_ngrams=2, ngram_buckets=64, dropout=0.1), 50)
    ids = torch.randint(1, 50, (2, 8))
    torch._dynamo.reset()
    assert torch._dynamo.explain(model.eval())(ids).graph_break_count == 0
    sparse_tables(model)
    torch._dynamo.reset()
    training = torch._dynamo.explain(model.train())(ids)
    assert training.graph_break_count > 0
    assert all("_sparse_lookup" in str(reason) for reason in training.break_reasons)
