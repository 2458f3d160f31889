"""Command line: ``scratchformer predict``, ``report experiments``, ``review``, ``metrics check`` and ``--version``
(also ``python -m scratchformer …``)."""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scratchformer.analysis.predict import Prediction

BATCH_SIZE = 64  # texts predicted together: memory is one batch's, however long the input
DEFAULT_TOKENIZER = "data/tokenizer"  # the tokenize stage's, for a .pt checkpoint
SIGPIPE_EXIT = 141  # 128 + SIGPIPE: how a shell reports a writer whose reader went away
INTERRUPTED_EXIT = 130  # 128 + SIGINT: how a shell reports Ctrl-C
SUFFIX_FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".json": "json"}  # --output's suffix picks --format
REPORT_WIDTH = 120  # terminal columns `report experiments` fits in
FORMATS = ("text", "csv", "jsonl", "json")  # of predict's answers: see scratchformer.rows


def at_least_one(value: str) -> int:
    """argparse type: a whole number ≥ 1."""
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"give a whole number of at least 1, not {value!r}")
    return number


def one_character(value: str) -> str:
    """argparse type: one character ('\\t' written out is a tab)."""
    value = "\t" if value == "\\t" else value
    if len(value) != 1:
        raise argparse.ArgumentTypeError(f"give one character, not {value!r}")
    return value


MAX_PLOTTED = 20  # texts one --plot picture holds (one chart each, stacked)


def plot_relevance(predictions: list[Prediction], path: Path, class_names: list[str]) -> None:
    """Draw every token's signed relevance, one bar chart per text, into the PNG ``path``."""
    from scratchformer.render import pictures as plots

    plots.use_cjk_font()
    rows = []
    for p in predictions:
        tokens = sorted(p.top_tokens, key=lambda t: t["position"])  # every token, back in reading order
        text = p.text if len(p.text) <= 40 else p.text[:39] + "…"
        title = f"{p.label} (p = {p.probability:.3f}): {text}"
        rows.append((title, [t["token"] for t in tokens], [t["relevance"] for t in tokens], p.label))
    plots.save_figure(plots.relevance_figure(rows, class_names), path)


def texts_in(args: argparse.Namespace) -> tuple[Iterable[str], int | None]:
    """The texts to classify and how many (None: not known before reading them): arguments, --input or stdin.

    Without --input, stdin's blank lines are skipped; through --input (a file, or "-" for
    stdin) every line or CSV row is a row of the answer, a blank one answered with an error.
    """
    from scratchformer.analysis.predict import clean
    from scratchformer.rows import read_texts, stdin_texts

    if args.input is not None:
        if args.texts:
            raise ValueError("give texts as arguments or with --input, not both")
        return read_texts(args.input, args.column, args.delimiter, args.encoding, sys.stdin)
    if args.column is not None or args.delimiter is not None:
        raise ValueError("--column and --delimiter read the --input file: give --input too")
    if args.texts and not all(clean(t) for t in args.texts):
        raise ValueError("no text to classify: give one or more non-empty texts")
    return (args.texts, len(args.texts)) if args.texts else (stdin_texts(sys.stdin, args.encoding), None)


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether the paths ``a`` and ``b`` name one file (through links, ``..`` and all)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return Path(a).resolve() == Path(b).resolve()


def refuse_overwriting_input(args: argparse.Namespace) -> None:
    """--output or --plot must not be the --input file: writing it would destroy the texts being read."""
    if args.input is None or args.input == "-":
        return
    for flag, path in (("--output", None if args.output == "-" else args.output), ("--plot", args.plot)):
        if path is not None and same_file(path, args.input):
            raise ValueError(f"{flag} {path} is the --input file: writing there would destroy the texts; give another")
    if args.plot is not None and args.output != "-" and same_file(args.plot, args.output):
        raise ValueError(f"--plot {args.plot} is the --output file: give another")


class Counted:
    """``items``, counting how many were taken: predict's rows in, held against its answers out."""

    def __init__(self, items: Iterable) -> None:
        self.items, self.taken = iter(items), 0

    def __iter__(self) -> Counted:
        return self

    def __next__(self) -> object:
        item = next(self.items)
        self.taken += 1
        return item


def output_format(args: argparse.Namespace) -> str:
    """--format, or the one --output's suffix names, or text."""
    if args.format is not None:
        return args.format
    return SUFFIX_FORMATS.get(Path(args.output).suffix.lower(), "text") if args.output != "-" else "text"


def predict_main(args: argparse.Namespace) -> int:
    """Answer every row: exit 0 when each was predicted, 1 naming the rows that were not, 2 when none was."""
    try:
        return predict_rows(args)
    except KeyboardInterrupt:
        where = "" if args.output == "-" else f"; {args.output} was left as it was"
        print(f"scratchformer predict: interrupted{where}", file=sys.stderr)
        return INTERRUPTED_EXIT


def predict_rows(args: argparse.Namespace) -> int:
    from scratchformer import rows as answers
    from scratchformer.analysis.predict import Predictor
    from scratchformer.rows import open_output, progress, shorten, write_rows
    from scratchformer.train.distributed import pick_device

    with contextlib.ExitStack() as files:
        try:
            refuse_overwriting_input(args)
            texts, total = texts_in(args)
            texts = Counted(texts)
            fmt = output_format(args)
            if args.plot is not None:
                if args.plot.suffix.lower() != ".png":
                    raise ValueError(f"--plot writes a PNG: give a path ending in .png, not {args.plot}")
                plotted = list(itertools.islice(texts, MAX_PLOTTED + 1))  # stdin is read no further than that
                if len(plotted) > MAX_PLOTTED:
                    given = len(args.texts) if args.texts else "more"
                    raise ValueError(f"--plot draws at most {MAX_PLOTTED} texts, got {given}")
                texts = Counted(plotted)
            tokenizer = args.tokenizer or (None if args.model.is_dir() else Path(DEFAULT_TOKENIZER))
            predictor = Predictor(args.model, tokenizer, pick_device(args.device))
            # The picture needs every token's relevance; the printed answer keeps the top ones.
            batches = answers.answer(predictor, texts, None if args.plot else args.top, args.batch_size)
            first = next(batches, None)
            if first is None:
                raise ValueError("no text to classify: give one or more non-empty texts")
            # Opened only now, so a run refused above leaves an existing --output as it was.
            out = sys.stdout if args.output == "-" else files.enter_context(open_output(Path(args.output)))
        except (OSError, ValueError) as err:
            print(f"scratchformer predict: {err}", file=sys.stderr)
            return 2
        batches = itertools.chain([first], batches)
        if args.plot is not None:
            rows = [row for batch in batches for row in batch]  # at most MAX_PLOTTED
            plot_relevance([row.prediction for row in rows if row.prediction], args.plot, predictor.class_names)
            batches = [[shorten(row, args.top) for row in rows]]
        tally = write_rows(progress(batches, total), fmt, out, predictor.class_names)
    rows_in = texts.taken if total is None else total
    where = "see the output" if args.output == "-" else f"see {args.output}"
    if tally.rows != rows_in:
        print(
            f"scratchformer predict: {rows_in} rows in, {tally.rows} answers out: every row should have its answer "
            f"or an error row; {where}",
            file=sys.stderr,
        )
        return 1
    if tally.errors:
        print(f"scratchformer predict: {tally.summary()}; {where}", file=sys.stderr)
        return 1
    return 0


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
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    commands = {
        "review": review_main,
        "metrics": metrics_check_main,
        "predict": predict_main,
        "report": report_experiments_main,
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
