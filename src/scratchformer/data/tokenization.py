"""Tokenize: text -> token ids with the bert-base-chinese vocabulary, stored flat.

Only the tokenizer's vocabulary is used (no pretrained weights). It is saved
next to the ids so that training, evaluation and ``predict`` never need the hub.
Ids are kept as one integer array per split plus offsets (uint16 while the
vocabulary fits), so a million reviews take a few hundred MB, not Python lists;
:mod:`scratchformer.data.tokenized_split` stores them and reads them back.
"""

from __future__ import annotations

import itertools
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from transformers import AutoTokenizer, BertTokenizer, PreTrainedTokenizerBase

from scratchformer.config import ConfigError, ProbeConfig, UserError
from scratchformer.data.hub import check_hub_reachable, is_local
from scratchformer.files import atomic_dir, restore_dir

log = logging.getLogger(__name__)


# The tokenizer classes save_tokenizer writes (transformers 5 names its fast BERT tokenizer
# BertTokenizer; transformers 4 wrote BertTokenizerFast): the only ones a saved folder may name.
SAVED_CLASSES = ("BertTokenizer", "BertTokenizerFast")
TOKENIZER_CONFIG = "tokenizer_config.json"
TOKENIZER_FILE = "tokenizer.json"  # the vocabulary and rules the Rust tokenizer reads
CODE_KEY = "auto_map"  # transformers' pointer at Python files to import from the folder


class UnsafeFolderError(UserError, ValueError):
    """A folder asks for code of its own to be run, or names a class this project never writes; nothing ran."""


