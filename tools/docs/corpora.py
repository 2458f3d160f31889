"""docs/results.md's table of both corpora: every recorded run and the n-gram baselines, whole splits and unseen.

A run's corpus is the last part of its ``data.source`` (``lansinuote/ChnSentiCorp`` is
``ChnSentiCorp``, the folder ``online-shopping`` is ``online-shopping``). Experiments live
only in the clone that ran them, so the table is rebuilt from a record, ``docs/corpora.json``:

- ``python -m tools.docs.corpora record`` adds every evaluated experiment of
  ``dvc exp show --json --all-commits``, and with ``--workspace NAME`` the workspace's run
  (``params.yaml`` and ``dvc metrics show``) under NAME, then rewrites the block;
- ``python -m tools.docs.corpora baselines --params P --metrics M`` adds a
  ``metrics/baseline.json`` made by the baseline stage outside the pipeline, from params file P;
- ``python -m tools.docs.corpora rename OLD NEW`` renames the runs of ``OLD`` (each seed's,
  ``OLD-s42`` or ``OLD-<commit>-s42``) to ``NEW``, keeping their suffixes: a recipe that
  changed keeps its earlier runs under a name of their own before the new runs take ``OLD``.

A run is kept under its corpus and name, the n-gram baselines under their corpus, seed and
the data settings that decide the splits (:data:`SPLIT_KEYS`): the same baselines are
recorded once however many runs share them. A record stays when its experiment is gone;
a run recorded again replaces it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import statistics
from pathlib import Path, PurePosixPath
from typing import Any

from scratchformer.config import DataConfig, load_params
from scratchformer.files import write_text
from scratchformer.render import markdown
from scratchformer.reporting import recipes
from scratchformer.reporting.commands import dvc_json
from scratchformer.reporting.experiments import experiments, flat_params, flatten, workspace_metrics
from tools.docs.results import BASELINES

RECORD = Path("docs/corpora.json")
PAGE = Path("docs/results.md")
BLOCK = "corpora"
SPLIT_KEYS = ("split", "resplit", "drop_empty", "dedupe", "label_issues", "label_issues_n")  # data.<key>
DATA_DEFAULTS = {f.name: f.default for f in dataclasses.fields(DataConfig)}  # what a params file without the key means
# `products-default-s42`: seed 42 of the run `products-default`; `transformer-5a1de06-s42`
# (benchmarks/recipe_time.py names a run after its commit too): seed 42 of `transformer`.
SEED = re.compile(r"(-[0-9a-f]{7})?-s\d+$")
SPLITS = ("validation", "test")
SHORT_NAMES = {"baseline": "TF-IDF LR", "svm": "SVM", "nblr": "NB-LR"}  # the baselines in the comparison column


def corpus_name(source: str) -> str:
    """The last part of ``data.source``: ``lansinuote/ChnSentiCorp`` -> ``ChnSentiCorp``."""
    return PurePosixPath(source).name


def split_settings(record: dict[str, Any]) -> dict[str, Any]:
    """The data keys of a flat record that decide what its splits hold (a missing key reads as its default)."""
    return {k: record.get(f"data.{k}", DATA_DEFAULTS[k]) for k in SPLIT_KEYS}


def _score(record: dict[str, Any], prefix: str) -> dict[str, Any] | None:
    """``<prefix>.accuracy`` with its 95% interval as ``{"accuracy", "ci95": [lo, hi]}`` (None when absent)."""
    accuracy = record.get(f"{prefix}.accuracy")
    if accuracy is None:
        return None
    lo, hi = record.get(f"{prefix}.accuracy_ci95.lo"), record.get(f"{prefix}.accuracy_ci95.hi")
    score = {"accuracy": accuracy, "ci95": None if lo is None or hi is None else [lo, hi]}
    if record.get(f"{prefix}.n") is not None:
        score["n"] = record[f"{prefix}.n"]
    return score


def _splits(record: dict[str, Any], prefix: str) -> dict[str, Any]:
    """Per split, the whole split's score and its unseen part's (``prefix`` is ``eval:`` or ``baseline:nblr.``)."""
    return {
        split: {"all": _score(record, f"{prefix}{split}"), "unseen": _score(record, f"{prefix}{split}.unseen")}
        for split in SPLITS
    }


def run_entry(record: dict[str, Any]) -> dict[str, Any]:
    """What the record keeps of one evaluated run (a flat record of ``scratchformer.reporting.experiments``)."""
    splits = _splits(record, "eval:")
    for split in SPLITS:
        key = f"eval:{split}.vs_best_baseline"
        splits[split]["vs_best_baseline"] = (
            None
            if record.get(f"{key}.delta") is None
            else {
                "name": record[f"{key}.name"],
                "delta": record[f"{key}.delta"],
                "ci95": [record[f"{key}.ci95.lo"], record[f"{key}.ci95.hi"]],
            }
        )
    return {
        "corpus": corpus_name(record.get("data.source", DATA_DEFAULTS["source"])),
        "name": record["name"],
        "seed": record.get("seed"),
        "data": split_settings(record),
        **splits,
        "short": _score(record, "eval:short"),
    }


def baseline_entry(record: dict[str, Any]) -> dict[str, Any] | None:
    """The n-gram baselines of a flat record, with the corpus, seed and data settings they were fit on."""
    scores = {name: _splits(record, f"baseline:{name}.") for name in BASELINES}
    scores = {name: s for name, s in scores.items() if s["validation"]["all"] is not None}
    if not scores:
        return None
    return {
        "corpus": corpus_name(record.get("data.source", DATA_DEFAULTS["source"])),
        "seed": record.get("seed"),
        "data": split_settings(record),
        "scores": scores,
    }


def gathered(records: list[dict[str, Any]]) -> tuple[list[dict], list[dict]]:
    """The evaluated experiments of ``records`` (not the commits) as run entries, and their baselines.

    A run on part of train (``data.train_share`` below 1) is a learning curve's point
    (``benchmarks/learning_curve.py``), not a run of its corpus: it is left out.
    """
    runs = [r for r in records if r["rev"] != r["baseline"] and r.get("eval:validation.accuracy") is not None]
    runs = [r for r in runs if r.get("data.train_share", DATA_DEFAULTS["train_share"]) == 1]
    return [run_entry(r) for r in runs], [b for b in map(baseline_entry, runs) if b is not None]


def _run_key(entry: dict) -> tuple:
    return entry["corpus"], entry["name"]


def _baseline_key(entry: dict) -> tuple:
    return entry["corpus"], json.dumps(entry["data"], sort_keys=True), entry["seed"]


def read_record(record: Path = RECORD) -> dict[str, list[dict]]:
    """``{"runs": […], "baselines": […]}`` as kept in ``record`` (empty before the first)."""
    if not record.is_file():
        return {"runs": [], "baselines": []}
    return json.loads(record.read_text(encoding="utf-8"))


def merge(record: Path, runs: list[dict], baselines: list[dict]) -> dict[str, list[dict]]:
    """Add ``runs`` and ``baselines`` to ``record`` (replacing an entry of the same key) and write it.

    Within one call the first entry of a key wins: ``dvc exp show`` lists the newest first.
    """
    kept = read_record(record)
    merged = {}
    for key, old, new in (("runs", kept["runs"], runs), ("baselines", kept["baselines"], baselines)):
        by_key = _run_key if key == "runs" else _baseline_key
        fresh: dict[tuple, dict] = {}
        for entry in new:
            fresh.setdefault(by_key(entry), entry)
        entries = {by_key(e): e for e in old} | fresh
        merged[key] = [entries[k] for k in sorted(entries, key=lambda k: tuple(map(str, k)))]
    write_text(record, json.dumps(merged, indent=1, ensure_ascii=False) + "\n")
    return merged


def rename(record: Path, old: str, new: str, corpus: str | None = None) -> dict[str, list[dict]]:
    """Rename the runs of ``old`` (on ``corpus``, or every corpus) to ``new`` in ``record`` and write it.

    A run of ``old`` is named ``old``, or ``old`` then its seed suffix (``-s42``, ``-c0ffee1-s42``),
    which stays. Refused, with nothing written, when no run is ``old``'s or a new name is taken.
    """
    kept = read_record(record)
    names = {_run_key(e) for e in kept["runs"]}
    renamed = 0
    for entry in kept["runs"]:
        suffix = entry["name"][len(old) :]
        if (corpus in (None, entry["corpus"])) and entry["name"].startswith(old) and SEED.fullmatch(suffix or "-s0"):
            if (entry["corpus"], new + suffix) in names:
                raise SystemExit(f"{record}: {entry['corpus']} already has a run named {new + suffix}")
            entry["name"] = new + suffix
            renamed += 1
    if not renamed:
        raise SystemExit(f"{record}: no run named {old} or {old}-…-s<seed>" + (f" on {corpus}" if corpus else ""))
    kept["runs"].sort(key=lambda e: tuple(map(str, _run_key(e))))
    write_text(record, json.dumps(kept, indent=1, ensure_ascii=False) + "\n")
    return kept


def workspace_record(name: str, params_path: Path, metrics_show: dict) -> dict[str, Any]:
    """The workspace's run as a flat record named ``name``: its params file and ``dvc metrics show``."""
    return {"name": name, "rev": "workspace", "baseline": None, **params_record(params_path)} | workspace_metrics(
        metrics_show
    )


