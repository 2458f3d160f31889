"""Where a recorded run and the strongest n-gram baseline disagree, review by review, on unseen validation.

A difference of two accuracies says how many more reviews one classifier gets right; it
does not say how many reviews either could still gain. This benchmark splits the unseen
validation reviews of each run of a ``benchmarks/lever.py`` record into four groups: both
right, only the model right, only the baseline right, both wrong. The model's margin over
the baseline is (only the model) − (only the baseline); "both wrong" is what neither reads,
among them the reviews whose label is itself doubtful; "either right" is the accuracy a
perfect choice between the two would reach.

The model's answers are the record's (``validation_right``, from the run's exported model);
the baseline is the one its evaluate stage compared it with (``test_vs_best_baseline``:
strongest on unseen validation), refit here on the run's own split (``data`` and ``seed``
from the run's settings over params.yaml, as ``dvc exp run -S`` set them) by the baseline
stage's code. The split is rebuilt by the download stage's code; its unseen mask must equal
the record's (``validation_seen``), or the reviews would not be the same ones in the same
order, and the run stops.

    python benchmarks/agreement.py benchmarks/results/levers/products-lazy-table.json [--side lever|control]
        [--bands 40 120] [--by cat]

``--bands`` also counts the four groups in bands of review length (characters; the edges
given, each band from one edge up to the next), per run and in total: where the margin lies.
``--by COLUMN`` counts them per value of a column of the corpus's own file(s) that the
pipeline does not read (products.csv's ``cat``: the shop category). Each review's value is
looked up by its text, stripped as ingest strips it; a text that occurs with two values
counts as ``(mixed)``, and a review whose text is not in the source stops the run.

Writes ``benchmarks/results/agreement/<record name>-<side>.json``.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import sys
from pathlib import Path

import numpy as np

from scratchformer.analysis.baseline import BASELINES, fit_and_predict
from scratchformer.config import DataConfig, load_params
from scratchformer.data.ingest import load_corpus, text_column
from scratchformer.data.sources import read_source
from scratchformer.data.splits import in_train, strip_edges
from scratchformer.files import write_json
from scratchformer.reporting import recipes

HERE = Path(__file__).parent
OUT = HERE / "results" / "agreement"
SIDES = {"lever": "lever_runs", "control": "control"}
MIXED = "(mixed)"  # the value of a text that occurs with two values of a --by column


def groups(model_right: np.ndarray, baseline_right: np.ndarray) -> dict[str, int]:
    """The four groups of reviews, by who reads each right, and the margin and ceiling they imply."""
    both = int((model_right & baseline_right).sum())
    model_only = int((model_right & ~baseline_right).sum())
    baseline_only = int((~model_right & baseline_right).sum())
    neither = int((~model_right & ~baseline_right).sum())
    return {
        "n": len(model_right),
        "both_right": both,
        "model_only": model_only,
        "baseline_only": baseline_only,
        "both_wrong": neither,
        "margin": model_only - baseline_only,
        "either_right": both + model_only + baseline_only,
    }


def values_by_text(data: DataConfig, column: str) -> dict[str, str]:
    """Each text of the corpus's source (stripped as ingest strips it) and its value in ``column``."""
    return _values_by_text(data.source, data.encoding, data.text_column, column)


