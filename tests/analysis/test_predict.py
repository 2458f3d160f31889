import io
import json

import pytest
import torch

from scratchformer.analysis.predict import Predictor
from scratchformer.cli import main
from scratchformer.data.tokenization import load_tokenizer
from scratchformer.model.checkpoint import load_checkpoint


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
        assert p.top_tokens and abs(p.top_tokens[0]["relevance"]) >= abs(p.top_tokens[-1]["relevance"])
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
        "warning",
    }
    assert set(rows[0]["top_tokens"][0]) == {"token", "position", "relevance"}


def test_printed_relevance_says_which_class_each_token_pushed_toward(trained, capsys):
    model, tokenizer = trained
    text = "房间很好，服务很差。"  # one clause of each sentiment: its tokens push both ways
    (answer,) = Predictor(model, tokenizer).predict([text], top_k=None)
    assert main(["predict", "--top", "100", "--model", str(model), "--tokenizer", str(tokenizer), text]) == 0
    line = capsys.readouterr().out.splitlines()[1]
    other = next(name for name in answer.probabilities if name != answer.label)
    toward, away = line.strip().split("   ")
    assert toward.startswith(f"toward {answer.label}: ") and away.startswith(f"toward {other}: ")
    # Each token in the group of its sign, with that sign, largest magnitude first.
    pushing = [t for t in answer.top_tokens if t["relevance"] >= 0]
    against = [t for t in answer.top_tokens if t["relevance"] < 0]
    assert toward.split(": ")[1].split() == [f"{t['token']}({t['relevance']:+.2f})" for t in pushing]
    assert away.split(": ")[1].split() == [f"{t['token']}({t['relevance']:+.2f})" for t in against]
    assert all("(-" in word for word in away.split(": ")[1].split())


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
    from scratchformer.model.checkpoint import save_checkpoint
    from scratchformer.model.classifier import Ensemble

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

    from scratchformer.render import pictures as plots

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
    assert printed.count("\n\ttoward ") == 2 and all(line.count("(") <= 5 for line in printed.splitlines())


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


class LoggedStdin:
    """A stdin that logs each line it hands out into ``events`` (``read()`` hands out everything)."""

    def __init__(self, lines, events):
        self.lines, self.events = lines, events

    def __iter__(self):
        for i, line in enumerate(self.lines):
            self.events.append(("read", i))
            yield line + "\n"

    def read(self):
        return "".join(self)


class LoggedStdout:
    def __init__(self, events):
        self.events, self.text = events, []

    def write(self, s):
        self.events.append(("write", s))
        self.text.append(s)
        return len(s)

    def flush(self):
        self.events.append(("flush", None))


@pytest.mark.parametrize("as_json", [False, True])
def test_stdin_streams_in_bounded_batches_and_answers_before_reading_it_all(trained, monkeypatch, as_json):
    """Memory is bounded by the batch, not the input: no batch above the batch size, rows out as they are done."""
    from scratchformer.cli import BATCH_SIZE

    model, tokenizer = trained
    events, sizes = [], []
    predict = Predictor.predict

    def spy(self, texts, top_k=5):
        sizes.append(len(texts))
        return predict(self, texts, top_k)

    monkeypatch.setattr(Predictor, "predict", spy)
    lines = ["房间很好。", "", "服务很差。"] * BATCH_SIZE  # 2 * BATCH_SIZE texts and blank lines between
    out = LoggedStdout(events)
    monkeypatch.setattr("sys.stdin", LoggedStdin(lines, events))
    monkeypatch.setattr("sys.stdout", out)
    args = ["predict", "--model", str(model), "--tokenizer", str(tokenizer)]
    assert main([*args, "--json"] if as_json else args) == 0
    assert sizes == [BATCH_SIZE, BATCH_SIZE]
    first_write = next(i for i, e in enumerate(events) if e[0] == "write")
    last_read = max(i for i, e in enumerate(events) if e[0] == "read")
    assert first_write < last_read  # the first batch's rows went out before the last line was read
    assert ("flush", None) in events[first_write:last_read]  # … and were flushed, not left in a buffer
    printed = "".join(out.text)
    if as_json:
        rows = json.loads(printed)  # still one JSON array, written piece by piece
        assert [r["text"] for r in rows] == ["房间很好。", "服务很差。"] * BATCH_SIZE
    else:
        assert printed.count("\n\ttoward ") == 2 * BATCH_SIZE


def test_json_streams_the_same_bytes_as_one_dump(trained, capsys):
    model, tokenizer = trained
    texts = ["房间很好。", "服务很差。", "😀"]
    assert main(["predict", "--json", "--model", str(model), "--tokenizer", str(tokenizer), *texts]) == 0
    printed = capsys.readouterr().out
    assert printed == json.dumps(json.loads(printed), ensure_ascii=False, indent=2) + "\n"


def test_a_text_the_vocabulary_does_not_know_is_answered_with_a_warning(trained, capsys):
    model, tokenizer = trained
    args = ["predict", "--model", str(model), "--tokenizer", str(tokenizer), "😀😀😀", "房间很好。"]
    assert main([*args, "--json"]) == 0
    unknown, known = json.loads(capsys.readouterr().out)
    assert "every token is [UNK]" in unknown["warning"] and known["warning"] is None
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    (warned,) = [i for i, line in enumerate(lines) if line.startswith("\twarning: ")]
    assert lines[warned - 2].endswith("\t😀😀😀") and "every token is [UNK]" in lines[warned]


