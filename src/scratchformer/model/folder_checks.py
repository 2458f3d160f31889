"""What a model folder's config.json and weights must satisfy before anything is built from them.

A folder may come from someone else, so nothing in it is trusted until checked, in
an order that never spends memory on a lie:

1. config.json's every size (members, d_model, n_layers, n_heads, ff_dim, max_len,
   vocabulary, n-gram buckets, classes, …) is an integer within bounds far above
   anything this project trains and far below what fills a machine;
2. the weights' header (names, shapes; read without loading a tensor) must hold as
   many members and layers as config.json says, then exactly the tensors, of exactly
   the shapes, of the network config.json describes (built on the ``meta`` device,
   which allocates nothing);
3. only then is the network built and the weights read, sizes now those of the file.

Every refusal is one line naming the file and the key.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import safetensors
import torch

from scratchformer.config import ConfigError, ModelConfig, section
from scratchformer.model.checkpoint import CorruptFileError
from scratchformer.model.classifier import NB_ROLES
from scratchformer.model.naive_bayes import SCALINGS

MODEL_TYPE = "scratchformer"  # config.json's model_type: this project's, so no other library mistakes it for its own
ARCHITECTURES = ("TransformerClassifier", "Ensemble")

# Upper bounds of config.json's sizes: far above this project's models (d_model 64..512, a few layers,
# 30k tokens, 65k buckets, 1..5 members), far below what would fill a machine before the weights are checked.
BOUNDS: dict[str, tuple[int, int]] = {
    "members": (1, 64),
    "vocab_size": (1, 1 << 22),
    "tokenizer_max_len": (3, 1 << 20),  # also at most model.max_len without an n-gram member, checked below
    "model.d_model": (1, 16384),
    "model.n_heads": (1, 256),
    "model.n_layers": (1, 256),
    "model.ff_dim": (1, 65536),
    "model.num_classes": (2, 100_000),
    "model.ngram_max": (1, 8),
    "model.ngram_buckets": (1, 1 << 24),
    "nb.max_n": (1, 8),
    "nb.buckets": (1, 1 << 24),
}
MAX_SKIP = 64  # token ids an n-gram member may read as padding (this project's skip two: [CLS] and [SEP])


class FolderError(CorruptFileError):
    """A model folder's file says something impossible, or disagrees with another file; says which and where."""