def params_record(path: Path) -> dict[str, Any]:
    """The seed and data keys of a params file, as a flat record holds them (a list for ``data.split``)."""
    params = load_params(path)
    return {"seed": params.seed, **{k: v for k, v in flat_params(params).items() if k.startswith("data.")}}


def baselines_record(params_path: Path, metrics_path: Path) -> dict[str, Any]:
    """A ``baseline.json`` written by the baseline stage run with ``params_path``, as a flat record."""
    metrics = json.loads(metrics_path.read_text(encoding="utf-8"))
    return {**params_record(params_path), **{f"baseline:{k}": v for k, v in flatten(metrics).items()}}


def _cell(scores: list[dict | None]) -> str:
    """One accuracy with its interval, or over several seeds their mean ± standard deviation."""
    present = [s for s in scores if s is not None]
    if not present or len(present) < len(scores):
        return "—"
    if len(present) == 1:
        (s,) = present
        return f"{s['accuracy']:.4f}" + ("" if s["ci95"] is None else f" [{s['ci95'][0]:.4f}, {s['ci95'][1]:.4f}]")
    values = [s["accuracy"] for s in present]
    return f"{statistics.fmean(values):.4f} ± {statistics.stdev(values):.4f}"


def verdict(comparisons: list[dict]) -> str:
    """above / below where every seed's paired interval excludes 0 on the same side, else level."""
    if all(c["ci95"][0] > 0 for c in comparisons):
        return "above"
    if all(c["ci95"][1] < 0 for c in comparisons):
        return "below"
    return "level"


