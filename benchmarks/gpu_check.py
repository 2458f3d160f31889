"""On a machine with CUDA: the default pipeline and the `best` and `transformer` recipes, fp32 against bf16.

Each of the six runs is a real `dvc exp run --temp` (nothing in the workspace
changes) with ``train.device=cuda`` and the precision set; the script prints, per run,
the training samples/s (from the train stage's own "trained in … s" log line), the
wall time of the whole experiment, and the validation/test accuracy and acceptance
checks from `dvc exp show`. A recipe's settings are read from ``recipes/<name>.yaml``,
the file the docs print the recipe's command from, so the two never drift apart.

Run from the repository root, set up as the README says, with the data reachable:

    python benchmarks/gpu_check.py [--only default] [--doc docs/scale-out.md]

Writes benchmarks/results/gpu_check.json; with ``--doc`` also the table between
``<!-- gpu:start -->`` and ``<!-- gpu:end -->``.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import torch

from scratchformer.files import write_json
from scratchformer.render import markdown
from scratchformer.reporting import recipes
from scratchformer.reporting.experiments import experiments

OUT = Path("benchmarks/results/gpu_check.json")
RECIPES = ("best", "transformer")  # besides the default params


def recipe_settings(name: str, folder: Path = recipes.FOLDER) -> list[str]:
    """The ``key=value`` arguments of recipe ``name``'s ``-S`` flags (``recipes/<name>.yaml``)."""
    return recipes.settings(recipes.load(name, folder))


def run_experiment(name: str, settings: list[str]) -> dict:
    cmd = ["dvc", "exp", "run", "--temp", "-n", name, "-S", "train.device=cuda"]
    for setting in settings:
        cmd += ["-S", setting]
    start = time.perf_counter()
    result = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        raise SystemExit(f"{' '.join(cmd)} failed")
    trained = [float(s) for s in re.findall(r"trained in ([0-9.]+) s on cuda", result.stdout + result.stderr)]
    return {"wall_seconds": round(wall, 1), "train_seconds": sum(trained) if trained else None}


def metrics_of(name: str) -> dict:
    shown = json.loads(subprocess.run(["dvc", "exp", "show", "--json"], capture_output=True, text=True).stdout)
    for record in experiments(shown):
        if record.get("name") == name:
            return record
    raise SystemExit(f"experiment {name} not found in `dvc exp show`")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["default", *RECIPES], help="run one recipe only")
    parser.add_argument("--doc", type=Path, help="write the table into this page (docs/scale-out.md)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("gpu_check: no CUDA device on this machine; nothing measured")
    runs = {"default": [], **{name: recipe_settings(name) for name in RECIPES}}
    if args.only:
        runs = {args.only: runs[args.only]}
    rows = []
    for recipe, settings in runs.items():
        for precision in ("fp32", "bf16"):
            name = f"gpu-{recipe}-{precision}"
            timing = run_experiment(name, [*settings, f"train.precision={precision}"])
            record = metrics_of(name)
            epochs, ensemble = record.get("train.epochs"), record.get("train.ensemble") or 1
            texts = record.get("data:data.rows.train")
            rate = None
            if timing["train_seconds"] and texts and epochs:
                rate = round(epochs * ensemble * texts / timing["train_seconds"], 1)
            row = {
                "recipe": recipe,
                "precision": precision,
                "samples_per_s": rate,
                **timing,
                "val_accuracy": record.get("eval:validation.accuracy"),
                "test_accuracy": record.get("eval:test.accuracy"),
                "passed": record.get("eval:acceptance.passed"),
            }
            rows.append(row)
            print(json.dumps(row))
    result = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "rows": rows}
    write_json(OUT, result)
    header = ["recipe", "precision", "train samples/s", "wall s", "val acc", "test acc", "checks passed"]
    keys = ["recipe", "precision", "samples_per_s", "wall_seconds", "val_accuracy", "test_accuracy", "passed"]
    table = f"Measured by `benchmarks/gpu_check.py` on {result['gpu']}, torch {result['torch']}.\n\n" + markdown.table(
        header, ([r[k] for k in keys] for r in rows)
    )
    print(table)
    if args.doc:
        text = args.doc.read_text(encoding="utf-8")
        args.doc.write_text(markdown.replace_block(text, "gpu", table), encoding="utf-8")


if __name__ == "__main__":
    main()
