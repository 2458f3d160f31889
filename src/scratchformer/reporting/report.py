"""Tables for README.md and docs/, generated from ``dvc metrics show`` / ``dvc exp show``.

Numbers in the docs are never typed by hand: ``python -m scratchformer.reporting.report``
asks DVC for them and rewrites the blocks between ``<!-- name:start -->`` and
``<!-- name:end -->`` markers.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import statistics
from pathlib import Path
from typing import Any

from scratchformer.config import Params
from scratchformer.files import write_text
from scratchformer.reporting.commands import ReportError, dvc_json, run
from scratchformer.reporting.page import fmt
from scratchformer.reporting.seeds import seed_groups, seed_table


def flatten(data: dict, prefix: str = "") -> dict[str, Any]:
    """{"a": {"b": 1}} -> {"a.b": 1}."""
    flat = {}
    for key, value in data.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def workspace_metrics(metrics_show: dict) -> dict[str, Any]:
    """Flatten ``dvc metrics show --json`` of the workspace into {"eval:test.accuracy": …}."""
    (files,) = [rev["data"] for rev in metrics_show.values()]
    return {
        f"{Path(path).stem}:{key}": value
        for path, content in files.items()
        for key, value in flatten(content.get("data", {})).items()
    }


def results_table(metrics: dict[str, Any]) -> str:
    rows = [
        ("validation accuracy", "eval:validation.accuracy"),
        ("validation F1", "eval:validation.f1"),
        ("test accuracy", "eval:test.accuracy"),
        ("test F1", "eval:test.f1"),
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
        ("best epoch (lowest validation loss)", "train:best_epoch"),
        ("parameters", "train:parameters"),
    ]
    lines = ["| metric | value |", "|---|---|"]
    lines += [f"| {label} | {fmt(metrics.get(key))} |" for label, key in rows if key in metrics]
    return "\n".join(lines)


def experiments(exp_show: list[dict]) -> list[dict[str, Any]]:
    """One flat record per experiment (and the baseline) of ``dvc exp show --json``."""
    records = []

    def add(entry: dict, name: str, baseline: str | None) -> None:
        data = entry.get("data") or {}
        record = {"name": name, "rev": entry.get("rev"), "baseline": baseline}  # baseline: the commit it ran on
        for kind in ("params", "metrics"):
            for path, content in (data.get(kind) or {}).items():
                prefix = "" if kind == "params" else f"{Path(path).stem}:"
                record.update({f"{prefix}{k}": v for k, v in flatten(content.get("data", {})).items()})
        records.append(record)

    for rev in exp_show:
        if rev.get("rev") == "workspace":
            continue
        add(rev, rev.get("name") or rev.get("rev", "")[:7], rev.get("rev"))
        for branch in rev.get("experiments") or []:
            for exp in branch.get("revs", []):
                add(exp, exp.get("name") or exp.get("rev", "")[:7], rev.get("rev"))
    return records


def markdown_table(records: list[dict], columns: list[tuple[str, str]]) -> str:
    lines = ["| " + " | ".join(label for label, _ in columns) + " |", "|" + "---|" * len(columns)]
    for r in records:
        lines.append("| " + " | ".join(fmt(r.get(key)) for _, key in columns) + " |")
    return "\n".join(lines)


def replace_block(text: str, name: str, content: str) -> str:
    pattern = re.compile(rf"(<!-- {name}:start -->\n).*?(<!-- {name}:end -->)", re.S)
    if not pattern.search(text):
        raise ValueError(f"no <!-- {name}:start --> … <!-- {name}:end --> block to fill")
    return pattern.sub(lambda m: m.group(1) + content.rstrip() + "\n" + m.group(2), text)


COMPARISON_COLUMNS = [
    ("configuration", "label"),
    ("validation accuracy", "eval:validation.accuracy"),
    ("test accuracy", "eval:test.accuracy"),
    ("parameters", "train:parameters"),
]


def reference_and_best(records: list[dict], best_name: str = "best") -> tuple[dict | None, dict | None]:
    """The newest evaluated non-best record (the committed params) and the experiment named ``best_name``."""
    head = next((r for r in records if r["name"] != best_name and r.get("eval:test.accuracy") is not None), None)
    best = next((r for r in records if r["name"] == best_name), None)
    return head, best


COMPARED = ("best-tf", "best-wide", "wide")  # further experiments the comparison shows when they exist


def comparison_table(records: list[dict], best_name: str = "best", also: tuple[str, ...] = COMPARED) -> str:
    """The reference run (the committed params), the best experiment (and ``also``), and the n-gram baselines."""
    head, best = reference_and_best(records, best_name)
    rows = []
    if head:
        rows.append({**head, "label": "reference (params.yaml)"})
    if best:
        rows.append({**best, "label": f"`{best_name}` experiment"})
    for name in also:
        record = next((r for r in records if r["name"] == name and r.get("eval:test.accuracy") is not None), None)
        if record:
            rows.append({**record, "label": f"`{name}` experiment"})
    if head and "baseline:baseline.validation.accuracy" in head:
        rows.append(
            {
                "label": "char 1–3-gram TF-IDF + logistic regression",
                "eval:validation.accuracy": head["baseline:baseline.validation.accuracy"],
                "eval:test.accuracy": head["baseline:baseline.test.accuracy"],
            }
        )
    if head and "baseline:svm.validation.accuracy" in head:
        rows.append(
            {
                "label": "char 1–3-gram TF-IDF + linear SVM",
                "eval:validation.accuracy": head["baseline:svm.validation.accuracy"],
                "eval:test.accuracy": head["baseline:svm.test.accuracy"],
            }
        )
    if head and "baseline:nblr.validation.accuracy" in head:
        rows.append(
            {
                "label": "char 1–3-gram NB-LR (Naive-Bayes-scaled presence + logistic regression)",
                "eval:validation.accuracy": head["baseline:nblr.validation.accuracy"],
                "eval:test.accuracy": head["baseline:nblr.test.accuracy"],
            }
        )
    return markdown_table(rows, COMPARISON_COLUMNS)


def best_command(records: list[dict], best_name: str = "best") -> str:
    """The `dvc exp run -n best -S …` line that turns the committed params into the best experiment's."""
    head, best = reference_and_best(records, best_name)
    if head is None or best is None:
        return "(no `best` experiment yet)"
    changed = [k for k in best if ":" not in k and k not in ("name", "rev", "baseline") and best[k] != head.get(k)]
    flags = [f"-S {k}={str(best[k]).lower() if isinstance(best[k], bool) else best[k]}" for k in changed]
    return "```bash\n" + " ".join([f"dvc exp run -n {best_name}", *flags]) + "\n```"


