"""`scratchformer predict --help` says what each path option is and what it defaults to."""

import pytest

from scratchformer.cli import main


def test_predict_help_names_the_default_model_and_tokenizer(capsys):
    with pytest.raises(SystemExit) as done:
        main(["predict", "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines where it likes
    assert "--model MODEL checkpoint written by the train stage, or the model folder" in text
    assert "(models/scratchformer) (default: models/model.pt)" in text
    assert "--tokenizer TOKENIZER tokenizer folder the model was trained with" in text
    assert "(default: the model folder's own; for a checkpoint, data/tokenizer, from the tokenize stage)" in text
