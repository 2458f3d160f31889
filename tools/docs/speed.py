"""docs/speed.md's generated blocks: the peer comparison, the epoch profile and what compiling costs ours, from
what ``benchmarks/peers.py``, ``benchmarks/profile_epoch.py`` and ``benchmarks/compile_cost.py`` last wrote."""

from __future__ import annotations

import json
from pathlib import Path

from scratchformer.render import markdown
from tools.docs import paired

RESULTS = Path("benchmarks/results/peers.json")
PEERS = {"bert": "BERT", "torch": "`nn.TransformerEncoder`"}
RATES = {"train_samples_per_s": "training samples/s", "predict_texts_per_s": "predict texts/s"}


def measured_by(script: str, record: dict) -> str:
    """ "Measured by `script` on N <machine> CPU cores at T threads[, OMP_WAIT_POLICY=…]": each block's opening."""
    policy = f", `OMP_WAIT_POLICY={record['omp_wait_policy']}`" if record["omp_wait_policy"] else ""
    return (
        f"Measured by `benchmarks/{script}` on {record['cpus']} {record['machine']} CPU cores at "
        f"{record['threads']} threads{policy}"
    )


def rate(model: dict, what: str) -> str:
    return f"{model[what]:,.0f}" if model[what] is not None else "failed"


def ratio(value: float | None) -> str:
    return f"**{value:.2f}x**" if value is not None else "–"


def ranged(value: float | None, passes: list[float] | None) -> str:
    """A median ratio, with its range over the paired passes when the record has it."""
    return ratio(value) + (f" ({passes[0]:.2f}–{passes[1]:.2f})" if value is not None and passes else "")


def peers_block(path: Path = RESULTS) -> str | None:
    """One table per rate (rows: recipe x mode; ours, the peers, ours / peer), then compile times and errors.

    None before the benchmark has run.
    """
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    parts = [
        measured_by("peers.py", record) + f" (torch {record['torch']}, transformers {record['transformers']}): "
        f"the median of {record['repeats']} interleaved passes over the same {record['steps']} batches "
        "of ChnSentiCorp train texts"
        + (
            "; in brackets, a ratio's range over the passes, each pass of ours against the peer's beside it."
            if any("ratio_ranges" in run for run in record["runs"])
            else "."
        )
    ]
    for what, title in RATES.items():
        header = ["recipe", "mode", f"ours, {title}", *(f"{name}" for name in PEERS.values())]
        header += [f"ours / {name}" for name in PEERS.values()]
        rows = [
            [
                f"`{run['recipe']}`",
                run["mode"],
                rate(run["models"]["ours"], what),
                *(rate(run["models"][peer], what) for peer in PEERS),
                *(
                    ranged(run["ratios"][what][peer], run.get("ratio_ranges", {}).get(what, {}).get(peer))
                    for peer in PEERS
                ),
            ]
            for run in record["runs"]
        ]
        parts.append(markdown.table(header, rows))
    compiled = [
        f"`{run['recipe']}`: "
        + ", ".join(
            f"{name} {m['compile_seconds']:.0f} s" if m["error"] is None else f"{name} failed ({m['error']})"
            for name, m in (("ours", run["models"]["ours"]), *((n, run["models"][p]) for p, n in PEERS.items()))
        )
        for run in record["runs"]
        if run["mode"] == "compiled"
    ]
    if compiled:
        parts.append("Compile time (cold cache, training and predict graphs): " + "; ".join(compiled) + ".")
    return "\n\n".join(parts)


PROFILE = Path("benchmarks/results/profile_epoch.json")
COMPILE_COST = Path("benchmarks/results/compile_cost.json")


def compile_cost_block(path: Path = COMPILE_COST) -> str | None:
    """The four rates (eager / compiled x attention dropout on / off) with their ratios, then the heaviest operations.

    None before the benchmark has run.
    """
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    intro = (
        measured_by("compile_cost.py", record) + f" (torch {record['torch']}): ours at the `{record['recipe']}` "
        f"recipe's sizes, the median of {record['repeats']} interleaved passes over the same {record['steps']} "
        f"batches of {record['batch_size']} ChnSentiCorp train texts; the attention's dropout rate is "
        f"{record['attention_dropout']}."
    )
    rates = record["train_samples_per_s"]
    rows = [
        [variant, f"{r['eager']:,.0f}", f"{r['compiled']:,.0f}", ratio(record["compiled_over_eager"][variant])]
        for variant, r in rates.items()
    ]
    rows.append(["without over with", *(ratio(record["attention_dropout_cost"][m]) for m in ("eager", "compiled")), ""])
    table = markdown.table(["training samples/s", "eager", "compiled", "compiled / eager"], rows)
    heaviest = [
        [mode, f"`{op['name'][:70]}`", f"{op['calls_per_step']:g}", f"{op['ms_per_step']:.1f}", f"{op['share']:.0%}"]
        for mode, ops in record["heaviest"].items()
        for op in ops
    ]
    ops = markdown.table(["mode", "operation (self time)", "calls a step", "ms a step", "share"], heaviest)
    return f"{intro}\n\n{table}\n\nThe operations that took the most time, with the attention's dropout on:\n\n{ops}"


