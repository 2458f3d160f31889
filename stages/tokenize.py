"""Stage tokenize: raw splits -> flat token ids, and the tokenizer saved for later stages."""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow.parquet as pq

from scratchformer.config import Params
from scratchformer.data.fingerprints import resolved_revision
from scratchformer.data.ingest import SPLITS
from scratchformer.data.labels import Classes
from scratchformer.data.tokenization import (
    encode_flat,
    load_tokenizer,
    probe_ids,
    save_tokenizer,
    token_dtype,
    token_stats,
)
from scratchformer.data.tokenized_split import NB_TRAIN, write_tokenized
from scratchformer.files import write_json
from stages import stage

# A query token the cut removes from probe.text stops the pipeline here; nb.ngrams and nb.fit_len say
# whether the train split is also written at the n-gram model's fit length.
PARAMS = ("tokenizer", "probe.text", "probe.query_token", "nb.ngrams", "nb.fit_len")

log = logging.getLogger(__name__)


def run(params: Params, inputs_path: Path, raw_dir: Path, tokenized_dir: Path, tokenizer_dir: Path) -> dict:
    """Raw splits -> ``tokenized_dir``/<split>/{tokens,offsets,labels}.npy and meta.json; the tokenizer.

    The hub revision read is the one the inputs stage resolved (``inputs_path``). With an
    n-gram model whose fit reads more than the cut (``nb.fit_len``), the train split is also
    written at that length, as ``tokenized_dir``/nb-train: a bag of n-grams costs no more per
    token at any length, so it learns from the whole of a long review while the networks read its start.
    """
    revision = resolved_revision(inputs_path) or params.tokenizer.revision
    tokenizer = load_tokenizer(params.tokenizer.name, revision, params.tokenizer.lowercase)
    max_len = params.tokenizer.max_len
    probe_ids(params.probe, tokenizer, max_len)  # a probe train cannot use stops the pipeline here
    classes = Classes.read(raw_dir / "classes.json")
    meta = {
        "vocab_size": len(tokenizer),
        "pad_id": tokenizer.pad_token_id,
        "max_len": max_len,
        "token_dtype": str(token_dtype(len(tokenizer))),  # uint16 while the vocabulary fits
        "class_names": classes.names,
        "splits": {},
    }
    for name in SPLITS:
        table = pq.read_table(raw_dir / f"{name}.parquet", columns=["text", "label"])
        flat = encode_flat(tokenizer, table["text"], max_len)
        write_tokenized(tokenized_dir / name, flat, table["label"].to_numpy())
        meta["splits"][name] = token_stats(flat, max_len, tokenizer.unk_token_id)
        log.info("%s: %s", name, meta["splits"][name])
        if name == "train" and (fit_len := params.nb_fit_len()):
            whole = encode_flat(tokenizer, table["text"], fit_len)
            write_tokenized(tokenized_dir / NB_TRAIN, whole, table["label"].to_numpy())
            meta["splits"][NB_TRAIN] = token_stats(whole, fit_len, tokenizer.unk_token_id)
            log.info("%s (nb.fit_len %d): %s", NB_TRAIN, fit_len, meta["splits"][NB_TRAIN])
    save_tokenizer(tokenizer, tokenizer_dir)
    write_json(tokenized_dir / "meta.json", meta)
    return meta


if __name__ == "__main__":
    stage(run, lambda meta: f"vocab {meta['vocab_size']} ({meta['token_dtype']} ids), max_len {meta['max_len']}")
