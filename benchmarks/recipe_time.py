"""Wall time of a recipe as a new user runs it: a fresh clone, an empty DVC cache, one command.

The `transformer` recipe's target is one network at or above NB-LR within 20 minutes on
2 CPU cores, from a fresh clone. This benchmark measures exactly that path:

1. ``git clone`` of this repository's HEAD (the commit it was at when the benchmark started,
   for every seed) into a temporary folder, with its own (empty) DVC cache, so every stage
   runs: download, tokenize, baseline, train, evaluate, render.
2. ``dvc exp run -n <recipe>-<commit>-s<seed> -S …`` with the recipe's settings from
   ``recipes/<recipe>.yaml`` (the file the docs print the command from), timed; on another
   corpus the name begins with it (``products-transformer-…``, :func:`experiment_name`).
3. The clone's validation and test accuracy, so the time is tied to the result it bought,
   and its answer to every validation review, predicted by the clone's own code from the
   model folder it exported: scored here on the *unseen* part (texts not in train,
   :func:`scratchformer.data.splits.in_train`), which is the accuracy a speed claim must keep.

Inputs are read as the repository reads them: a hub id in ``data.source`` or
``tokenizer.name`` that is a local folder here (a git-ignored mirror) is linked into
the clone under the same name; otherwise the clone downloads it.

Run from the repository root, on an otherwise idle machine (other work on the cores is
measured too):

    python benchmarks/recipe_time.py [--recipe transformer] [--seeds 42 52 62] [--against REV] [--keep]

With ``--against REV`` the same is done for commit REV (its own recipe file, as its docs
printed it) just before HEAD, seed by seed, on the same machine, and the record adds REV's
runs, ``ratio`` (HEAD's median seconds over REV's, so a speed claim is a ratio measured
side by side) and ``unseen_validation``: HEAD's mean unseen validation accuracy over the
seeds minus REV's, with a 95% paired bootstrap interval over the reviews
(:func:`scratchformer.analysis.scoring.paired_bootstrap`, every seed's answer to a review
moving with it) and the verdict the docs use: "above" or "below" where the interval
excludes 0, else "level". ``--against-record FILE`` takes REV's runs (their times and
answers) from an earlier record of this benchmark instead of running them again; the record
says so (``against_record``), and the docs then say that the ratio spans two runs of the
benchmark. ``--corpus online-shopping`` adds the data keys of
``recipes/corpora/online-shopping.yaml`` to every run (and writes
``recipe_time-online-shopping.json``). With ``--keep`` each clone's experiment is fetched into this
repository before the clone goes, so ``python -m tools.docs.report levers`` records its
seeds. Writes benchmarks/results/recipe_time.json, or ``--out FILE``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from scratchformer.analysis.scoring import paired_bootstrap
from scratchformer.config import Params, load_params
from scratchformer.data.ingest import read_column
from scratchformer.data.splits import in_train
from scratchformer.files import write_json
from scratchformer.reporting import commands, recipes

OUT = Path("benchmarks/results/recipe_time.json")
BOOTSTRAP_SEED = 0

# Run with the clone's own code (its PYTHONPATH): the predictor class, its text cleaning,
# encoding and batching have kept these names since the model folder was introduced. A plain
# forward pass in batches of 64, argmax of the logits: what evaluate does, without relevance.
ANSWER = """
import json, sys, torch
from scratchformer.analysis import predict as P
folder, texts_path, out_path = sys.argv[1:]
predictor = P.Predictor.from_pretrained(folder)
texts = json.loads(open(texts_path, encoding="utf-8").read())
answers = []
with torch.no_grad():
    predictor.model.eval()
    for start in range(0, len(texts), 64):
        chunk = [P.clean(t) for t in texts[start : start + 64]]
        ids = P.encode(predictor.tokenizer, chunk, predictor.max_len)["input_ids"].tolist()
        batch = P.pad_batch([torch.tensor(x) for x in ids], predictor.model.pad_id)
        answers += [predictor.class_names[k] for k in predictor.model(batch).argmax(-1).tolist()]
open(out_path, "w", encoding="utf-8").write(json.dumps(answers))
"""


def bits(flags: np.ndarray) -> str:
    """``"1"`` for each review answered right, ``"0"`` for each not: a run's answers, kept in its record."""
    return "".join("1" if f else "0" for f in flags)


