"""The label-issue ranking finds planted label flips; contradicting copies are counted and listed."""

import csv
import json

import numpy as np
import pandas as pd
import pytest
from fixtures import sentences, write_corpus

from scratchformer.analysis.duplicates import contradictions, copy_agreement, flip_rate, normalise, pool
from scratchformer.analysis.label_issues import COLUMNS, out_of_fold, rank, rank_splits
from scratchformer.config import BaselineConfig, from_dict
from scratchformer.data.ingest import load_splits

NAMES = ["negative", "positive"]


def flipped_corpus(n: int, flips: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """``n`` fixture sentences (label decided by their sentiment words) with ``flips`` labels flipped."""
    frame = pd.DataFrame(sentences(n, seed=11), columns=["label", "text"])
    planted = np.random.default_rng(seed).choice(n, size=flips, replace=False)
    frame.loc[planted, "label"] = 1 - frame.loc[planted, "label"]
    return frame, planted


def test_planted_flips_are_ranked_first():
    frame, planted = flipped_corpus(400, 20, seed=3)
    labels = frame["label"].to_numpy()
    probs = out_of_fold(frame["text"], labels, 2, BaselineConfig(), seed=42)
    ranking = rank("train", frame, probs, NAMES).frame
    assert list(ranking.columns) == COLUMNS
    first = set(ranking["row"][:40])
    recall = len(first & set(planted.tolist())) / len(planted)
    assert recall >= 0.5, f"only {recall:.0%} of the planted flips among the 40 ranked first"
    assert ranking["score"].is_monotonic_increasing
    flagged = set(ranking.loc[ranking["issue"], "row"])
    assert len(flagged & set(planted.tolist())) >= 10  # cleanlab's own verdict finds them too
    # a flipped row says what the model suggests instead: the class the sentiment words give
    top = ranking.iloc[0]
    assert top["suggested"] != top["label"]


def test_the_ranking_is_a_function_of_the_seed():
    frame, _ = flipped_corpus(200, 10, seed=5)
    labels = frame["label"].to_numpy()
    a = out_of_fold(frame["text"], labels, 2, BaselineConfig(), seed=1)
    b = out_of_fold(frame["text"], labels, 2, BaselineConfig(), seed=1)
    np.testing.assert_array_equal(a, b)


def test_the_folds_fit_side_by_side_answer_as_each_fold_fit_alone():
    """out_of_fold fits its folds in parallel processes: each held-out row's probabilities are those of NB-LR
    fit, in this process, on exactly the rows of the other folds."""
    from sklearn.model_selection import StratifiedGroupKFold

    from scratchformer.analysis.baseline import make_baseline
    from scratchformer.analysis.label_issues import FOLDS

    frame, _ = flipped_corpus(200, 10, seed=7)
    texts, labels, config = frame["text"], frame["label"].to_numpy(), BaselineConfig()
    probs = out_of_fold(texts, labels, 2, config, seed=4)
    groups = pd.factorize(texts.map(normalise))[0]
    for fit_rows, held_rows in StratifiedGroupKFold(FOLDS, shuffle=True, random_state=4).split(texts, labels, groups):
        alone = make_baseline(config, 4, "nblr").fit(texts.iloc[fit_rows], labels[fit_rows])
        np.testing.assert_array_equal(probs[held_rows], alone.predict_proba(texts.iloc[held_rows]))


def test_copies_of_one_text_share_a_fold_so_neither_vouches_for_the_other():
    # Twenty copies of one text labelled negative, amid clean data that says positive.
    # Were a copy's twins in other folds, the model would learn "negative" from them.
    frame = pd.DataFrame(sentences(200, seed=2), columns=["label", "text"])
    twin = "房间真的很好，服务很好。"
    copies = pd.DataFrame({"label": [0] * 20, "text": [twin] * 10 + [" 房间真的很好 服务很好! "] * 10})
    frame = pd.concat([frame, copies], ignore_index=True)
    probs = out_of_fold(frame["text"], frame["label"].to_numpy(), 2, BaselineConfig(), seed=0)
    assert (probs[-20:, 1] > 0.5).all()


def test_normalise_folds_width_case_punctuation_and_spaces():
    assert normalise("  房间ＧＯＯＤ！　很好，，\t") == "房间good很好"
    assert normalise("好～😀") == "好~😀"  # symbols stay (NFKC makes the full-width tilde ~)


def test_contradictions_within_and_across_splits():
    frames = {
        "train": pd.DataFrame(
            {"text": ["好", "好", "差", "差", "一般。", "一般", "棒"], "label": [1, 0, 0, 0, 1, 0, 1]}
        ),
        "validation": pd.DataFrame({"text": ["差", "棒！", "好"], "label": [1, 0, 1]}),
        "test": pd.DataFrame({"text": ["棒"], "label": [1]}),
    }
    counts, listed = contradictions(frames, NAMES, seed=0)
    # train: 好 has two labels; near also 一般/一般。
    assert counts["exact"]["train"] == 1 and counts["near"]["train"] == 2
    # validation 差 (positive) contradicts train's 差; 好 (positive) contradicts one train copy; 棒！ only near
    assert counts["exact"]["validation_vs_train"] == 2 and counts["near"]["validation_vs_train"] == 3
    assert counts["near"]["test_vs_validation"] == 1 and counts["exact"]["test_vs_validation"] == 0
    assert counts["exact"]["test_vs_train"] == 0
    assert list(listed.columns) == ["group", "match", "split", "row", "label", "text"]
    groups = {g: set(rows["match"]) for g, rows in listed.groupby("group")}
    assert sorted(m for (m,) in groups.values()) == ["exact", "exact", "near", "near"]
    assert ("validation", 0, "positive", "差") in set(
        zip(listed.split, listed.row, listed.label, listed.text, strict=True)
    )
    assert "差" not in set(listed.loc[listed["split"] == "test", "text"])


def test_copy_agreement_counts_pairs_of_copies_and_inverts_the_flip_model():
    frames = {
        "train": pd.DataFrame({"text": ["好", "好", "好", "差", "差！", "一般", "棒"], "label": [1, 1, 0, 0, 0, 1, 1]}),
        "validation": pd.DataFrame({"text": ["棒", "新"], "label": [0, 1]}),
    }
    found = copy_agreement(pool(frames), 2, seed=0)
    # 好 x3 (labels 1, 1, 0): 3 pairs, 2 disagree; 差/差！ near copies: 1 pair, agree; 棒 across splits: 1, disagrees
    assert (found["texts"], found["pairs"], found["disagreeing_pairs"]) == (3, 5, 3)
    assert found["flip_rate"] == pytest.approx(flip_rate(3 / 5, 2))
    ci = found["flip_rate_ci95"]
    assert ci["lo"] <= found["flip_rate"] <= ci["hi"]
    assert copy_agreement(pool(frames), 2, seed=0) == found  # same inputs and seed, same numbers
    assert copy_agreement(pool({"train": frames["train"].iloc[5:]}), 2, seed=0)["flip_rate"] is None  # no copies


@pytest.mark.parametrize("epsilon", [0.0, 0.03, 0.2])
@pytest.mark.parametrize("k", [2, 3, 5])
def test_flip_rate_inverts_the_disagreement_of_two_independently_flipped_copies(epsilon, k):
    disagreement = 1 - ((1 - epsilon) ** 2 + epsilon**2 / (k - 1))
    assert flip_rate(disagreement, k) == pytest.approx(epsilon)
    assert flip_rate(0.99, 2) == 0.5  # labels no better than chance


def test_copy_agreement_recovers_a_known_flip_rate():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 2, size=4000)
    texts = np.repeat([f"text {i}" for i in range(4000)], 2)  # every text twice
    labels = np.repeat(truth, 2)
    flipped = rng.random(len(labels)) < 0.05
    labels[flipped] = 1 - labels[flipped]
    found = copy_agreement(pool({"train": pd.DataFrame({"text": texts, "label": labels})}), 2, seed=0)
    ci = found["flip_rate_ci95"]
    assert ci["lo"] < 0.05 < ci["hi"] and abs(found["flip_rate"] - 0.05) < 0.01


