"""Hashed n-gram embeddings: each token also sees the n-grams that end at it.

bert-base-chinese splits Chinese into single characters, but much of a review's
sentiment sits in multi-character words (不错 "not bad", 失望 "disappointed",
一般 "so-so"). Attention can learn to combine neighbouring characters, but from
9,600 reviews that is slow to learn; the bag of character n-grams that a linear
model reads gets it for free. Here every position t also gets the embedding of
the bigram (t-1, t), the trigram (t-2, t-1, t), … up to ``max_n``, added to the
token's own embedding, as character-bigram embeddings do in Chinese tagging
models and fastText does for words.

There is no n-gram vocabulary to build or ship: an n-gram's token ids are hashed
into one of ``buckets`` rows (the "hashing trick"), so rare n-grams may share a
row. An n-gram that reaches before the first token or into PAD gets row 0, which
is zero and never trained, so padding changes nothing.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

_MODULUS = 2_147_483_647  # 2^31 - 1, a prime: hashes stay well inside int64 while being built
_BASE = 1_000_003  # a prime above any vocabulary size we use
_ORDER_SALT = 7_919  # keeps a bigram and a trigram with equal running hashes apart


def ngram_ids_upto(input_ids: Tensor, max_n: int, buckets: int, pad_id: int) -> list[Tensor]:
    """input_ids (B, T) -> for n = 2..max_n, (B, T) bucket of the n-gram ending at each position.

    Buckets are in 1..buckets; 0 where the n-gram would reach before the sequence
    start or touch a PAD. The hash of the n-gram extends that of the (n-1)-gram by
    one earlier token, so every order comes out of one right-to-left pass.
    """
    T = input_ids.size(1)
    key = input_ids.clone()  # running hash of tokens t-k..t
    valid = input_ids != pad_id
    orders = []
    for k in range(1, max_n):
        earlier = F.pad(input_ids, (k, 0), value=pad_id)[:, :T]  # (B, T): the token k places back
        key = (key * _BASE + earlier) % _MODULUS
        valid = valid & (earlier != pad_id)
        n = k + 1
        orders.append(((key * _ORDER_SALT + n) % buckets + 1).masked_fill(~valid, 0))
    return orders


def ngram_ids(input_ids: Tensor, n: int, buckets: int, pad_id: int) -> Tensor:
    """The buckets (B, T) of the n-grams of one order ``n`` >= 2 (see :func:`ngram_ids_upto`)."""
    return ngram_ids_upto(input_ids, n, buckets, pad_id)[-1]


class HashedNgramEmbedding(nn.Module):
    """Sum of the embeddings of the 2..max_n-grams ending at each token: (B, T) -> (B, T, C).

    The rows start as N(0, ``init_std``^2). With nn.Embedding's std 1, an
    n-gram that a handful of train texts contain keeps a row that is mostly
    its random start: on a new text it adds a vector as large as a token's
    that carries nothing. A small std (0: zeros) lets an n-gram add only what
    training put in its row (fastText starts its n-gram rows near 0 too).
    """

    def __init__(self, max_n: int, buckets: int, d_model: int, pad_id: int, init_std: float = 1.0) -> None:
        super().__init__()
        self.max_n = max_n
        self.buckets = buckets
        self.pad_id = pad_id
        # Row 0 stands for "no n-gram here": zero and never updated, like the PAD token.
        self.table = nn.Embedding(buckets + 1, d_model, padding_idx=0)
        with torch.no_grad():  # scale the N(0, 1) draw: no new random numbers, and x * 1.0 is x exactly
            self.table.weight.mul_(init_std)

    def forward(self, input_ids: Tensor, orders: list[Tensor] | None = None) -> Tensor:
        """``orders``: the 2..max_n-gram buckets when the caller has them already (:func:`ngram_ids_upto`)."""
        orders = orders if orders is not None else ngram_ids_upto(input_ids, self.max_n, self.buckets, self.pad_id)
        # One lookup for every order, not one per order: the table's gradient is a
        # dense (buckets + 1, C) tensor per lookup, and zeroing and summing those
        # costs more than the rest of the step once the table has ~10^6 rows
        # (benchmarks/ngram_table.py prints the ratio).
        ids = torch.stack(orders[: self.max_n - 1])  # (n-1, B, T)
        rows = _sparse_lookup(self.table, ids) if self.training and self.table.sparse else self.table(ids)
        return rows.sum(dim=0)  # (n-1, B, T, C) -> (B, T, C)


@torch.compiler.disable
def _sparse_lookup(table: nn.Embedding, ids: Tensor) -> Tensor:
    """``table(ids)``, run as is under ``torch.compile``: a lookup whose gradient is sparse stays out of the graph.

    Inductor cannot build a sparse gradient (it needs ``nonzero``, whose size depends on the
    data), and in the graph such a lookup splits it at every call. Run as is, it is one input
    of the compiled graph, and its backward fills only the rows the batch used.
    """
    return table(ids)


class WideNgramBag(nn.Module):
    """A linear model over the bag of a text's 1..max_n-grams, read beside the Transformer.

    The classical reference (TF-IDF over character n-grams + a linear classifier)
    reads every n-gram of the review at once and beats small Transformers trained
    from scratch on ~10k reviews; its mistakes differ from theirs. This branch is
    that linear model inside the network ("wide & deep", Cheng et al. 2016): each
    token and each hashed 2..max_n-gram has a row of K class scores, and the
    branch adds Σ rows / √(number of n-grams) to the Transformer's logits (the
    √ plays the part of TF-IDF's L2 normalisation of a bag). Both are trained
    together, on the same loss. Rows start at zero, so the untrained branch says
    nothing; PAD and the n-grams that touch it have zero rows that never train,
    so padding changes nothing here either.
    """

    def __init__(self, max_n: int, buckets: int, vocab_size: int, num_classes: int, pad_id: int) -> None:
        super().__init__()
        self.max_n, self.buckets, self.pad_id = max_n, buckets, pad_id
        self.unigrams = nn.Embedding(vocab_size, num_classes, padding_idx=pad_id)
        self.table = nn.Embedding(buckets + 1, num_classes, padding_idx=0)  # row 0: no n-gram here
        nn.init.zeros_(self.unigrams.weight)
        nn.init.zeros_(self.table.weight)

    def forward(self, input_ids: Tensor, orders: list[Tensor] | None = None) -> Tensor:
        """input_ids (B, T) -> class scores (B, K); ``orders`` as in :class:`HashedNgramEmbedding`."""
        orders = orders if orders is not None else ngram_ids_upto(input_ids, self.max_n, self.buckets, self.pad_id)
        scores = self.unigrams(input_ids).sum(dim=1)  # (B, K)
        count = (input_ids != self.pad_id).sum(dim=1)  # (B,)
        for ids in orders[: self.max_n - 1]:
            scores = scores + self.table(ids).sum(dim=1)
            count = count + (ids != 0).sum(dim=1)
        return scores / count.clamp(min=1).to(scores.dtype).sqrt()[:, None]  # (B, K)