def fresh_clone(folder: Path, rev: str, inputs: list[str]) -> tuple[Path, str]:
    """This repository cloned into ``folder/clone`` at ``rev``, the ``inputs`` linked in; the clone and its commit."""
    clone = folder / "clone"
    subprocess.run(["git", "clone", "-q", ".", str(clone)], check=True)
    subprocess.run(["git", "checkout", "-q", rev], cwd=clone, check=True)
    commit = commands.run("git", "rev-parse", "HEAD", cwd=clone).strip()
    for name in inputs:
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        (clone / name).symlink_to(Path(name).resolve(), target_is_directory=True)
    return clone, commit


SCORED_WHERE_PRESENT = ("test_unseen_accuracy", "short_accuracy")  # not in every record: older code lacks them


def mean_accuracies(runs: list[dict]) -> dict[str, float]:
    """The runs' mean validation, test and unseen validation accuracy, and the unseen test and short-review
    accuracies where every run has them."""
    keys = ("validation_accuracy", "test_accuracy", "validation_unseen_accuracy")
    keys += tuple(key for key in SCORED_WHERE_PRESENT if all(key in r for r in runs))
    return {key: statistics.fmean(r[key] for r in runs) for key in keys}


def scored_where_present(scores: dict) -> dict:
    """What a run's ``metrics/eval.json`` holds beyond the full-split accuracies, where its code scores it:
    the unseen part of test, test's paired margin over the strongest baseline, the short reviews."""
    test = scores["test"]
    found = {"test_unseen_accuracy": test["unseen"]["accuracy"]} if "unseen" in test else {}
    if "vs_best_baseline" in test:
        found["test_vs_best_baseline"] = test["vs_best_baseline"]
    if "short" in scores:
        found["short_accuracy"] = scores["short"]["accuracy"]
    return found


def local_inputs(params: Params) -> list[str]:
    """The inputs named in params that exist here as folders inside the repository (pretraining corpora too)."""
    names = dict.fromkeys([params.data.source, params.tokenizer.name, *params.pretrain.corpora])  # each once
    return [n for n in names if not Path(n).is_absolute() and Path(n).is_dir()]


def validation_answers(clone: Path, env: dict[str, str]) -> dict[str, np.ndarray]:
    """Whether the clone's exported model gets each validation review right, and which reviews are in train.

    The answers come from the clone's code (:data:`ANSWER`); the labels and the unseen mask
    from its ``data/raw``. Their accuracy must be the one the clone's evaluate stage wrote,
    or the two would not be scoring the same model the same way: a mismatch stops the run.
    """
    raw = clone / "data" / "raw"
    texts = read_column(raw, "validation", "text").to_pylist()
    labels = read_column(raw, "validation", "label").to_pylist()
    folder = clone / "models" / "classifier"
    with tempfile.TemporaryDirectory() as tmp:  # outside the clone: an experiment must not pick the files up
        texts_file, answers_file = Path(tmp) / "texts.json", Path(tmp) / "answers.json"
        texts_file.write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
        command = [sys.executable, "-c", ANSWER, str(folder), str(texts_file), str(answers_file)]
        subprocess.run(command, env=env, check=True)
        answers = json.loads(answers_file.read_text(encoding="utf-8"))
    names = json.loads((folder / "config.json").read_text(encoding="utf-8"))["class_names"]  # in class-id order
    right = np.array([answer == names[label] for answer, label in zip(answers, labels, strict=True)])
    scored = json.loads((clone / "metrics" / "eval.json").read_text(encoding="utf-8"))["validation"]["accuracy"]
    if abs(right.mean() - scored) > 0.5 / len(right):
        raise RuntimeError(
            f"{clone}: the exported model scores {right.mean():.4f} on validation, evaluate wrote {scored:.4f}"
        )
    seen = in_train(read_column(raw, "train", "text"), read_column(raw, "validation", "text"))
    return {"right": right, "seen": seen}


