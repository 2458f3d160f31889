"""Named recipes: ``recipes/<name>.yaml`` holds the ``-S`` overrides of ``dvc exp run -n <name>``.

The docs print the command from the file and the GPU check runs it, so neither parses the
other: the file is the one place a recipe is written down.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path

import yaml

from scratchformer.config import Params, from_dict

FOLDER = Path("recipes")
RUN_NAMES = {"online-shopping": "products"}  # a corpus recipe -> what its experiments' names begin with


def run_prefix(corpus: str) -> str:
    """What the names of experiments on ``corpus`` (a file in recipes/corpora/) begin with: ``products``."""
    return RUN_NAMES.get(corpus, corpus)


def load(name: str, folder: Path = FOLDER) -> dict[str, object]:
    """The overrides of recipe ``name``, in file order: {"train.epochs": 7, …}."""
    path = folder / f"{name}.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"no recipe {name!r}: {path} does not exist")
    overrides = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(overrides, dict) or not all(isinstance(k, str) for k in overrides):
        raise ValueError(f"{path}: a recipe is a mapping of dotted params keys to values")
    return overrides


def applied(params: Params, name: str, folder: Path = FOLDER) -> Params:
    """``params`` with recipe ``name``'s overrides on top, checked as params.yaml is; ``default``: as they are.

    What ``dvc exp run -n NAME -S …`` would train, for the code that builds the recipe's model
    in-process (the benchmarks).
    """
    return params if name == "default" else overridden(params, load(name, folder))


def overridden(params: Params, overrides: dict[str, object]) -> Params:
    """``params`` with dotted-key ``overrides`` on top ({"train.epochs": 7, …}), checked as params.yaml is."""
    raw = dataclasses.asdict(params)
    for key, v in overrides.items():
        *sections, field = key.split(".")
        place = raw
        for section in sections:
            place = place.setdefault(section, {})  # an unknown section: from_dict names it
        place[field] = v
    return from_dict(raw)


def value(v: object) -> str:
    """A value as ``dvc exp run -S`` takes it: YAML's true/false/null, a list as ``[0.8,0.1,0.1]``.

    ``-S`` parses its value with Hydra's override grammar, where ``[0.8,0.1,0.1]`` is a list
    and ``None`` would be the string "None"; a list is written as JSON without spaces, which
    that grammar reads back as the same list.
    """
    if isinstance(v, bool) or v is None or isinstance(v, list):
        return json.dumps(v, separators=(",", ":"), ensure_ascii=False)
    return str(v)


def parsed(settings: list[str]) -> dict[str, object]:
    """``-S`` settings (``KEY=VALUE``) back into overrides, each value read as YAML: the inverse of :func:`settings`."""
    return {key: yaml.safe_load(v) for key, v in (setting.split("=", 1) for setting in settings)}


def settings(overrides: dict[str, object]) -> list[str]:
    """``["train.epochs=7", …]``: the arguments that follow each ``-S`` (one argument each, unquoted)."""
    return [f"{k}={value(v)}" for k, v in overrides.items()]


def command(name: str, overrides: dict[str, object]) -> str:
    """``dvc exp run -n NAME -S k=v …`` as a shell line: an argument with ``[`` or a space is quoted."""
    return " ".join(["dvc exp run -n", shlex.quote(name), *(f"-S {shlex.quote(s)}" for s in settings(overrides))])
