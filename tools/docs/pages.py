"""Which generated block comes from what, and filling every page that holds one.

A page (README.md, docs/*.md) marks a generated block with ``<!-- name:start -->`` …
``<!-- name:end -->``; :func:`update` rewrites every block it knows in every page it is given,
wherever the block sits, so moving text between pages needs no change here. Experiments are
local git refs: a clone that has not run (or pulled) them keeps the blocks made from them as
committed rather than erasing them; the README's headline table is then read back from the
committed comparison table, with the default run and the baselines taken from the workspace.
"""

from __future__ import annotations

import functools
import json
import re
import shlex
import sys
from pathlib import Path

from scratchformer.files import write_text
from scratchformer.render import markdown
from scratchformer.reporting import recipes
from scratchformer.reporting.commands import dvc_json, run
from scratchformer.reporting.experiments import NO_EXPERIMENTS, experiments, workspace_metrics
from tools.docs import corpora, labels, levers, paired, results, speed, transfer
from tools.docs.seeds import seed_groups, seed_table

# Blocks that other commands write; `readme` leaves them as they are.
WRITTEN_ELSEWHERE = {
    "ablations": "python -m tools.docs.report ablations",
    "levers": "python -m tools.docs.report levers",
    "resplit": "python -m tools.docs.report levers",
    "layers": "python -m tools.docs.report layers",
    "scale": "python benchmarks/scale.py --doc docs/corpus.md",
    "scale-out": "python benchmarks/scale_out.py --doc docs/scale-out.md",
    "gpu": "python benchmarks/gpu_check.py --doc docs/scale-out.md",
    **labels.BLOCKS,
}
BLOCK = re.compile(r"<!-- ([\w-]+):start -->")


def pages(root: Path = Path(".")) -> list[Path]:
    """README.md and every page under docs/."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


class Sources:
    """What the blocks are made from, each asked of DVC once, and only when a page needs it."""

    def __init__(self, root: Path = Path(".")) -> None:
        self.root = root

    @functools.cached_property
    def metrics(self) -> dict:
        return workspace_metrics(dvc_json("metrics", "show"))

    @functools.cached_property
    def records(self) -> list[dict]:
        return experiments(dvc_json("exp", "show", "--all-commits"))

    @functools.cached_property
    def has_best(self) -> bool:
        found = results.reference_and_best(self.records)[1] is not None
        if not found:
            print("no `best` experiment here (dvc exp pull it, or run it): its blocks left as committed")
        return found

    @functools.cached_property
    def lever_runs(self) -> list[dict]:
        """The lever record (docs/levers.json): every recorded one-network run, from any clone."""
        return levers.read_record(self.root / levers.RECORD)

    @functools.cached_property
    def recipe_timing(self) -> dict | None:
        """What benchmarks/recipe_time.py last measured (None before it has run)."""
        path = self.root / "benchmarks/results/recipe_time.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None

    @functools.cached_property
    def transformer(self) -> dict:
        return recipes.load("transformer", self.root / "recipes")

    def refreshed_comparison(self) -> list[dict]:
        """The committed comparison, its default run, baselines and experiments run here made new."""
        return results.refreshed_rows(self.committed_comparison(), self.metrics, self.records)

    def committed_comparison(self) -> list[dict]:
        for page in pages(self.root):
            table = markdown.block(page.read_text(encoding="utf-8"), "comparison")
            if table is not None:
                return results.read_table(table)
        raise ValueError("no page holds a <!-- comparison:start --> block to read the headline from")


def make(name: str, text: str, src: Sources) -> str | None:
    """The content of block ``name`` of a page reading ``text``; None: leave it as committed."""
    if name == "results":
        return results.results_table(src.metrics)
    if name == "unseen":
        return results.unseen_block(src.metrics)
    if name == "timing":
        return results.timing_line(src.root / "benchmarks/results/pipeline_time.json")
    if name == "test-time":
        return results.test_time_line(src.root / "benchmarks/results/test_time.json")
    if name == "peers":
        return speed.peers_block(src.root / speed.RESULTS)
    if name == "profile":
        return speed.profile_block(src.root / speed.PROFILE)
    if name == "compile-cost":
        return speed.compile_cost_block(src.root / speed.COMPILE_COST)
    if name == "transfer":
        return transfer.transfer_block(src.root / transfer.RESULTS)
    if name == "member-length":
        return transfer.member_length_block(src.root / transfer.MEMBER_LENGTH)
    if name == "unknown-tokens":
        return transfer.unknown_tokens_block(src.root / transfer.UNKNOWN_TOKENS)
    if name.startswith("transfer-"):  # transfer-two-networks: a kept record of benchmarks/transfer.py --name
        return transfer.transfer_block(src.root / transfer.RESULTS.with_name(f"{name}.json"))
    if name.startswith("lever-"):  # lever-label-drop: what benchmarks/lever.py wrote for that lever
        return paired.paired_block(src.root / paired.PAIRED / f"{name.removeprefix('lever-')}.json")
    if name.startswith("neighbours-"):  # neighbours-products-line-ngram-lr-3: every lever against its control
        return paired.neighbours_block(src.root / paired.PAIRED / f"{name.removeprefix('neighbours-')}.json")
    if name.startswith("agreement-"):  # agreement-products-lazy-table-lever: benchmarks/agreement.py's count
        return paired.agreement_block(src.root / paired.AGREEMENT / f"{name.removeprefix('agreement-')}.json")
    if name.startswith("curve-"):  # curve-transformer-online-shopping: benchmarks/learning_curve.py's record
        return paired.curve_block(src.root / paired.CURVE / f"{name.removeprefix('curve-')}.json")
    if name == "recipe-time":  # before `recipe-`: the two commits' runs of the `transformer` recipe
        return speed.recipe_time_block(src.root / speed.RECIPE_TIME)
    if name.startswith("recipe-time-"):  # recipe-time-lazy-table: a kept record of a recipe not taken
        kept = speed.RECIPE_TIME.with_name(f"{name.replace('-', '_', 1)}.json")
        return speed.recipe_time_block(src.root / kept, now=None) or speed.recipe_runs_block(src.root / kept)
    if name.startswith("recipe-"):  # recipe-best, recipe-best-tf: the files in recipes/
        return results.recipe_block(name.removeprefix("recipe-"), src.root / "recipes")
    if name.startswith("corpus-"):  # corpus-online-shopping: the files in recipes/corpora/
        return corpora.recipe_block(name.removeprefix("corpus-"), src.root / "recipes")
    if name == "corpora-headline":  # the README's: the default and recipe runs of each corpus, and the baselines
        return corpora.corpora_block(corpora.read_record(src.root / corpora.RECORD), corpora.HEADLINE)
    if name == "corpora":  # both corpora, from their record (`python -m tools.docs.corpora record` adds to it)
        return corpora.corpora_block(corpora.read_record(src.root / corpora.RECORD))
    if name == "headline":
        rows = results.comparison_rows(src.records) if src.has_best else src.refreshed_comparison()
        return results.headline_table(rows, levers.recipe_row(src.lever_runs, "transformer", src.transformer))
    if name == "comparison":
        if src.has_best:
            return results.comparison_table(src.records)
        return results.records_table(src.refreshed_comparison(), results.COMPARISON_COLUMNS)
    if name == "members":
        return results.members_line(src.records) if src.has_best else None
    if name == "seeds":  # the recipes' seeds only; docs/ablations.md averages the shape ablations' seeds
        groups = [g for g in seed_groups(src.records) if any(n.startswith("best") for n in g["names"])]
        if not groups:
            print("no experiments here that differ only in seed: seeds block left as committed")
        return seed_table(groups) if groups else None
    if name == "transformer":  # one sentence on the `transformer` recipe's seeds, from the lever record
        return levers.recipe_line(src.lever_runs, "transformer", src.transformer, src.recipe_timing)
    if name == "review":
        return review_block(text)
    if name == "predict":
        return predict_block(text, src.root)
    if name == "experiments":
        return experiments_block(text, src.root)
    if name in WRITTEN_ELSEWHERE:
        return None
    raise ValueError(f"unknown generated block <!-- {name}:start -->: no generator makes it")


REVIEW_COMMAND = re.compile(r"scratchformer review (\S+)(?: (\S+))?")


def review_block(text: str) -> str:
    """The example review, made again: the command the block shows, then its report's tables."""
    from scratchformer.reporting.review import excerpt

    command = REVIEW_COMMAND.search(markdown.block(text, "review") or "")
    if command is None:
        raise ValueError("the <!-- review:start --> block must show a `scratchformer review BASE [HEAD]` command")
    base, head = command.groups()
    return f"```bash\n{command.group(0)}\n```\n\n" + excerpt(base, head)


