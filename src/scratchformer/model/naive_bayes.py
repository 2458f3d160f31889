"""A logistic regression over token n-grams, as one member of the ensemble: NB- or TF-IDF-weighted.

One classical reference for sentiment is "NBSVM" (Wang
& Manning, 2012): a linear classifier over the *presence* of each n-gram,
every feature scaled by its log-count ratio

    r_f = log( (p_f / |p|) / (q_f / |q|) ),   p = 1 + Σ x over the class's texts, q = 1 + Σ x over the rest,

so that an n-gram seen mostly in positive reviews starts out as positive
evidence and the L2 penalty shrinks the weights towards Naive Bayes rather
than towards zero. With K > 2 classes there is one ratio per class (that class
against the rest) and one column of weights per class. The other is TF-IDF: each
n-gram's sublinear count 1 + log(count) times its inverse document frequency
log((1 + N) / (1 + df)) + 1 over the N train texts, each text's vector scaled to
length 1, as scikit-learn's ``TfidfVectorizer(sublinear_tf=True)`` gives the TF-IDF
LR baseline; on reviews of another kind it carries further (docs/results.md, short
reviews). ``scaling`` picks one.

It reads the same token ids as the Transformer (bert-base-chinese splits Chinese
into characters, so token n-grams are character n-grams) and hashes the 2..max_n-grams
like :mod:`scratchformer.model.ngrams`. The tokens ``skip`` names it reads as padding: the
tokenizer's [CLS] and [SEP] are no part of a review's text, and an n-gram across them marks
where a review starts or ends, which TF-IDF LR's characters do not say (``nb.special_tokens``).
It has no parameter in common with the Transformer members: it is fit before them, on the
train split alone, in one full-batch L-BFGS run, and makes different mistakes.
:class:`~scratchformer.model.classifier.Ensemble` gives it the same weight as all Transformer
members together.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import torch
from torch import Tensor, nn

from scratchformer.model.ngrams import ngram_ids_upto

Batches = list[tuple[Tensor, Tensor]]  # (input_ids (B, T), labels (B,)), the train split in order
SCALINGS = ("nb", "tfidf")  # the weightings a member may have (nb.scaling); a received folder is checked against it


class Features(NamedTuple):
    """The distinct features of each text (B, L): their ids (0: none), values, and the token each first ends at."""

    ids: Tensor
    values: Tensor
    tokens: Tensor
    width: int  # T: the tokens a text has room for


class NBLogistic(nn.Module):
    """input_ids (B, T) -> logits (B, K) from the 1..max_n-grams in each text.

    ``scaling`` nb: each n-gram's presence, weighted by its log-count ratio (NBSVM);
    tfidf: its TF-IDF value (both above). ``skip``: token ids read as padding (no feature,
    and no n-gram across them), e.g. the tokenizer's [CLS] and [SEP].
    """

    def __init__(
        self,
        max_n: int,
        buckets: int,
        vocab_size: int,
        num_classes: int,
        pad_id: int,
        scaling: Literal["nb", "tfidf"] = "nb",
        skip: tuple[int, ...] = (),
    ) -> None:
        super().__init__()
        self.max_n, self.buckets, self.vocab_size, self.pad_id = max_n, buckets, vocab_size, pad_id
        self.scaling, self.skip = scaling, tuple(skip)
        # the same ids as a tensor, made once and moved with the module; not saved (the description holds them)
        self.register_buffer("skip_ids", torch.tensor(self.skip, dtype=torch.long), persistent=False)
        features = 1 + vocab_size + buckets  # row 0: "no feature here" (PAD, n-grams touching PAD, repeats)
        if scaling == "nb":
            self.register_buffer("ratio", torch.zeros(features, num_classes))  # r, fixed once fit
        elif scaling == "tfidf":
            self.register_buffer("idf", torch.zeros(features))  # fixed once fit; 0 for row 0
        else:
            raise ValueError(f"scaling must be one of {', '.join(SCALINGS)}, got {scaling!r}")
        self.weight = nn.Parameter(torch.zeros(features, num_classes))
        self.bias = nn.Parameter(torch.zeros(num_classes))
        # Each token's share of the logits (B, T, K): an n-gram's term sits on the token where it
        # first ends. A no-op here; it is where relevance (analysis/relevance.py) gates each token.
        self.per_token = nn.Identity()

    def description(self) -> dict:
        """What a checkpoint or a model folder records to rebuild it: :meth:`from_description` reads it back."""
        described = {"max_n": self.max_n, "buckets": self.buckets, "scaling": self.scaling}
        return described | ({"skip": list(self.skip)} if self.skip else {})

    @classmethod
    def from_description(cls, description: dict, vocab_size: int, num_classes: int, pad_id: int) -> NBLogistic:
        """The untrained member a :meth:`description` names (one written before ``scaling`` existed: nb;
        before ``skip``: none skipped)."""
        scaling, skip = description.get("scaling", "nb"), tuple(description.get("skip", ()))
        return cls(description["max_n"], description["buckets"], vocab_size, num_classes, pad_id, scaling, skip)

    def distinct(self, input_ids: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """(B, T) -> (B, max_n * T) feature ids, each distinct feature of a text once (the rest 0), its count,
        and the token it first ends at."""
        if self.skip:  # a skipped token is padding here: no feature, and no n-gram reaches across it
            skipped = torch.isin(input_ids, self.skip_ids)
            input_ids = input_ids.masked_fill(skipped, self.pad_id)
        unigrams = (input_ids + 1).masked_fill(input_ids == self.pad_id, 0)
        longer = [
            torch.where(ids > 0, ids + self.vocab_size, 0)
            for ids in ngram_ids_upto(input_ids, self.max_n, self.buckets, self.pad_id)
        ]
        ids, order = torch.cat([unigrams, *longer], dim=1).sort(dim=1, stable=True)  # equal ids: earliest first
        first = torch.ones_like(ids, dtype=torch.bool)
        first[:, 1:] = ids[:, 1:] != ids[:, :-1]
        run = first.long().cumsum(dim=1) - 1  # (B, L): which run of equal ids each position is in
        counts = torch.zeros_like(ids).scatter_add_(1, run, torch.ones_like(ids)).gather(1, run)
        return ids.masked_fill(~first, 0), counts, order % input_ids.size(1)

    def scaled(self, ids: Tensor, counts: Tensor, tokens: Tensor, width: int) -> Features:
        """What :meth:`distinct` found in texts of ``width`` tokens -> their :class:`Features`."""
        if self.scaling == "nb":
            return Features(ids, (ids > 0).to(self.weight.dtype), tokens, width)  # presence, as in NBSVM
        value = (1 + counts.to(self.weight.dtype).log()) * self.idf[ids]  # row 0's idf is 0
        value = value / value.norm(dim=1, keepdim=True).clamp(min=torch.finfo(value.dtype).tiny)
        return Features(ids, value, tokens, width)

    def features(self, input_ids: Tensor) -> Features:
        """(B, T) -> the features a text holds: ids, values and tokens (B, L), and T."""
        return self.scaled(*self.distinct(input_ids), input_ids.size(1))

    def scores(self, feats: Features) -> Tensor:
        """Features from :meth:`features` -> logits (B, K), the sum of each token's share."""
        table = self.weight if self.scaling == "tfidf" else self.ratio * self.weight  # row 0 of r is zero
        # A lookup, not table[ids]: on CPU the backward of indexing adds the gradients of a row
        # that many texts share in an order that varies from run to run, the lookup's in a fixed one.
        terms = nn.functional.embedding(feats.ids, table) * feats.values[..., None]  # (B, L, K)
        shares = terms.new_zeros(terms.size(0), feats.width, terms.size(2))
        shares.scatter_add_(1, feats.tokens[..., None].expand_as(terms), terms)  # (B, T, K)
        return self.per_token(shares).sum(dim=1) + self.bias

    def forward(self, input_ids: Tensor) -> Tensor:
        return self.scores(self.features(input_ids))

    @torch.no_grad()
    def fit_scaling(self, train: Batches) -> tuple[Features, Tensor]:
        """Set r (nb) or the idf (tfidf) from the train texts; return the features and labels of every text."""
        rows = [self.distinct(ids) for ids, _ in train]  # (ids, counts, tokens) of each batch
        columns = max(row[0].size(1) for row in rows)

        def stacked(part: int, fill: int) -> Tensor:
            return torch.cat([nn.functional.pad(r[part], (0, columns - r[part].size(1)), value=fill) for r in rows])

        ids, counts, tokens = stacked(0, 0), stacked(1, 1), stacked(2, 0)  # no feature, a count of 1, token 0
        labels = torch.cat([y for _, y in train])
        if self.scaling == "nb":
            self.ratio.copy_(self.log_count_ratio(ids, labels))
        else:
            df = torch.bincount(ids.flatten(), minlength=self.idf.numel()).to(self.idf.dtype)
            # An n-gram no train text holds has no idf, as it has no column in a vocabulary built
            # from train: left in, a new corpus's unknown n-grams would shrink each text's known ones.
            self.idf.copy_(torch.where(df > 0, torch.log((1 + ids.size(0)) / (1 + df)) + 1, 0))
            self.idf[0] = 0  # row 0, "no feature here", is not a feature
        width = max(batch.size(1) for batch, _ in train)  # T: the longest batch's tokens
        return self.scaled(ids, counts, tokens, width), labels

    def log_count_ratio(self, ids: Tensor, labels: Tensor) -> Tensor:
        """r (F, K) from the distinct feature ids (N, L) of the train texts and their labels (N,)."""
        num_classes = self.ratio.size(1)
        counts = torch.zeros_like(self.ratio)  # (F, K): texts of class k that contain feature f
        onehot = nn.functional.one_hot(labels, num_classes).to(counts.dtype)  # (N, K)
        counts.index_add_(0, ids.flatten(), onehot.repeat_interleave(ids.size(1), dim=0))
        # Row 0, "no feature here", is not a feature: its ratio stays 0, so it stays silent
        # however many times a text holds it.
        counts = counts[1:]
        p = 1 + counts
        q = 1 + (counts.sum(dim=1, keepdim=True) - counts)  # the same feature in every other class
        ratio = torch.zeros_like(self.ratio)
        ratio[1:] = torch.log((p / p.sum(dim=0)) / (q / q.sum(dim=0)))
        return ratio

    def fit(self, train: Batches, c: float, max_iter: int = 100) -> float:
        """Fit the scaling, then the weights: mean cross-entropy + ||w||² / (2 c N), by full-batch L-BFGS;
        the train accuracy."""
        feats, labels = self.fit_scaling(train)
        penalty = 1.0 / (2 * c * labels.size(0))
        optimizer = torch.optim.LBFGS([self.weight, self.bias], max_iter=max_iter, line_search_fn="strong_wolfe")

        def objective() -> Tensor:
            optimizer.zero_grad()
            value = nn.functional.cross_entropy(self.scores(feats), labels) + penalty * self.weight.pow(2).sum()
            value.backward()
            return value

        optimizer.step(objective)
        with torch.no_grad():
            return (self.scores(feats).argmax(dim=1) == labels).float().mean().item()