def _integer(path: Path, key: str, value: Any) -> int:
    low, high = BOUNDS[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise FolderError(f"{path}: key {key!r} must be an integer, got {value!r}")
    if not low <= value <= high:
        raise FolderError(f"{path}: key {key!r} is {value}, outside {low}..{high}")
    return value


def _token_id(value: Any, vocab: int) -> bool:
    """Whether ``value`` is a token id of a vocabulary of ``vocab`` tokens (an int, not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < vocab


def check_config(config: dict, path: Path) -> ModelConfig:
    """config.json's sizes, types and labels, checked against bounds and each other; its model section, built."""
    raw = config["model"]
    if not isinstance(raw, dict):
        raise FolderError(f"{path}: key 'model' must be a mapping, got {type(raw).__name__}")
    for key in ("d_model", "n_heads", "n_layers", "ff_dim", "num_classes", "ngram_max", "ngram_buckets"):
        if key in raw or key == "num_classes":
            _integer(path, f"model.{key}", raw.get(key))
    try:
        model = section(ModelConfig, raw, "model")
    except ConfigError as err:  # max_len above the positional limit, d_model not divisible by n_heads, …
        raise FolderError(f"{path}: {err}") from err
    _integer(path, "members", config["members"])
    vocab = _integer(path, "vocab_size", config["vocab_size"])
    pad = config["pad_id"]
    if not _token_id(pad, vocab):
        raise FolderError(f"{path}: key 'pad_id' must be an integer in 0..{vocab - 1} (vocab_size), got {pad!r}")
    nb = config["nb"]
    if nb is not None:
        if not isinstance(nb, dict) or set(nb) - {"scaling", "role", "skip"} != {"max_n", "buckets"}:
            raise FolderError(f"{path}: key 'nb' must be null or {{max_n, buckets, scaling, role, skip}}, got {nb!r}")
        _integer(path, "nb.max_n", nb["max_n"])
        _integer(path, "nb.buckets", nb["buckets"])
        if nb.get("scaling", "nb") not in SCALINGS:
            kinds = ", ".join(SCALINGS)
            raise FolderError(f"{path}: key 'nb.scaling' must be one of {kinds}, got {nb['scaling']!r}")
        skip = nb.get("skip", [])
        if not (isinstance(skip, list) and len(skip) <= MAX_SKIP and all(_token_id(t, vocab) for t in skip)):
            raise FolderError(
                f"{path}: key 'nb.skip' must be a list of at most {MAX_SKIP} token ids in 0..{vocab - 1}, got {skip!r}"
            )
        if nb.get("role", "member") not in NB_ROLES:
            raise FolderError(f"{path}: key 'nb.role' must be one of {', '.join(NB_ROLES)}, got {nb['role']!r}")
    length = _integer(path, "tokenizer_max_len", config["tokenizer_max_len"])
    member = nb is not None and nb.get("role", "member") == "member"  # only it reads past the networks' tokens
    if length > model.max_len and not member:
        raise FolderError(
            f"{path}: key 'tokenizer_max_len' is {length}, above model.max_len={model.max_len} "
            "with no n-gram member to read the rest"
        )
    check_labels(config, path, model.num_classes)
    return model


def check_labels(config: dict, path: Path, num_classes: int) -> None:
    """class_names: one distinct string per output; the Hub's keys, where present, must say the same."""
    names = config["class_names"]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise FolderError(f"{path}: key 'class_names' must be a list of strings")
    if len(names) != num_classes:
        raise FolderError(f"{path}: key 'class_names' names {len(names)} classes, model.num_classes is {num_classes}")
    if len(set(names)) != len(names):
        raise FolderError(f"{path}: key 'class_names' names a class twice ({names})")
    # Written since the folder speaks the Hub's language; a folder from before has none of them.
    expected = {
        "id2label": {str(i): n for i, n in enumerate(names)},
        "label2id": {n: i for i, n in enumerate(names)},
        "model_type": MODEL_TYPE,
    }
    for key, value in expected.items():
        if key in config and config[key] != value:
            raise FolderError(f"{path}: key {key!r} is {config[key]!r}, but class_names and format say {value!r}")
    if "architectures" in config:
        architectures = config["architectures"]
        if not (isinstance(architectures, list) and len(architectures) == 1 and architectures[0] in ARCHITECTURES):
            raise FolderError(f"{path}: key 'architectures' must be one of {list(ARCHITECTURES)} in a list")


def weight_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """Each tensor's shape from the safetensors header: no tensor is read.

    A damaged file raises ``safetensors.SafetensorError`` (the header says more bytes than there are, …).
    """
    with safetensors.safe_open(str(path), framework="pt") as weights:
        return {name: tuple(weights.get_slice(name).get_shape()) for name in weights.keys()}  # noqa: SIM118


def count(shapes: dict[str, tuple[int, ...]], pattern: str) -> int:
    """How many distinct indices ``pattern``'s group takes in the tensor names."""
    return len({m.group(1) for name in shapes if (m := re.match(pattern, name))})


def check_counts(
    config: dict, model: ModelConfig, shapes: dict[str, tuple[int, ...]], path: Path, config_path: Path
) -> None:
    """Members and layers in config.json against the weights' names, before even a ``meta`` network is built."""
    ensemble = config["members"] > 1 or config["nb"] is not None
    found = count(shapes, r"members\.(\d+)\.")  # a single network's names have no members. prefix
    if found != (config["members"] if ensemble else 0):
        held = f"{found} ensemble member(s)" if found else "one network, not an ensemble"
        said = f"key 'members' says {config['members']}"
        said += ", with an n-gram member (key 'nb')" if config["nb"] is not None else ""
        raise FolderError(f"{path} holds {held}, but {config_path} {said}")
    layers = count(shapes, (r"members\.0\." if ensemble else "") + r"blocks\.(\d+)\.")
    if layers != model.n_layers:
        raise FolderError(
            f"{path} holds {layers} layer(s), but {config_path} key 'model.n_layers' says {model.n_layers}"
        )


def check_shapes(network: torch.nn.Module, shapes: dict[str, tuple[int, ...]]) -> str | None:
    """The first difference between ``network``'s tensors and the weights' (None: the same names and shapes)."""
    expected = {name: tuple(t.shape) for name, t in network.state_dict().items()}
    missing = sorted(set(expected) - set(shapes))
    unexpected = sorted(set(shapes) - set(expected))
    wrong = sorted(name for name in set(expected) & set(shapes) if expected[name] != shapes[name])
    reasons = [f"no tensor {name}" for name in missing] + [f"unexpected tensor {name}" for name in unexpected]
    reasons += [f"{name} is {list(shapes[name])}, config.json makes it {list(expected[name])}" for name in wrong]
    if not reasons:
        return None
    return reasons[0] + (f", and {len(reasons) - 1} more" if len(reasons) > 1 else "")
