"""Stage inputs: fingerprint the corpus and the tokenizer (runs on every repro; cheap)."""

from __future__ import annotations

from pathlib import Path

from scratchformer.config import Params
from scratchformer.data.fingerprints import fingerprint
from scratchformer.files import write_json
from stages import stage

PARAMS = ("data", "tokenizer")  # whole sections: a params.yaml that leaves out a revision key still works


def run(params: Params, corpus_path: Path, tokenizer_path: Path) -> dict:
    found = {
        "corpus": fingerprint(params.data.source, params.data.revision, "data.source", "dataset"),
        "tokenizer": fingerprint(params.tokenizer.name, params.tokenizer.revision, "tokenizer.name", "model"),
    }
    write_json(corpus_path, found["corpus"])
    write_json(tokenizer_path, found["tokenizer"])
    return found


def say(found: dict) -> str:
    lines = []
    for key, f in found.items():
        what = f"{len(f['files'])} files hashed" if "files" in f else f"commit {f['resolved']}"
        lines.append(f"{key}: {f['source']} ({what})")
    return "\n".join(lines)


if __name__ == "__main__":
    stage(run, say)