def test_validation_and_test_are_scored_by_a_model_of_all_train():
    train = pd.DataFrame(sentences(200, seed=1), columns=["label", "text"])
    validation = pd.DataFrame(sentences(60, seed=2), columns=["label", "text"])
    validation.loc[[3, 7], "label"] = 1 - validation.loc[[3, 7], "label"]
    rankings = rank_splits({"train": train, "validation": validation}, NAMES, BaselineConfig(), seed=0)
    assert set(rankings["validation"].frame["row"][:2]) == {3, 7}
    assert rankings["validation"].issues >= 1  # cleanlab prunes by its estimated noise rate: not always both


@pytest.mark.parametrize("mode", ["keep", "drop"])
def test_download_ranks_every_split_and_drops_from_train_only_when_asked(tmp_path, mode):
    from stages import download

    folder = write_corpus(tmp_path / "corpus")
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps({"source": str(folder)}), encoding="utf-8")
    params = from_dict({"data": {"source": str(folder), "label_issues": mode, "label_issues_n": 5}})
    download.run(params, inputs, tmp_path / "raw", tmp_path / "data.json", tmp_path / "issues")
    metrics = json.loads((tmp_path / "data.json").read_text(encoding="utf-8"))
    dropped = 5 if mode == "drop" else 0
    assert metrics["data"]["rows"] == {"train": 240 - dropped, "validation": 60, "test": 60}
    assert metrics["label_issues"]["dropped_from_train"] == dropped
    assert set(metrics["label_issues"]) == {"train", "validation", "test", "dropped_from_train"}
    assert set(metrics["contradictions"]) == {"exact", "near", "copies"}
    train = pd.read_csv(tmp_path / "issues" / "train.csv", keep_default_na=False)
    assert list(train.columns) == COLUMNS and len(train) >= 5
    original = load_splits(params.data)[0].frame
    expected = original.drop(index=train["row"][:dropped]).reset_index(drop=True)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "raw" / "train.parquet"), expected)
    for split in ("validation", "test"):
        assert len(pd.read_parquet(tmp_path / "raw" / f"{split}.parquet")) == 60
    for split in ("validation", "test"):
        with open(tmp_path / "issues" / f"{split}.csv", encoding="utf-8") as f:
            assert next(csv.reader(f)) == COLUMNS
    assert (tmp_path / "issues" / "contradictions.csv").is_file()


