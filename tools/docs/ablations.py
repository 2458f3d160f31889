"""docs/ablations.md: the shape ablations of ``dvc exp show --all-commits``, averaged over seeds,
and the layer-by-layer gradient norms of the 6-layer Pre-LN and Post-LN runs.

``python -m tools.docs.report ablations`` (or ``layers``) rewrites its blocks.
"""

from __future__ import annotations

import math
import re
import statistics
from pathlib import Path

from scratchformer.config import Params
from scratchformer.files import write_text
from scratchformer.render import markdown
from scratchformer.reporting import recipes
from scratchformer.reporting.commands import ReportError, dvc_json, run
from scratchformer.reporting.experiments import experiments, flat_params
from scratchformer.reporting.page import fmt, score
from tools.docs.results import records_table

SHAPE_COLUMNS = [
    ("layers", "model.n_layers"),
    ("heads", "model.n_heads"),
    ("d_model", "model.d_model"),
    ("norm", "model.norm"),
    ("pooling", "model.pooling"),
    ("positions", "model.positional"),
]
# Averaged over a row's seeds (the accuracies also get their sample std).
AVERAGED = {
    "val acc": "eval:validation.accuracy",
    "test acc": "eval:test.accuracy",
    "best val loss": "train:best_val_loss",
    "grad norm median": "train:grad_norm_median",
    "grad norm p99": "train:grad_norm_p99",
    "clipped": "train:clipped_fraction",
}
ABLATION_COLUMNS = [
    ("runs", "name"),
    *SHAPE_COLUMNS,
    ("seeds", "seeds"),
    ("val acc, mean ± std", "val acc"),
    ("test acc, mean ± std", "test acc"),
    ("val acc − default", "delta"),
    ("best val loss", "best val loss"),
    ("best epochs", "best epochs"),
    ("grad norm median", "grad norm median"),
    ("grad norm p99", "grad norm p99"),
    ("clipped", "clipped"),
]
# The reference configuration, keyed like `dvc exp show` params: the config defaults with the
# `reference` recipe applied, the first defaults, which every recorded ablation and lever ran
# against (the defaults have since changed; recipes/reference.yaml says how).
REFERENCE = flat_params(Params()) | recipes.load("reference", Path(__file__).parents[2] / "recipes")
# Keys that moved: an experiment or lever record made before the move names them the old way.
RENAMED = {
    "train.nb_ngrams": "nb.ngrams",
    "train.nb_c": "nb.c",
    "train.nb_buckets": "nb.buckets",
    "train.nb_role": "nb.role",
    "train.distill": "nb.distill",
    "train.distill_folds": "nb.distill_folds",
}
DEFAULTS = {key: REFERENCE[key] for _, key in SHAPE_COLUMNS}  # the shape an ablation varies
# The ablations vary the model's shape only. A run that also changed one of these (a
# longer context, more epochs, n-gram embeddings, an ensemble: the `best` experiment)
# answers another question and stays out of the tables. Older commits lack the newer keys.
HELD_FIXED = {
    k: REFERENCE[k]
    for k in (
        "tokenizer.max_len",
        "train.epochs",
        "model.dropout",
        "model.ngram_max",
        "train.ensemble",
        "nb.ngrams",
    )
} | {"train.nb_ngrams": 0}  # nb.ngrams as older records name it


def ablation_groups(records: list[dict]) -> dict[str, list[dict]]:
    """Split experiments by the question they answer: which params differ from the defaults.

    Every seed's run is kept (a configuration run under three seeds gives three
    records; :func:`ablation_rows` averages them).
    """
    groups: dict[str, list[dict]] = {"layers x heads": [], "normalisation": [], "pooling": [], "positions": []}
    for r in records:
        if r.get("eval:test.accuracy") is None or any(r.get(k, v) != v for k, v in HELD_FIXED.items()):
            continue
        changed = {k for k, v in DEFAULTS.items() if r.get(k) != v}
        if changed <= {"model.n_layers", "model.n_heads"}:
            groups["layers x heads"].append(r)
        if changed <= {"model.norm", "model.n_layers"} and (r.get("model.n_layers") in (2, 6)):
            groups["normalisation"].append(r)
        if changed <= {"model.pooling"}:
            groups["pooling"].append(r)
        if changed <= {"model.positional"}:
            groups["positions"].append(r)
    return groups