def read_json_object(path: Path) -> dict:
    """A JSON object from ``path``; anything else is an UnsafeFolderError naming the file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UnsafeFolderError(f"{path}: not valid JSON ({err})") from err
    if not isinstance(data, dict):
        raise UnsafeFolderError(f"{path}: not a JSON object")
    return data


def refuse_code(path: Path, data: dict) -> None:
    """Refuse a config that points transformers at code in its folder (``auto_map``), before transformers sees it.

    transformers imports such code when asked to trust it, and asks on stdin when not
    told either way; this project runs no code from a folder it reads, so it never asks.
    """
    if CODE_KEY in data:
        target = json.dumps(data[CODE_KEY], ensure_ascii=False)
        target = target if len(target) <= 80 else target[:77] + "..."
        raise UnsafeFolderError(
            f"{path}: key {CODE_KEY!r} points at code in the folder ({target}); "
            "scratchformer never runs code from a folder it loads: remove the key, or re-export the model"
        )


def load_tokenizer(name: str, revision: str | None = None, lowercase: bool | None = None) -> PreTrainedTokenizerBase:
    """A fast tokenizer from a hub id (at ``revision``) or a local folder (vocab.txt + tokenizer_config.json).

    ``lowercase`` (not None) overrides the folder's ``do_lower_case``. bert-base-chinese's
    config says False while its vocabulary holds Latin words in lower case only, so
    without it 'MP3' and 'WiFi' read as [UNK]; the saved tokenizer keeps the setting, so
    every later stage and ``predict`` read text the same way.

    No code from the folder or the hub repository runs (``trust_remote_code=False``,
    and a local folder whose configs carry ``auto_map`` is refused before transformers
    reads them). A folder from someone else is read with :func:`load_saved_tokenizer`,
    which also accepts only the classes this project writes.
    """
    restore_dir(Path(name).expanduser())  # a folder a killed save_tokenizer left aside (files.atomic_dir)
    if is_local(name):
        if revision:
            log.warning("tokenizer.revision=%s is ignored: %s is a local folder", revision, name)
        folder = Path(name).expanduser()
        configs = [folder / file for file in (TOKENIZER_CONFIG, "config.json") if (folder / file).is_file()]
        for path in configs:
            refuse_code(path, read_json_object(path))
        revision = None
    else:
        check_hub_reachable(name, "tokenizer.name", "model")
    casing = {} if lowercase is None else {"do_lower_case": lowercase}
    tokenizer = AutoTokenizer.from_pretrained(name, use_fast=True, revision=revision, trust_remote_code=False, **casing)
    return _checked(tokenizer, name)


def load_saved_tokenizer(folder: str | Path) -> PreTrainedTokenizerBase:
    """The tokenizer :func:`save_tokenizer` wrote into ``folder`` (or a model folder), running nothing from it.

    Its ``tokenizer_config.json`` must name one of :data:`SAVED_CLASSES` and carry no
    ``auto_map``; the class is then built directly (no Auto* lookup, which would read the
    folder's config.json and could import the folder's code), from local files only.
    """
    folder = Path(folder)
    restore_dir(folder)  # a folder a killed write left aside (files.atomic_dir's fallback)
    path = folder / TOKENIZER_CONFIG
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: no saved tokenizer in {folder}")
    data = read_json_object(path)
    refuse_code(path, data)
    named = data.get("tokenizer_class")
    if named not in SAVED_CLASSES:
        raise UnsafeFolderError(
            f"{path}: key 'tokenizer_class' is {named!r}; scratchformer loads only the tokenizers it saves "
            f"({', '.join(SAVED_CLASSES)})"
        )
    tokenizer = BertTokenizer.from_pretrained(str(folder), local_files_only=True, trust_remote_code=False)
    return _checked(tokenizer, str(folder))


def _checked(tokenizer: PreTrainedTokenizerBase, name: str) -> PreTrainedTokenizerBase:
    if not tokenizer.is_fast:
        raise ValueError(f"tokenizer {name!r} has no fast (Rust) implementation")
    if tokenizer.pad_token_id is None:
        raise ValueError(f"tokenizer {name!r} has no PAD token")
    return tokenizer


def probe_ids(config: ProbeConfig, tokenizer: PreTrainedTokenizerBase, max_len: int) -> tuple[list[int], int]:
    """The probe text's ids as the model sees them (cut at ``max_len``), and where its query token last is.

    Checked at the tokenize stage, the first with the tokenizer, so that a query
    token the cut removes stops the pipeline there, naming tokenizer.max_len,
    rather than at train.
    """
    ids = tokenizer(config.text, truncation=True, max_length=max_len)["input_ids"]
    tokens = tokenizer.convert_ids_to_tokens(ids)
    if config.query_token not in tokens:
        every = tokenizer.convert_ids_to_tokens(tokenizer(config.text)["input_ids"])
        if config.query_token in every:
            first = every.index(config.query_token)  # the cut keeps max_len - 1 tokens, then [SEP]
            raise ConfigError(
                f"tokenizer.max_len={max_len} cuts probe.text to its first {max_len - 1} tokens and [SEP], and "
                f"probe.query_token={config.query_token!r} first comes at token {first + 1}: raise tokenizer.max_len "
                f"to at least {first + 2}, or shorten probe.text"
            )
        raise ConfigError(
            f"probe.query_token={config.query_token!r} is not a token of probe.text (tokens: {' '.join(every)})"
        )
    # The last occurrence: in a review the closing judgement usually carries the sentiment.
    return ids, len(tokens) - 1 - tokens[::-1].index(config.query_token)


def save_tokenizer(tokenizer: PreTrainedTokenizerBase, out_dir: str | Path) -> None:
    with atomic_dir(out_dir) as tmp:
        tokenizer.save_pretrained(tmp)


def encode(tokenizer: PreTrainedTokenizerBase, texts: list[str], max_len: int) -> pd.DataFrame:
    """Ids truncated to ``max_len`` ([CLS] … [SEP]), with each text's untruncated length."""
    flat = encode_flat(tokenizer, texts, max_len)
    ids = [flat.tokens[a:b].tolist() for a, b in zip(flat.offsets[:-1], flat.offsets[1:], strict=True)]
    return pd.DataFrame({"input_ids": ids, "n_tokens": flat.n_tokens})


