"""The sections of ``params.yaml``, one frozen dataclass each, checked as they are built.

The sections that train (``train``, ``pretrain``, ``nb``) are in :mod:`scratchformer.config.training`.
"""

from __future__ import annotations

import codecs
import dataclasses
from dataclasses import dataclass
from typing import Literal

from scratchformer.config.checks import (
    MAX_BUCKETS,
    MAX_POSITIONS,
    MAX_TABLE,
    ConfigError,
    require,
    require_folder,
)


@dataclass(frozen=True)
class DataConfig:
    source: str = "lansinuote/ChnSentiCorp"  # a hub dataset id or a local folder
    revision: str | None = None  # hub only: a commit, tag or branch; None = the newest, recorded when read
    text_column: str | None = None  # None: the first of text, text_a, review, sentence
    label_column: str = "label"
    label_names: dict[int, str] | None = None  # integer label -> class name; None: the labels themselves
    split: tuple[float, ...] | None = None  # train/validation/test fractions for a one-file corpus
    resplit: bool = False  # with split: also divide a corpus that has its own splits (all rows pooled)
    drop_empty: bool = False  # drop blank texts (counted) instead of stopping at the first
    dedupe: bool = False  # remove from train the texts that also appear in validation or test
    train_share: float = 1.0  # < 1: train keeps this share of its rows, each class alike (a learning curve)
    encoding: str = "utf-8"  # of the tsv/csv/jsonl files of a local corpus, e.g. gb18030 (GBK's superset)
    label_issues: Literal["keep", "drop"] = "keep"  # drop: remove the label_issues_n most suspect train reviews
    label_issues_n: int = 100  # how many train reviews label_issues: drop removes (most suspect first)

    def __post_init__(self) -> None:
        require_folder("data.source", self.source)
        try:
            codec = codecs.lookup(self.encoding)
        except LookupError:
            raise ConfigError(
                f"data.encoding={self.encoding!r} is not an encoding Python knows (e.g. gb18030)"
            ) from None
        # Files are split into lines as bytes: the encoding must write these characters as ASCII does.
        require(
            codec.encode('\t\n\r,"')[0] == b'\t\n\r,"',
            "data.encoding",
            self.encoding,
            "is not ASCII-compatible (UTF-16 or -32?); save the files as UTF-8",
        )
        if self.split is not None:
            fractions = self.split
            require(
                isinstance(fractions, (list, tuple))
                and len(fractions) == 3
                and all(isinstance(f, (int, float)) and not isinstance(f, bool) and f > 0 for f in fractions),
                "data.split",
                fractions,
                "must be three fractions > 0 (train, validation, test), e.g. [0.8, 0.1, 0.1]",
            )
            require(abs(sum(fractions) - 1) < 1e-9, "data.split", fractions, "must sum to 1")
            object.__setattr__(self, "split", tuple(float(f) for f in fractions))
        require(not self.resplit or self.split is not None, "data.resplit", self.resplit, "needs data.split fractions")
        if self.label_names is not None:
            names = self.label_names
            require(isinstance(names, dict) and bool(names), "data.label_names", names, "must map labels to names")
            for key, name in names.items():
                require(
                    isinstance(key, int) and not isinstance(key, bool),
                    f"data.label_names.{key}",
                    key,
                    "must be an integer label",
                )
                require(isinstance(name, str) and bool(name.strip()), f"data.label_names.{key}", name, "must be a name")
            require(len(set(names.values())) == len(names), "data.label_names", names, "gives two labels one name")
        require(self.label_issues_n >= 1, "data.label_issues_n", self.label_issues_n, "must be at least 1")
        share = self.train_share
        require(0 < share <= 1, "data.train_share", share, "must be a fraction in (0, 1] of the train rows to keep")


@dataclass(frozen=True)
class TokenizerConfig:
    name: str = "bert-base-chinese"  # a hub id or a local folder
    revision: str | None = None  # hub only: a commit, tag or branch; None = the newest, recorded when read
    max_len: int = 128  # tokens per text, [CLS] and [SEP] included
    lowercase: bool | None = None  # None: as the tokenizer's own config says; True/False overrides it

    def __post_init__(self) -> None:
        require_folder("tokenizer.name", self.name)
        require(self.max_len >= 3, "tokenizer.max_len", self.max_len, "must be >= 3")


