"""Stage inputs: fingerprint the corpus and the tokenizer (runs on every repro; cheap)."""

from __future__ import annotations

from pathlib import Path

from scratchformer.config import Params
from scratchformer.files import write_json
from scratchformer.inputs import fingerprint


def run(params: Params, corpus_path: Path, tokenizer_path: Path) -> dict:
    found = {
        "corpus": fingerprint(params.data.source, params.data.revision, "data.source", "dataset"),
        "tokenizer": fingerprint(params.tokenizer.name, params.tokenizer.revision, "tokenizer.name", "model"),
    }
    write_json(corpus_path, found["corpus"])
    write_json(tokenizer_path, found["tokenizer"])
    return found
