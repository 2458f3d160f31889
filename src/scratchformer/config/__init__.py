"""The one place that reads ``params.yaml``.

Each top-level section becomes a frozen dataclass. Loading is strict: an unknown
key, a value of the wrong type or an impossible value raises :class:`ConfigError`
naming the key (``model.n_heads``) and the value, so a typo in ``dvc exp run -S``
fails at once instead of silently training the default.

``sections`` holds the section dataclasses, ``training`` those that train (the shared
optimizer keys, ``train``, ``pretrain``, ``nb``), ``checks`` the errors and checks they share;
this module reads the file and builds :class:`Params` from them.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from scratchformer.config.checks import (
    DEVICE,
    MAX_POSITIONS,
    SEEDS,
    ConfigError,
    UserError,
    looks_like_path,
    require,
)
from scratchformer.config.sections import (
    AcceptanceConfig,
    BaselineConfig,
    DataConfig,
    ErrorsConfig,
    ModelConfig,
    ProbeConfig,
    TokenizerConfig,
)
from scratchformer.config.training import NBConfig, OptimConfig, PretrainConfig, TrainConfig


@dataclass(frozen=True)
class Params:
    seed: int = 42
    data: DataConfig = field(default_factory=DataConfig)
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    nb: NBConfig = field(default_factory=NBConfig)
    pretrain: PretrainConfig = field(default_factory=PretrainConfig)
    probe: ProbeConfig = field(default_factory=ProbeConfig)
    acceptance: AcceptanceConfig = field(default_factory=AcceptanceConfig)
    baseline: BaselineConfig = field(default_factory=BaselineConfig)
    errors: ErrorsConfig = field(default_factory=ErrorsConfig)
    short_reviews: str | None = "checks/short_reviews.tsv"  # own short reviews scored as short.*; None = off

    def __post_init__(self) -> None:
        members = self.train.ensemble - 1 + self.train.teachers  # the networks train from seed, seed+1, …
        users = [f"train.ensemble={self.train.ensemble}"] if self.train.ensemble > 1 else []
        users += [f"train.teachers={self.train.teachers}"] if self.train.teachers else []
        verb = "also uses" if len(users) == 1 else "also use"
        also = f" ({' and '.join(users)} {verb} seed+1..seed+{members})" if members else ""
        require(
            0 <= self.seed < SEEDS - members,
            "seed",
            self.seed,
            f"must be in 0..{SEEDS - 1 - members}: numpy and torch take seeds in [0, 2**32){also}",
        )
        # The networks read the first model.max_len tokens (their positional table); only an n-gram
        # member of the ensemble reads the rest of a longer cut.
        require(
            self.tokenizer.max_len <= self.model.max_len or (self.nb.ngrams > 0 and self.nb.role == "member"),
            "tokenizer.max_len",
            self.tokenizer.max_len,
            f"exceeds model.max_len={self.model.max_len}, the positional table; raise model.max_len too "
            "(a longer cut is read past it only by an n-gram member: nb.ngrams > 0, nb.role member)",
        )
        require(
            self.nb.fit_len is None or self.nb.fit_len >= self.tokenizer.max_len,
            "nb.fit_len",
            self.nb.fit_len,
            f"is shorter than tokenizer.max_len={self.tokenizer.max_len}, the cut the n-gram model reads "
            "when it predicts: set it >= that, or null",
        )
        # The table's decay and lr mean nothing without a table; train.sparse_ngrams (a default)
        # only says how a table is trained, so without one it has nothing to do.
        for key in ("ngram_decay", "ngram_lr"):
            value = getattr(self.train, key)
            require(
                value == getattr(TrainConfig, key) or self.model.ngram_max > 1,  # its default: no table needed
                f"train.{key}",
                value,
                "needs an n-gram table: set model.ngram_max > 1",
            )
        self.check_teachers()
        require(
            -self.model.n_layers <= self.probe.layer < self.model.n_layers,
            "probe.layer",
            self.probe.layer,
            f"is not a layer of a {self.model.n_layers}-layer model",
        )
        require(
            self.probe.head < self.model.n_heads,
            "probe.head",
            self.probe.head,
            f"is not a head of a {self.model.n_heads}-head model",
        )

    def check_teachers(self) -> None:
        """The train section's teachers and the NB model's distillation: one teacher at most, none under GCE."""
        require(
            not (self.train.teachers and self.nb.distill),
            "train.teachers",
            self.train.teachers,
            f"and nb.distill={self.nb.distill} are two teachers: distil from one (nb.distill 0 or train.teachers 0)",
        )
        require(
            not (self.train.gce and self.nb.distill),
            "train.gce",
            self.train.gce,
            f"scores hard labels: it takes no teacher (nb.distill is {self.nb.distill})",
        )

    def nb_fit_len(self) -> int | None:
        """How many tokens of each train review the n-gram model's fit reads beyond the model's cut
        (``nb.fit_len``, when longer than ``tokenizer.max_len``); None: it reads the cut."""
        longer = self.nb.ngrams > 0 and (self.nb.fit_len or 0) > self.tokenizer.max_len
        return self.nb.fit_len if longer else None

    def select(self, keys: Iterable[str]) -> dict[str, Any]:
        """The values of the dotted ``keys`` (a section, ``"train"``, or one key, ``"train.lr"``), by key.

        What a stage reads, as its ``PARAMS`` (and its ``params:`` in dvc.yaml) lists it: the
        resume key of a training stage digests exactly this.
        """
        values = {}
        for key in keys:
            value: Any = self
            for part in key.split("."):
                if not dataclasses.is_dataclass(value) or part not in {f.name for f in dataclasses.fields(value)}:
                    raise KeyError(f"{key}: not a key of params.yaml")
                value = getattr(value, part)
            values[key] = value
        return values


class _Yaml12Loader(yaml.SafeLoader):
    """PyYAML reads YAML 1.1, where ``2e-3`` (no dot) is a string; DVC reads YAML 1.2, where
    it is a number. This loader adds 1.2's float forms so params.yaml means one thing to both."""


_Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$|^[-+]?\.(?:inf|Inf|INF)$|^\.(?:nan|NaN|NAN)$"
    ),
    list("-+0123456789."),
)


def load_params(path: str | Path = "params.yaml") -> Params:
    """Read and validate ``params.yaml``; missing keys take the reference defaults."""
    path = Path(path)
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_Yaml12Loader)  # a SafeLoader
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such params file") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from None
    try:
        return from_dict(raw or {})
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None


def from_dict(raw: dict[str, Any]) -> Params:
    """Build :class:`Params` from a nested dict, rejecting what params.yaml must not hold."""
    return _build(Params, raw, prefix="")


def section(cls: type, raw: dict[str, Any], name: str) -> Any:
    """Build one section dataclass (e.g. a ``ModelConfig`` stored in a checkpoint)."""
    return _build(cls, raw, prefix=f"{name}.")


def _build(cls: type, raw: Any, prefix: str) -> Any:
    name = prefix.rstrip(".") or "params"
    if not isinstance(raw, dict):
        raise ConfigError(f"{name} must be a mapping, got {type(raw).__name__}")
    hints = typing.get_type_hints(cls)
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(raw) - fields)
    if unknown:
        raise ConfigError(f"unknown key {prefix}{unknown[0]} (known: {', '.join(sorted(fields))})")
    kwargs = {}
    for key, value in raw.items():
        hint = hints[key]
        if dataclasses.is_dataclass(hint):
            kwargs[key] = _build(hint, value if value is not None else {}, f"{prefix}{key}.")
        else:
            kwargs[key] = _check_type(f"{prefix}{key}", value, hint)
    return cls(**kwargs)


def _check_type(key: str, value: Any, hint: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin is Literal:
        choices = typing.get_args(hint)
        if value not in choices:
            raise ConfigError(f"{key}={value!r} must be one of {', '.join(map(str, choices))}")
        return value
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _check_type(key, value, inner)
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if hint in (int, float, str, bool) and (type(value) is not hint):
        raise ConfigError(f"{key}={value!r} must be {hint.__name__}, got {type(value).__name__}")
    if hint is float and not math.isfinite(value):
        raise ConfigError(f"{key}={value!r} must be a finite number")
    return value


__all__ = [
    "DEVICE",
    "MAX_POSITIONS",
    "SEEDS",
    "AcceptanceConfig",
    "BaselineConfig",
    "ConfigError",
    "DataConfig",
    "ErrorsConfig",
    "ModelConfig",
    "NBConfig",
    "OptimConfig",
    "Params",
    "PretrainConfig",
    "ProbeConfig",
    "TokenizerConfig",
    "TrainConfig",
    "UserError",
    "from_dict",
    "load_params",
    "looks_like_path",
    "section",
]
