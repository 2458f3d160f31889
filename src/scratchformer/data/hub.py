"""Reaching the Hugging Face Hub, or not: local folders are always accepted instead."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Literal
from urllib.parse import urlparse

from scratchformer.config import UserError


class HubUnreachableError(UserError, ConnectionError):
    """The Hugging Face Hub cannot be reached and nothing local was given."""


def is_local(source: str) -> bool:
    return Path(source).expanduser().exists()


def check_hub_reachable(
    repo_id: str, key: str, kind: Literal["dataset", "model"] = "dataset", timeout: float = 3.0
) -> None:
    """Fail in seconds, not minutes of retries, when the hub cannot be reached.

    With HF_HUB_OFFLINE set the libraries read their local cache instead: then
    ``repo_id`` must be in it, or this fails at once, naming the ways to go on.
    """
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        if not in_local_cache(repo_id, kind):
            raise HubUnreachableError(
                f"{key}: {repo_id!r} is neither a local folder nor in the local cache, and the hub is off "
                f"(HF_HUB_OFFLINE=1): check the name, put a copy of it in a folder named {repo_id} here "
                f"(e.g. `ln -s /path/to/copy {repo_id}`), point {key} at a local folder "
                f"(`dvc exp run -S {key}=path/to/folder`), or unset HF_HUB_OFFLINE to download it"
            )
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


def in_local_cache(repo_id: str, kind: Literal["dataset", "model"]) -> bool:
    """Whether the 🤗 libraries hold ``repo_id`` in their cache, so that they can load it offline."""
    from huggingface_hub import constants

    if (Path(constants.HF_HUB_CACHE) / f"{kind}s--{repo_id.replace('/', '--')}").is_dir():
        return True
    if kind == "dataset":  # 🤗 datasets also keeps the prepared Arrow files under a cache of its own
        import datasets.config

        return (Path(datasets.config.HF_DATASETS_CACHE) / repo_id.replace("/", "___")).is_dir()
    return False
