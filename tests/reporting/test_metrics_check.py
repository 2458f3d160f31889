"""`scratchformer metrics check`: exact metrics identical, measured floats within their tolerance."""

import json
import os
import subprocess
import sys

import pytest

from scratchformer.reporting.metrics_check import compare, tolerance_for

THRESHOLDS = {
    "acceptance.attention_max_abs_err": 1e-5,
    "acceptance.causal_mask_leak": 1e-6,
    "acceptance.padding_leak": 1e-5,
}


def diff(path="metrics/eval.json", **changes):
    return {path: {key: {"old": old, "new": new} for key, (old, new) in changes.items()}}


def keys(violations):
    return [v.key for v in violations]


def test_counts_and_their_fractions_are_exact():
    for key in ("validation.accuracy", "test.f1", "data.rows.train", "best_epoch", "parameters"):
        assert tolerance_for(key) is None, key


def test_unseen_scores_and_their_intervals_are_exact():
    """Functions of the predictions alone: counts, Wilson's closed form, a seeded bootstrap of the same predictions."""
    for key in (
        "validation.unseen.accuracy",
        "validation.unseen.f1",
        "validation.unseen.n",
        "validation.accuracy_ci95.lo",
        "test.unseen.accuracy_ci95.hi",
        "validation.nb.unseen.accuracy_ci95.lo",
        "test.vs_best_baseline.name",
        "test.vs_best_baseline.delta",
        "validation.vs_best_baseline.ci95.lo",
        "nblr.test.unseen.accuracy_ci95.hi",
    ):
        assert tolerance_for(key) is None, key
    moved = diff(**{"validation.vs_best_baseline.ci95.lo": (-0.0081, -0.0093), "test.unseen.n": (869, 869)})
    assert keys(compare(moved, THRESHOLDS)[0]) == ["validation.vs_best_baseline.ci95.lo"]


def test_measured_floats_have_a_tolerance():
    for key in ("validation.loss", "best_val_loss", "grad_norm_median", "acceptance.padding_leak", "clipped_fraction"):
        assert tolerance_for(key) is not None, key


def test_one_flipped_validation_prediction_is_named():
    flipped = 0.8316666666666667 + 1 / 1200
    violations, compared = compare(diff(**{"validation.accuracy": (0.8316666666666667, flipped)}), THRESHOLDS)
    assert compared == 1 and keys(violations) == ["validation.accuracy"]
    assert "exact" in str(violations[0]) and "0.8316666666666667" in str(violations[0])


def test_the_other_machines_differences_hold():
    """What another CPU actually moved: the last digits of a norm and of a leak."""
    changes = diff(**{"acceptance.padding_leak": (4.76837158203125e-07, 2.384185791015625e-07)})
    changes |= diff("metrics/train.json", grad_norm_median=(0.66563, 0.66564), best_val_loss=(0.37949, 0.37951))
    assert compare(changes, THRESHOLDS) == ([], 3)


def test_a_loss_beyond_its_tolerance_is_named():
    violations, _ = compare(diff("metrics/train.json", best_val_loss=(0.37949, 0.37949 * 1.002)), THRESHOLDS)
    assert keys(violations) == ["best_val_loss"] and "rel 0.001" in violations[0].rule


def test_an_acceptance_error_must_stay_below_its_threshold():
    near = 9.9e-6  # within 1e-6 of the committed value, but past the 1e-5 threshold
    violations, _ = compare(diff(**{"acceptance.padding_leak": (9.5e-6, near + 2e-7)}), THRESHOLDS)
    assert keys(violations) == ["acceptance.padding_leak"] and "below" in violations[0].rule


def test_an_acceptance_error_beyond_its_bound_is_named():
    violations, _ = compare(diff(**{"acceptance.attention_max_abs_err": (6e-7, 3e-6)}), THRESHOLDS)
    assert keys(violations) == ["acceptance.attention_max_abs_err"]


def test_flags_lists_and_missing_metrics_are_named():
    changes = diff(**{"acceptance.passed": (True, False), "validation.f1": (0.83, None)})
    changes |= diff("metrics/data.json", classes=(["negative", "positive"], ["negative", "neutral"]))
    assert sorted(keys(compare(changes, THRESHOLDS)[0])) == ["acceptance.passed", "classes", "validation.f1"]


def test_nan_never_holds():
    violations, _ = compare(diff(**{"validation.loss": (0.38, float("nan"))}), THRESHOLDS)
    assert keys(violations) == ["validation.loss"]


@pytest.mark.slow
def test_the_command_compares_with_a_committed_revision(tmp_path):
    """A real git + DVC project: the check passes, then names what an edit moved, exit 1."""

    def sh(*cmd):
        return subprocess.run(
            cmd, cwd=tmp_path, capture_output=True, text=True, env=os.environ | {"DVC_NO_ANALYTICS": "1"}
        )

    sh("git", "init", "-q")
    sh("git", "config", "user.email", "ci@example.com")
    sh("git", "config", "user.name", "ci")
    assert sh("dvc", "init", "-q").returncode == 0
    (tmp_path / "dvc.yaml").write_text("metrics:\n  - eval.json\n")
    (tmp_path / "params.yaml").write_text("acceptance:\n  padding_leak: 1.0e-5\n")
    metrics = {"validation": {"accuracy": 0.8316666666666667, "loss": 0.37949}, "acceptance": {"padding_leak": 4.8e-7}}
    (tmp_path / "eval.json").write_text(json.dumps(metrics))
    sh("git", "add", "-A")
    assert sh("git", "commit", "-qm", "metrics").returncode == 0

    def run_check():
        return sh(sys.executable, "-m", "scratchformer", "metrics", "check")

    metrics["acceptance"]["padding_leak"] = 2.4e-7
    metrics["validation"]["loss"] = 0.37950
    (tmp_path / "eval.json").write_text(json.dumps(metrics))
    ok = run_check()
    assert ok.returncode == 0 and "3 metrics compared with HEAD; they hold" in ok.stdout, ok.stdout + ok.stderr

    metrics["validation"]["accuracy"] += 1 / 1200
    (tmp_path / "eval.json").write_text(json.dumps(metrics))
    bad = run_check()
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "eval.json  validation.accuracy  0.8316666666666667 -> 0.8325" in bad.stdout
    assert "validation.loss" not in bad.stdout
