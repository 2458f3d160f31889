"""The DVC stages, one module each: ``python -m stages.<name>`` from the repo root, as dvc.yaml says.

A stage module holds one function, ``run(params, <paths>…)``, that reads and writes
files, and ends in ``stage(run)``. That one helper is the whole command line of every
stage: ``--params`` and one ``--<path>`` option per parameter of ``run`` (its name without
a ``_dir`` or ``_path`` ending, ``-`` for ``_``: ``tokenized_dir`` is ``--tokenized``), so
what a stage reads and writes is declared once, by ``run``'s signature, and the same
code runs on the real corpus and on test fixtures. The params a stage reads are
declared once too, by the module's ``PARAMS`` (dotted keys, ``"train"`` or
``"train.lr"``): dvc.yaml's ``params:`` for the stage must equal it
(tests/test_dvc_yaml.py), and a training stage's resume key digests exactly those
values (``Params.select``).

An error the user can fix (a params value, a corpus file or row, a corrupt file the
pipeline wrote, a run that diverged) prints one line (what, where, why, the fix) to
stderr and exits with status 2, with no traceback; pass ``--debug`` to the stage, or
set ``SCRATCHFORMER_DEBUG=1``, to see the traceback. Any other error is a bug and keeps
its traceback.
"""

from __future__ import annotations

import argparse
import inspect
import json
import logging
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

import scratchformer
from scratchformer.config import Params, UserError, load_params

USER_ERROR_STATUS = 2


def stage_code(stage: str, dvc_yaml: Path = Path("dvc.yaml")) -> list[Path]:
    """The Python files ``stage`` depends on in ``dvc_yaml`` (folders expanded), as DVC sees them.

    What a training stage's resume key digests as its code
    (:func:`scratchformer.train.resume.resume_key`). DVC runs a stage from the folder of its
    ``dvc.yaml``; run from anywhere else (a test, a notebook), the whole library stands in:
    more than the stage reads, never less.
    """
    if not dvc_yaml.is_file():
        return _python_files(Path(scratchformer.__file__).parent)
    deps = yaml.safe_load(dvc_yaml.read_text(encoding="utf-8"))["stages"][stage].get("deps", [])
    return [p for dep in deps for p in _python_files(dvc_yaml.parent / dep)]


def _python_files(root: Path) -> list[Path]:
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
    return [p for p in files if p.suffix == ".py"]


def run_stage(main: Callable[[], object]) -> None:
    """Call ``main``; a user error becomes one line on stderr and exit status 2 (see the module docstring)."""
    if "--debug" in sys.argv[1:]:
        sys.argv.remove("--debug")
        os.environ["SCRATCHFORMER_DEBUG"] = "1"  # torchrun's worker processes inherit it
    if os.environ.get("SCRATCHFORMER_DEBUG", "0") not in ("", "0"):
        main()
        return
    try:
        main()
    except UserError as err:  # ConfigError, DataError, CorruptFileError, HubUnreachableError, …
        line = " ".join(str(err).split("\n"))
        print(f"error: {line} (--debug or SCRATCHFORMER_DEBUG=1 shows the traceback)", file=sys.stderr)
        sys.exit(USER_ERROR_STATUS)


def path_options(run: Callable[..., Any]) -> list[str]:
    """The path parameters of a stage's ``run``: all but ``params`` and ``world``."""
    return [name for name in inspect.signature(run).parameters if name not in ("params", "world")]


def flag(name: str) -> str:
    """The option of a path parameter: ``model_path`` -> ``--model``."""
    return "--" + re.sub(r"_(dir|path)$", "", name).replace("_", "-")


def parse(run: Callable[..., Any], argv: list[str] | None = None) -> tuple[Params, dict[str, Path]]:
    """``--params`` and a required ``--<path>`` per path parameter of ``run``; the params loaded."""
    module = sys.modules[run.__module__]
    parser = argparse.ArgumentParser(description=(module.__doc__ or "").split("\n")[0])
    parser.add_argument("--params", default="params.yaml", help="the params file (default: %(default)s)")
    for name in path_options(run):
        parser.add_argument(flag(name), dest=name, type=Path, required=True, metavar="PATH")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    return load_params(args.params), {name: getattr(args, name) for name in path_options(run)}


def stage(
    run: Callable[..., Any],
    say: Callable[[Any], str] = lambda result: json.dumps(result, indent=2, ensure_ascii=False),
    ranks: Callable[[Params, Callable[[Any], Any]], Any] | None = None,
) -> None:
    """The command line of one stage: parse, ``run``, print ``say(result)`` unless it is None.

    With ``ranks``, ``run`` takes a ``world`` and ``ranks(params, work)`` runs ``work(world)``
    on each of the stage's processes (see :func:`scratchformer.train.distributed.run_ranks`);
    only rank 0 gets a result, so only rank 0 prints.
    """

    def main() -> None:
        params, paths = parse(run)
        if ranks is None:
            result = run(params, **paths)
        else:
            result = ranks(params, lambda world: run(params, **paths, world=world))
        if result is not None:
            print(say(result))

    run_stage(main)
