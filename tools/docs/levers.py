"""docs/ablations.md's lever tables: what each change to one Transformer does over three seeds,
beside NB-LR fit on the same split, and the `transformer` recipe on re-split corpora.

An experiment named ``<lever>-s<seed>`` (``dvc exp run -n kd-s42 …``) is one seed of one
lever; ``rs-<lever>-s<seed>`` is the same lever on the corpus re-split (``data.split`` with
``data.resplit``) by that seed. ``python -m tools.docs.report levers`` gathers them from
``dvc exp show --json --all-commits`` into ``docs/levers.json`` (experiments live only in
the clone that ran them; the file is the record the tables are rebuilt from) and rewrites
the ``levers`` and ``resplit`` blocks from it.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

from scratchformer.files import write_text
from scratchformer.render import markdown
from scratchformer.reporting import recipes
from scratchformer.reporting.experiments import experiments
from tools.docs.ablations import REFERENCE, RENAMED
from tools.docs.corpora import signed_interval

RECORD = Path("docs/levers.json")
NAME = re.compile(r"^(?P<resplit>rs-)?(?P<lever>[a-z0-9][a-z0-9.-]*?)-s(?P<seed>\d+)$")
CONTROL = "tf1"  # the lever the others are measured against: the recipe without a teacher
KEPT = {  # what a lever's record keeps of its experiment
    "val": "eval:validation.accuracy",
    "test": "eval:test.accuracy",
    "val_unseen": "eval:validation.unseen.accuracy",  # absent from runs made before evaluate scored it
    "nblr_val": "baseline:nblr.validation.accuracy",
    "nblr_test": "baseline:nblr.test.accuracy",
    "best_epoch": "train:best_epoch",
    "teacher_val": "train:nb_val_accuracy",
    "teacher_train": "train:nb_train_accuracy",
    "pretrain_masked_accuracy": "pretrain:pretrain.masked_accuracy",
}


def lever_records(records: list[dict]) -> list[dict[str, Any]]:
    """The evaluated experiments named like a lever's seed, each with the params it changed from the defaults."""
    out = []
    for r in records:
        match = NAME.match(r.get("name") or "")
        if not match or r.get(KEPT["val"]) is None:
            continue
        params = {RENAMED.get(k, k): v for k, v in r.items() if ":" not in k and k not in ("name", "rev", "baseline")}
        if params.get("data.source", REFERENCE["data.source"]) != REFERENCE["data.source"]:
            continue  # another corpus: its runs are in docs/corpora.json, beside that corpus's own baselines
        if params.get("data.resplit") and not match["resplit"]:
            continue  # a re-split not named rs- (recipe_time.py --corpus chnsenticorp-resplit): docs/corpora.json
        changed = {k: v for k, v in sorted(params.items()) if k != "seed" and k in REFERENCE and v != REFERENCE[k]}
        out.append(
            {
                "name": r["name"],
                "lever": match["lever"],
                "resplit": bool(match["resplit"]),
                "seed": int(match["seed"]),
                "changed": changed,
                **{key: r.get(source) for key, source in KEPT.items()},
            }
        )
    return sorted(out, key=lambda x: (x["resplit"], x["lever"], x["seed"]))


def _stats(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.4f}"
    return f"{statistics.fmean(values):.4f} ± {statistics.stdev(values):.4f}"


def _changes(changed: dict, against: dict) -> str:
    """The settings a run (``changed``) has that its control (``against``) has not, either over the defaults.

    A setting the run's others make idle is not one (:func:`_meant`): ``nb.c`` where no n-gram model is fit.
    """
    now, then = _meant({**REFERENCE, **changed}), _meant({**REFERENCE, **against})
    keys = [k for k in dict.fromkeys([*changed, *against]) if k in now]  # the run's own first, then its control's
    return ", ".join(f"`{k}={recipes.value(now[k])}`" for k in keys if then.get(k, REFERENCE.get(k)) != now[k]) or "—"


def _groups(records: list[dict], resplit: bool) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = {}
    for r in records:
        if r["resplit"] == resplit:
            groups.setdefault(r["lever"], []).append(r)
    return groups


