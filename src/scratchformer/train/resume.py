"""Resumable training: a killed ``train`` stage continues from its last finished epoch.

At the end of every epoch the stage writes the whole state of the run (weights,
optimizer moments, schedule, EMA, random generators, the history and probe
snapshots so far, and every finished ensemble member) to one file. A rerun
whose params, inputs and code are the same (the same *key*) picks it up and ends
byte-identical to a run that was never interrupted; any other rerun starts
afresh, and says why. The code is the Python source the stage hands in (its
entry's ``deps`` in ``dvc.yaml``, read by :func:`stages.stage_code`), so an edit
between a kill and the rerun that DVC would see also ends the resume. The file is deleted once the stage has written
its outputs.

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

from scratchformer.model.checkpoint import load_torch, save_torch

log = logging.getLogger(__name__)


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]


def resume_key(params: dict[str, Any], inputs: list[Path], code: list[Path]) -> dict[str, Any]:
    """What a saved state must match to be resumed.

    ``data``: a digest of the params the run reads and the bytes of every file under
    ``inputs``; ``code``: each source file's SHA-256, so that a mismatch can be named.
    """
    digest = hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode())
    for root in inputs:
        for path in _files(root):
            digest.update(str(path.relative_to(root.parent)).encode())
            digest.update(path.read_bytes())
    return {"data": digest.hexdigest(), "code": {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in code}}


def load_state(path: Path, key: dict[str, Any]) -> dict | None:
    """The saved state at ``path`` if it belongs to the run ``key``; None (start afresh) otherwise."""
    if not path.is_file():
        return None
    # The state only resumes an interrupted run: deleting it loses that run's finished epochs, nothing else.
    state = load_torch(path, "delete this resumable state to start the stage afresh")
    saved = state.get("key")
    if not isinstance(saved, dict) or saved.get("data") != key["data"]:
        log.info("%s: saved by a run with other params or inputs; starting afresh", path)
        return None
    old, new = saved.get("code", {}), key["code"]
    changed = sorted(f for f in old.keys() | new.keys() if old.get(f) != new.get(f))
    if changed:
        shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
        log.info("%s: saved by a run of other code (%s changed since); starting afresh", path, shown)
        return None
    return state


def save_state(path: Path, state: dict) -> None:
    save_torch(path, state)
