"""Command line: ``scratchformer predict``, ``report experiments``, ``review``, ``metrics check`` and ``--version``
(also ``python -m scratchformer …``)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from scratchformer.predict_command import (
    BATCH_SIZE,
    DEFAULT_TOKENIZER,
    FORMATS,
    MAX_PLOTTED,
    SIGPIPE_EXIT,
    at_least_one,
    one_character,
    predict_main,
)

REPORT_WIDTH = 120  # terminal columns `report experiments` fits in
__all__ = ["BATCH_SIZE", "build_parser", "main"]  # BATCH_SIZE: predict's, as its --batch-size default


def report_experiments_main(args: argparse.Namespace) -> int:
    from scratchformer.reporting.commands import ReportError, dvc_json
    from scratchformer.reporting.experiments import NO_EXPERIMENTS, experiments, experiments_table

    try:
        shown = dvc_json("exp", "show", *(["-A"] if args.all_commits else []))
    except ReportError as err:
        print(f"scratchformer report experiments: {err}", file=sys.stderr)
        return 2
    table = experiments_table(experiments(shown), width=REPORT_WIDTH)
    if table is None:
        table = NO_EXPERIMENTS + (
            " in this repository: `dvc exp run -S key=value` runs one, `dvc exp pull <remote>` fetches them"
            if args.all_commits
            else " on HEAD: `dvc exp run -S key=value` runs one; --all-commits looks at every commit"
        )
    print(table)
    return 0


def review_main(args: argparse.Namespace) -> int:
    from scratchformer.reporting.commands import ReportError
    from scratchformer.reporting.review import write_review

    try:
        report = write_review(args.base, args.head, args.out)
    except ReportError as err:
        print(f"scratchformer review: {err}", file=sys.stderr)
        return 2
    for warning in report.warnings:
        print(f"scratchformer review: {warning}", file=sys.stderr)
    print(f"wrote {args.out / 'report.md'} and {args.out / 'report.html'}")
    return 0


def metrics_check_main(args: argparse.Namespace) -> int:
    from scratchformer.reporting.commands import ReportError
    from scratchformer.reporting.metrics_check import check

    try:
        violations, compared = check(args.rev, args.params)
    except ReportError as err:
        print(f"scratchformer metrics check: {err}", file=sys.stderr)
        return 2
    for violation in violations:
        print(f"outside tolerance: {violation}")
    verdict = "hold" if not violations else f"do not hold: {len(violations)} outside their tolerance"
    print(f"{compared} metrics compared with {args.rev}; they {verdict}")
    return 1 if violations else 0


class DefaultsShown(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's help ends with ``(default: …)``, unless it has no default or its help says it in words."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or "(default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def version() -> str:
    """The installed distribution's version; else the package's ``__version__``, if it has one."""
    from importlib import metadata

    try:
        return metadata.version("scratchformer")
    except metadata.PackageNotFoundError:
        import scratchformer

        return getattr(scratchformer, "__version__", "unknown (not installed)")


PREDICT_EXIT = (
    "Exit status: 0 when every text is answered; 1 when some rows carry an error instead (a blank "
    "text, a line not in --encoding, a CSV line with the wrong number of fields: each reported as 'row N: …' "
    "and named on stderr; every other row is still answered); 2 when nothing was predicted (no model, an "
    "unreadable input, a wrong option)."
)


def command(
    sub: argparse._SubParsersAction, name: str, help: str, description: str | None = None
) -> argparse.ArgumentParser:
    """Subcommand ``name``; its options' help ends with their defaults (a subparser does not inherit the formatter)."""
    return sub.add_parser(name, formatter_class=DefaultsShown, help=help, description=description)