@functools.cache  # the runs of a record share their source: it is read once, not once a run
def _values_by_text(source: str, encoding: str, wanted: str | None, column: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for ds, origin in read_source(source, None, encoding).values():
        if column not in ds.column_names:
            raise SystemExit(f"{origin}: no column {column!r} (columns: {', '.join(ds.column_names)})")
        text = text_column(ds.column_names, origin, wanted)  # the column ingest reads
        texts = strip_edges(ds.data.table.column(text)).to_pylist()
        for text, value in zip(texts, map(str, ds[column]), strict=True):
            found[text] = value if found.get(text, value) == value else MIXED
    return found


def column_values(texts: list[str], data: DataConfig, column: str, name: str) -> np.ndarray:
    """The value in ``column`` of the corpus's source of each of ``texts`` (run ``name``'s validation texts)."""
    values = values_by_text(data, column)
    missing = [t for t in texts if t not in values]
    if missing:
        raise SystemExit(f"{name}: {len(missing)} validation texts not in {data.source}, e.g. {missing[0]!r}")
    return np.array([values[t] for t in texts])


def run_agreement(run: dict, params_path: Path, edges: list[int] | None = None, by: str | None = None) -> dict:
    """One recorded run against its baseline on its own unseen validation reviews (and per length band, or
    per value of a column of the source)."""
    params = recipes.overridden(load_params(params_path), recipes.parsed(run["settings"]))
    corpus = load_corpus(params.data, params.seed)
    train, validation = (split.table.to_pandas() for split in corpus.splits[:2])
    seen = in_train(train["text"], validation["text"])
    recorded_seen = np.array([c == "1" for c in run["validation_seen"]])
    if not np.array_equal(seen, recorded_seen):
        raise SystemExit(f"{run['name']}: the rebuilt split's unseen reviews differ from the record's")
    name = run["test_vs_best_baseline"]["name"]
    predicted = fit_and_predict(params.baseline, params.seed, train, {"validation": validation}, BASELINES[name])
    baseline_right = predicted["validation"] == validation["label"].to_numpy()
    model_right = np.array([c == "1" for c in run["validation_right"]])
    unseen = ~seen
    found = {"seed": run["seed"], "name": run["name"], "baseline": name}
    found |= groups(model_right[unseen], baseline_right[unseen])
    if edges:
        length = validation["text"].str.len().to_numpy()
        bounds = list(itertools.pairwise([0, *edges, None]))
        within = [unseen & (length >= lo) & (length < (hi or length.max() + 1)) for lo, hi in bounds]
        found["bands"] = [
            {"from": lo, "to": hi, **groups(model_right[w], baseline_right[w])}
            for (lo, hi), w in zip(bounds, within, strict=True)
        ]
    if by:
        value = column_values(list(validation["text"]), params.data, by, run["name"])
        within = {v: unseen & (value == v) for v in sorted(set(value[unseen].tolist()))}
        found["by"] = [{"value": v, **groups(model_right[w], baseline_right[w])} for v, w in within.items()]
    return found


def summed(counts: list[dict]) -> dict[str, int]:
    """The groups of several runs (or bands) added up."""
    totals = groups(np.zeros(0, bool), np.zeros(0, bool))
    for c in counts:
        totals = {k: totals[k] + c[k] for k in totals}
    return totals


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("record", type=Path, help="a record of benchmarks/lever.py")
    parser.add_argument("--side", choices=sorted(SIDES), default="lever", help="(default: %(default)s)")
    parser.add_argument("--params", type=Path, default=Path("params.yaml"), help="what the runs' settings override")
    parser.add_argument("--bands", type=int, nargs="+", metavar="CHARS", help="length edges: counts per band too")
    parser.add_argument("--by", metavar="COLUMN", help="a column of the corpus's source: counts per value too")
    args = parser.parse_args(argv)
    record = json.loads(args.record.read_text(encoding="utf-8"))
    runs = [run_agreement(run, args.params, args.bands, args.by) for run in record[SIDES[args.side]]["runs"]]
    totals = summed(runs)
    result = {"record": args.record.as_posix(), "side": args.side, "lever": record["lever"], "runs": runs} | {
        "total": totals
    }
    if args.bands:
        result["bands"] = [
            {"from": band["from"], "to": band["to"], **summed([run["bands"][i] for run in runs])}
            for i, band in enumerate(runs[0]["bands"])
        ]
    if args.by:
        values = sorted({g["value"] for run in runs for g in run["by"]})
        counts = [{"value": v, **summed([g for run in runs for g in run["by"] if g["value"] == v])} for v in values]
        result["by"] = {"column": args.by, "values": counts}
    write_json(OUT / f"{args.record.stem}-{args.side}.json", result)
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