def signed_interval(delta: float, lo: float, hi: float) -> str:
    """A paired difference and its interval as every docs block writes them: ``+0.0070 [-0.0027, +0.0166]``."""
    return f"{delta:+.4f} [{lo:+.4f}, {hi:+.4f}]"


def _versus(runs: list[dict]) -> str:
    """The unseen test accuracy minus the strongest baseline's, with its paired interval (one run) or mean."""
    comparisons = [r["test"].get("vs_best_baseline") for r in runs]
    if any(c is None for c in comparisons):
        return "—"
    names = ", ".join(dict.fromkeys(SHORT_NAMES.get(c["name"], c["name"]) for c in comparisons))
    if len(comparisons) == 1:
        (c,) = comparisons
        shown = signed_interval(c["delta"], *c["ci95"])
    else:
        shown = f"{statistics.fmean(c['delta'] for c in comparisons):+.4f} (mean)"
    return f"{names} {shown}: {verdict(comparisons)}"


def _seeds(entries: list[dict]) -> str:
    return ", ".join(str(e["seed"]) for e in sorted(entries, key=lambda e: e["seed"] if e["seed"] is not None else -1))


def _n(entries: list[dict], split: str) -> str:
    """`` (n = 869)`` when every row's unseen part of ``split`` has the same size, else nothing."""
    sizes = {(e[split]["unseen"] or {}).get("n") for e in entries}
    return f" (n = {sizes.pop()})" if len(sizes) == 1 and None not in sizes else ""


def _settings(data: dict[str, Any]) -> str:
    """How a table's corpus was read: the data keys that differ from the defaults, or its own splits."""
    values = {k: data.get(k, DATA_DEFAULTS[k]) for k in SPLIT_KEYS}
    changed = [f"`data.{k}={recipes.value(v)}`" for k, v in values.items() if v != DATA_DEFAULTS[k]]
    split = "split by each run's `seed`" if values["split"] is not None else "its own splits"
    return ", ".join([*changed, split])


def corpus_table(runs: list[dict], baselines: list[dict]) -> str:
    """One table: a row per run name (seeds pooled), then a row per n-gram baseline (seeds pooled)."""
    groups: dict[str, list[dict]] = {}
    for r in sorted(runs, key=lambda r: r["name"]):
        groups.setdefault(SEED.sub("", r["name"]), []).append(r)
    rows = []
    for name, entries in groups.items():
        row = [f"`{name}`", _seeds(entries)]
        for split in SPLITS:
            row += [_cell([e[split]["all"] for e in entries]), _cell([e[split]["unseen"] for e in entries])]
        rows.append([*row, _versus(entries)])
    scored = []
    for baseline, label in BASELINES.items():
        fitted = [{**b["scores"][baseline], "seed": b["seed"]} for b in baselines if baseline in b["scores"]]
        if fitted:
            scored.append(fitted)
            row = [label, _seeds(fitted)]
            for split in SPLITS:
                row += [_cell([e[split]["all"] for e in fitted]), _cell([e[split]["unseen"] for e in fitted])]
            rows.append([*row, "—"])
    every = runs + [e for fitted in scored for e in fitted]
    header = ["run", "seeds"]
    for split in SPLITS:
        header += [f"{split} (all)", f"{split} unseen{_n(every, split)}"]
    header.append("unseen test minus the strongest baseline")
    return markdown.table(header, rows)


