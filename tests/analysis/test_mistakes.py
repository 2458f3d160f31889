"""The error report: the most confident mistakes, marked by the relevance predict uses, bounded."""

import math
import random
from dataclasses import replace

import pytest
import torch
from fixtures import NEGATIVE, POSITIVE, SUBJECTS, sentences

from scratchformer.analysis.mistakes import (
    ErrorReport,
    Mistake,
    OverRepresented,
    Token,
    analyse,
    most_confident_mistakes,
    over_represented,
)
from scratchformer.analysis.predict import Predictor
from scratchformer.config import ErrorsConfig
from scratchformer.data.tokenization import encode, load_tokenizer
from scratchformer.data.tokenized_split import TokenizedSplit
from scratchformer.model.checkpoint import class_names, load_checkpoint
from scratchformer.render import mistakes_page as error_report


@pytest.fixture(scope="module")
def flipped(trained):
    """The fixture model, its tokenizer, and 40 texts of which many are labelled wrong.

    The model reads the fixture sentiment well, so flipped labels make mistakes
    it is sure of; a text with one clause of each sentiment, given both labels,
    makes one mistake of middling confidence.
    """
    model_path, tokenizer_dir = trained
    rows = sentences(20, seed=7)
    rng = random.Random(3)
    mixed = [
        f"{rng.choice(SUBJECTS)}{rng.choice(POSITIVE)}，{rng.choice(SUBJECTS)}{rng.choice(NEGATIVE)}。"
        for _ in range(10)
    ]
    texts = [text for _, text in rows] + [t for t in mixed for _ in (0, 1)]
    labels = [label if i % 2 else 1 - label for i, (label, _) in enumerate(rows)] + [0, 1] * len(mixed)
    tokenizer = load_tokenizer(str(tokenizer_dir))
    ids = encode(tokenizer, texts, 24)["input_ids"]
    split = TokenizedSplit.from_sequences(ids, labels)
    model, _ = load_checkpoint(model_path)
    return model, tokenizer, split, texts


def test_mistakes_are_the_most_confident_wrong_answers_in_order(flipped):
    model, tokenizer, split, texts = flipped
    report = analyse(model, split, tokenizer, ["negative", "positive"], ErrorsConfig(n=40))  # every mistake
    # Ground truth one text at a time, unpadded: which answers are wrong, and how sure.
    with torch.no_grad():
        probs = torch.cat([model(split.sequence(i)[None]).softmax(-1) for i in range(len(split))])  # (N, K)
    wrong = [i for i in range(len(texts)) if int(probs[i].argmax()) != int(split.labels[i])]
    assert report.n_mistakes == len(wrong) >= 6 and report.total == 40
    # Most confident first at the 4 decimals the report prints, ties by row.
    expected = sorted(wrong, key=lambda i: (-round(float(probs[i].max()), 4), i))
    assert [m.row for m in report.mistakes] == expected
    confidences = [m.probability for m in report.mistakes]
    assert confidences == sorted(confidences, reverse=True) and len(set(confidences)) > 1
    for m in report.mistakes:
        assert m.true != m.predicted
        assert m.probability == pytest.approx(float(probs[m.row].max()), abs=1e-4)


def test_marked_tokens_are_the_most_relevant_by_predicts_relevance(flipped, trained):
    model, tokenizer, split, texts = flipped
    report = analyse(model, split, tokenizer, ["negative", "positive"], ErrorsConfig(n=10, highlight=4))
    predictor = Predictor(*trained)
    for m in report.mistakes:
        (answer,) = predictor.predict([texts[m.row]], top_k=None)
        by_position = sorted(answer.top_tokens, key=lambda t: t["position"])
        # The same tokens, with the relevance predict reports for them.
        assert [t.text for t in m.tokens] == [t["token"] for t in by_position]
        assert [t.relevance for t in m.tokens] == pytest.approx([t["relevance"] for t in by_position], abs=2e-4)
        marked = [t for t in m.tokens if t.marked]
        assert len(marked) == 4
        # Marked by magnitude: the tokens that weighed most, whichever way they pushed.
        assert min(abs(t.relevance) for t in marked) >= max(abs(t.relevance) for t in m.tokens if not t.marked)