def text_folds(input_ids: Tensor, k: int, pad_id: int) -> Tensor:
    """(B, T) -> (B,) each text's fold in 0..k-1: a hash of its tokens at their positions, blind to padding.

    The fold is read from the text, not from its row number: a copy of a text
    lands in the text's fold (so an out-of-fold teacher has seen neither), and a
    batch's folds are known wherever the batch goes, from its token ids alone.
    """
    positions = torch.arange(1, input_ids.size(1) + 1, device=input_ids.device)
    mixed = ((input_ids.long() + 1) * 0x9E3779B1) ^ (positions * 0x85EBCA77)  # odd multipliers: every bit moves
    return mixed.masked_fill(input_ids == pad_id, 0).sum(dim=1) % k


class OutOfFold(nn.Module):
    """k models, the j-th fit without the train texts of fold j; each text is taught by the one that never saw it.

    A model fit on all of train answers its own train texts almost perfectly,
    so as a teacher there its probabilities are nearly the labels and teach
    nothing they do not. Out of fold, each text gets what the model learnt from
    the *other* texts: the doubt, and the mistakes, it would have on a review it
    had never read. Any other text is routed the same way, by its hash: a
    validation review that also occurs in train meets the model that never saw
    it, so the teacher's validation score is an out-of-fold score too.
    """

    def __init__(self, models: list[nn.Module], pad_id: int) -> None:
        super().__init__()
        self.models, self.pad_id = nn.ModuleList(models), pad_id

    def folds(self, input_ids: Tensor) -> Tensor:
        """(B, T) clean token ids -> (B,) the fold of each text (:func:`text_folds`)."""
        return text_folds(input_ids, len(self.models), self.pad_id)

    def forward(self, input_ids: Tensor, folds: Tensor | None = None) -> Tensor:
        """input_ids (B, T) -> logits (B, K), row i from model ``folds[i]`` (default: the rows' own folds).

        Pass the folds of the clean texts when ``input_ids`` are noised copies:
        noise changes the hash, not which texts a model has seen.
        """
        folds = self.folds(input_ids) if folds is None else folds
        logits = torch.stack([model(input_ids) for model in self.models])  # (k, B, K)
        return logits[folds, torch.arange(input_ids.size(0), device=input_ids.device)]
