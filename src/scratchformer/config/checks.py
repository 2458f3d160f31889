"""What every section's validation shares: the errors a user fixes, and the checks that raise them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

MAX_POSITIONS = 4096  # largest positional table we allow (memory grows as T^2)
DEVICE = re.compile(r"auto|cpu|mps|cuda(:\d+)?")
# Hashed tables (model.ngram_buckets, nb.buckets): a mistyped size (1e11) must stop at
# load, naming the key, not as an allocation failure hours later. 2**24 rows is 16x the largest
# table tried; the n-gram table's rows x d_model cap keeps it at 1 GiB of fp32 (3 with AdamW's state).
MAX_BUCKETS = 2**24
MAX_TABLE = 2**28
SEEDS = 2**32  # numpy's and torch's seeds lie in [0, 2**32)


class UserError(Exception):
    """An error the user fixes in params.yaml or the inputs; a stage prints its message alone (stages.run_stage)."""


class ConfigError(UserError, ValueError):
    """A params.yaml value is unknown, mistyped or impossible."""


def require(ok: bool, key: str, value: Any, why: str) -> None:
    if not ok:
        raise ConfigError(f"{key}={value!r} {why}")


def looks_like_path(name: str) -> bool:
    """Whether ``name`` can only be a folder: a hub id is ``name`` or ``owner/name``, never more."""
    return name.startswith((".", "/", "~")) or name.endswith(("/", "\\")) or name.count("/") > 1 or "\\" in name


def require_folder(key: str, name: str) -> None:
    """A ``name`` that is a path must exist now, not be taken for a hub id (and fail there) later."""
    if looks_like_path(name) and not Path(name).expanduser().exists():
        raise ConfigError(
            f"{key}: no folder {name} (relative to {Path.cwd()}); correct the path, "
            "or give a hub id (name or owner/name)"
        )
