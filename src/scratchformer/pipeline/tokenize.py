"""Stage tokenize: raw splits -> token ids, and the tokenizer saved for later stages."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from scratchformer.config import Params
from scratchformer.data import SPLITS, read_split
from scratchformer.files import write_json
from scratchformer.tokenization import encode, load_tokenizer, save_tokenizer, write_tokenized

log = logging.getLogger(__name__)


def run(params: Params, raw_dir: Path, tokenized_dir: Path, tokenizer_dir: Path) -> dict:
    """Raw splits -> ids per split, and the tokenizer saved for every later stage."""
    tokenizer = load_tokenizer(params.tokenizer.name)
    max_len = params.tokenizer.max_len
    meta = {"vocab_size": len(tokenizer), "pad_id": tokenizer.pad_token_id, "max_len": max_len, "splits": {}}
    for name in SPLITS:
        frame = read_split(raw_dir, name)
        ids = encode(tokenizer, frame["text"].tolist(), max_len)
        ids["label"] = frame["label"]
        write_tokenized(ids, tokenized_dir / f"{name}.parquet")
        lengths = ids["n_tokens"]
        meta["splits"][name] = {
            "rows": len(ids),
            "truncated": int((lengths > max_len).sum()),
            "tokens_median": float(lengths.median()),
            "tokens_p90": float(lengths.quantile(0.9)),
            "unk_rate": _unk_rate(ids["input_ids"], tokenizer.unk_token_id),
        }
        log.info("%s: %s", name, meta["splits"][name])
    save_tokenizer(tokenizer, tokenizer_dir)
    write_json(tokenized_dir / "meta.json", meta)
    return meta


def _unk_rate(ids: pd.Series, unk_id: int) -> float:
    flat = [t for seq in ids for t in seq]
    return sum(t == unk_id for t in flat) / max(1, len(flat))
