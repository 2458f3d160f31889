"""One lever against the configuration it changes, seed by seed, on unseen validation reviews.

A lever's effect is a difference of two accuracies, each measured with seed noise and
sampling noise. This benchmark measures it the way the docs call a difference "level" or
not: in one fresh clone of HEAD (its own DVC cache, so stages the two runs share run once),
for each seed, ``dvc exp run`` of the control (``-S`` settings of ``--base``, if any) and of
the lever (the same plus ``--set``); each run's exported model answers every validation
review (:func:`recipe_time.validation_answers`), and the two sides are compared on the
reviews whose text is not in train with a paired bootstrap over reviews, every seed's
answer to a review resampled with it
(:func:`scratchformer.analysis.scoring.paired_bootstrap`): "above" or "below" where the
95% interval excludes 0, else "level".

    python benchmarks/lever.py --set data.label_issues=drop [--base KEY=VALUE …] [--seeds 42 43 44]
        [--name label-drop] [--keep] [--control-record FILE [--added-off KEY ...]]

``--control-record`` takes the control's runs from an earlier record, from whichever of its
sides ran with this ``--base``'s values (each key's last, as dvc applies ``-S``; the runs are
deterministic on one machine): its lever side, for a lever stacked on that one, or its control
side, for another lever against the same control. Only the lever's own side then runs. It is
refused when params.yaml has changed since the record's commit in a key ``--base`` does not set
(a new default would make a control run now another configuration than the one reused; a key
added since counts too). ``--added-off KEY`` names a key added to params.yaml since the record's
commit whose value now leaves the code as it was then (a new option, off); a key that
params.yaml already held then is refused. That the keys are off is then measured, not taken on
trust: the control's first seed runs again at this commit and must answer every validation
review as the record's run did, or the benchmark stops before the lever runs. The record keeps
the list and that run (its seconds are the control's time on this machine).

The experiments are named ``<name>-control-s<seed>`` and ``<name>-s<seed>``; ``--keep``
fetches them into this repository. Writes ``benchmarks/results/levers/<name>.json``.
Run it on an otherwise idle machine only if the times matter; the accuracies do not
depend on it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import yaml

from scratchformer.config import load_params
from scratchformer.files import write_json
from scratchformer.reporting import recipes
from scratchformer.reporting.commands import run
from scratchformer.reporting.experiments import flatten

HERE = Path(__file__).parent
OUT = HERE / "results" / "levers"
_spec = importlib.util.spec_from_file_location("recipe_time", HERE / "recipe_time.py")
recipe_time = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(recipe_time)


def run_side(clone: Path, env: dict[str, str], name: str, settings: list[str]) -> tuple[dict, dict[str, np.ndarray]]:
    """``dvc exp run -n name`` with ``settings`` in ``clone``; its time, accuracies and validation answers."""
    command = ["dvc", "exp", "run", "-n", name, *(a for s in settings for a in ("-S", s))]
    subprocess.run(["git", "checkout", "-q", "--", "params.yaml"], cwd=clone, check=True)  # the last run's params
    record, answers = recipe_time.timed_run(clone, env, command)
    return {"name": name, "settings": settings, **record}, answers


def side_summary(runs: list[dict]) -> dict:
    """Mean accuracies over the seeds, with the seeds' own runs."""
    return {**recipe_time.mean_accuracies(runs), "runs": runs}


def inputs_for(settings: list[str]) -> list[str]:
    """The local input folders the runs read: params.yaml's, with ``settings`` (``KEY=VALUE``) on top."""
    return recipe_time.local_inputs(recipes.overridden(load_params(Path("params.yaml")), recipes.parsed(settings)))


def params_drift(then: dict, now: dict, base: list[str], added_off: Sequence[str] = ()) -> list[str]:
    """The params (dotted keys) whose values differ between two params.yaml files, leaving out those ``base`` sets
    and the keys ``added_off`` names (added since, at values that leave them off).

    A control run reused from a record ran on the params.yaml of the record's commit with ``base``
    on top. A default changed since (one ``base`` does not set) makes a control run now another
    configuration, so the reused run is no longer the control of this lever.
    """
    fixed = {*recipes.parsed(base), "seed", *added_off}  # seed: each run sets its own
    then, now = flatten(then), flatten(now)
    keys = sorted(then.keys() | now.keys())
    return [
        f"{k}: {then.get(k)!r} then, {now.get(k)!r} now" for k in keys if k not in fixed and then.get(k) != now.get(k)
    ]


def committed_params(rev: str) -> dict:
    """params.yaml as commit ``rev`` holds it."""
    return yaml.safe_load(run("git", "show", f"{rev}:params.yaml"))