def profile_block(path: Path = PROFILE) -> str | None:
    """One row per part of a training epoch, one column pair (seconds, share) per recipe; None before a run."""
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    runs = record["runs"]
    intro = (
        measured_by("profile_epoch.py", record)
        + f" (torch {record['torch']}). "
        + " ".join(
            f"`{run['recipe']}`: one epoch of {run['steps']} steps, {run['epoch_seconds']:.0f} s unprofiled "
            f"(its validation {run['validation_seconds']:.0f} s), {run['profiled_epoch_seconds']:.0f} s profiled."
            for run in runs
        )
    )
    header = [
        "part of the epoch",
        *(f"`{run['recipe']}` s" for run in runs),
        *(f"`{run['recipe']}` share" for run in runs),
    ]
    totals = [sum(run["categories"].values()) for run in runs]
    rows = [
        [
            name,
            *(f"{run['categories'][name]:.1f}" for run in runs),
            *(f"{run['categories'][name] / total:.0%}" for run, total in zip(runs, totals, strict=True)),
        ]
        for name in runs[0]["categories"]
    ]
    within = [
        [
            f"of which: {name}",
            *(f"{run['within'][name]:.1f}" for run in runs),
            *(f"{run['within'][name] / total:.0%}" for run, total in zip(runs, totals, strict=True)),
        ]
        for name in runs[0].get("within", {})
    ]
    before = [
        [f"before training: {name}", *(f"{run['before_training'][name]:.1f}" for run in runs), *("" for _ in runs)]
        for name in runs[0]["before_training"]
    ]
    return f"{intro}\n\n{markdown.table(header, rows + within + before)}"


RECIPE_TIME = Path("benchmarks/results/recipe_time.json")


def _measured(record: dict, command: str) -> str:
    """The opening of a recipe_time block: the command, the machine and the recipe, up to which commits ran."""
    return (
        f"Measured by `{command}` on {record['cpus']} {record['machine']} CPU cores: the `{record['recipe']}` "
        "recipe from a fresh clone with an empty DVC cache, "
    )


def recipe_time_block(path: Path = RECIPE_TIME, now: str = "this commit") -> str | None:
    """Each seed's time and accuracies at HEAD and at the commit it ran against, then the ratio and verdict.

    ``now`` names the later side: "this commit", or ``None`` for the commit the record holds
    (a kept record of a recipe not taken). None before ``benchmarks/recipe_time.py --against``
    has written a record of several seeds.
    """
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    earlier, compared = record.get("against"), record.get("unseen_validation")
    if not earlier or not compared or "runs" not in record:
        return None
    rev, now = f"`{earlier['commit'][:7]}`", now or f"`{record['commit'][:7]}`"
    table = paired.paired_table("recipe as at", [(rev, earlier), (now, record)], "median / mean", True)
    reused = record.get("against_record")
    intro = _measured(record, f"benchmarks/recipe_time.py --against {earlier['commit'][:7]}") + (
        f"each seed at the earlier commit then at {now}."
        if not reused
        else f"at {now}; the earlier commit's runs are those of an earlier run of the benchmark (`{reused}`), "
        "on another day and not side by side, so the time ratio spans two runs and, it may be, two machines."
    )
    verdict = f"Median time, {now} over {rev}: **{record['ratio']:.2f}x**. " + paired.paired_verdict(
        compared, f"{now} minus {rev}"
    )
    return f"{intro}\n\n{table}\n\n{verdict}"


def recipe_runs_block(path: Path) -> str | None:
    """A record of ``benchmarks/recipe_time.py`` without ``--against``: each seed's time and scores, the median time.

    What the 20-minute rule reads on a corpus where nothing is compared side by side
    (``--corpus online-shopping``). None where the record is missing or compares two commits
    (:func:`recipe_time_block` shows those).
    """
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    if record.get("against") or "runs" not in record:
        return None
    commit, corpus = f"`{record['commit'][:7]}`", record.get("corpus")
    command = "benchmarks/recipe_time.py" + (f" --corpus {corpus}" if corpus else "")
    intro = _measured(record, command) + f"each seed at {commit}, one after the other."
    table = paired.paired_table("recipe as at", [(commit, record)], "median / mean", True)
    seconds = record["seconds"]
    return f"{intro}\n\n{table}\n\nMedian time: **{seconds:.0f} s** ({seconds / 60:.1f} minutes) a run."