@pytest.mark.parametrize("blank", ["\u200b", "\u200c\u200d", " \ufeff\u2060 ", "\u200b\n\ufeff"])
def test_zero_width_characters_alone_are_blank(trained, capsys, monkeypatch, blank):
    import io

    model, tokenizer = trained
    args = ["predict", "--model", str(model), "--tokenizer", str(tokenizer)]
    assert main([*args, blank]) == 2
    assert "no text to classify" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{blank}\n房间很好。\n{blank}\n"))
    assert main([*args, "--json"]) == 0
    assert [r["text"] for r in json.loads(capsys.readouterr().out)] == ["房间很好。"]


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--top", "0", "argument --top: give a whole number of at least 1, not '0'"),
        ("--top", "-3", "argument --top: give a whole number of at least 1, not '-3'"),
        ("--batch-size", "0", "argument --batch-size: give a whole number of at least 1, not '0'"),
    ],
)
def test_bad_flags_are_refused_before_anything_is_read(trained, capsys, flag, value, message):
    model, tokenizer = trained
    with pytest.raises(SystemExit) as exit:
        main(["predict", "--model", str(model), "--tokenizer", str(tokenizer), flag, value, "好"])
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == f"scratchformer predict: error: {message}" and "Traceback" not in err


@pytest.mark.parametrize("device", ["foo", "cuda:x", "cuda:-1"])
def test_an_unknown_device_is_one_line(trained, capsys, device):
    model, tokenizer = trained
    assert main(["predict", "--model", str(model), "--tokenizer", str(tokenizer), "--device", device, "好"]) == 2
    err = capsys.readouterr().err
    assert err == f"scratchformer predict: {device!r} is not a device: give auto, cpu, cuda, cuda:N or mps\n"


def test_a_missing_cuda_index_is_a_clear_error(trained, capsys, monkeypatch):
    model, tokenizer = trained
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert main(["predict", "--model", str(model), "--tokenizer", str(tokenizer), "--device", "cuda:3", "好"]) == 2
    assert "'cuda:3' asked for, but this machine has 1 CUDA device (cuda:0)" in capsys.readouterr().err


def test_a_closed_pipe_ends_quietly(trained, tmp_path):
    """``predict | head -1``: the reader goes away early; no traceback, the conventional SIGPIPE status."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from scratchformer import cli

    model, tokenizer = trained
    (tmp_path / "in.txt").write_text("房间很好。\n" * 2000, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(Path(cli.__file__).parents[1])}
    cmd = [sys.executable, "-m", "scratchformer", "predict", "--model", str(model), "--tokenizer", str(tokenizer)]
    with (tmp_path / "in.txt").open("rb") as stdin:
        proc = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        assert proc.stdout.readline().startswith(b"positive\t")
        proc.stdout.close()  # what `head -1` does after its line
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == 141  # 128 + SIGPIPE, as a shell reports a process the pipe ended
    assert err == ""


def corrupt(path, how):
    whole = path.read_bytes()
    if how == "empty":
        return b""
    if how == "truncated":
        return whole[: len(whole) // 2]
    if how == "garbage":
        return b"not a checkpoint\n" * 10
    if how == "pickle":  # a plain pickle: torch's weights-only reader refuses it
        import pickle

        return pickle.dumps({"model_config": object})
    buffer = io.BytesIO()  # a readable torch file without the records of a checkpoint
    torch.save({"weights": torch.zeros(2)}, buffer)
    return buffer.getvalue()


@pytest.mark.parametrize("how", ["empty", "truncated", "garbage", "pickle", "no records"])
@pytest.mark.filterwarnings("error")  # nothing but the one line: no torch warning either
def test_a_damaged_checkpoint_is_one_line_that_says_how_to_restore_it(trained, tmp_path, capsys, how):
    model, tokenizer = trained
    broken = tmp_path / "model.pt"
    broken.write_bytes(corrupt(model, how))
    assert main(["predict", "--model", str(broken), "--tokenizer", str(tokenizer), "好"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "weights_only" not in err
    assert err.startswith(f"scratchformer predict: {broken} ") and "or rebuild it with `dvc repro`" in err

    from scratchformer.model.checkpoint import CorruptFileError

    with pytest.raises(CorruptFileError, match="restore it with `dvc checkout") as caught:
        load_checkpoint(broken)
    assert isinstance(caught.value, ValueError) and str(broken) in str(caught.value)


def test_plot_draws_dollar_signs_as_plain_text_with_a_legend(trained, tmp_path, monkeypatch):
    from scratchformer.render import pictures as plots

    drawn = []
    save = plots.save_figure

    def spy(fig, path, **kwargs):
        drawn.extend(fig.axes)
        save(fig, path, **kwargs)

    monkeypatch.setattr(plots, "save_figure", spy)
    model, tokenizer = trained
    texts = ["$\\frac{1}$ 房间很好", "原价$199，现价$99，房间很好", "服务$很差"]
    out = tmp_path / "relevance.png"
    assert main(["predict", "--plot", str(out), "--model", str(model), "--tokenizer", str(tokenizer), *texts]) == 0
    assert out.is_file() and len(drawn) == 3
    assert all("$" in ax.get_title(loc="left") for ax in drawn)  # the title as written, not mathtext
    legends = [[t.get_text() for t in ax.get_legend().get_texts()] for ax in drawn]
    # Each chart's legend names the class each colour pushes toward.
    # The first two texts are answered positive, the third negative: the predicted class comes first.
    assert legends == [["toward positive", "toward negative"]] * 2 + [["toward negative", "toward positive"]]
