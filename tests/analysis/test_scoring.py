"""The unseen scores and their intervals: Wilson's for one accuracy, a paired bootstrap for a difference."""

import numpy as np
import pytest

from scratchformer.analysis.scoring import RESAMPLES, paired_bootstrap, split_scores, versus_best, wilson


def test_wilson_interval_matches_the_textbook_value():
    ci = wilson(8, 10)  # Newcombe (1998), Wilson's method without continuity correction
    assert (round(ci["lo"], 4), round(ci["hi"], 4)) == (0.4902, 0.9433)
    assert wilson(0, 10)["lo"] == 0 and wilson(10, 10)["hi"] == 1 and wilson(10, 10)["lo"] < 1
    with pytest.raises(ValueError, match="0 right out of 0"):
        wilson(0, 0)


def test_split_scores_score_the_unseen_part_on_its_own():
    labels = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    predicted = np.array([0, 1, 0, 1, 0, 1, 1, 0])  # right on the 4 seen reviews, 2 of 4 unseen
    seen = np.array([True] * 4 + [False] * 4)
    s = split_scores(predicted, labels, seen, 2)
    assert s["accuracy"] == 0.75 and s["accuracy_ci95"] == wilson(6, 8)
    assert s["unseen"]["n"] == 4 and s["unseen"]["accuracy"] == 0.5
    assert s["unseen"]["accuracy_ci95"] == wilson(2, 4) and s["unseen"]["f1"] == 0.5
    assert split_scores(predicted, labels, np.ones(8, bool), 2)["unseen"] == {"n": 0}


def test_identical_predictions_differ_by_zero_with_a_zero_width_interval():
    right = np.array([True, False, True, True, False] * 20)
    assert paired_bootstrap(right, right.copy(), seed=0) == {"delta": 0.0, "ci95": {"lo": 0.0, "hi": 0.0}}


def test_the_paired_interval_comes_from_resampling_the_same_reviews_for_both():
    n, k, seed = 50, 7, 42
    shared = [0, 5, 11, 17, 22, 26, 33, 37, 44, 49]  # both wrong: these must cancel in every resample
    model = np.ones(n, dtype=bool)
    model[shared] = False
    baseline = model.copy()
    baseline[[3, 9, 14, 20, 31, 40, 48]] = False  # wrong on exactly k more, where the model is right
    result = paired_bootstrap(model, baseline, seed)
    assert result["delta"] == k / n
    # The same resamples, drawn here in one go: each row is n reviews, scored for both.
    rows = np.random.default_rng(seed).integers(0, n, size=(RESAMPLES, n))
    deltas = model[rows].mean(axis=1) - baseline[rows].mean(axis=1)
    lo, hi = np.quantile(deltas, [0.025, 0.975])
    assert result["ci95"]["lo"] == pytest.approx(lo, abs=1e-12) and result["ci95"]["hi"] == pytest.approx(hi, abs=1e-12)
    assert 0 < result["ci95"]["lo"] < k / n < result["ci95"]["hi"]
    assert paired_bootstrap(model, baseline, seed) == result  # a fixed seed: the same numbers every run


def test_several_runs_per_side_compare_mean_accuracies_and_resample_reviews_not_runs():
    n, seed = 60, 7
    a = np.ones((3, n), dtype=bool)
    b = np.ones((3, n), dtype=bool)
    a[0, :6] = False  # run 0 of A misses the first 6 reviews, run 1 of B misses the same 6
    b[1, :6] = False
    swapped = paired_bootstrap(a, b, seed)
    # Per review A and B miss equally often: every resample differs by exactly 0. Runs resampled
    # as if they were reviews of their own would not cancel.
    assert swapped == {"delta": 0.0, "ci95": {"lo": 0.0, "hi": 0.0}}
    b[2, 10:13] = False  # B's run 2 misses 3 more: the mean accuracies differ by 3 / (3 n)
    result = paired_bootstrap(a, b, seed)
    assert result["delta"] == pytest.approx(a.mean() - b.mean(), abs=1e-15) == 1 / n
    # One run per side, stacked three times, is the one-run comparison.
    one_a, one_b = np.ones(n, dtype=bool), np.ones(n, dtype=bool)
    one_b[[4, 9, 30]] = False
    single = paired_bootstrap(one_a, one_b, seed)
    stacked = paired_bootstrap(np.tile(one_a, (3, 1)), np.tile(one_b, (3, 1)), seed)
    assert stacked["delta"] == single["delta"]
    assert stacked["ci95"] == pytest.approx(single["ci95"], abs=1e-15)


def test_the_model_is_compared_with_the_baseline_best_on_unseen_validation():
    labels = {s: np.array([0, 1] * 10) for s in ("validation", "test")}
    seen = {s: np.array([True] * 4 + [False] * 16) for s in labels}
    wrong_on_seen = labels["validation"].copy()
    wrong_on_seen[:4] ^= 1  # perfect on the unseen part, wrong on every seen review
    wrong_on_unseen = labels["validation"].copy()
    wrong_on_unseen[4:7] ^= 1
    baselines = {s: {"first": wrong_on_unseen, "second": wrong_on_seen} for s in labels}
    out = versus_best(labels, labels, seen, baselines, seed=0)  # the model is always right
    assert out["validation"]["name"] == out["test"]["name"] == "second"  # chosen on unseen reviews only
    assert out["validation"]["delta"] == 0.0 and out["validation"]["ci95"] == {"lo": 0.0, "hi": 0.0}
    assert versus_best(labels, labels, {s: np.ones(20, bool) for s in labels}, baselines, seed=0) == {}