HEADLINE = ("default", "products-default", "transformer", "products-transformer", "best")  # the README's table


def corpora_block(record: dict[str, list[dict]], only: tuple[str, ...] | None = None) -> str:
    """Per corpus and way of splitting it, a heading line and its :func:`corpus_table`.

    ``only``: the run names (seeds pooled) to show, e.g. :data:`HEADLINE`; every baseline stays
    beside them, and a corpus or way of splitting it where none of them ran is left out.
    """
    if only is not None:
        record = {**record, "runs": [r for r in record["runs"] if SEED.sub("", r["name"]) in only]}
    tables: dict[tuple, tuple[list, list]] = {}
    for kind in ("runs", "baselines"):
        for entry in record[kind]:
            key = entry["corpus"], json.dumps(entry["data"], sort_keys=True)
            tables.setdefault(key, ([], []))[kind == "baselines"].append(entry)
    if not tables:
        return "No runs recorded yet (`python -m tools.docs.corpora record` records them)."
    parts = []
    for (corpus, data), (runs, baselines) in sorted(tables.items()):
        if only is not None and not runs:
            continue
        table = corpus_table(runs, baselines)
        if not runs:
            table += "\n\nNo run on it is recorded yet (`python -m tools.docs.corpora record` records them)."
        parts.append(f"**{corpus}** ({_settings(json.loads(data))}):\n\n{table}")
    return "\n\n".join(parts)


def update_page(page: Path, record: dict[str, list[dict]]) -> None:
    """Rewrite the ``corpora`` block of ``page`` from ``record``."""
    write_text(page, markdown.replace_block(page.read_text(encoding="utf-8"), BLOCK, corpora_block(record)))


def recipe_block(corpus: str, folder: Path = recipes.FOLDER, seed: int = 42) -> str:
    """The one command that runs the default pipeline on ``corpus``, from ``recipes/corpora/<corpus>.yaml``."""
    name = f"{recipes.run_prefix(corpus)}-default-s{seed}"
    return "```bash\n" + recipes.command(name, recipes.load(f"corpora/{corpus}", folder)) + "\n```"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.docs.corpora", description=__doc__)
    sub = parser.add_subparsers(dest="what", required=True)
    record = sub.add_parser("record", help="record every evaluated experiment (dvc exp show --all-commits)")
    record.add_argument("--workspace", metavar="NAME", help="also record the workspace's run under NAME")
    fitted = sub.add_parser("baselines", help="record a baseline.json made by the baseline stage outside dvc")
    fitted.add_argument("--params", type=Path, required=True, help="the params file the baseline stage ran with")
    fitted.add_argument("--metrics", type=Path, required=True, help="the baseline.json it wrote")
    renamed = sub.add_parser("rename", help="rename a run's seeds (OLD-s42, OLD-<commit>-s42) to NEW")
    renamed.add_argument("old")
    renamed.add_argument("new")
    renamed.add_argument("--corpus", help="only this corpus's runs (default: every corpus's)")
    for p in (record, fitted, renamed):
        p.add_argument("--record", type=Path, default=RECORD, help="default: %(default)s")
        p.add_argument("--page", type=Path, default=PAGE, help="the page whose corpora block is rewritten")
    args = parser.parse_args(argv)
    if args.what == "record":
        records = experiments(dvc_json("exp", "show", "--all-commits"))
        if args.workspace:
            records.insert(0, workspace_record(args.workspace, Path("params.yaml"), dvc_json("metrics", "show")))
        runs, baselines = gathered(records)
    elif args.what == "rename":
        update_page(args.page, rename(args.record, args.old, args.new, args.corpus))
        print(f"renamed the runs of {args.old} to {args.new}; updated {args.record} and {args.page}")
        return
    else:
        entry = baseline_entry(baselines_record(args.params, args.metrics))
        if entry is None:
            parser.error(f"{args.metrics} holds no baseline's validation accuracy")
        runs, baselines = [], [entry]
    kept = merge(args.record, runs, baselines)
    update_page(args.page, kept)
    print(f"recorded {len(runs)} runs, {len(baselines)} baseline fits; updated {args.record} and {args.page}")


if __name__ == "__main__":
    main()
