import json

import pytest

from scratchformer.cli import main
from scratchformer.predict import Predictor


def test_predicts_the_fixture_sentiment(trained):
    model, tokenizer = trained
    out = Predictor(model, tokenizer).predict(["房间很好，服务很好。", "房间太脏，服务很差。"])
    assert [p.label for p in out] == ["positive", "negative"]
    for p in out:
        assert 0.5 < p.probability <= 1 and abs(sum(p.probabilities.values()) - 1) < 1e-3
        assert p.top_tokens and p.top_tokens[0]["relevance"] >= p.top_tokens[-1]["relevance"]
        assert all(t["token"] not in ("[CLS]", "[SEP]") for t in p.top_tokens)
        assert not p.truncated


def test_long_text_is_truncated_and_says_so(trained, capsys):
    model, tokenizer = trained
    text = "服务很差，" * 20
    assert main(["predict", "--model", str(model), "--tokenizer", str(tokenizer), text]) == 0
    assert "truncated: the model read the first 24 of 102 tokens" in capsys.readouterr().out


def test_json_output_and_stdin(trained, capsys, monkeypatch):
    import io

    model, tokenizer = trained
    monkeypatch.setattr("sys.stdin", io.StringIO("房间很好。\n\n服务很差。\n"))
    assert main(["predict", "--json", "--model", str(model), "--tokenizer", str(tokenizer)]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["text"] for r in rows] == ["房间很好。", "服务很差。"]
    assert set(rows[0]) == {
        "text",
        "label",
        "probability",
        "probabilities",
        "top_tokens",
        "n_tokens",
        "read_tokens",
        "truncated",
    }
    assert set(rows[0]["top_tokens"][0]) == {"token", "position", "relevance"}


def test_no_model_is_a_clear_error(tmp_path, capsys):
    assert main(["predict", "--model", str(tmp_path / "model.pt"), "好"]) == 2
    assert "run `dvc repro` first" in capsys.readouterr().err


@pytest.mark.parametrize("stdin", ["", "\n  \n"])
def test_empty_input_is_an_error(trained, capsys, monkeypatch, stdin):
    import io

    model, tokenizer = trained
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    assert main(["predict", "--model", str(model), "--tokenizer", str(tokenizer)]) == 2
    assert "no text to classify" in capsys.readouterr().err


def test_console_script_is_installed():
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    exe = shutil.which("scratchformer", path=str(Path(sys.executable).parent))
    assert exe, "the scratchformer console script is not installed (pip install -r requirements.txt)"
    result = subprocess.run([exe, "predict", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "--json" in result.stdout


def test_an_ensemble_checkpoint_predicts_too(trained, tmp_path):
    from scratchformer.checkpoint import load_checkpoint, save_checkpoint
    from scratchformer.model import Ensemble

    model_path, tokenizer = trained
    single, info = load_checkpoint(model_path)
    twin, _ = load_checkpoint(model_path)
    save_checkpoint(tmp_path / "ensemble.pt", Ensemble([single, twin]), **info)
    texts = ["房间很好，服务很好。", "房间太脏，服务很差。"]
    alone = Predictor(model_path, tokenizer).predict(texts)
    together = Predictor(tmp_path / "ensemble.pt", tokenizer).predict(texts)
    # Two identical members: the same labels, probabilities and explanation as one.
    assert [p.label for p in together] == [p.label for p in alone] == ["positive", "negative"]
    for a, b in zip(alone, together, strict=True):
        assert b.probability == pytest.approx(a.probability, abs=1e-5)
        assert [t["token"] for t in b.top_tokens] == [t["token"] for t in a.top_tokens]