@dataclass(frozen=True)
class FlatIds:
    """Many texts' ids, one after another: text i is ``tokens[offsets[i]:offsets[i + 1]]``."""

    tokens: np.ndarray  # (total,) uint16 (a vocabulary of up to 65,536) or int32
    offsets: np.ndarray  # (N + 1,) int64
    n_tokens: np.ndarray  # (N,) each text's length before truncation, [CLS] and [SEP] included


def token_dtype(vocab_size: int) -> np.dtype:
    return np.dtype(np.uint16) if vocab_size <= np.iinfo(np.uint16).max + 1 else np.dtype(np.int32)


def encode_flat(tokenizer: PreTrainedTokenizerBase, texts, max_len: int, batch_size: int = 4096) -> FlatIds:
    """Tokenize every text once, ``batch_size`` at a time, into flat arrays truncated to ``max_len``.

    A text longer than ``max_len`` keeps its first ``max_len - 1`` ids and ends in
    [SEP], which is what the tokenizer's own ``truncation=True`` gives; its full
    length is kept in ``n_tokens`` for the statistics. ``texts`` is a list of str or
    an Arrow string array (then only one batch at a time becomes Python strings).
    The Rust tokenizer is called directly (``encode_batch_fast``: no character
    offsets), the same encoding as ``tokenizer(texts)`` without its per-row dicts.
    """
    dtype = token_dtype(len(tokenizer))
    backend = tokenizer.backend_tokenizer
    if backend.truncation is not None or backend.padding is not None:
        backend.no_truncation()  # what ``tokenizer(texts)`` itself does before encoding
        backend.no_padding()
    # Room for every text at max_len; pages never written are never resident, and the
    # result is a view of the filled part.
    tokens = np.empty(len(texts) * max_len, dtype=dtype)
    n_tokens = np.empty(len(texts), dtype=np.int64)
    filled = 0
    for i in range(0, len(texts), batch_size):
        chunk = texts[i : i + batch_size]
        chunk = chunk.to_pylist() if hasattr(chunk, "to_pylist") else list(chunk)
        ids = [e.ids for e in backend.encode_batch_fast(chunk, add_special_tokens=True)]
        full_len = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        full = np.fromiter(itertools.chain.from_iterable(ids), dtype=dtype, count=int(full_len.sum()))
        kept = _truncate(full, full_len, max_len, tokenizer.sep_token_id)
        tokens[filled : filled + len(kept)] = kept
        n_tokens[i : i + len(ids)] = full_len
        filled += len(kept)
    offsets = np.concatenate([[0], np.cumsum(np.minimum(n_tokens, max_len))]).astype(np.int64)
    return FlatIds(tokens[:filled], offsets, n_tokens)


def _truncate(full: np.ndarray, lengths: np.ndarray, max_len: int, sep_id: int) -> np.ndarray:
    """Keep each text's first ``max_len`` ids, the last of a cut text turned into [SEP]."""
    starts = np.cumsum(lengths) - lengths
    position = np.arange(len(full)) - np.repeat(starts, lengths)  # index of each id within its text
    kept = np.minimum(lengths, max_len)
    out = full[position < np.repeat(kept, lengths)]
    cut = lengths > max_len
    out[(np.cumsum(kept) - 1)[cut]] = sep_id
    return out


def token_stats(flat: FlatIds, max_len: int, unk_id: int) -> dict:
    """Rows, texts cut at ``max_len``, median and 90th-percentile length, share of [UNK] ids read."""
    n = flat.n_tokens
    return {
        "rows": len(n),
        "truncated": int((n > max_len).sum()),
        "tokens_median": float(np.median(n)) if len(n) else 0.0,
        "tokens_p90": float(np.quantile(n, 0.9)) if len(n) else 0.0,
        "unk_rate": float((flat.tokens == unk_id).sum() / max(1, len(flat.tokens))),
    }
