"""Stage publish: copy what pretrain and train recorded from the DVC cache to git.

pretrain and train keep every output in the DVC cache (``logs/``), because DVC
restores a stage from its run cache only when every output of the stage is in
the cache, and ``dvc push`` never sends a ``cache: false`` output to a remote.
So a clone that pulls the run cache gets train back without running it. The
metrics and curves that ``dvc metrics``, ``dvc plots`` and ``dvc exp show``
read, and that a reviewer diffs, live in git: this stage writes them, byte for
byte the recorded ones, in a second.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from scratchformer.files import atomic_dir, write_atomic
from stages import run_stage

PARAMS = ()  # copies files; reads no params


def run(copies: list[tuple[Path, Path]]) -> None:
    """Copy each ``(source, target)``, a file or a whole folder; a missing source is an error."""
    for source, target in copies:
        if source.is_dir():
            with atomic_dir(target) as tmp:
                shutil.copytree(source, tmp, dirs_exist_ok=True)
        elif source.is_file():
            write_atomic(target, lambda tmp, source=source: shutil.copyfile(source, tmp))
        else:
            raise FileNotFoundError(f"{source}: nothing to publish; run the stage that writes it (`dvc repro`)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--copy",
        nargs=2,
        type=Path,
        action="append",
        required=True,
        metavar=("SOURCE", "TARGET"),
        help="a file or folder to copy, and where; repeat for each",
    )
    copies = [(source, target) for source, target in parser.parse_args().copy]
    run(copies)
    for source, target in copies:
        print(f"{source} -> {target}")


if __name__ == "__main__":
    run_stage(main)
