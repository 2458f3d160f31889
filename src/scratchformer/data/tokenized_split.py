"""A tokenized split on disk and in memory: flat ids plus offsets, read back and batched.

The tokenize stage writes each split as three ``.npy`` arrays (:func:`write_tokenized`);
training, evaluation and the analyses read them back (:func:`read_tokenized`) into a
:class:`TokenizedSplit` and draw padded batches from it (:func:`batches`). Nothing here
needs the tokenizer: it only moves ids that :mod:`scratchformer.data.tokenization` made.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from scratchformer.data.tokenization import FlatIds, encode_flat
from scratchformer.files import atomic_dir

NB_TRAIN = "nb-train"  # the train split again, cut at nb.fit_len: what the n-gram model's fit reads


def label_tensor(labels: Tensor | np.ndarray | list[int]) -> Tensor:
    """The labels as a tensor of their own: a copy, never a view of the caller's array.

    A view would tie the split to memory it does not own, and a read-only array (pandas hands
    one out for a column) makes PyTorch warn on stderr in the middle of a stage's log.
    """
    if isinstance(labels, Tensor):
        return labels.detach().to(torch.long, copy=True)
    return torch.as_tensor(np.array(labels, dtype=np.int64))


@dataclass(frozen=True)
class TokenizedSplit:
    """One split's variable-length id sequences, stored flat, and labels; batched by indexing.

    Sequence i is ``tokens[offsets[i]:offsets[i + 1]]``. No Python object is built
    per sequence: a batch gathers its rows from the flat array in one indexing step.
    """

    tokens: np.ndarray  # (total,) uint16 or int32
    offsets: np.ndarray  # (N + 1,) int64
    labels: Tensor  # (N,) int64

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> Tensor:
        return torch.from_numpy(np.diff(self.offsets))  # (N,)

    @classmethod
    def from_sequences(cls, sequences: list, labels: Tensor | list[int]) -> TokenizedSplit:
        """From a list of id sequences (lists or 1-D tensors), e.g. in tests."""
        lengths = [len(x) for x in sequences]
        flat = [int(t) for x in sequences for t in x]
        dtype = np.uint16 if all(0 <= t <= np.iinfo(np.uint16).max for t in flat) else np.int32
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        return cls(np.array(flat, dtype=dtype), offsets, label_tensor(labels))

    @classmethod
    def encoded(cls, tokenizer, texts: list[str], labels, max_len: int) -> TokenizedSplit:
        """``texts`` tokenized as the tokenize stage tokenizes a split (:func:`encode_flat`), with their ``labels``."""
        flat = encode_flat(tokenizer, texts, max_len)
        return cls(flat.tokens, flat.offsets, label_tensor(labels))

    def prefix(self, n: int) -> TokenizedSplit:
        """Each sequence's first ``n`` ids (all of a shorter one): what a network that reads ``n`` tokens sees."""
        lengths = np.diff(self.offsets)
        if lengths.max(initial=0) <= n:
            return self
        position = np.arange(len(self.tokens)) - np.repeat(self.offsets[:-1], lengths)  # (total,): within its sequence
        kept = np.minimum(lengths, n)
        offsets = np.concatenate([[0], np.cumsum(kept)]).astype(np.int64)
        return TokenizedSplit(self.tokens[position < n], offsets, self.labels)

    def batch(self, index, pad_id: int) -> Tensor:
        """Rows ``index`` (B,) as one (B, max length) tensor right-padded with ``pad_id``."""
        index = np.asarray(index, dtype=np.int64)
        starts, lengths = self.offsets[index], self.offsets[index + 1] - self.offsets[index]  # (B,), (B,)
        T = int(lengths.max()) if len(index) else 0
        position = np.arange(T)  # (T,)
        real = position < lengths[:, None]  # (B, T)
        out = np.full((len(index), T), pad_id, dtype=np.int64)
        out[real] = self.tokens[(starts[:, None] + position)[real]]
        return torch.from_numpy(out)

    def sequence(self, i: int) -> Tensor:
        return torch.from_numpy(self.tokens[self.offsets[i] : self.offsets[i + 1]].astype(np.int64))


SPLIT_FILES = ("tokens.npy", "offsets.npy", "labels.npy")


def write_tokenized(folder: str | Path, flat: FlatIds, labels: np.ndarray) -> None:
    """``folder``/tokens.npy, offsets.npy, labels.npy (``np.save``: same arrays, same bytes)."""
    with atomic_dir(folder) as tmp:
        np.save(tmp / "tokens.npy", flat.tokens)
        np.save(tmp / "offsets.npy", flat.offsets)
        np.save(tmp / "labels.npy", np.asarray(labels, dtype=np.int64))


def read_tokenized(folder: str | Path) -> TokenizedSplit:
    folder = Path(folder)
    missing = [name for name in SPLIT_FILES if not (folder / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder}: no tokenized split ({', '.join(missing)} missing); run `dvc repro`")
    labels = torch.from_numpy(np.load(folder / "labels.npy"))
    return TokenizedSplit(np.load(folder / "tokens.npy"), np.load(folder / "offsets.npy"), labels)


def read_class_names(tokenized_dir: str | Path) -> list[str]:
    """The class names the tokenize stage recorded in ``meta.json`` (id i is names[i])."""
    path = Path(tokenized_dir) / "meta.json"
    return json.loads(path.read_text(encoding="utf-8"))["class_names"]


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
        lengths = split.lengths
        window = batch_size * 50
        chunks = [order[i : i + window] for i in range(0, n, window)]
        order = torch.cat([c[lengths[c].argsort(stable=True)] for c in chunks])
    groups = list(order.split(batch_size))
    if bucket and generator is not None:
        groups = [groups[i] for i in torch.randperm(len(groups), generator=generator)]
    for idx in groups:
        yield split.batch(idx.numpy(), pad_id), split.labels[idx]
