"""Tokenize: text -> token ids with the bert-base-chinese vocabulary.

Only the tokenizer's vocabulary is used (no pretrained weights). It is saved
next to the ids so that training, evaluation and ``predict`` never need the hub.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch
from torch import Tensor
from transformers import AutoTokenizer, PreTrainedTokenizerBase

from scratchformer.files import atomic_dir, write_atomic
from scratchformer.hub import check_hub_reachable, is_local

log = logging.getLogger(__name__)


def load_tokenizer(name: str) -> PreTrainedTokenizerBase:
    """A fast tokenizer from a hub id or a local folder (vocab.txt + tokenizer_config.json)."""
    if not is_local(name):
        check_hub_reachable(name, "tokenizer.name")
    tokenizer = AutoTokenizer.from_pretrained(name, use_fast=True)
    if not tokenizer.is_fast:
        raise ValueError(f"tokenizer {name!r} has no fast (Rust) implementation")
    if tokenizer.pad_token_id is None:
        raise ValueError(f"tokenizer {name!r} has no PAD token")
    return tokenizer


def save_tokenizer(tokenizer: PreTrainedTokenizerBase, out_dir: str | Path) -> None:
    with atomic_dir(out_dir) as tmp:
        tokenizer.save_pretrained(tmp)


def encode(tokenizer: PreTrainedTokenizerBase, texts: list[str], max_len: int) -> pd.DataFrame:
    """Ids truncated to ``max_len`` ([CLS] … [SEP]), with each text's untruncated length."""
    ids = tokenizer(texts, truncation=True, max_length=max_len)["input_ids"]
    full = tokenizer(texts, verbose=False)["input_ids"]
    return pd.DataFrame({"input_ids": ids, "n_tokens": [len(x) for x in full]})


def write_tokenized(frame: pd.DataFrame, path: str | Path) -> None:
    write_atomic(path, lambda tmp: frame.to_parquet(tmp, index=False))


@dataclass(frozen=True)
class TokenizedSplit:
    """One split's variable-length id sequences and labels, ready to batch."""

    ids: list[Tensor]  # each (T_i,), int64, T_i <= max_len
    labels: Tensor  # (N,)

    def __len__(self) -> int:
        return len(self.ids)


def read_tokenized(path: str | Path) -> TokenizedSplit:
    frame = pd.read_parquet(path)
    ids = [torch.tensor(x, dtype=torch.long) for x in frame["input_ids"]]
    return TokenizedSplit(ids, torch.tensor(frame["label"].tolist(), dtype=torch.long))


def pad_batch(sequences: list[Tensor], pad_id: int) -> Tensor:
    """Stack sequences (T_i,) into (B, max T_i), right-padded with ``pad_id``.

    Padding only to the batch's own longest sequence saves the attention's
    O(T²) work on PADs that a fixed max_len would do.
    """
    return torch.nn.utils.rnn.pad_sequence(sequences, batch_first=True, padding_value=pad_id)


def batches(
    split: TokenizedSplit,
    batch_size: int,
    pad_id: int,
    generator: torch.Generator | None = None,
    bucket: bool = False,
):
    """Yield ``(input_ids (B, T), labels (B,))``; shuffled when a generator is given.

    ``bucket`` groups sequences of similar length into the same batch (sorting
    within windows of 50 batches, then shuffling the batches), so little padding
    is left to compute on.
    """
    n = len(split)
    order = torch.randperm(n, generator=generator) if generator is not None else torch.arange(n)
    if bucket:
        lengths = torch.tensor([len(x) for x in split.ids])
        window = batch_size * 50
        chunks = [order[i : i + window] for i in range(0, n, window)]
        order = torch.cat([c[lengths[c].argsort(stable=True)] for c in chunks])
    groups = list(order.split(batch_size))
    if bucket and generator is not None:
        groups = [groups[i] for i in torch.randperm(len(groups), generator=generator)]
    for idx in groups:
        yield pad_batch([split.ids[i] for i in idx], pad_id), split.labels[idx]