def members_line(records: list[dict], best_name: str = "best") -> str:
    """The validation accuracy of each member of the best experiment's ensemble on its own."""
    _, best = reference_and_best(records, best_name)
    prefix = "train:member_val_accuracy."
    own = [fmt(v) for k, v in sorted((best or {}).items()) if k.startswith(prefix)]
    if not own:
        return "The `best` experiment is a single model."
    ensemble = fmt(best.get("eval:validation.accuracy"))
    nb = best.get("train:nb_val_accuracy")
    if nb is None:
        return (
            f"Validation accuracy of each ensemble member on its own: {', '.join(own)}; of their average: {ensemble}."
        )
    return (
        f"Validation accuracy of each Transformer member on its own: {', '.join(own)}; of the NB member alone: "
        f"{fmt(nb)}; of the ensemble (½ the Transformers' mean probability, ½ the NB member's): {ensemble}."
    )


REVIEW_COMMAND = re.compile(r"scratchformer review (\S+)(?: (\S+))?")


def review_block(text: str) -> str:
    """The README's example review, made again: the command the block shows, then its report's tables."""
    from scratchformer.reporting.review import excerpt

    block = re.search(r"<!-- review:start -->\n(.*?)<!-- review:end -->", text, re.S)
    command = REVIEW_COMMAND.search(block.group(1)) if block else None
    if command is None:
        raise ValueError("the <!-- review:start --> block must show a `scratchformer review BASE [HEAD]` command")
    base, head = command.groups()
    return f"```bash\n{command.group(0)}\n```\n\n" + excerpt(base, head)