PREDICT_COMMAND = re.compile(r"^\$ (scratchformer predict .*)$", re.M)


def predict_block(text: str, root: Path) -> str | None:
    """The example prediction, run again on the trained model: the command the block shows and what it printed.

    None (left as committed) where no model has been trained or pulled.
    """
    command = PREDICT_COMMAND.search(markdown.block(text, "predict") or "")
    if command is None:
        raise ValueError("the <!-- predict:start --> block must show a `$ scratchformer predict …` line")
    if not (root / "models" / "model.pt").is_file():
        print("no models/model.pt here (dvc repro, or dvc pull): predict block left as committed")
        return None
    words = shlex.split(command.group(1))[2:]
    printed = run(sys.executable, "-m", "scratchformer", "predict", *words, cwd=root)
    return f"```console\n$ {command.group(1)}\n{printed.rstrip()}\n```"


REPORT_COMMAND = re.compile(r"^\$ (scratchformer report experiments.*)$", re.M)


def experiments_block(text: str, root: Path) -> str | None:
    """The command the block shows, ``scratchformer report experiments``, run again, and what it printed.

    None (left as committed) where this clone has no experiments but the block shows some.
    """
    committed = markdown.block(text, "experiments") or ""
    command = REPORT_COMMAND.search(committed)
    if command is None:
        raise ValueError("the <!-- experiments:start --> block must show a `$ scratchformer report experiments` line")
    printed = run(sys.executable, "-m", "scratchformer", *shlex.split(command.group(1))[1:], cwd=root).rstrip()
    shown = committed[command.end() :].lstrip("\n")  # what it printed when the block was made; "```" if nothing
    if printed.startswith(NO_EXPERIMENTS) and not shown.startswith(("```", NO_EXPERIMENTS)):
        print("no experiments here (dvc exp pull them, or run them): experiments block left as committed")
        return None
    return f"```console\n$ {command.group(1)}\n{printed}\n```"


def update(paths: list[Path], src: Sources) -> list[Path]:
    """Rewrite every known block of ``paths``; the pages that changed."""
    changed = []
    for path in paths:
        before = text = path.read_text(encoding="utf-8")
        for name in BLOCK.findall(before):
            content = make(name, text, src)
            if content is not None:
                text = markdown.replace_block(text, name, content)
        if text != before:
            write_text(path, text)
            changed.append(path)
    return changed
