"""How a recipe's margin over the n-gram baselines moves with the amount of labelled train data.

A recipe level with the baselines on one corpus may be behind them with less data and
ahead with more, or level all along: the slope says which, and so whether more labelled
reviews are what would put it ahead. For each share of train (``data.train_share``: each
class alike, a smaller share's reviews inside a larger one's, validation and test as they
are) and each seed, in one fresh clone of HEAD (its own DVC cache), ``dvc exp run`` of the
recipe (``recipes/<recipe>.yaml``, with ``--corpus``'s data keys). Each run's baseline
stage fits the baselines on the same reduced train, so both sides of every point learn
from the same reviews. A point records the model's unseen validation and test accuracy,
each baseline's, and the evaluate stage's paired margin over the strongest baseline
(``<split>.vs_best_baseline``: the baseline strongest on unseen validation, a 95% paired
bootstrap interval over the unseen reviews).

    python benchmarks/learning_curve.py [--recipe transformer] [--corpus online-shopping]
        [--shares 0.25 0.5 1] [--seeds 42 52 62] [--set KEY=VALUE …] [--name NAME] [--keep]

``--set`` adds settings on top of the recipe's on every run (``train.epochs=20`` at a quarter
of train: as many steps as the recipe takes on all of it).

Writes ``benchmarks/results/learning_curve/<name>.json`` (``<recipe>[-<corpus>]`` unless
``--name``); its docs block is ``curve-<name>``. The runs' seconds are recorded too, but other work on the
machine slows them, so the block leaves them out. With ``--keep`` the experiments are fetched
into this repository (``curve-…``); a point on part of train is never taken for a run of its
corpus (``tools.docs.corpora`` leaves it out).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

from scratchformer.files import write_json
from scratchformer.reporting import recipes

HERE = Path(__file__).parent
OUT = HERE / "results" / "learning_curve"
_spec = importlib.util.spec_from_file_location("lever", HERE / "lever.py")
lever = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lever)
recipe_time = lever.recipe_time
SPLITS = ("validation", "test")


def scored(clone: Path) -> dict:
    """What one run's metrics say of its point: rows trained on, and each split's unseen scores and margin."""

    def read(name: str) -> dict:
        return json.loads((clone / "metrics" / f"{name}.json").read_text(encoding="utf-8"))

    model, baselines = read("eval"), read("baseline")
    point: dict = {"train_rows": read("data")["data"]["rows"]["train"]}
    for split in SPLITS:
        point[f"{split}_unseen"] = model[split]["unseen"]["accuracy"]
        point[f"{split}_vs_best_baseline"] = model[split]["vs_best_baseline"]
    point["baselines"] = {
        name: {f"{split}_unseen": scores[split]["unseen"]["accuracy"] for split in SPLITS}
        for name, scores in baselines.items()
    }
    return point


def curve(points: list[dict], shares: list[float]) -> list[dict]:
    """Each share's mean over its seeds: rows trained on, the model's unseen accuracies and its margins."""
    rows = []
    for share in shares:
        runs = [p for p in points if p["share"] == share]
        mean = {key: statistics.fmean(p[key] for p in runs) for key in ("train_rows", *(f"{s}_unseen" for s in SPLITS))}
        for split in SPLITS:
            mean[f"{split}_margin"] = statistics.fmean(p[f"{split}_vs_best_baseline"]["delta"] for p in runs)
            mean[f"{split}_margin_above"] = sum(p[f"{split}_vs_best_baseline"]["ci95"]["lo"] > 0 for p in runs)
            mean[f"{split}_margin_below"] = sum(p[f"{split}_vs_best_baseline"]["ci95"]["hi"] < 0 for p in runs)
        rows.append({"share": share, "seeds": [p["seed"] for p in runs], **mean})
    return rows


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--recipe", default="transformer", help="a file in recipes/ (default: %(default)s)")
    parser.add_argument("--corpus", help="a file in recipes/corpora/: its data keys on every run")
    parser.add_argument("--shares", type=float, nargs="+", default=[0.25, 0.5, 1.0], help="(default: %(default)s)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[42, 52, 62], help="(default: %(default)s)")
    parser.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE", help="settings on top of the recipe's")
    parser.add_argument("--name", help="the record's name (default: <recipe>[-<corpus>])")
    parser.add_argument("--keep", action="store_true", help="fetch the experiments into this repository")
    args = parser.parse_args(argv)
    overrides = {**recipes.load(args.recipe), **(recipes.load(f"corpora/{args.corpus}") if args.corpus else {})}
    overrides |= recipes.parsed(args.set)
    settings = recipes.settings(overrides)
    name = args.name or (f"{args.recipe}-{args.corpus}" if args.corpus else args.recipe)
    inputs = lever.inputs_for(settings)
    points = []
    with tempfile.TemporaryDirectory() as tmp:
        clone, commit = recipe_time.fresh_clone(Path(tmp), "HEAD", inputs)
        env = {**os.environ, "PYTHONPATH": str(clone / "src")}
        for share in args.shares:
            for seed in args.seeds:
                run = [*settings, f"data.train_share={share}", f"seed={seed}"]
                label = f"curve-{name}-{round(share * 100)}-s{seed}"
                record, _ = lever.run_side(clone, env, label, run)
                point = {"share": share, "seed": seed, "name": label, "seconds": record["seconds"], **scored(clone)}
                points.append(point)
                print(json.dumps(point), flush=True)
        if args.keep:
            recipe_time.keep_experiments(clone)
    result = {
        "recipe": args.recipe,
        "corpus": args.corpus,
        "set": args.set,
        "settings": settings,
        "commit": commit,
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "curve": curve(points, args.shares),
        "points": points,
    }
    write_json(OUT / f"{name}.json", result)
    print(json.dumps(result["curve"], indent=2))
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