def test_report_is_bounded_and_deterministic(flipped):
    model, tokenizer, split, _ = flipped
    config = ErrorsConfig(n=3, tokens=2, min_count=1)
    report = analyse(model, split, tokenizer, ["negative", "positive"], config)
    markdown = error_report.to_markdown(report)
    page = error_report.to_html(report)
    assert len(report.mistakes) == 3 and len(report.tokens) <= 2
    table_rows = [line for line in markdown.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert len(table_rows) == 3
    assert page.count("<tr><td class=num>") == 3
    assert len(markdown) < 5000 and len(page) < 10000
    again = analyse(model, split, tokenizer, ["negative", "positive"], config)
    assert error_report.to_markdown(again) == markdown and error_report.to_html(again) == page


def test_most_confident_mistakes_ranks_wrong_answers_only():
    probs = torch.tensor([[0.9, 0.1], [0.2, 0.8], [0.4, 0.6], [0.05, 0.95], [0.3, 0.7]])
    labels = torch.tensor([1, 0, 0, 1, 1])  # rows 0, 1, 2 are wrong
    assert most_confident_mistakes(probs, labels, 10) == [0, 1, 2]
    assert most_confident_mistakes(probs, labels, 2) == [0, 1]
    tied = torch.tensor([[0.7, 0.3], [0.3, 0.7]])
    assert most_confident_mistakes(tied, torch.tensor([1, 0]), 2) == [0, 1]  # ties by row


def test_over_represented_scores_the_smoothed_log_ratio():
    mistakes = [{"续", "航"}, {"续", "差"}, {"续"}, {"好"}]
    correct = [{"续", "好"}, {"好"}, {"好", "航"}, {"好"}, {"差"}, {"很"}]
    rows = over_represented(mistakes, correct, min_count=2, top=10)
    # 续: in 3 of 4 mistakes and 1 of 6 correct answers.
    expected = math.log(4 / 6) - math.log(2 / 8)
    assert rows[0] == OverRepresented("续", 3, 1, round(expected, 4))
    assert [r.token for r in rows] == ["续"]  # 航 and 差 are in one mistake only; 好 is commoner when right
    # 差 and 航 tie (one mistake, one correct answer each): ties by token, 差 (U+5DEE) first.
    assert [r.token for r in over_represented(mistakes, correct, min_count=1, top=10)] == ["续", "差", "航"]
    assert len(over_represented(mistakes, correct, min_count=1, top=1)) == 1


def test_class_names_come_from_one_place():
    assert class_names({}, 2) == ["0", "1"]  # a checkpoint from before names were stored
    assert class_names({}, 3) == ["0", "1", "2"]
    assert class_names({"class_names": ["neg", "neu", "pos"]}, 3) == ["neg", "neu", "pos"]
    with pytest.raises(ValueError, match="checkpoint names 2 classes but the model has 3 outputs"):
        class_names({"class_names": ["a", "b"]}, 3)


def test_markdown_escapes_tokens_that_would_break_the_table():
    tokens = [Token("|", 0.5, True), Token("*", 0.3, True), Token("好", 0.2, False)]
    report = ErrorReport(
        "validation", 10, 1, [Mistake(4, "positive", "negative", 0.9, tokens)], [], ErrorsConfig(highlight=2)
    )
    row = next(line for line in error_report.to_markdown(report).splitlines() if line.startswith("| 1 |"))
    assert row.count(" | ") == 6  # seven cells, no stray separators
    assert "**\\|\\***好" in row


def test_the_stage_writes_markdown_and_html(trained, tmp_path):
    from fixtures import write_corpus

    from scratchformer.config import DataConfig, Params
    from scratchformer.data.ingest import load_splits
    from scratchformer.data.tokenization import encode_flat
    from scratchformer.data.tokenized_split import write_tokenized
    from stages import errors

    model_path, tokenizer_dir = trained
    frame = next(s.frame for s in load_splits(DataConfig(source=str(write_corpus(tmp_path / "c")))))
    flat = encode_flat(load_tokenizer(str(tokenizer_dir)), frame["text"].tolist(), 24)
    write_tokenized(tmp_path / "tokenized" / "validation", flat, frame["label"].to_numpy())
    issues = tmp_path / "validation.csv"
    issues.write_text("row,text,label,suggested,score,issue\n1,x,negative,positive,0.01,True\n", encoding="utf-8")
    report = errors.run(Params(), model_path, tmp_path / "tokenized", tokenizer_dir, issues, tmp_path / "out")
    assert report.total == len(frame)
    assert (tmp_path / "out" / "validation.md").read_text().startswith("# Why is it wrong")
    assert "<!DOCTYPE html>" in (tmp_path / "out" / "validation.html").read_text()
    with pytest.raises(FileNotFoundError, match="no saved tokenizer"):
        errors.run(Params(), model_path, tmp_path / "tokenized", tmp_path / "nowhere", issues, tmp_path / "out")


def test_mistakes_whose_label_looks_wrong_are_marked_and_those_labels_listed(flipped, tmp_path):
    from scratchformer.analysis.mistakes import read_suspects

    model, tokenizer, split, texts = flipped
    config = ErrorsConfig(n=40)
    plain = analyse(model, split, tokenizer, ["negative", "positive"], config)
    wrong = [m.row for m in plain.mistakes]
    right = next(r for r in range(len(split)) if r not in wrong)
    csv = tmp_path / "validation.csv"
    lines = ["row,text,label,suggested,score,issue", f"{wrong[0]},{texts[wrong[0]]},negative,positive,0.001,True"]
    lines += [f"{right},{texts[right]},positive,negative,0.002,True", f"{wrong[1]},x,negative,negative,0.9,False"]
    csv.write_text("\n".join(lines) + "\n", encoding="utf-8")
    suspects = read_suspects(csv)
    assert [s.row for s in suspects] == [wrong[0], right]  # only what cleanlab flags, in its order
    report = analyse(model, split, tokenizer, ["negative", "positive"], config, suspects=suspects)
    assert [m.row for m in report.mistakes if m.suspect] == [wrong[0]]
    assert report.n_suspects == 2 and [s.row for s in report.suspects] == [wrong[0], right]
    assert report.suspects[1].model == ["negative", "positive"][int(split.labels[right])]  # the model got it right
    page = error_report.to_markdown(report)
    marked = [line for line in page.splitlines() if "label suspect" in line and line.startswith("| ")]
    assert len(marked) == 1 and marked[0].split(" | ")[1] == str(wrong[0])
    section = page.split("## Labels that look wrong")[1]
    assert "flags 2 of the 40 validation labels" in section
    assert f"| 2 | {right} | positive | negative | 0.0020 |" in section
    html_page = error_report.to_html(report)
    assert "<h2>Labels that look wrong</h2>" in html_page and html_page.count("(label suspect)") == 2  # row + intro
    with pytest.raises(ValueError, match="label issue row 99 is not in the validation split of 40 rows"):
        analyse(model, split, tokenizer, ["negative", "positive"], config, suspects=[replace(suspects[0], row=99)])


def test_class_names_are_text_in_both_pages():
    tokens = [Token("好", 0.2, True)]
    names = ("$$ a&amp;b", "x\n| y")
    report = ErrorReport("validation", 10, 1, [Mistake(4, *names, 0.9, tokens)], [], ErrorsConfig(highlight=1))
    row = next(line for line in error_report.to_markdown(report).splitlines() if line.startswith("| 1 |"))
    assert "\\$\\$ a\\&amp;b" in row and "x \\| y" in row and row.count(" | ") == 6  # no math, entity or new row
    assert "$$ a&amp;amp;b" in error_report.to_html(report)
