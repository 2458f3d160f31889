"""The docs' blocks from the benchmarks' paired records: a lever against its control seed by seed
(``benchmarks/lever.py``), a recipe at two commits (``benchmarks/recipe_time.py``, through
:func:`paired_table` and :func:`paired_verdict`), and who reads each unseen review right
(``benchmarks/agreement.py``). Each block is None until its benchmark has written its record.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from scratchformer.render import markdown
from tools.docs.corpora import SHORT_NAMES, signed_interval

PAIRED = Path("benchmarks/results/levers")
ACCURACIES = ("validation_accuracy", "validation_unseen_accuracy", "test_accuracy")
# Scored by the benchmarks' newer records only: a column where every run and mean of a table has it.
WHERE_PRESENT = {"test_unseen_accuracy": "unseen test", "short_accuracy": "short reviews"}


def paired_table(first: str, sides: list[tuple[str, dict]], mean: str = "mean", seconds: bool = False) -> str:
    """Each side's runs (seed, [seconds,] accuracies), then a ``<label>, <mean>`` row per side.

    ``sides``: (label, record) with ``runs`` and the means over them, as benchmarks/recipe_time.py
    and benchmarks/lever.py write them; ``first``: the first column's header. The unseen test
    and short-review accuracies are columns when every run and side has them.
    """
    every = [run for _, side in sides for run in side["runs"]] + [side for _, side in sides]
    extra = [key for key in WHERE_PRESENT if all(key in values for values in every)]
    header = [first, "seed", *(["seconds"] if seconds else []), "validation", "unseen validation", "test"]
    header += [WHERE_PRESENT[key] for key in extra]

    def row(label: str, seed: str, values: dict) -> list[str]:
        time = [f"{values['seconds']:.0f}"] if seconds else []
        return [label, seed, *time, *(f"{values[key]:.4f}" for key in (*ACCURACIES, *extra))]

    rows = [row(label, str(run["seed"]), run) for label, side in sides for run in side["runs"]]
    rows += [row(f"{label}, {mean}", "", side) for label, side in sides]
    return markdown.table(header, rows)


def paired_verdict(compared: dict, difference: str) -> str:
    """The paired comparison on unseen validation as a sentence: ``difference``, interval, verdict."""
    ci = compared["ci95"]
    return (
        f"Unseen validation accuracy, mean over the seeds, {difference}: "
        f"{signed_interval(compared['delta'], ci['lo'], ci['hi'])} (95% paired bootstrap over the "
        f"{compared['n']} unseen reviews, each review's answers from every seed resampled together): "
        f"**{compared['verdict']}**."
    )


def paired_block(path: Path) -> str | None:
    """What ``benchmarks/lever.py`` measured: each seed's control and lever, then the paired verdict.

    None before the benchmark has written ``path``.
    """
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    settings = ", ".join(f"`{s}`" for s in record["set"])
    base = ", ".join(f"`{s}`" for s in record["base"]) or "params.yaml as committed"
    sides = [("control", record["control"]), (settings, record["lever_runs"])]
    median = {label: statistics.median(run["seconds"] for run in side["runs"]) for label, side in sides}
    timed = [(label, {**side, "seconds": median[label]}) for label, side in sides]  # a run's time: the median
    table = paired_table("run", timed, "median / mean", seconds=True)
    reused = record.get("control_record")
    control = f" The control's runs are those of `{reused}`, reused (the runs are deterministic)" if reused else ""
    if record.get("added_off"):  # lever.py --added-off: keys params.yaml gained since those runs
        keys = ", ".join(f"`{key}`" for key in record["added_off"])
        control += f"; the keys added since they ran, {keys}, are at values that leave them off"
    if record.get("control_again"):  # and it measured so: one control seed run again at the lever's commit
        again = record["control_again"]
        control += (
            f" (seed {again['seed']}'s control, run again at that commit, answered every validation review as "
            f"the record's run did, in {again['seconds']:.0f} s on the lever's machine)"
        )
    control += "." if control else ""
    margins = baseline_margins(sides)
    return (
        f"Measured by `benchmarks/lever.py` at commit `{record['commit'][:7]}`: {settings} against the same "
        f"configuration without it ({base}), seeds {', '.join(map(str, record['seeds']))}.{control}\n\n"
        f"{table}\n\n{paired_verdict(record['unseen_validation'], 'with minus without')}"
        + (f"\n\n{margins}" if margins else "")
    )


def baseline_margins(sides: list[tuple[str, dict]]) -> str | None:
    """Each run's unseen test accuracy minus the strongest baseline's, with its paired interval, a column a side.

    The strongest baseline is the one its evaluate stage chose on unseen validation (refit on the
    run's split). None when a run was recorded before evaluate compared them.
    """
    if not all("test_vs_best_baseline" in run for _, side in sides for run in side["runs"]):
        return None
    seeds = [run["seed"] for run in sides[0][1]["runs"]]

    def cell(compared: dict) -> str:
        ci = compared["ci95"]
        return f"{signed_interval(compared['delta'], ci['lo'], ci['hi'])} {SHORT_NAMES[compared['name']]}"

    found = {(label, run["seed"]): cell(run["test_vs_best_baseline"]) for label, side in sides for run in side["runs"]}
    rows = [[str(seed), *(found.get((label, seed), "") for label, _ in sides)] for seed in seeds]
    intro = (
        "Unseen test accuracy minus the strongest n-gram baseline's (the one stronger on unseen validation), "
        "with its 95% paired bootstrap interval:"
    )
    return intro + "\n\n" + markdown.table(["seed", *(label for label, _ in sides)], rows)


def answered(side: dict) -> dict | None:
    """Each seed's answers to the validation reviews, right or wrong, as a side of a lever record holds them.

    None when a run was recorded before records kept its answers: such a side is nobody's neighbour.
    """
    if not all("validation_right" in run for run in side["runs"]):
        return None
    return {run["seed"]: run["validation_right"] for run in side["runs"]}


def neighbours_block(control: Path) -> str | None:
    """Every lever measured against the control runs of the record ``control`` (each record whose control
    runs answered every validation review as those did, seed by seed), a row each: its unseen validation difference
    with its verdict, and the mean over seeds of its unseen test margin over the strongest baseline
    beside the control's. The split the line is chosen on and the split it is reported on, side by side.

    None before ``control`` is written, when its control runs were recorded before records kept their answers,
    or when a run was recorded before evaluate compared with the baselines.
    """
    if not control.is_file():
        return None
    answers = answered(json.loads(control.read_text(encoding="utf-8"))["control"])
    if answers is None:
        return None
    records = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(control.parent.glob("*.json"))]
    records = [r for r in records if answered(r["control"]) == answers]
    runs = [run for r in records for run in (*r["lever_runs"]["runs"], *r["control"]["runs"])]
    if not all("test_vs_best_baseline" in run for run in runs):
        return None

    def margin(side: dict) -> float:
        return statistics.mean(run["test_vs_best_baseline"]["delta"] for run in side["runs"])

    line = margin(records[0]["control"])
    rows = []
    for r in sorted(records, key=lambda r: -r["unseen_validation"]["delta"]):
        compared, ci = r["unseen_validation"], r["unseen_validation"]["ci95"]
        test = margin(r["lever_runs"])
        rows.append(
            [
                ", ".join(f"`{s}`" for s in r["set"]),
                f"{signed_interval(compared['delta'], ci['lo'], ci['hi'])} {compared['verdict']}",
                f"{test:+.4f}",
                f"{test - line:+.4f}",
            ]
        )
    header = ["lever", "unseen validation, lever minus control", "unseen test margin, mean", "minus the control's"]
    opening = (
        f"Every lever of `benchmarks/results/levers/` measured against the control runs of `{control.stem}` (the "
        f"same runs, seed by seed; {len(records)} records): the paired difference on unseen validation, the split a "
        "lever is chosen on, and the mean over the seeds of its unseen test accuracy minus the strongest n-gram "
        f"baseline's, beside the control's ({line:+.4f})."
    )
    return opening + "\n\n" + markdown.table(header, rows)


AGREEMENT = Path("benchmarks/results/agreement")  # what benchmarks/agreement.py writes


def agreement_block(path: Path) -> str | None:
    """What ``benchmarks/agreement.py`` counted: per seed, who reads each unseen validation review right.

    None before the benchmark has written ``path``.
    """
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    header = ["seed", "baseline", "reviews", "both right", "only the model", "only the baseline", "both wrong"]
    header += ["model minus baseline", "either right"]

    def row(seed: str, baseline: str, g: dict) -> list[str]:
        counts = [str(g[k]) for k in ("n", "both_right", "model_only", "baseline_only", "both_wrong")]
        return [seed, baseline, *counts, f"{g['margin']:+d}", f"{g['either_right'] / g['n']:.4f}"]

    rows = [row(str(r["seed"]), SHORT_NAMES[r["baseline"]], r) for r in record["runs"]]
    rows.append(row("all", "", record["total"]))
    block = (
        f"Counted by `benchmarks/agreement.py` from the {record['side']} side of `{record['record']}` "
        f"(`{record['lever']}`): each run's unseen validation reviews, by who reads each right, the run's model "
        "or the n-gram baseline its evaluate stage compared it with (refit on the run's split). "
        '"Either right" is the accuracy of a perfect choice between the two.\n\n' + markdown.table(header, rows)
    )
    return block + (_by_value(record["by"]) if "by" in record else "")


def _by_value(by: dict) -> str:
    """The seeds' counts added up per value of a column of the corpus's file (``--by``), with both accuracies."""
    header = [f"`{by['column']}`", "reviews", "only the model", "only the baseline", "model minus baseline"]
    header += ["model", "baseline"]
    rows = [
        [g["value"], str(g["n"]), str(g["model_only"]), str(g["baseline_only"]), f"{g['margin']:+d}"]
        + [f"{(g['both_right'] + g[k]) / g['n']:.4f}" for k in ("model_only", "baseline_only")]
        for g in by["values"]
    ]
    intro = (
        f"\n\nThe same reviews, every seed's added up, by the value of the column `{by['column']}` of the corpus's "
        "file (which the pipeline does not read), with the model's and the baseline's accuracy on them:"
    )
    return intro + "\n\n" + markdown.table(header, rows)


CURVE = Path("benchmarks/results/learning_curve")  # what benchmarks/learning_curve.py writes


def curve_block(path: Path) -> str | None:
    """What ``benchmarks/learning_curve.py`` measured: per share of train and seed, the recipe's unseen
    accuracies and its margin over the strongest baseline fitted on the same reviews; a mean row per share.

    None before the benchmark has written ``path``.
    """
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    header = ["share of train", "train reviews", "seed", "unseen validation", "minus the strongest baseline"]
    header += ["unseen test", "minus the strongest baseline"]

    def margin(versus: dict) -> str:
        ci = versus["ci95"]
        return f"{signed_interval(versus['delta'], ci['lo'], ci['hi'])} {SHORT_NAMES[versus['name']]}"

    def row(point: dict) -> list[str]:
        scores = [f"{point['validation_unseen']:.4f}", margin(point["validation_vs_best_baseline"])]
        scores += [f"{point['test_unseen']:.4f}", margin(point["test_vs_best_baseline"])]
        return [f"{point['share']:.0%}", str(point["train_rows"]), str(point["seed"]), *scores]

    def mean_row(mean: dict, n: int) -> list[str]:
        cells = [f"{mean['share']:.0%}, mean", f"{mean['train_rows']:.0f}", ""]
        for split in ("validation", "test"):
            counted = f"{mean[f'{split}_margin_above']} of {n} above 0, {mean[f'{split}_margin_below']} below"
            cells += [f"{mean[f'{split}_unseen']:.4f}", f"{mean[f'{split}_margin']:+.4f} ({counted})"]
        return cells

    rows = []
    for mean in record["curve"]:
        points = [p for p in record["points"] if p["share"] == mean["share"]]
        rows += [*(row(p) for p in points), mean_row(mean, len(points))]
    corpus = f"the corpus of `recipes/corpora/{record['corpus']}.yaml`" if record["corpus"] else "ChnSentiCorp"
    on_top = " with " + ", ".join(f"`{s}`" for s in record["set"]) if record.get("set") else ""
    return (
        f"Measured by `benchmarks/learning_curve.py` at commit `{record['commit'][:7]}`: the `{record['recipe']}` "
        f"recipe{on_top} on {corpus}, its train reviews cut to each share (`data.train_share`: each class alike, a "
        "smaller share's reviews inside a larger one's, validation and test as they are), the n-gram baselines "
        "fitted on the same reviews. The strongest baseline is the one stronger on unseen validation; each "
        "difference has its 95% paired bootstrap interval over the split's unseen reviews.\n\n"
        + markdown.table(header, rows)
    )