def recorded_control(
    path: Path, base: list[str], seeds: list[int], added_off: Sequence[str] = ()
) -> tuple[list[dict], list[dict[str, np.ndarray]]]:
    """The side of an earlier record that ran with ``base``'s values, as this run's control: its runs of ``seeds``.

    Its lever side (a lever stacked on that one) or its control side (another lever against
    the same control); each reused run must have been run with ``base``'s values and its seed,
    so that the comparison is the one a control run now would give (the runs are deterministic).
    Settings are compared as dvc applies them, each key's last value: ``a=1 a=2`` is ``a=2``.
    """
    record = json.loads(path.read_text(encoding="utf-8"))
    then = committed_params(record["commit"])
    held = [key for key in added_off if key in flatten(then)]
    if held:
        raise SystemExit(
            f"{path}: --added-off is for keys added since its runs (commit {record['commit'][:7]}); params.yaml "
            f"held {', '.join(held)} then"
        )
    drift = params_drift(then, committed_params("HEAD"), base, added_off)
    if drift:
        raise SystemExit(
            f"{path}: params.yaml changed since its runs (commit {record['commit'][:7]}), in keys --base does not "
            f"set: {'; '.join(drift)}. Run the control again (leave out --control-record)"
        )
    earlier = [*record["lever_runs"]["runs"], *record["control"]["runs"]]
    runs = []
    for seed in seeds:
        ran = [run for run in earlier if run["seed"] == seed]
        if not ran:
            raise SystemExit(f"{path}: no run of seed {seed} (it has {sorted({run['seed'] for run in earlier})})")
        wanted = recipes.parsed([*base, f"seed={seed}"])  # what dvc ran: each key's last value
        found = [run for run in ran if recipes.parsed(run["settings"]) == wanted]
        if not found:
            settings = " and ".join(str(run["settings"]) for run in ran)
            raise SystemExit(f"{path}: seed {seed} ran with {settings}, not --base {base}")
        runs.append(found[0])
    return runs, [recipe_time.recorded_answers(run) for run in runs]


def rechecked(clone: Path, env: dict[str, str], name: str, base: list[str], control: dict) -> dict:
    """The reused ``control`` run, run again at this commit (``--added-off``); its seed, seconds and verdict.

    Keys added since the record ran are off only if the code with them answers as it did
    without them: every validation review alike, or this stops (the runs are deterministic).
    """
    seed = control["seed"]
    record, _ = run_side(clone, env, f"{name}-control-again-s{seed}", [*base, f"seed={seed}"])
    now, then = record["validation_right"], control["validation_right"]
    if now != then:
        only_one = abs(len(now) - len(then))  # reviews only one of the two runs answered (another split)
        differ = sum(a != b for a, b in zip(now, then, strict=False)) + only_one
        raise SystemExit(
            f"--added-off: the control's seed {seed}, run again at this commit, answers {differ} of {len(then)} "
            "validation reviews otherwise than the record's run: the added keys are not off, or the run is "
            "not the one recorded (another machine's floats). Run the control again (leave out --control-record)"
        )
    return {"seed": seed, "seconds": record["seconds"], "validation_right": "as recorded"}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", nargs="+", required=True, metavar="KEY=VALUE", help="the lever's settings")
    parser.add_argument("--base", nargs="*", default=[], metavar="KEY=VALUE", help="settings both sides share")
    parser.add_argument("--seeds", type=int, nargs="+", default=[42, 43, 44], help="(default: %(default)s)")
    parser.add_argument("--name", help="the lever's name (default: from --set)")
    parser.add_argument("--keep", action="store_true", help="fetch the experiments into this repository")
    parser.add_argument(
        "--control-record",
        type=Path,
        metavar="FILE",
        help="an earlier record of this benchmark one of whose sides ran with this --base's values, each key's "
        "last (its lever side: its --base and --set; or its control side: its --base): its runs of the seeds "
        "are reused",
    )
    parser.add_argument(
        "--added-off",
        nargs="+",
        default=[],
        metavar="KEY",
        help="with --control-record: keys added to params.yaml since its runs, at values that leave them off",
    )
    args = parser.parse_args(argv)
    if args.added_off and not args.control_record:
        parser.error("--added-off names keys the reused control runs did not have: it needs --control-record")
    name = args.name or "-".join(s.replace("=", "-").replace(".", "-").replace("_", "-") for s in args.set)
    inputs = inputs_for([*args.base, *args.set])
    runs: dict[str, list] = {"control": [], "lever": []}
    answers: dict[str, list] = {"control": [], "lever": []}
    sides = [("control", [], f"{name}-control"), ("lever", args.set, name)]
    if args.control_record:
        runs["control"], answers["control"] = recorded_control(
            args.control_record, args.base, args.seeds, args.added_off
        )
        sides = sides[1:]
    with tempfile.TemporaryDirectory() as tmp:
        clone, commit = recipe_time.fresh_clone(Path(tmp), "HEAD", inputs)
        env = {**os.environ, "PYTHONPATH": str(clone / "src")}
        again = rechecked(clone, env, name, args.base, runs["control"][0]) if args.added_off else None
        for seed in args.seeds:
            for side, extra, label in sides:
                settings = [*args.base, *extra, f"seed={seed}"]
                record, answered = run_side(clone, env, f"{label}-s{seed}", settings)
                runs[side].append({"seed": seed, **record})
                answers[side].append(answered)
                print(json.dumps(runs[side][-1]), flush=True)
        if args.keep:
            recipe_time.keep_experiments(clone)
    result = {
        **({"control_record": str(args.control_record)} if args.control_record else {}),
        **({"added_off": args.added_off, "control_again": again} if args.added_off else {}),
        "lever": name,
        "set": args.set,
        "base": args.base,
        "seeds": args.seeds,
        "commit": commit,
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "control": side_summary(runs["control"]),
        "lever_runs": side_summary(runs["lever"]),
        "unseen_validation": recipe_time.compared(answers["lever"], answers["control"]),
    }
    write_json(OUT / f"{name}.json", result)
    print(json.dumps({k: v for k, v in result.items() if k not in ("control", "lever_runs")}, indent=2))
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