def _runs_label(names: list[str]) -> str:
    """``abl-l1h2-s42, abl-l1h2-s43`` -> ``abl-l1h2-s*``; names without a common stem are listed."""
    stems = {re.sub(r"-s\d+$", "", n) for n in names}
    return f"{stems.pop()}-s*" if len(names) > 1 and len(stems) == 1 else ", ".join(names)


def ablation_rows(records: list[dict]) -> list[dict]:
    """One row per shape: the runs of the code version (baseline commit) with the most seeds, averaged.

    Runs of one shape made on different commits are not pooled (the code in
    between may have changed the numbers); the newest commit wins a tie. Each
    row gets mean and sample std of the accuracies over its seeds, means of the
    other numbers, and ``delta``: its mean validation accuracy minus that of the
    default shape, marked ``*`` when it exceeds twice the standard error of the
    difference (√(s₁²/n₁ + s₂²/n₂)), i.e. when it stands out of the seed spread.
    """
    order = list(DEFAULTS)
    by_shape: dict[tuple, dict[str, dict]] = {}  # shape -> baseline -> seed -> record
    # Complete records first; of one seed, an experiment before the commit it ran on (same run, a name).
    for r in sorted(records, key=lambda r: ("train:grad_norm_median" not in r, r.get("rev") == r.get("baseline"))):
        shape = tuple(str(r.get(k)) for k in order)
        seeds = by_shape.setdefault(shape, {}).setdefault(r.get("baseline"), {})
        seeds.setdefault(r.get("seed", REFERENCE["seed"]), r)  # `dvc exp show` lists newest first
    rows = []
    for by_baseline in by_shape.values():
        runs_by_seed = max(by_baseline.values(), key=len)  # max keeps the first (newest) of equal size
        runs = [runs_by_seed[s] for s in sorted(runs_by_seed)]
        row = {k: runs[0].get(k) for k in order}
        row.update(name=_runs_label([r["name"] for r in runs]), seeds=", ".join(str(s) for s in sorted(runs_by_seed)))
        row["best epochs"] = ", ".join(str(r.get("train:best_epoch")) for r in runs)
        for label, key in AVERAGED.items():
            values = [r[key] for r in runs if r.get(key) is not None]
            row[f"{label} values"] = values
            row[label] = statistics.fmean(values) if values else None
        for label in ("val acc", "test acc"):
            values = row[f"{label} values"]
            if len(values) > 1:
                row[label] = f"{statistics.fmean(values):.4f} ± {statistics.stdev(values):.4f}"
        rows.append(row)
    default = next((r for r in rows if all(r[k] == v for k, v in DEFAULTS.items())), None)
    for row in rows:
        row["delta"] = (
            _delta(row["val acc values"], default["val acc values"]) if default and row is not default else ""
        )
    return sorted(rows, key=lambda r: tuple(str(r.get(k)) for k in order))


def _delta(values: list[float], reference: list[float]) -> str:
    difference = statistics.fmean(values) - statistics.fmean(reference)
    if len(values) < 2 or len(reference) < 2:
        return f"{difference:+.4f}"
    se = math.sqrt(statistics.variance(values) / len(values) + statistics.variance(reference) / len(reference))
    return f"{difference:+.4f}{' *' if abs(difference) > 2 * se else ''}"


def ablation_tables(records: list[dict]) -> str:
    parts = []
    for name, group in ablation_groups(records).items():
        if group:
            parts.append(f"### {name}\n\n" + records_table(ablation_rows(group), ABLATION_COLUMNS))
    return "\n\n".join(parts)


