"""Stage inputs: fingerprint the corpus, the tokenizer and any pretraining corpora (runs on every repro; cheap).

Being first, it also checks what only a later stage would trip on: that this machine has
the ``train.device`` and runs its ``train.precision``, and that a hub id can be read (with
HF_HUB_OFFLINE=1: that it is in the local cache). Every check runs before either file is
written, and dvc.yaml marks both files ``persist``, so DVC does not delete them before the
stage runs: a failed check leaves the tracked fingerprints as they were.
"""

from __future__ import annotations

from pathlib import Path

from scratchformer.config import Params
from scratchformer.data.fingerprints import fingerprint
from scratchformer.device import check_device
from scratchformer.files import write_json
from stages import stage

# data and tokenizer whole: a params.yaml that leaves out a revision key still works
PARAMS = ("data", "tokenizer", "pretrain.corpora", "train.device", "train.precision")


def run(params: Params, corpus_path: Path, tokenizer_path: Path, pretrain_path: Path) -> dict:
    """Write the three fingerprint files; ``pretrain_path`` lists one per ``pretrain.corpora`` entry (none: [])."""
    check_device(params.train)
    found = {
        "corpus": fingerprint(params.data.source, params.data.revision, "data.source", "dataset"),
        "tokenizer": fingerprint(params.tokenizer.name, params.tokenizer.revision, "tokenizer.name", "model"),
    }
    corpora = [
        fingerprint(source, None, f"pretrain.corpora[{i}]", "dataset")
        for i, source in enumerate(params.pretrain.corpora)
    ]
    write_json(corpus_path, found["corpus"])
    write_json(tokenizer_path, found["tokenizer"])
    write_json(pretrain_path, corpora)
    return found | {f"pretrain.corpora[{i}]": f for i, f in enumerate(corpora)}


def say(found: dict) -> str:
    lines = []
    for key, f in found.items():
        what = f"{len(f['files'])} files hashed" if "files" in f else f"commit {f['resolved']}"
        lines.append(f"{key}: {f['source']} ({what})")
    return "\n".join(lines)


if __name__ == "__main__":
    stage(run, say)