def levers_table(records: list[dict]) -> str:
    """One row per lever on the corpus's own splits: seeds, accuracy mean ± std, change against the control."""
    groups = _groups(records, resplit=False)
    control = groups.get(CONTROL)
    rows = []
    for lever, runs in groups.items():
        val, test = [r["val"] for r in runs], [r["test"] for r in runs]
        against = control[0]["changed"] if control and lever != CONTROL else {}
        delta = "—"
        if control and lever != CONTROL:
            dv = statistics.fmean(val) - statistics.fmean(r["val"] for r in control)
            dt = statistics.fmean(test) - statistics.fmean(r["test"] for r in control)
            delta = f"{dv:+.4f} / {dt:+.4f}"
        nblr = runs[0]
        above = statistics.fmean(val) >= nblr["nblr_val"] and statistics.fmean(test) >= nblr["nblr_test"]
        rows.append(
            [
                f"`{lever}`",
                _changes(runs[0]["changed"], against),
                _seeds(runs),
                _stats(val),
                _stats(test),
                delta,
                f"{nblr['nblr_val']:.4f} / {nblr['nblr_test']:.4f}",
                "yes" if above else "no",
                ", ".join("—" if r["best_epoch"] is None else str(r["best_epoch"]) for r in runs),
            ]
        )
    header = [
        "lever",
        f"params (against `{CONTROL}`; for `{CONTROL}`, against params.yaml)",
        "seeds",
        "val acc, mean ± std",
        "test acc, mean ± std",
        f"Δ val / test vs `{CONTROL}`",
        "NB-LR val / test",
        "mean ≥ NB-LR on both",
        "best epoch, per seed",
    ]
    return markdown.table(header, rows)


def resplit_table(records: list[dict]) -> str:
    """One row per re-split run: the lever's accuracy beside NB-LR's, fit on that same split."""
    rows = [
        [
            f"`{r['name']}`",
            str(r["seed"]),
            f"{r['val']:.4f} / {r['test']:.4f}",
            f"{r['nblr_val']:.4f} / {r['nblr_test']:.4f}",
            "yes" if r["val"] >= r["nblr_val"] and r["test"] >= r["nblr_test"] else "no",
        ]
        for runs in _groups(records, resplit=True).values()
        for r in runs
    ]
    header = ["run", "split seed", "val / test acc", "NB-LR val / test (same split)", "≥ NB-LR on both"]
    return markdown.table(header, rows) if rows else "No re-split runs recorded."


def read_record(record: Path = RECORD) -> list[dict]:
    """The lever runs kept in ``record`` (none before the first), each change named by today's key.

    A run recorded before a key moved names it the old way (``train.distill``); read
    through :data:`~tools.docs.ablations.RENAMED` it is ``nb.distill``, as params.yaml,
    the recipes and a run made now name it.
    """
    runs = json.loads(record.read_text(encoding="utf-8")) if record.is_file() else []
    for r in runs:
        renamed = {RENAMED.get(k, k): v for k, v in r["changed"].items()}
        r["changed"] = dict(sorted(renamed.items(), key=lambda item: item[0]))
    return runs


def update_levers(path: Path, exp_show: list[dict] | None, record: Path = RECORD) -> None:
    """Merge the lever experiments of ``exp_show`` (when given) into ``record``; rewrite the blocks of ``path``."""
    kept = {r["name"]: r for r in read_record(record)}
    for r in lever_records(experiments(exp_show or [])):
        kept[r["name"]] = r
    records = sorted(kept.values(), key=lambda x: (x["resplit"], x["lever"], x["seed"]))
    write_text(record, json.dumps(records, indent=1, ensure_ascii=False) + "\n")
    text = path.read_text(encoding="utf-8")
    text = markdown.replace_block(text, "levers", levers_table(records))
    text = markdown.replace_block(text, "resplit", resplit_table(records))
    write_text(path, text)


def recipe_runs(records: list[dict], recipe: dict[str, Any]) -> list[dict]:
    """The runs on the corpus's own splits whose params are exactly the defaults plus ``recipe``.

    The settings a run's other settings make idle are not compared (:func:`_meant`).
    """
    wanted = _meant({k: v for k, v in recipe.items() if REFERENCE.get(k) != v})
    # One run a seed: a lever whose side ran the recipe's settings made the same run (runs are deterministic)
    first: dict[int, dict] = {}
    for r in records:
        if not r["resplit"] and _meant(r["changed"]) == wanted:
            first.setdefault(r["seed"], r)
    return list(first.values())


def _meant(changed: dict[str, Any]) -> dict[str, Any]:
    """``changed`` without the keys its other settings make idle.

    A span length where nothing is cropped (``train.spans`` 0), and the other ``nb.*`` settings
    where no n-gram model is fit (``nb.ngrams`` 0): the defaults a run was made with may set them.
    """
    spans = changed.get("train.spans", REFERENCE.get("train.spans"))
    ngrams = changed.get("nb.ngrams", REFERENCE.get("nb.ngrams"))

    def idle(key: str) -> bool:
        if key == "train.span_length":
            return spans == 0
        return key.startswith("nb.") and key != "nb.ngrams" and ngrams == 0

    return {k: v for k, v in changed.items() if not idle(k)}


