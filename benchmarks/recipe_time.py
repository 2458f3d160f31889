"""Wall time of a recipe as a new user runs it: a fresh clone, an empty DVC cache, one command.

The `transformer` recipe's target is one network at or above NB-LR within 20 minutes on
2 CPU cores, from a fresh clone. This benchmark measures exactly that path:

1. ``git clone`` of this repository's HEAD into a temporary folder, with its own
   (empty) DVC cache, so every stage runs: download, tokenize, baseline, train,
   evaluate, render.
2. ``dvc exp run -n <recipe>-s<seed> -S …`` with the recipe's settings from
   ``recipes/<recipe>.yaml`` (the file the docs print the command from), timed.
3. The clone's validation and test accuracy, so the time is tied to the result it bought.

Inputs are read as the repository reads them: a hub id in ``data.source`` or
``tokenizer.name`` that is a local folder here (a git-ignored mirror) is linked into
the clone under the same name; otherwise the clone downloads it.

Run from the repository root, on an otherwise idle machine (other work on the cores is
measured too):

    python benchmarks/recipe_time.py [--recipe transformer] [--seed 42] [--against REV]

With ``--against REV`` the same is done first for commit REV (its own recipe file, as its
docs printed it), then for HEAD, one after the other on the same machine, and the record
adds REV's run and ``ratio``: HEAD's seconds over REV's, so a speed claim is a ratio
measured side by side. Writes benchmarks/results/recipe_time.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path

from scratchformer.config import Params, load_params
from scratchformer.files import write_json
from scratchformer.reporting import recipes

OUT = Path("benchmarks/results/recipe_time.json")


def local_inputs(params: Params) -> list[str]:
    """The inputs named in params that exist here as folders inside the repository."""
    names = [params.data.source, params.tokenizer.name]
    return [n for n in names if not Path(n).is_absolute() and Path(n).is_dir()]


def time_recipe(rev: str, name: str, seed: int, inputs: list[str]) -> dict:
    """Clone ``rev`` into a temporary folder and time ``dvc exp run`` of recipe ``name`` as that commit writes it.

    ``inputs``: the folders to link into the clone under the same names (see :func:`local_inputs`).
    """
    with tempfile.TemporaryDirectory() as tmp:
        clone = Path(tmp) / "clone"
        subprocess.run(["git", "clone", "-q", ".", str(clone)], check=True)
        subprocess.run(["git", "checkout", "-q", rev], cwd=clone, check=True)
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, check=True, capture_output=True, text=True)
        for folder in inputs:
            (clone / folder).parent.mkdir(parents=True, exist_ok=True)
            (clone / folder).symlink_to(Path(folder).resolve(), target_is_directory=True)
        recipe = recipes.settings(recipes.load(name, clone / "recipes"))  # the recipe as that commit's docs print it
        settings = [*recipe, f"seed={seed}"]
        command = ["dvc", "exp", "run", "-n", f"{name}-s{seed}", *(a for s in settings for a in ("-S", s))]
        env = {**os.environ, "PYTHONPATH": str(clone / "src")}  # the clone's code, whatever is installed
        start = time.perf_counter()
        subprocess.run(command, cwd=clone, env=env, check=True, stdout=subprocess.DEVNULL)
        seconds = round(time.perf_counter() - start, 1)
        scores = json.loads((clone / "metrics/eval.json").read_text(encoding="utf-8"))
    return {
        "settings": recipe,  # the docs quote this time only while the recipe still says this
        "commit": commit.stdout.strip(),
        "seconds": seconds,
        "validation_accuracy": scores["validation"]["accuracy"],
        "test_accuracy": scores["test"]["accuracy"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--recipe", default="transformer", help="a file in recipes/ (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=42, help="the run's seed (default: %(default)s)")
    parser.add_argument(
        "--against", metavar="REV", help="also time the recipe at this commit, first, and print HEAD's time / its"
    )
    args = parser.parse_args()
    inputs = local_inputs(load_params(Path("params.yaml")))
    earlier = time_recipe(args.against, args.recipe, args.seed, inputs) if args.against else None
    result = {"recipe": args.recipe, "seed": args.seed, **time_recipe("HEAD", args.recipe, args.seed, inputs)}
    result |= {"cpus": os.cpu_count(), "machine": platform.machine()}
    if earlier is not None:
        result |= {"against": earlier, "ratio": round(result["seconds"] / earlier["seconds"], 3)}
    write_json(OUT, result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