def add_predict(sub: argparse._SubParsersAction) -> None:
    p = command(
        sub,
        "predict",
        help="classify texts: arguments, stdin, or a file of texts or a CSV/TSV column, answered as it is read",
        description="Classify texts and show the tokens that drove each answer. " + PREDICT_EXIT,
    )
    p.add_argument("texts", nargs="*", help="texts to classify (default: none, read --input or stdin)")
    p.add_argument(
        "--model",
        type=Path,
        default=Path("models/model.pt"),
        help="checkpoint written by the train stage, or the model folder written by the export stage "
        "(models/classifier)",
    )
    p.add_argument(
        "--tokenizer",
        type=Path,
        help="tokenizer folder the model was trained with (default: the model folder's own; "
        f"for a checkpoint, {DEFAULT_TOKENIZER}, from the tokenize stage)",
    )
    p.add_argument(
        "--input",
        metavar="FILE",
        help="read the texts from FILE ('-': stdin): one per line, or with --column one column of a .csv or "
        ".tsv file; a blank one gets an error row, not a prediction (default: the arguments, else stdin's "
        "non-blank lines)",
    )
    p.add_argument("--column", metavar="NAME", help="the column of the --input .csv/.tsv file that holds the texts")
    p.add_argument(
        "--delimiter",
        metavar="CHAR",
        type=one_character,
        help="what separates the --input file's columns (default: a tab for .tsv; for .csv the one of , ; tab | "
        "that its header holds)",
    )
    p.add_argument("--encoding", default="utf-8", help="the encoding of --input and stdin, e.g. gb18030")
    p.add_argument(
        "--output", metavar="FILE", default="-", help="write the answers to FILE, one row per text ('-': stdout)"
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        help="text: for a person; csv: a column per class probability; jsonl: one JSON object a line; json: "
        "one JSON array. csv and jsonl rows also carry their row number and any error "
        "(default: --output's suffix, .csv, .jsonl or .json, else text)",
    )
    p.add_argument("--json", dest="format", action="store_const", const="json", help="same as --format json")
    p.add_argument("--top", type=at_least_one, default=5, help="how many driving tokens to show")
    p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N, mps, or auto")
    p.add_argument("--batch-size", type=at_least_one, default=BATCH_SIZE, help="texts predicted (and written) at once")
    p.add_argument(
        "--plot",
        type=Path,
        metavar="OUT.png",
        help=f"also draw every token's relevance as a bar chart, one per text, at most {MAX_PLOTTED} texts",
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``scratchformer`` command line: every subcommand and option, each help ending with its default."""
    parser = argparse.ArgumentParser(
        prog="scratchformer", description="The scratch Transformer's tools.", formatter_class=DefaultsShown
    )
    parser.add_argument("--version", action="version", version=f"scratchformer {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    add_predict(sub)
    rep = command(sub, "report", help="summaries of DVC's records")
    rep_sub = rep.add_subparsers(dest="report_command", required=True)
    e = command(
        rep_sub,
        "experiments",
        help="one line per DVC experiment: validation and test accuracy, the params it changed",
        description="One line per experiment of `dvc exp show`: its validation and test accuracy "
        f"(metrics/eval.json) and the params that differ from the commit it ran on, within {REPORT_WIDTH} columns.",
    )
    e.add_argument(
        "-A",
        "--all-commits",
        action="store_true",
        help="the experiments of every commit (dvc exp show -A), not only HEAD's",
    )
    r = command(
        sub,
        "review",
        help="compare two revisions: params, metrics, acceptance, curves, attention, confusion",
        description="Write OUT/report.md and a self-contained OUT/report.html comparing BASE with HEAD.",
    )
    r.add_argument("base", nargs="?", default="main", help="git revision or experiment name")
    r.add_argument("head", nargs="?", help="git revision or experiment name (default: the workspace)")
    r.add_argument("--out", type=Path, default=Path("review"), help="output folder")
    m = command(sub, "metrics", help="compare the workspace's metrics with committed ones")
    m_sub = m.add_subparsers(dest="metrics_command", required=True)
    c = command(
        m_sub,
        "check",
        help="exact metrics identical, measured floats within their tolerances",
        description="Compare the workspace's metrics with REV's: counts and fractions of counts must be "
        "identical, measured floats (losses, norms, leaks) within the tolerances of "
        "scratchformer.reporting.metrics_check.TOLERANCES. Exit 1 naming each metric outside them.",
    )
    c.add_argument("rev", nargs="?", default="HEAD", help="git revision or experiment name")
    c.add_argument("--params", type=Path, default=Path("params.yaml"), help="holds the acceptance thresholds")
    li = command(
        sub,
        "label-issues",
        help="the reviews whose label looks wrong, most suspect first (from the download stage)",
        description="Print the ranking of plots/label_issues/SPLIT.csv: row (0-based, in data/raw/SPLIT.parquet), "
        "the label given, the class an NB-LR that never saw the review suggests, cleanlab's label quality score "
        "(the given label's probability; low = suspect), whether cleanlab flags it, and the text.",
    )
    li.add_argument("--split", choices=("train", "validation", "test"), default="train", help="which split")
    li.add_argument("--top", type=at_least_one, default=20, help="how many reviews to print")
    li.add_argument("--dir", type=Path, default=Path("plots/label_issues"), help="the download stage's folder")
    return parser


def label_issues_main(args: argparse.Namespace) -> int:
    """Print the first ``--top`` rows of a label-issue ranking, one review a line."""
    import pandas as pd

    path = args.dir / f"{args.split}.csv"
    if not path.is_file():
        print(f"error: {path}: no label-issue ranking; run `dvc repro download`", file=sys.stderr)
        return 2
    frame = pd.read_csv(path, dtype={"text": str, "label": str, "suggested": str}, keep_default_na=False)
    flagged = int((frame["issue"].astype(str) == "True").sum())
    print(f"{path}: {flagged} labels flagged by cleanlab; the {min(args.top, len(frame))} most suspect:")
    print("rank\trow\tlabel\tsuggested\tscore\tflagged\ttext")
    for rank, r in enumerate(frame.head(args.top).itertuples(index=False), start=1):
        flag = "yes" if str(r.issue) == "True" else "no"
        print(f"{rank}\t{r.row}\t{r.label}\t{r.suggested}\t{float(r.score):.4f}\t{flag}\t{r.text}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    commands = {
        "review": review_main,
        "metrics": metrics_check_main,
        "predict": predict_main,
        "report": report_experiments_main,
        "label-issues": label_issues_main,
    }
    try:
        return commands[args.command](args)
    except BrokenPipeError:
        # The reader left (`predict | head`, `report experiments | head`). Point stdout at devnull
        # so the flush at exit has nowhere to fail, as the Python docs on SIGPIPE recommend, and end quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return SIGPIPE_EXIT


if __name__ == "__main__":
    sys.exit(main())
