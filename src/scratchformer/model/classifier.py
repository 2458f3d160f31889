"""The classifier: embeddings -> N encoder blocks -> LayerNorm -> pooling -> linear head."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal, NamedTuple, get_args

import torch
from torch import Tensor, nn

from scratchformer.config import ModelConfig
from scratchformer.model.dropout import dropout as make_dropout
from scratchformer.model.encoder import EncoderBlock
from scratchformer.model.naive_bayes import NBLogistic
from scratchformer.model.ngrams import HashedNgramEmbedding, WideNgramBag, ngram_ids_upto
from scratchformer.model.pooling import make_pooling
from scratchformer.model.positional import (
    LearnedPositionalEncoding,
    RotaryPositionalEncoding,
    SinusoidalPositionalEncoding,
)


@contextmanager
def eval_mode(model: nn.Module) -> Iterator[nn.Module]:
    """Switch ``model`` to eval mode (no dropout) for the block; restore its previous mode after.

    The previous mode comes back even when the block raises, so evaluating in the
    middle of training can never leave dropout switched off.
    """
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


class Inspection(NamedTuple):
    """Everything one forward pass computed that a person may want to look at."""

    logits: Tensor  # (B, num_classes)
    attention: Tensor  # (B, H, T, T): softmax weights of the requested layer
    pooling: Tensor  # (B, T): each token's weight in the pooled sentence vector


class Classifier(nn.Module):
    """What evaluation, predict and the probe use: ``inspect``, and the views derived from it."""

    pad_id: int
    config: ModelConfig

    def inspect(self, input_ids: Tensor, layer: int = -1) -> Inspection:
        raise NotImplementedError

    def forward(self, input_ids: Tensor) -> Tensor:
        """input_ids (B, T) -> logits (B, num_classes). PAD positions are ignored."""
        return self.inspect(input_ids).logits

    def attention_weights(self, input_ids: Tensor, layer: int = -1) -> Tensor:
        """The softmax attention (B, H, T, T) of ``layer``, from the forward pass itself."""
        return self.inspect(input_ids, layer).attention

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


class TransformerClassifier(Classifier):
    def __init__(self, config: ModelConfig, vocab_size: int, pad_id: int = 0) -> None:
        super().__init__()
        if config.num_classes is None:
            raise ValueError("model.num_classes is unset: take it from the data with ModelConfig.for_classes")
        self.config = config
        self.pad_id = pad_id
        C = config.d_model
        # N(0, 1) init, the PAD row zero and never updated.
        self.embed = nn.Embedding(vocab_size, C, padding_idx=pad_id)
        self.ngrams = (
            HashedNgramEmbedding(config.ngram_max, config.ngram_buckets, C, pad_id, config.ngram_init)
            if config.ngram_max > 1
            else None
        )
        rope = None
        if config.positional == "sinusoidal":
            self.position: nn.Module = SinusoidalPositionalEncoding(C, config.max_len)
        elif config.positional == "learned":
            self.position = LearnedPositionalEncoding(C, config.max_len)
        else:  # rope acts inside attention, on queries and keys
            self.position = nn.Identity()
            rope = RotaryPositionalEncoding(config.head_dim, config.max_len)
        self.dropout = make_dropout(config.dropout, config.dropout_draw)
        self.blocks = nn.ModuleList(
            EncoderBlock(
                C,
                config.n_heads,
                config.ff_dim,
                config.dropout,
                config.norm,
                rope,
                config.dropout_draw,
                attention_dropout=config.attention_dropout,  # None: the block's dropout
            )
            for _ in range(config.n_layers)
        )
        # Post-LN blocks already end in a LayerNorm; Pre-LN needs one after the stack.
        self.ln_f = nn.LayerNorm(C) if config.norm == "pre" else nn.Identity()
        self.pool = make_pooling(config.pooling, C, config.pool_heads)
        self.head = nn.Linear(C, config.num_classes)
        self.wide = (
            WideNgramBag(config.wide_ngrams, config.ngram_buckets, vocab_size, config.num_classes, pad_id)
            if config.wide_ngrams
            else None
        )

    def forward(self, input_ids: Tensor, shift: Tensor | None = None) -> Tensor:
        """input_ids (B, T) -> logits (B, num_classes); ``shift`` (B, T, C), when given, is added to the embeddings."""
        return self.inspect(input_ids, shift=shift).logits

    def inspect(self, input_ids: Tensor, layer: int = -1, shift: Tensor | None = None) -> Inspection:
        """Forward pass that also returns ``layer``'s attention and the pooling weights.

        ``shift`` (B, T, C) is added to each token's embedding (its token's and n-grams' vectors)
        before the positions: what adversarial training (``train.adversarial``) perturbs.
        """
        orders = self.ngram_orders(input_ids)  # hashed once for both n-gram readers
        h, pad, attention = self.encode(input_ids, layer, orders, shift)
        pooled, pool_weights = self.pool(h, pad)  # (B, C), (B, T)
        logits = self.head(pooled)  # (B, K)
        if self.wide is not None:
            logits = logits + self.wide(input_ids, orders)  # the bag of n-grams' own scores (wide & deep)
        return Inspection(logits, attention, pool_weights)

    def ngram_orders(self, input_ids: Tensor) -> list[Tensor] | None:
        """The buckets of the 2..n-grams the n-gram embedding and the wide branch read; None if neither does."""
        n = max(self.config.ngram_max if self.ngrams is not None else 1, self.config.wide_ngrams)
        return ngram_ids_upto(input_ids, n, self.config.ngram_buckets, self.pad_id) if n > 1 else None

    def encode(
        self,
        input_ids: Tensor,
        layer: int = -1,
        orders: list[Tensor] | None = None,
        shift: Tensor | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Token vectors (B, T, C), the padding mask (B, T) and ``layer``'s attention (B, H, T, T).

        ``orders``: the n-gram buckets from :meth:`ngram_orders`, when the caller has them;
        ``shift``: added to the embeddings (:meth:`inspect`).
        """
        T = input_ids.size(1)
        if T > self.config.max_len:
            raise ValueError(
                f"sequence of {T} tokens is longer than model.max_len={self.config.max_len}; "
                "truncate it (tokenizer.max_len) or train with a larger model.max_len"
            )
        n = len(self.blocks)
        if not -n <= layer < n:
            raise IndexError(f"layer {layer} out of range for a {n}-layer model")
        pad = input_ids == self.pad_id  # (B, T), True = PAD
        key_mask = pad[:, None, None, :]  # (B, 1, 1, T): no query may attend to PAD keys
        x = self.embed(input_ids)  # (B, T, C)
        if self.ngrams is not None:
            x = x + self.ngrams(input_ids, orders)  # (B, T, C): the bigram, trigram, … ending at each token
        if shift is not None:
            x = x + shift
        x = self.dropout(self.position(x))
        kept = None
        for i, block in enumerate(self.blocks):
            x, weights = block(x, key_mask)
            if i == layer % n:
                kept = weights
        return self.ln_f(x), pad, kept


