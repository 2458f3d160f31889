"""The results blocks: the metrics of the committed params, the comparison with the recipes and
the n-gram baselines, the recipes' command lines, the ensemble members, the pipeline's timing.

Each function turns what DVC printed (flattened by ``scratchformer.reporting.experiments``)
into one block's Markdown; :mod:`tools.docs.pages` decides which page holds it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scratchformer.render import markdown
from scratchformer.reporting import recipes
from scratchformer.reporting.page import fmt, score

RESULT_ROWS = [
    ("validation accuracy", "eval:validation.accuracy"),
    ("validation F1", "eval:validation.f1"),
    ("test accuracy", "eval:test.accuracy"),
    ("test F1", "eval:test.f1"),
    ("short-review accuracy (checks/short_reviews.tsv)", "eval:short.accuracy"),
    ("attention max abs error vs PyTorch", "eval:acceptance.attention_max_abs_err"),
    ("causal-mask leak", "eval:acceptance.causal_mask_leak"),
    ("padding leak", "eval:acceptance.padding_leak"),
    ("padding comparisons made", "eval:acceptance.padding_leak_checked"),
    ("acceptance passed", "eval:acceptance.passed"),
    ("n-gram baseline validation accuracy", "baseline:baseline.validation.accuracy"),
    ("n-gram baseline test accuracy", "baseline:baseline.test.accuracy"),
    ("n-gram linear SVM validation accuracy", "baseline:svm.validation.accuracy"),
    ("n-gram linear SVM test accuracy", "baseline:svm.test.accuracy"),
    ("n-gram NB-LR validation accuracy", "baseline:nblr.validation.accuracy"),
    ("n-gram NB-LR test accuracy", "baseline:nblr.test.accuracy"),
    ("n-gram baseline short-review accuracy", "baseline:baseline.short.accuracy"),
    ("best epoch (lowest validation loss)", "train:best_epoch"),
    ("parameters", "train:parameters"),
]


def results_table(metrics: dict[str, Any]) -> str:
    """Every headline metric of the workspace (``dvc metrics show``), one per row."""
    return markdown.table(
        ["metric", "value"], [[label, cell(key, metrics[key])] for label, key in RESULT_ROWS if key in metrics]
    )


def cell(key: str, value: Any) -> str:
    """A table's cell: scores (accuracy, F1) to four places, zeros kept; anything else through :func:`fmt`."""
    return score(value) if key.endswith((".accuracy", ".f1")) else fmt(value)


def with_interval(metrics: dict[str, Any], prefix: str) -> str:
    """``<prefix>.accuracy`` and its 95% interval, ``0.9037 [0.8822, 0.9217]``; — where it is absent."""
    value = metrics.get(f"{prefix}.accuracy")
    if value is None:
        return fmt(None)
    lo, hi = metrics.get(f"{prefix}.accuracy_ci95.lo"), metrics.get(f"{prefix}.accuracy_ci95.hi")
    return score(value) if lo is None or hi is None else f"{score(value)} [{score(lo)}, {score(hi)}]"


UNSEEN_PARTS = {"transformers": "its Transformers alone", "nb": "its NB member alone"}  # a blend's parts


def unseen_table(metrics: dict[str, Any]) -> str:
    """Accuracy with its Wilson interval, on the whole split and on its unseen part, for the model and each baseline.

    One row for the model of the workspace (and each part of a blend), one per n-gram
    baseline; the unseen columns name their ``n`` in the header (the same for every row).
    A last column scores the short-review check (``short``), where the pipeline ran it.
    """
    sources = [("model (params.yaml)", "eval:{split}")]
    sources += [
        (label, f"eval:{{split}}.{part}")
        for part, label in UNSEEN_PARTS.items()
        if f"eval:validation.{part}.accuracy" in metrics
    ]
    sources += [
        (label, f"baseline:{name}.{{split}}")
        for name, label in BASELINES.items()
        if f"baseline:{name}.validation.accuracy" in metrics
    ]
    header = ["run"]
    for split in ("validation", "test"):
        n = metrics.get(f"eval:{split}.unseen.n", metrics.get(f"baseline:{STRONGEST}.{split}.unseen.n"))
        header += [f"{split} (all)", f"{split} unseen" + (f" (n = {n})" if n is not None else "")]
    short = metrics.get("eval:short.n", metrics.get(f"baseline:{STRONGEST}.short.n"))
    if short is not None:
        header.append(f"short reviews (n = {short})")
    rows = []
    for label, key in sources:
        row = [label]
        for split in ("validation", "test"):
            prefix = key.format(split=split)
            row += [with_interval(metrics, prefix), with_interval(metrics, f"{prefix}.unseen")]
        if short is not None:
            row.append(with_interval(metrics, key.format(split="short")))
        rows.append(row)
    return markdown.table(header, rows)


