"""Resumable training: a killed ``train`` stage continues from its last finished epoch.

At the end of every epoch the stage writes the whole state of the run (weights,
optimizer moments, schedule, EMA, random generators, the history and probe
snapshots so far, and every finished ensemble member) to one file. A rerun
whose params and inputs are the same (the same *key*) picks it up and ends
byte-identical to a run that was never interrupted; any other rerun starts
afresh. The file is deleted once the stage has written its outputs.

The state is not a DVC output: it is several times the model's size (two Adam
moments per weight, the EMA, the best weights so far), is only useful on the
machine that was interrupted, and must survive the failed run that DVC would
otherwise clean up after.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from scratchformer.checkpoint import load_torch, save_torch

log = logging.getLogger(__name__)


def run_key(params: dict[str, Any], inputs: list[Path]) -> str:
    """A digest of the params a run reads and the bytes of every file under ``inputs``."""
    digest = hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode())
    for root in inputs:
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        for path in files:
            digest.update(str(path.relative_to(root.parent)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def load_state(path: Path, key: str) -> dict | None:
    """The saved state at ``path`` if it belongs to the run ``key``; None (start afresh) otherwise."""
    if not path.is_file():
        return None
    # The state only resumes an interrupted run: deleting it loses that run's finished epochs, nothing else.
    state = load_torch(path, "delete this resumable state to start the stage afresh")
    if state.get("key") != key:
        log.info("%s: saved by a run with other params or inputs; starting afresh", path)
        return None
    return state


def save_state(path: Path, state: dict) -> None:
    save_torch(path, state)
