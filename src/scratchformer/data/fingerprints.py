"""Fingerprints of the pipeline's two outside inputs: the corpus and the tokenizer.

A local folder is fingerprinted by the SHA-256 of every file in it; a hub id by
the commit its revision resolves to (a full commit hash is taken as it is, with
no network). The ``inputs`` stage writes these small files on every ``dvc repro``;
download and tokenize depend on them, so an edited file or a new hub commit
re-runs the stages that read it, and an unchanged input re-runs nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from pathlib import Path
from typing import Literal

from scratchformer.config import ConfigError
from scratchformer.data.hub import check_hub_reachable, is_local

log = logging.getLogger(__name__)

COMMIT = re.compile(r"[0-9a-f]{40}")


def fingerprint(source: str, revision: str | None, key: str, kind: Literal["dataset", "model"]) -> dict:
    """``{"source", "files": {name: sha256}}`` for a folder; ``{"source", "revision", "resolved"}`` for a hub id."""
    if is_local(source):
        folder = Path(source).expanduser()
        if not folder.is_dir():
            raise ConfigError(f"{key}={source!r} is a file; give the folder that holds it")
        return {"source": source, "files": folder_hashes(folder)}
    if revision and COMMIT.fullmatch(revision):
        return {"source": source, "revision": revision, "resolved": revision}
    from huggingface_hub import HfApi, constants

    if constants.HF_HUB_OFFLINE:
        check_hub_reachable(source, key, kind)  # in the local cache, or a one-line error now
        log.warning("%s=%s: offline (HF_HUB_OFFLINE), revision %s not resolved; pin a commit", key, source, revision)
        return {"source": source, "revision": revision, "resolved": None}
    check_hub_reachable(source, key, kind)
    api = HfApi()
    info = (
        api.dataset_info(source, revision=revision) if kind == "dataset" else api.model_info(source, revision=revision)
    )
    return {"source": source, "revision": revision, "resolved": info.sha}


def folder_hashes(folder: Path) -> dict[str, str]:
    """SHA-256 of every file under ``folder`` (links followed, hidden names skipped), by relative path."""
    hashes = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts) or not path.is_file():
            continue
        digest = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda f=f: f.read(1 << 20), b""):
                digest.update(block)
        hashes[rel.as_posix()] = digest.hexdigest()
    return hashes


def resolved_revision(path: str | Path) -> str | None:
    """The hub commit an ``inputs`` fingerprint file recorded (None for a folder or when unresolved)."""
    return json.loads(Path(path).read_text(encoding="utf-8")).get("resolved")