def test_label_issues_config_is_checked():
    from scratchformer.config import ConfigError

    with pytest.raises(ConfigError, match=r"data\.label_issues='remove' must be one of keep, drop"):
        from_dict({"data": {"label_issues": "remove"}})
    with pytest.raises(ConfigError, match=r"data\.label_issues_n=0 must be at least 1"):
        from_dict({"data": {"label_issues_n": 0}})


def test_the_cli_prints_the_ranking_for_a_person(tmp_path, capsys):
    from scratchformer.cli import main

    lines = ["row,text,label,suggested,score,issue", "7,东西不错，赞一个,negative,positive,0.0039,True"]
    lines += ["2,房间很好,positive,positive,0.6,False", "5,很差,negative,negative,0.9,False"]
    (tmp_path / "validation.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["label-issues", "--dir", str(tmp_path), "--split", "validation", "--top", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "1 labels flagged by cleanlab; the 2 most suspect:" in out[0]
    assert out[2] == "1\t7\tnegative\tpositive\t0.0039\tyes\t东西不错，赞一个"
    assert out[3].startswith("2\t2\tpositive") and len(out) == 4
    assert main(["label-issues", "--dir", str(tmp_path)]) == 2  # no train.csv there
    assert "train.csv: no label-issue ranking; run `dvc repro download`" in capsys.readouterr().err