def versus_line(metrics: dict[str, Any]) -> str | None:
    """The model minus the strongest baseline on unseen reviews, with its paired bootstrap interval, per split."""
    parts = []
    for split in ("validation", "test"):
        key = f"eval:{split}.vs_best_baseline"
        if f"{key}.delta" in metrics:
            lo, hi = metrics[f"{key}.ci95.lo"], metrics[f"{key}.ci95.hi"]
            delta = metrics[f"{key}.delta"]
            parts.append(f"{split} {delta:+.4f} [{lo:+.4f}, {hi:+.4f}]")
    if not parts:
        return None
    name = metrics["eval:validation.vs_best_baseline.name"]
    return (
        f"Model minus {BASELINES.get(name, name)} (the baseline strongest on unseen validation) on the unseen "
        f"reviews, with its 95% paired bootstrap interval: {'; '.join(parts)}."
    )


def unseen_block(metrics: dict[str, Any]) -> str:
    """The unseen table and, where evaluate has written it, the paired comparison below it."""
    line = versus_line(metrics)
    return unseen_table(metrics) + (f"\n\n{line}" if line else "")


def records_table(records: list[dict], columns: list[tuple[str, str]]) -> str:
    """One row per record, one column per (label, key); cells through :func:`cell`."""
    return markdown.table(
        [label for label, _ in columns], [[cell(key, r.get(key)) for _, key in columns] for r in records]
    )


COMPARISON_COLUMNS = [
    ("configuration", "label"),
    ("validation accuracy", "eval:validation.accuracy"),
    ("test accuracy", "eval:test.accuracy"),
    ("parameters", "train:parameters"),
]
COMPARED = ("reference", "best-tf", "best-wide", "wide")  # further experiments the comparison shows when they exist
BASELINES = {  # metrics/baseline.json section -> its row's label
    "baseline": "char 1–3-gram TF-IDF + logistic regression",
    "svm": "char 1–3-gram TF-IDF + linear SVM",
    "nblr": "char 1–3-gram NB-LR (Naive-Bayes-scaled presence + logistic regression)",
}
STRONGEST = "nblr"  # the n-gram baseline the recipes are measured against


def reference_and_best(records: list[dict], best_name: str = "best") -> tuple[dict | None, dict | None]:
    """The newest evaluated non-best record (the committed params) and the experiment named ``best_name``."""
    head = next((r for r in records if r["name"] != best_name and r.get("eval:test.accuracy") is not None), None)
    best = next((r for r in records if r["name"] == best_name), None)
    return head, best


def comparison_rows(records: list[dict], best_name: str = "best", also: tuple[str, ...] = COMPARED) -> list[dict]:
    """The default run (the committed params), the best experiment (and ``also``), and the n-gram baselines."""
    head, best = reference_and_best(records, best_name)
    rows = []
    if head:
        rows.append({**head, "label": DEFAULT})
    if best:
        rows.append({**best, "label": f"`{best_name}` experiment"})
    for name in also:
        record = next((r for r in records if r["name"] == name and r.get("eval:test.accuracy") is not None), None)
        if record:
            rows.append({**record, "label": f"`{name}` experiment"})
    for section, label in BASELINES.items():
        if head and f"baseline:{section}.validation.accuracy" in head:
            rows.append(
                {
                    "label": label,
                    "eval:validation.accuracy": head[f"baseline:{section}.validation.accuracy"],
                    "eval:test.accuracy": head[f"baseline:{section}.test.accuracy"],
                }
            )
    return rows


def comparison_table(records: list[dict], best_name: str = "best", also: tuple[str, ...] = COMPARED) -> str:
    return records_table(comparison_rows(records, best_name, also), COMPARISON_COLUMNS)


DEFAULT = "default (params.yaml)"
OLD_DEFAULT = "reference (params.yaml)"  # the default run's label before the `reference` recipe existed


def refreshed_rows(committed: list[dict], metrics: dict[str, Any], records: list[dict]) -> list[dict]:
    """The committed comparison with what this clone has made new: never a stale default row.

    Where the recipes' experiments are not at hand, their rows stay as committed, but the
    default run and the n-gram baselines are the workspace's metrics (``dvc metrics show``)
    and each experiment of :data:`COMPARED` that ran here is its own record; one that the
    committed table lacks comes right after the default run.
    """
    default = {"label": DEFAULT, **{key: metrics.get(key) for _, key in COMPARISON_COLUMNS[1:]}}
    ran = {
        f"`{r['name']}` experiment": {**r, "label": f"`{r['name']}` experiment"}
        for r in records
        if r["name"] in COMPARED and r.get("eval:test.accuracy") is not None
    }
    measured = {
        label: {
            "label": label,
            "eval:validation.accuracy": metrics[f"baseline:{section}.validation.accuracy"],
            "eval:test.accuracy": metrics[f"baseline:{section}.test.accuracy"],
        }
        for section, label in BASELINES.items()
        if f"baseline:{section}.validation.accuracy" in metrics
    }
    rows = []
    for row in committed:
        label = row["label"]
        if label in (DEFAULT, OLD_DEFAULT):
            rows.append(default)
        else:
            rows.append(ran.pop(label, None) or measured.get(label) or row)
    at = next((i + 1 for i, r in enumerate(rows) if r["label"] == DEFAULT), 0)
    return rows[:at] + list(ran.values()) + rows[at:]