def keep_experiments(clone: Path) -> None:
    """Fetch the clone's experiments into this repository, so ``dvc exp show`` (and the lever record) sees them."""
    listed = commands.run("git", "for-each-ref", "--format=%(refname)", "refs/exps/", cwd=clone)
    refs = [r for r in listed.split() if not r.startswith("refs/exps/exec/")]  # not DVC's own run state
    if refs:
        subprocess.run(["git", "fetch", "-q", str(clone), *(f"+{r}:{r}" for r in refs)], check=True)


def experiment_name(recipe: str, commit: str, seed: int, corpus: str | None = None) -> str:
    """``transformer-904aaff-s42``; on another corpus ``products-transformer-904aaff-s42``.

    The commit is in the name because the same recipe at two commits is two experiments, and
    the corpus because ``--keep`` fetches every run's experiment ref into one repository: the
    same recipe, commit and seed on two corpora must not overwrite each other's ref.
    """
    prefix = f"{recipes.run_prefix(corpus)}-" if corpus else ""
    return f"{prefix}{recipe}-{commit[:7]}-s{seed}"


def time_recipe(
    rev: str, name: str, seed: int, inputs: list[str], keep: bool = False, corpus: str | None = None
) -> tuple[dict, dict[str, np.ndarray]]:
    """Clone ``rev`` into a temporary folder and time ``dvc exp run`` of recipe ``name`` as that commit writes it.

    ``inputs``: the folders to link into the clone under the same names (see :func:`local_inputs`).
    ``keep``: fetch the experiment into this repository before the clone is removed.
    ``corpus``: also the data keys of ``recipes/corpora/<corpus>.yaml``, after the recipe's.
    Returns the run's record and its validation answers (:func:`validation_answers`).
    """
    with tempfile.TemporaryDirectory() as tmp:
        clone, commit = fresh_clone(Path(tmp), rev, inputs)
        recipe = recipes.settings(recipes.load(name, clone / "recipes"))  # the recipe as that commit's docs print it
        data = recipes.settings(recipes.load(f"corpora/{corpus}", clone / "recipes")) if corpus else []
        settings = [*recipe, *data, f"seed={seed}"]
        command = ["dvc", "exp", "run", "-n", experiment_name(name, commit, seed, corpus)]
        command += [a for s in settings for a in ("-S", s)]
        env = {**os.environ, "PYTHONPATH": str(clone / "src")}  # the clone's code, whatever is installed
        record, answers = timed_run(clone, env, command)
        if keep:
            keep_experiments(clone)
    extra = {"settings": recipe, "corpus": corpus, "commit": commit, "seed": seed}
    return extra | record, answers  # the docs quote the time only while the recipe still says `settings`


def timed_run(clone: Path, env: dict[str, str], command: list[str]) -> tuple[dict, dict[str, np.ndarray]]:
    """Run ``command`` (a ``dvc exp run``) in ``clone``; its seconds, accuracies and validation answers."""
    start = time.perf_counter()
    subprocess.run(command, cwd=clone, env=env, check=True, stdout=subprocess.DEVNULL)
    seconds = round(time.perf_counter() - start, 1)
    scores = json.loads((clone / "metrics" / "eval.json").read_text(encoding="utf-8"))
    answers = validation_answers(clone, env)
    unseen = answers["right"][~answers["seen"]]
    return {
        "seconds": seconds,
        "validation_accuracy": scores["validation"]["accuracy"],
        "test_accuracy": scores["test"]["accuracy"],
        "validation_unseen_accuracy": float(unseen.mean()),
        "validation_unseen_n": int(unseen.size),
        "validation_right": bits(answers["right"]),  # every validation review in row order: the comparison's input
        "validation_seen": bits(answers["seen"]),  # which of them this run's train holds
        **scored_where_present(scores),
    }, answers


def summary(runs: list[dict]) -> dict:
    """The seeds' runs of one commit, and their median time and mean accuracies."""
    first = runs[0]
    return {
        "settings": first["settings"],
        "commit": first["commit"],
        "seeds": [r["seed"] for r in runs],
        "seconds": statistics.median(r["seconds"] for r in runs),
        **mean_accuracies(runs),
        "runs": runs,
    }


def recorded_answers(run: dict) -> dict[str, np.ndarray]:
    """A recorded run's validation answers as :func:`validation_answers` gives them."""
    return {key: np.array([c == "1" for c in run[f"validation_{key}"]]) for key in ("right", "seen")}