LAYER_GROUPS_DIR = "dvclive/plots/metrics/step/layer_grad_norm"


def layer_gradients(rev: str) -> dict[str, dict[str, float]]:
    """Median and 99th percentile of each layer group's pre-clip gradient norm in commit ``rev``'s curves."""
    import io

    import pandas as pd

    names = run("git", "ls-tree", "--name-only", f"{rev}:{LAYER_GROUPS_DIR}").split()
    out = {}
    for name in names:
        curve = pd.read_csv(io.StringIO(run("git", "show", f"{rev}:{LAYER_GROUPS_DIR}/{name}")), sep="\t")
        values = curve.iloc[:, 1]
        out[Path(name).stem] = {"median": values.median(), "p99": values.quantile(0.99)}
    return out


def prepost_layers_table(records: list[dict], n_layers: int = 6) -> str | None:
    """Per-layer gradient norms of the newest Pre-LN and Post-LN runs at ``n_layers`` layers (else None).

    The runs must differ from the defaults in depth and normalisation only.
    """
    runs: dict[str, dict] = {}
    for r in records:
        shape = {k: r.get(k) for k in DEFAULTS}
        others = {k: v for k, v in DEFAULTS.items() if k not in ("model.n_layers", "model.norm")}
        if (
            r.get("rev")
            and r.get("model.n_layers") == n_layers
            and all(shape[k] == v for k, v in others.items())
            and all(r.get(k, v) == v for k, v in HELD_FIXED.items())
            and r.get("seed", REFERENCE["seed"]) == REFERENCE["seed"]
        ):
            runs.setdefault(r.get("model.norm"), r)  # dvc exp show lists newest first
    if not {"pre", "post"} <= set(runs):
        return None
    try:
        norms = {norm: layer_gradients(runs[norm]["rev"]) for norm in ("pre", "post")}
    except ReportError:  # runs from before the per-layer curves existed
        return None
    order = ["embedding", *(f"layer{i}" for i in range(n_layers)), "head"]
    lines = [
        f"One seed ({REFERENCE['seed']}) each: `{runs['pre']['name']}` (Pre-LN) and "
        f"`{runs['post']['name']}` (Post-LN), {n_layers} layers, otherwise the defaults. "
        "Pre-clip gradient norm of each group of parameters over every training step.",
        "",
    ]
    rows = []
    for group in order:
        pre, post = norms["pre"].get(group), norms["post"].get(group)
        if pre is None or post is None:
            continue
        ratio = post["median"] / pre["median"] if pre["median"] else float("nan")
        rows.append([group, fmt(pre["median"]), fmt(post["median"]), f"{ratio:.2f}", fmt(pre["p99"]), fmt(post["p99"])])
    header = ["parameters", "Pre-LN median", "Post-LN median", "Post / Pre", "Pre-LN p99", "Post-LN p99"]
    lines += [markdown.table(header, rows), ""]
    accuracy = " / ".join(score(runs[n].get("eval:validation.accuracy")) for n in ("pre", "post"))
    lines.append(f"Validation accuracy, Pre-LN / Post-LN: {accuracy}.")
    return "\n".join(lines)


def update_ablations(path: Path, tables: bool = True) -> None:
    """Rewrite the tables of ``path`` from ``dvc exp show --all-commits``.

    ``tables=False`` rewrites only the layer-by-layer Pre-LN vs Post-LN block:
    experiments are local git refs, and a clone that ran only the two 6-layer
    runs must not replace the shape tables with what little it has.
    """
    records = experiments(dvc_json("exp", "show", "--all-commits"))
    text = path.read_text(encoding="utf-8")
    if tables:
        text = markdown.replace_block(text, "ablations", ablation_tables(records))
    layers = prepost_layers_table(records)
    if layers is not None and "<!-- layers:start -->" in text:
        text = markdown.replace_block(text, "layers", layers)
    write_text(path, text)