@dataclass(frozen=True)
class ModelConfig:
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    ff_dim: int = 128
    dropout: float = 0.1
    attention_dropout: float | None = None  # on the attention weights (B, H, T, T); None: model.dropout
    dropout_draw: Literal["bernoulli", "uniform"] = "uniform"  # how masks are drawn (model/dropout.py)
    max_len: int = 128  # size of the positional table: the longest sequence accepted
    num_classes: int | None = None  # None: as many as the data has; set, it must match the data
    pooling: Literal["mean", "cls", "attention"] = "mean"
    pool_heads: int = 1  # attention pooling: k queries, each over its own d_model/k channels (1 = one query)
    positional: Literal["sinusoidal", "learned", "rope"] = "sinusoidal"
    norm: Literal["pre", "post"] = "pre"
    ngram_max: int = 3  # also embed the 2..ngram_max-grams ending at each token (1 = tokens only)
    ngram_buckets: int = 65536  # rows of the hashed n-gram embedding table
    ngram_init: float = 0.0  # std of its rows at initialisation (1: nn.Embedding's); 0: an n-gram starts as nothing
    wide_ngrams: int = 3  # > 0: add a linear model over the bag of 1..wide_ngrams-grams to the logits

    def __post_init__(self) -> None:
        for key in ("d_model", "n_heads", "n_layers", "ff_dim", "max_len", "ngram_max", "ngram_buckets", "pool_heads"):
            require(getattr(self, key) >= 1, f"model.{key}", getattr(self, key), "must be >= 1")
        require(
            self.d_model % self.n_heads == 0,
            "model.d_model",
            self.d_model,
            f"must be divisible by model.n_heads={self.n_heads}",
        )
        head_dim = self.d_model // self.n_heads
        if self.positional == "rope":
            require(head_dim % 2 == 0, "model.d_model", self.d_model, "rope needs an even head dim")
        require(0.0 <= self.dropout < 1.0, "model.dropout", self.dropout, "must be in [0, 1)")
        rate = self.attention_dropout  # None: model.dropout's, checked above
        require(rate is None or 0.0 <= rate < 1.0, "model.attention_dropout", rate, "must be in [0, 1)")
        require(
            self.pool_heads == 1 or (self.pooling == "attention" and self.d_model % self.pool_heads == 0),
            "model.pool_heads",
            self.pool_heads,
            f"must be 1, or with model.pooling attention divide model.d_model={self.d_model}",
        )
        require(
            self.ngram_buckets <= MAX_BUCKETS,
            "model.ngram_buckets",
            self.ngram_buckets,
            f"is above the limit {MAX_BUCKETS} (2**24) rows of the hashed n-gram table",
        )
        require(
            self.ngram_buckets * self.d_model <= MAX_TABLE,
            "model.ngram_buckets",
            self.ngram_buckets,
            f"x model.d_model={self.d_model} is above the limit {MAX_TABLE} (2**28, 1 GiB of fp32) "
            "weights of the n-gram table; use fewer buckets",
        )
        require(self.ngram_init >= 0, "model.ngram_init", self.ngram_init, "must be >= 0")
        require(0 <= self.wide_ngrams <= 6, "model.wide_ngrams", self.wide_ngrams, "must be in 0..6 (0 = off)")
        if self.num_classes is not None:
            require(self.num_classes >= 2, "model.num_classes", self.num_classes, "must be >= 2")
        require(
            self.max_len <= MAX_POSITIONS,
            "model.max_len",
            self.max_len,
            f"is above the positional table limit {MAX_POSITIONS}",
        )

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def for_classes(self, class_names: list[str]) -> ModelConfig:
        """This config with its output size set to the data's classes (checked if the params set one)."""
        k = len(class_names)
        if self.num_classes is not None and self.num_classes != k:
            raise ConfigError(
                f"model.num_classes={self.num_classes} but the data has {k} classes ({', '.join(class_names)}); "
                "remove model.num_classes to take it from the data"
            )
        return dataclasses.replace(self, num_classes=k)


@dataclass(frozen=True)
class ProbeConfig:
    text: str = "这家酒店位置很好，但是房间太脏，服务也很差。"
    query_token: str = "差"
    layer: int = -1  # python-style index into the encoder stack
    head: int = 0

    def __post_init__(self) -> None:
        require(bool(self.text.strip()), "probe.text", self.text, "must not be empty")
        require(bool(self.query_token), "probe.query_token", self.query_token, "must not be empty")
        require(self.head >= 0, "probe.head", self.head, "must be >= 0")


@dataclass(frozen=True)
class BaselineConfig:
    """Character n-gram TF-IDF + logistic regression, + a linear SVM, and NB-LR: the classical references."""

    ngram_max: int = 3  # character 1..ngram_max-grams
    min_df: int = 1
    C: float = 10.0  # inverse regularisation strength of the logistic regression
    svm_c: float = 1.0  # that of the linear SVM
    nb_c: float = 1.0  # that of NB-LR

    def __post_init__(self) -> None:
        require(1 <= self.ngram_max <= 6, "baseline.ngram_max", self.ngram_max, "must be in 1..6")
        require(self.min_df >= 1, "baseline.min_df", self.min_df, "must be >= 1")
        require(self.C > 0, "baseline.C", self.C, "must be > 0")
        require(self.svm_c > 0, "baseline.svm_c", self.svm_c, "must be > 0")
        require(self.nb_c > 0, "baseline.nb_c", self.nb_c, "must be > 0")


@dataclass(frozen=True)
class AcceptanceConfig:
    attention_max_abs_err: float = 1e-5
    causal_mask_leak: float = 1e-6
    padding_leak: float = 1e-5
    validation_accuracy: float = 0.80

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            require(value > 0, f"acceptance.{f.name}", value, "must be a positive number")
        require(
            self.validation_accuracy <= 1, "acceptance.validation_accuracy", self.validation_accuracy, "must be <= 1"
        )


@dataclass(frozen=True)
class ErrorsConfig:
    """The error report: validation's most confident mistakes and the tokens they share.

    Every bound is a size bound too: the report holds at most ``n`` texts and
    ``tokens`` table rows, so it stays small enough to live in git.
    """

    n: int = 30  # mistakes shown, most confident first
    highlight: int = 3  # most relevant tokens marked in each text
    tokens: int = 20  # rows of the table of tokens over-represented in the mistakes
    min_count: int = 10  # a token must occur in at least this many mistakes to be ranked

    def __post_init__(self) -> None:
        require(1 <= self.n <= 500, "errors.n", self.n, "must be in 1..500")
        require(1 <= self.highlight <= 20, "errors.highlight", self.highlight, "must be in 1..20")
        require(1 <= self.tokens <= 200, "errors.tokens", self.tokens, "must be in 1..200")
        require(self.min_count >= 1, "errors.min_count", self.min_count, "must be >= 1")
