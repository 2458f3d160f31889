"""`scratchformer --help`: every option of every subcommand says what it does and what it defaults to."""

import argparse
import importlib.metadata

import pytest

from scratchformer.cli import build_parser, main


def parsers(parser: argparse.ArgumentParser):
    """``parser`` and every subcommand's parser below it, with the words that call each."""
    todo = [(parser.prog, parser)]
    while todo:
        prog, current = todo.pop()
        yield prog, current
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += [(sub.prog, sub) for sub in action.choices.values()]


def rendered(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The help ``parser`` prints for ``action`` alone, on one line."""
    formatter = parser.formatter_class(prog=parser.prog)
    formatter.add_argument(action)
    return " ".join(formatter.format_help().split())


def test_every_option_has_help_that_shows_its_default():
    seen, missing = 0, []
    for prog, parser in parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue  # its choices are parsers, walked themselves; each has a help line checked here
            name = f"{prog} {'/'.join(action.option_strings) or action.dest}"
            seen += 1
            if not action.help:
                missing.append(f"{name}: no help")
            elif action.default not in (None, argparse.SUPPRESS):
                default = f"(default: {action.default})"
                if default not in rendered(parser, action):
                    missing.append(f"{name}: help does not show {default}")
    assert seen > 20  # every subcommand's options were found
    assert missing == []


def test_every_subcommand_has_a_help_line():
    for _, parser in parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helped = {choice.dest for choice in action._choices_actions if choice.help}
                assert helped == set(action.choices), f"{parser.prog}: a subcommand without help"


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"scratchformer {importlib.metadata.version('scratchformer')}\n"


def test_predict_help_names_the_default_model_and_tokenizer(capsys):
    with pytest.raises(SystemExit) as done:
        main(["predict", "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines where it likes
    assert "--model MODEL checkpoint written by the train stage, or the model folder" in text
    assert "(models/classifier) (default: models/model.pt)" in text
    assert "--tokenizer TOKENIZER tokenizer folder the model was trained with" in text
    assert "(default: the model folder's own; for a checkpoint, data/tokenizer, from the tokenize stage)" in text
    assert "Exit status: 0 when every text is answered; 1 when some rows carry an error" in text
