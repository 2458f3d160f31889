"""Data-parallel training through DVC: `dvc exp run -S train.nproc=2` on the fixture corpus (gloo on CPU)."""

import json

import pandas as pd
import pytest
from test_pipeline_e2e import make_project, run, write_params

from scratchformer.model.checkpoint import load_checkpoint

pytestmark = pytest.mark.slow


def outputs(repo):
    model, _ = load_checkpoint(repo / "models" / "model.pt")
    return {
        "weights": model.state_dict(),
        "eval": json.loads((repo / "metrics" / "eval.json").read_text()),
        "steps": pd.read_csv(repo / "dvclive" / "plots" / "metrics" / "step" / "loss.tsv", sep="\t"),
        "snapshots": json.loads((repo / "plots" / "probe" / "snapshots.json").read_text())["snapshots"],
    }


def test_two_processes_write_once_and_train_like_one(tmp_path):
    repo = tmp_path / "project"
    repo.mkdir()
    params = make_project(repo, epochs=2)
    # Without dropout the two runs differ only in float rounding (each process sums half the batch).
    params["model"]["dropout"] = 0.0
    write_params(repo, params)
    run(["git", "commit", "-qam", "no dropout"], repo)
    run(["dvc", "repro"], repo)
    one = outputs(repo)

    out = run(["dvc", "exp", "run", "-n", "ddp", "-S", "train.nproc=2"], repo)
    assert "Running stage 'train'" in out and "Running stage 'evaluate'" in out
    assert "rank 0 of 2" in out and "rank 1 of 2" in out  # two processes trained
    two = outputs(repo)

    # Written once, by rank 0: one row per step (240 texts / batch 16 x 2 epochs), one snapshot per epoch.
    assert list(two["steps"]["step"]) == list(range(30))
    assert [s["epoch"] for s in two["snapshots"]] == [0, 1, 2]
    assert not (repo / "checkpoints" / "train.pt").exists()
    # The same batches in the same order, the same updates: the curves and weights agree to rounding.
    losses = (two["steps"]["loss"] - one["steps"]["loss"]).abs()
    print(f"max abs step-loss difference nproc 2 vs 1: {losses.max():.3g}")
    assert losses.iloc[0] < 1e-6 and losses.max() < 1e-3
    assert abs(two["eval"]["validation"]["accuracy"] - one["eval"]["validation"]["accuracy"]) <= 2 / 60
    diff = max((two["weights"][k] - one["weights"][k]).abs().max().item() for k in one["weights"])
    print(f"max abs weight difference nproc 2 vs 1: {diff:.3g}")
    assert diff < 1e-2
    shown = run(["dvc", "exp", "show", "--json"], repo)
    assert '"nproc": 2' in shown or "nproc" in shown