def _seeds(runs: list[dict]) -> str:
    return ", ".join(str(r["seed"]) for r in runs)


def recipe_row(records: list[dict], name: str, recipe: dict[str, Any]) -> list[str] | None:
    """The README headline's row for ``recipe``: its link, seeds, and mean validation and test accuracy."""
    runs = recipe_runs(records, recipe)
    if not runs:
        return None
    label = f"[`{name}` recipe](recipes/{name}.yaml) (one network, mean of seeds {_seeds(runs)})"
    return [
        label,
        f"{statistics.fmean(r['val'] for r in runs):.4f}",
        f"{statistics.fmean(r['test'] for r in runs):.4f}",
    ]


def _effective(settings: list[str]) -> dict[str, str]:
    """``-S`` settings without those that only restate the reference configuration (a recipe pinning a new key)."""
    pairs = (setting.split("=", 1) for setting in settings)
    return {key: value for key, value in pairs if recipes.value(REFERENCE.get(key)) != value}


def timing_sentence(timing: dict | None, name: str, recipe: dict[str, Any]) -> str:
    """What ``benchmarks/recipe_time.py`` measured for these exact settings of ``name``; "" when it has not.

    With a run ``--against`` an earlier commit, a second sentence: the time ratio and the
    unseen validation difference, with its paired interval and verdict. The earlier commit's
    runs either ran just before these (``--against``) or come from a record of an earlier day
    (``--against-record``): the sentence says which.
    """
    if (
        not timing
        or timing.get("recipe") != name
        or _effective(timing["settings"]) != _effective(recipes.settings(recipe))
    ):
        return ""
    seeds = timing.get("seeds", [timing.get("seed")])
    which = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {', '.join(map(str, seeds))}, means"
    unseen = timing.get("validation_unseen_accuracy")
    scores = f"validation {timing['validation_accuracy']:.4f}, test {timing['test_accuracy']:.4f}"
    scores += f", unseen validation {unseen:.4f}" if unseen is not None else ""
    took = f"{'a median of ' if len(seeds) > 1 else ''}{timing['seconds'] / 60:.1f} minutes"
    sentence = (
        f" From a fresh clone with an empty DVC cache, `benchmarks/recipe_time.py` ran it ({which}: {scores}) "
        f"in {took} on {timing['cpus']} {timing['machine']} CPU cores."
    )
    earlier, compared = timing.get("against"), timing.get("unseen_validation")
    if earlier and compared:
        ci = compared["ci95"]
        when = (
            f"in the runs recorded in `{timing['against_record']}`"
            if timing.get("against_record")
            else "run one after the other"
        )
        sentence += (
            f" The recipe as commit {earlier['commit'][:7]} wrote it took {earlier['seconds'] / 60:.1f} minutes"
            f" on the same seeds, {when}: **{timing['ratio']:.2f}x** the time; unseen validation"
            f" {signed_interval(compared['delta'], ci['lo'], ci['hi'])} (paired bootstrap over"
            f" {compared['n']} reviews): {compared['verdict']}."
        )
    return sentence


def recipe_line(records: list[dict], name: str, recipe: dict[str, Any], timing: dict | None = None) -> str:
    """One sentence: the recipe's seeds, mean ± std on both splits, and whether that clears NB-LR on both.

    With ``timing`` (``benchmarks/results/recipe_time.json``) of these settings, a second: its wall time.
    """
    runs = recipe_runs(records, recipe)
    link = f"[`{name}` recipe](recipes/{name}.yaml)"
    if not runs:
        return f"The {link} has no recorded runs yet (`python -m tools.docs.report levers` records them)."
    val, test = [r["val"] for r in runs], [r["test"] for r in runs]
    unseen = [r["val_unseen"] for r in runs if r.get("val_unseen") is not None]
    nblr_val, nblr_test = runs[0]["nblr_val"], runs[0]["nblr_test"]
    above = statistics.fmean(val) >= nblr_val and statistics.fmean(test) >= nblr_test
    verdict = "above NB-LR on both splits" if above else "not above NB-LR on both splits"
    also = f", unseen validation {_stats(unseen)}" if len(unseen) == len(runs) else ""
    return (
        f"One Transformer alone, the {link} (no NB member, no ensemble at inference), over "
        f"{'seed' if len(runs) == 1 else 'seeds'} {_seeds(runs)}: "
        f"validation {_stats(val)}, test {_stats(test)}{also} "
        f"against NB-LR's {nblr_val:.4f} / {nblr_test:.4f}: {verdict}."
    ) + timing_sentence(timing, name, recipe)
