import json

import pytest
import torch

from scratchformer.checkpoint import load_checkpoint
from scratchformer.cli import main
from scratchformer.predict import Predictor
from scratchformer.tokenization import load_tokenizer


def test_predicts_the_fixture_sentiment(trained):
    model, tokenizer = trained
    texts = ["房间很好，服务很好。", "房间太脏，服务很差。"]
    out = Predictor(model, tokenizer).predict(texts)
    assert [p.label for p in out] == ["positive", "negative"]
    # The probabilities are the model's softmax, and the label is the class that has the most of it.
    network, info = load_checkpoint(model)
    names = info["class_names"]
    ids = load_tokenizer(str(tokenizer))(texts, padding=True, return_tensors="pt")["input_ids"]
    expected = network(ids).softmax(-1)
    for p, row in zip(out, expected, strict=True):
        assert [p.probabilities[name] for name in names] == pytest.approx(
            row.tolist(), abs=5e-5
        )  # printed to 4 decimals
        assert p.probability == max(p.probabilities.values()) and p.probabilities[p.label] == p.probability
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


def test_an_ensemble_checkpoint_predicts_the_mean_probability(trained, tmp_path):
    from scratchformer.checkpoint import save_checkpoint
    from scratchformer.model import Ensemble

    model_path, tokenizer = trained
    single, info = load_checkpoint(model_path)
    names = info["class_names"]
    other, _ = load_checkpoint(model_path)
    torch.manual_seed(0)
    with torch.no_grad():  # a second, different member
        for p in other.parameters():
            p.add_(0.3 * torch.randn_like(p))
    save_checkpoint(tmp_path / "ensemble.pt", Ensemble([single, other]), **info)
    texts = ["房间很好，服务很好。", "房间太脏，服务很差。", "房间很好，服务很差。"]
    together = Predictor(tmp_path / "ensemble.pt", tokenizer).predict(texts)
    ids = load_tokenizer(str(tokenizer))(texts, padding=True, return_tensors="pt")["input_ids"]
    p_single, p_other = single(ids).softmax(-1), other(ids).softmax(-1)
    assert (p_single - p_other).abs().max() > 0.01  # the members disagree
    mean = (p_single + p_other) / 2  # log(mean probability), by hand
    for p, row in zip(together, mean, strict=True):
        assert [p.probabilities[name] for name in names] == pytest.approx(
            row.tolist(), abs=5e-5
        )  # printed to 4 decimals
        assert p.label == names[int(row.argmax())]


def test_plot_draws_one_bar_per_non_special_token(trained, tmp_path, monkeypatch, capsys):
    import warnings

    import imageio.v3 as iio
    import matplotlib

    from scratchformer import plots

    drawn = []
    save = plots.save_figure

    def spy(fig, path, **kwargs):  # the figure as drawn: tick labels and bars of each chart
        drawn.extend(([t.get_text() for t in ax.get_xticklabels()], len(ax.patches)) for ax in fig.axes)
        save(fig, path, **kwargs)

    monkeypatch.setattr(plots, "save_figure", spy)
    model, tokenizer = trained
    texts = ["房间很好，服务很好。", "电脑太吵"]
    out = tmp_path / "relevance.png"
    # Default fonts to start from (another test may have set the CJK one): predict must set it itself.
    with matplotlib.rc_context(), warnings.catch_warnings(record=True) as caught:
        matplotlib.rcdefaults()
        warnings.simplefilter("always")
        assert main(["predict", "--plot", str(out), "--model", str(model), "--tokenizer", str(tokenizer), *texts]) == 0
    # CJK glyphs render: matplotlib warns for every character its fonts lack.
    assert not [w for w in caught if "missing from" in str(w.message)]
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and iio.imread(out).shape[0] > 300
    words = load_tokenizer(str(tokenizer))
    expected = [words.tokenize(text) for text in texts]  # the tokens, without [CLS] and [SEP]
    assert drawn == [(tokens, len(tokens)) for tokens in expected]
    printed = capsys.readouterr().out
    assert printed.count("driven by:") == 2 and all(line.count("(") <= 5 for line in printed.splitlines())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--plot", "out.jpg", "好"], "--plot writes a PNG: give a path ending in .png"),
        (["--plot", "out.png", *["好"] * 21], "--plot draws at most 20 texts, got 21"),
    ],
)
def test_plot_refuses_what_it_cannot_draw(trained, capsys, args, message):
    model, tokenizer = trained
    assert main(["predict", "--model", str(model), "--tokenizer", str(tokenizer), *args]) == 2
    assert message in capsys.readouterr().err


def test_device_flag_places_the_model_and_refuses_a_missing_device(trained, capsys, monkeypatch):
    model, tokenizer = trained
    args = ["predict", "--model", str(model), "--tokenizer", str(tokenizer), "房间很差"]
    assert main([*args, "--device", "cpu"]) == 0
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main([*args, "--device", "cuda"]) == 2
    assert "'cuda' asked for, but this machine has no CUDA device" in capsys.readouterr().err