def recorded(path: Path, seeds: list[int]) -> tuple[list[dict], list[dict[str, np.ndarray]]]:
    """The earlier commit's runs of ``seeds`` from a record this benchmark wrote, and their answers."""
    earlier = {run["seed"]: run for run in json.loads(path.read_text(encoding="utf-8"))["against"]["runs"]}
    missing = [seed for seed in seeds if seed not in earlier]
    if missing:
        raise SystemExit(f"{path}: no earlier run of seed {missing[0]} (it has {sorted(earlier)})")
    runs = [earlier[seed] for seed in seeds]
    flags = [recorded_answers(run) for run in runs]
    return runs, flags


def compared(now: list[dict[str, np.ndarray]], earlier: list[dict[str, np.ndarray]]) -> dict:
    """HEAD's unseen validation accuracy over the seeds minus REV's, with its paired interval and verdict.

    The reviews compared are those in no run's train: the same reviews for both sides even
    where a run's train differs (a lever that drops train reviews makes some validation texts
    unseen for it alone). The validation splits themselves must hold the same reviews.
    """
    if len({len(r["right"]) for r in [*now, *earlier]}) != 1:
        raise RuntimeError("the runs' validation splits differ in size: their answers cannot be paired")
    unseen = ~np.any([r["seen"] for r in [*now, *earlier]], axis=0)
    a = np.stack([r["right"][unseen] for r in now])
    b = np.stack([r["right"][unseen] for r in earlier])
    result = paired_bootstrap(a, b, BOOTSTRAP_SEED)
    lo, hi = result["ci95"]["lo"], result["ci95"]["hi"]
    return {**result, "n": int(a.shape[1]), "verdict": "above" if lo > 0 else "below" if hi < 0 else "level"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--recipe", default="transformer", help="a file in recipes/ (default: %(default)s)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[42], help="the runs' seeds (default: %(default)s)")
    parser.add_argument(
        "--against", metavar="REV", help="also run the recipe at this commit, before HEAD, seed by seed, and compare"
    )
    parser.add_argument(
        "--against-record",
        metavar="FILE",
        type=Path,
        help="take REV's runs from this earlier record (its --against runs) instead of running them again",
    )
    parser.add_argument("--corpus", help="a file in recipes/corpora/: run the recipe on that corpus instead")
    parser.add_argument(
        "--keep", action="store_true", help="fetch each run's experiment into this repository (for the lever record)"
    )
    parser.add_argument("--out", type=Path, help="write the record here (default: recipe_time[-CORPUS].json)")
    args = parser.parse_args()
    params = load_params(Path("params.yaml"))
    if args.corpus:
        params = recipes.applied(params, f"corpora/{args.corpus}")
    inputs = local_inputs(params)
    runs: dict[str, list] = {"now": [], "earlier": []}
    answers: dict[str, list] = {"now": [], "earlier": []}
    if args.against_record:
        runs["earlier"], answers["earlier"] = recorded(args.against_record, args.seeds)
        args.against = runs["earlier"][0]["commit"]
    head = commands.run("git", "rev-parse", "HEAD").strip()
    for seed in args.seeds:  # every seed at the commit HEAD was at the start, whatever is committed meanwhile
        for side, rev in (("earlier", args.against), ("now", head)):
            if rev is None or (side == "earlier" and args.against_record):
                continue
            run, answered = time_recipe(rev, args.recipe, seed, inputs, args.keep, args.corpus)
            runs[side].append(run)
            answers[side].append(answered)
            print(json.dumps(run), flush=True)
    result = {"recipe": args.recipe, **summary(runs["now"]), "cpus": os.cpu_count(), "machine": platform.machine()}
    if args.against:
        earlier = summary(runs["earlier"])
        result |= {
            "against": earlier,
            "ratio": round(result["seconds"] / earlier["seconds"], 3),
            "unseen_validation": compared(answers["now"], answers["earlier"]),
            "against_record": str(args.against_record) if args.against_record else None,
        }
    result["corpus"] = args.corpus
    default = OUT if args.corpus is None else OUT.with_name(f"recipe_time-{args.corpus}.json")
    write_json(args.out or default, result)
    print(json.dumps({k: v for k, v in result.items() if k not in ("runs", "against")}, indent=2))


if __name__ == "__main__":
    main()
