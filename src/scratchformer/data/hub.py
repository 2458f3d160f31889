"""Reaching the Hugging Face Hub, or not: local folders are always accepted instead."""

from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import urlparse

from scratchformer.config import UserError


class HubUnreachableError(UserError, ConnectionError):
    """The Hugging Face Hub cannot be reached and nothing local was given."""


def is_local(source: str) -> bool:
    return Path(source).expanduser().exists()


def check_hub_reachable(repo_id: str, key: str, timeout: float = 3.0) -> None:
    """Fail in seconds, not minutes of retries, when the hub cannot be reached.

    Skipped when HF_HUB_OFFLINE is set: then the libraries read their local cache.
    """
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return
    url = urlparse(constants.ENDPOINT)
    try:
        socket.create_connection((url.hostname, url.port or 443), timeout=timeout).close()
    except OSError as err:
        raise HubUnreachableError(
            f"cannot reach {constants.ENDPOINT} to fetch {repo_id!r} ({key}): {err}. "
            f"Offline, point {key} at a local folder instead, e.g. "
            f"`dvc exp run -S {key}=path/to/folder` or edit params.yaml "
            "(data.source: a folder of train/dev/test tsv|csv|parquet|jsonl files; "
            "tokenizer.name: a folder with vocab.txt and tokenizer_config.json)."
        ) from None