def update_review(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    write_text(path, replace_block(text, "review", review_block(text)))


def update_readme(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    metrics = workspace_metrics(dvc_json("metrics", "show"))
    text = replace_block(text, "results", results_table(metrics))
    timing = Path("benchmarks/results/pipeline_time.json")
    if "<!-- timing:start -->" in text and timing.is_file():
        t = json.loads(timing.read_text(encoding="utf-8"))
        line = (
            f"Measured by `benchmarks/pipeline_time.py` on {t['cpus']} {t['machine']} CPU cores: "
            f"a full `dvc repro --force` takes {t['full_repro_seconds']:.0f} s "
            f"(training {t['train_seconds']:.0f} s of it); "
            f"a no-op `dvc repro` takes {t['noop_repro_seconds']:.1f} s."
        )
        text = replace_block(text, "timing", line)
    if "<!-- comparison:start -->" in text:
        records = experiments(dvc_json("exp", "show", "--all-commits"))
        if reference_and_best(records)[1] is None:
            # Experiments are local git refs: a clone that has not run (or pulled) `best`
            # keeps the committed comparison rather than erasing it.
            print("no `best` experiment here (dvc exp pull it, or run it): comparison block left as committed")
        else:
            text = replace_block(text, "comparison", comparison_table(records))
            text = replace_block(text, "best", best_command(records))
            if "<!-- members:start -->" in text:
                text = replace_block(text, "members", members_line(records))
    if "<!-- seeds:start -->" in text:
        # The README's recipes only; docs/ablations.md averages the shape ablations' seeds.
        groups = [
            g
            for g in seed_groups(experiments(dvc_json("exp", "show", "--all-commits")))
            if any(name.startswith("best") for name in g["names"])
        ]
        if groups:
            text = replace_block(text, "seeds", seed_table(groups))
        else:  # like the comparison: experiments are local refs; a clone without them keeps the block
            print("no experiments here that differ only in seed: seeds block left as committed")
    if "<!-- review:start -->" in text:
        text = replace_block(text, "review", review_block(text))
    write_text(path, text)


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
# The reference configuration: the config defaults, keyed like `dvc exp show` params.
REFERENCE = flatten(dataclasses.asdict(Params()))
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
        "train.nb_ngrams",
    )
}


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
            parts.append(f"### {name}\n\n" + markdown_table(ablation_rows(group), ABLATION_COLUMNS))
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
        "| parameters | Pre-LN median | Post-LN median | Post / Pre | Pre-LN p99 | Post-LN p99 |",
        "|---|---|---|---|---|---|",
    ]
    for group in order:
        pre, post = norms["pre"].get(group), norms["post"].get(group)
        if pre is None or post is None:
            continue
        ratio = post["median"] / pre["median"] if pre["median"] else float("nan")
        lines.append(
            f"| {group} | {fmt(pre['median'])} | {fmt(post['median'])} | {ratio:.2f} | "
            f"{fmt(pre['p99'])} | {fmt(post['p99'])} |"
        )
    lines.append("")
    accuracy = " / ".join(f"{fmt(runs[n].get('eval:validation.accuracy'))}" for n in ("pre", "post"))
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
        text = replace_block(text, "ablations", ablation_tables(records))
    layers = prepost_layers_table(records)
    if layers is not None and "<!-- layers:start -->" in text:
        text = replace_block(text, "layers", layers)
    write_text(path, text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m scratchformer.reporting.report", description=__doc__)
    parser.add_argument(
        "what",
        choices=["readme", "review", "ablations", "layers", "seeds"],
        help="review: only the README's example review; layers: only the ablations' Pre-LN vs Post-LN layer table; "
        "seeds: print experiments that differ only in seed as mean ± std",
    )
    parser.add_argument("--file", type=Path, help="default: README.md, or docs/ablations.md")
    args = parser.parse_args(argv)
    if args.what == "seeds":
        print(seed_table(seed_groups(experiments(dvc_json("exp", "show", "--all-commits")))))
        return
    if args.what in ("readme", "review"):
        path = args.file or Path("README.md")
        (update_readme if args.what == "readme" else update_review)(path)
    else:
        path = args.file or Path("docs/ablations.md")
        update_ablations(path, tables=args.what == "ablations")
    print(f"updated {path}")


if __name__ == "__main__":
    main()