HEADLINE = {  # the comparison's rows the README shows, and how it names them
    DEFAULT: "default run (`params.yaml`)",
    "`reference` experiment": "[`reference` recipe](recipes/reference.yaml) (the first defaults)",
    "`best` experiment": "[`best` recipe](recipes/best.yaml) (3 Transformers + NB member)",
    "`best-tf` experiment": "[`best-tf` recipe](recipes/best-tf.yaml) (Transformers only)",
    BASELINES[STRONGEST]: "char 1–3-gram NB-LR (strongest n-gram baseline)",
}


def headline_table(comparison: list[dict], one_network: list[str] | None = None) -> str:
    """The README's table: reference, recipes and the strongest n-gram baseline, from the comparison's rows.

    ``comparison`` holds rows of :func:`comparison_rows`, or of the committed comparison
    block read back (:func:`read_table`) where the experiments are not at hand.
    ``one_network`` (the `transformer` recipe's row, from the lever record) goes just
    before the n-gram baseline it is measured against.
    """
    rows = [
        [HEADLINE[r["label"]], score(r.get("eval:validation.accuracy")), score(r.get("eval:test.accuracy"))]
        for r in comparison
        if r["label"] in HEADLINE
    ]
    if one_network:
        at = next((i for i, r in enumerate(rows) if r[0] == HEADLINE[BASELINES[STRONGEST]]), len(rows))
        rows.insert(at, one_network)
    return markdown.table(["run", "validation accuracy", "test accuracy"], rows)


def read_table(block: str, columns: list[tuple[str, str]] = COMPARISON_COLUMNS) -> list[dict]:
    """A generated table read back into rows keyed like the records (numbers as numbers)."""

    def number(cell: str) -> Any:
        try:
            return float(cell)
        except ValueError:
            return cell

    lines = [line for line in block.strip().splitlines() if line.startswith("|")][2:]
    rows = [[c.strip() for c in line.strip().strip("|").split(" | ")] for line in lines]
    return [{key: (c if key == "label" else number(c)) for (_, key), c in zip(columns, r, strict=True)} for r in rows]


def recipe_block(name: str, folder: Path = recipes.FOLDER) -> str:
    """The recipe's command line, from ``recipes/<name>.yaml``."""
    return "```bash\n" + recipes.command(name, recipes.load(name, folder)) + "\n```"


def recipe_drift(records: list[dict], name: str, folder: Path = recipes.FOLDER) -> list[str]:
    """Where the experiment ``name`` differs from the committed params plus its recipe file ("" when it agrees)."""
    head, run = reference_and_best(records, name)
    if head is None or run is None:
        return []
    expected = {**{k: v for k, v in head.items() if ":" not in k}, **recipes.load(name, folder)}
    return [
        f"{k}: experiment {run.get(k)!r}, recipe {v!r}"
        for k, v in expected.items()
        if k not in ("name", "rev", "baseline") and run.get(k) != v
    ]


def members_line(records: list[dict], best_name: str = "best") -> str:
    """The validation accuracy of each member of the best experiment's ensemble on its own."""
    _, best = reference_and_best(records, best_name)
    prefix = "train:member_val_accuracy."
    own = [score(v) for k, v in sorted((best or {}).items()) if k.startswith(prefix)]
    if not own:
        return "The `best` experiment is a single model."
    ensemble = score(best.get("eval:validation.accuracy"))
    nb = best.get("train:nb_val_accuracy")
    if nb is None:
        return (
            f"Validation accuracy of each ensemble member on its own: {', '.join(own)}; of their average: {ensemble}."
        )
    return (
        f"Validation accuracy of each Transformer member on its own: {', '.join(own)}; of the NB member alone: "
        f"{score(nb)}; of the ensemble (½ the Transformers' mean probability, ½ the NB member's): {ensemble}."
    )


def _measured(path: Path) -> dict | None:
    """A benchmark's record (benchmarks/results/*.json); None before it has run."""
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def timing_line(path: Path = Path("benchmarks/results/pipeline_time.json")) -> str | None:
    """What ``benchmarks/pipeline_time.py`` measured (None before it has run)."""
    t = _measured(path)
    if t is None:
        return None
    return (
        f"Measured by `benchmarks/pipeline_time.py` on {t['cpus']} {t['machine']} CPU cores: "
        f"a full `dvc repro --force` takes {t['full_repro_seconds']:.0f} s "
        f"(training {t['train_seconds']:.0f} s of it); "
        f"a no-op `dvc repro` takes {t['noop_repro_seconds']:.1f} s."
    )


def test_time_line(path: Path = Path("benchmarks/results/test_time.json")) -> str | None:
    """What ``benchmarks/test_time.py`` measured (None before it has run)."""
    t = _measured(path)
    if t is None:
        return None
    unit, everything = t["unit"], t["all"]
    return (
        f"Measured by `benchmarks/test_time.py` on {t['cpus']} {t['machine']} CPU cores: "
        f'`python -m pytest -m "not slow"` runs {unit["passed"]} tests in {unit["seconds"] / 60:.1f} minutes; '
        f"`python -m pytest`, {everything['passed']} tests with the end-to-end ones, in "
        f"{everything['seconds'] / 60:.0f} minutes."
    )