NBRole = Literal["member", "base"]  # how an Ensemble's n-gram model joins it (a teacher is not part of the model)
NB_ROLES = get_args(NBRole)  # what a received folder may name


class Ensemble(Classifier):
    """K classifiers trained from different seeds; the prediction averages their probabilities.

    Each member is a full TransformerClassifier with the same config. Models
    trained from different initialisations and batch orders make partly
    independent mistakes, so the mean of their class probabilities is right more
    often than the typical member. ``forward`` returns log(mean_k p_k), which
    softmax, argmax and cross-entropy treat like any classifier's logits.

    Attention and pooling weights (``inspect``) are the first member's: heads of
    different members are not aligned, so an average of them would show nothing.

    ``nb``, when given, is an n-gram model of another kind (:mod:`scratchformer.model.naive_bayes`).
    As a member (``nb_role`` member) it weighs as much as all Transformer members together:
    the prediction is ½ mean_k p_k + ½ p_nb. It reads every token it is given, where the
    networks read the first ``model.max_len`` (their positional table): with a tokenizer cut
    longer than that (``tokenizer.max_len``) it reads the rest of a long review too. As the
    base (``nb_role`` base) its logits are added to each member's, which learnt on top of
    them: the prediction is mean_k softmax(z_k + z_nb).
    """

    def __init__(
        self, members: list[TransformerClassifier], nb: NBLogistic | None = None, nb_role: NBRole = "member"
    ) -> None:
        super().__init__()
        if nb_role not in NB_ROLES:
            raise ValueError(f"nb_role must be one of {', '.join(NB_ROLES)}, got {nb_role!r}")
        self.members = nn.ModuleList(members)
        self.nb, self.nb_role = nb, nb_role
        self.config = members[0].config
        self.pad_id = members[0].pad_id

    def inspect(self, input_ids: Tensor, layer: int = -1) -> Inspection:
        window = input_ids[:, : self.config.max_len]  # (B, min(T, model.max_len)): what the networks read
        first = self.members[0].inspect(window, layer)
        logits = [first.logits, *(member(window) for member in self.members[1:])]
        if self.nb is not None and self.nb_role == "base":
            base = self.nb(input_ids).float()
            logits = [x.float() + base for x in logits]
        log_probs = torch.stack([x.log_softmax(dim=-1) for x in logits])  # (K, B, num_classes)
        mean = torch.logsumexp(log_probs, dim=0) - math.log(len(logits))  # log of the mean probability
        if self.nb is not None and self.nb_role == "member":
            nb = self.nb(input_ids).float().log_softmax(dim=-1)
            mean = torch.logaddexp(mean, nb) - math.log(2)  # log(½ p_transformers + ½ p_nb)
        return Inspection(mean, first.attention, first.pooling)


def nb_record(model: Classifier) -> dict | None:
    """What a checkpoint or model folder records of ``model``'s n-gram model (None: it has none).

    Its description (:meth:`~scratchformer.model.naive_bayes.NBLogistic.description`), and its
    role when it is the base; no role means a member, as in every file written before roles.
    """
    nb = model.nb if isinstance(model, Ensemble) else None
    if nb is None:
        return None
    return nb.description() | ({"role": model.nb_role} if model.nb_role != "member" else {})


def assemble(members: list[TransformerClassifier], nb: dict | None, vocab_size: int) -> Classifier:
    """The untrained model a checkpoint or folder records: ``members`` and the n-gram model ``nb`` names."""
    if nb is None:
        return members[0] if len(members) == 1 else Ensemble(members)
    first = members[0]
    model = NBLogistic.from_description(nb, vocab_size, first.config.num_classes, first.pad_id)
    return Ensemble(members, model, nb.get("role", "member"))
