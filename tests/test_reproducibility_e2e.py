"""A killed training resumes to the same bytes; a clone pulls results instead of retraining."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from test_pipeline_e2e import make_project, run, write_params

pytestmark = pytest.mark.slow
STATE = Path("checkpoints/train.pt")


def tracked_outputs(repo: Path) -> dict[str, bytes]:
    paths = [repo / "models" / "model.pt", repo / "metrics" / "train.json", repo / "plots/probe/snapshots.json"]
    paths += sorted((repo / "dvclive").rglob("*"))
    return {str(p.relative_to(repo)): p.read_bytes() for p in paths if p.is_file()}


def kill_when(repo: Path, cmd: list[str], ready) -> dict:
    """Start ``cmd``; SIGKILL it (and its children) as soon as the saved state satisfies ``ready``."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.Popen(cmd, cwd=repo, env=env, start_new_session=True, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if (repo / STATE).is_file():
                try:
                    state = torch.load(repo / STATE, weights_only=True)
                except (RuntimeError, EOFError, FileNotFoundError):  # replaced while being read
                    continue
                if ready(state):
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    return state
            time.sleep(0.02)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    pytest.fail(f"{' '.join(cmd)} ended (code {proc.returncode}) before the state it was to be killed at")


def where(state: dict) -> tuple[int, int]:
    """(member, epochs done) the state resumes from."""
    current = state["current"]
    return (len(state["members"]), 0) if current is None else (current["member"], current["epoch"])


def test_a_killed_run_resumes_and_ends_byte_identical(tmp_path):
    # The uninterrupted run, in a project of its own: in the same project DVC would restore
    # train from that run's record in the run cache instead of resuming the killed run.
    reference = tmp_path / "reference"
    reference.mkdir()
    make_project(reference, epochs=3, batch_size=4, ensemble=2)
    run(["dvc", "repro"], reference)
    uninterrupted = tracked_outputs(reference)
    assert not (reference / STATE).exists()  # removed once the outputs are written

    repo = tmp_path / "project"
    repo.mkdir()
    make_project(repo, epochs=3, batch_size=4, ensemble=2)
    # Killed after member 0's first epoch, then again inside member 1, past the member boundary.
    first = kill_when(repo, ["dvc", "repro"], lambda s: where(s) == (0, 1))
    assert first["current"]["epoch"] == 1 and not (repo / "models" / "model.pt").exists()
    second = kill_when(repo, ["dvc", "repro"], lambda s: where(s)[0] == 1 and where(s)[1] in (1, 2))
    assert len(second["members"]) == 1
    (repo / "models" / ".model.pt.killed.tmp").write_bytes(b"half a checkpoint")  # what a kill mid-write leaves
    out = run(["dvc", "repro"], repo)
    assert "member 0: restored" in out and f"member 1: resuming after epoch {second['current']['epoch']}" in out
    assert tracked_outputs(repo) == uninterrupted
    assert not (repo / STATE).exists() and not list((repo / "models").glob("*.tmp"))


def test_partial_files_of_a_kill_are_ignored_by_git():
    root = Path(__file__).parents[1]
    for partial in ("models/.model.pt.x1y2.tmp", "metrics/.eval.json.abc.tmp", "checkpoints/train.pt"):
        assert subprocess.run(["git", "check-ignore", "-q", partial], cwd=root).returncode == 0, partial


def test_a_state_from_other_params_is_not_resumed(tmp_path):
    repo = tmp_path / "project"
    repo.mkdir()
    params = make_project(repo, epochs=3, batch_size=4)
    run(["dvc", "repro"], repo)
    kill_when(repo, ["dvc", "repro", "--force", "--single-item", "train"], lambda s: where(s) == (0, 1))
    params["train"]["lr"] = 0.001
    write_params(repo, params)
    out = run(["dvc", "repro"], repo)
    assert "starting afresh" in out and "resuming" not in out


def test_a_state_from_other_code_is_not_resumed(tmp_path):
    """Killed, then the training code edited: the rerun names the file and starts afresh."""
    repo = tmp_path / "project"
    repo.mkdir()
    make_project(repo, epochs=3, batch_size=4)
    run(["dvc", "repro"], repo)
    kill_when(repo, ["dvc", "repro", "--force", "--single-item", "train"], lambda s: where(s) == (0, 1))
    loop = repo / "src" / "scratchformer" / "train" / "loop.py"
    loop.write_text(loop.read_text() + "\n# edited between the kill and the rerun\n")
    out = run(["dvc", "repro"], repo)
    assert "src/scratchformer/train/loop.py changed since); starting afresh" in out, out
    assert "resuming" not in out


def test_a_clone_pulls_results_and_runs_no_stage(tmp_path):
    origin, storage = tmp_path / "origin.git", tmp_path / "storage"
    repo = tmp_path / "project"
    repo.mkdir()
    params = make_project(repo)
    run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], tmp_path)
    run(["dvc", "remote", "add", "-d", "storage", str(storage)], repo)
    run(["dvc", "repro"], repo)
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-qm", "results"], repo)
    run(["git", "remote", "add", "origin", str(origin)], repo)
    run(["git", "push", "-q", "origin", "main"], repo)
    run(["dvc", "push", "--run-cache"], repo)
    run(["dvc", "exp", "run", "-n", "shared-exp", "-S", "train.lr=0.001"], repo)
    shared_metrics = (repo / "metrics" / "train.json").read_bytes()
    run(["dvc", "exp", "push", "--run-cache", "origin", "shared-exp"], repo)

    # A colleague pulls the outputs: nothing is stale, nothing re-runs, the model answers.
    clone = tmp_path / "clone"
    run(["git", "clone", "-q", str(origin), str(clone)], tmp_path)
    run(["dvc", "pull"], clone)
    # Only `inputs` (always_changed: it re-fingerprints the corpus and tokenizer) ever runs.
    assert run(["dvc", "status"], clone).split() == ["inputs:", "always", "changed"]
    out = run(["dvc", "repro"], clone)
    assert [line for line in out.splitlines() if "Running stage" in line] == ["Running stage 'inputs':"]
    assert "0." in run(["dvc", "metrics", "show"], clone)
    answer = run(
        ["scratchformer", "predict", "--model", "models/model.pt", "--tokenizer", "data/tokenizer", "房间很差"], clone
    )
    assert "negative" in answer or "positive" in answer
    run(["dvc", "exp", "pull", "origin", "shared-exp"], clone)
    assert "shared-exp" in run(["dvc", "exp", "list"], clone)

    # Another fetches the outputs' objects and the run cache, and checks out nothing: every
    # stage that costs time (tokenize, pretrain, train) is restored, not run. Those whose
    # outputs git keeps (`cache: false`, never pushed: download's metrics, publish,
    # evaluate, …) run again in seconds and write the same bytes.
    other = tmp_path / "other"
    run(["git", "clone", "-q", str(origin), str(other)], tmp_path)
    run(["dvc", "fetch", "--run-cache"], other)
    out = run(["dvc", "repro"], other)
    for stage in ("tokenize", "pretrain", "train"):
        assert f"Stage '{stage}' is cached - skipping run, checking out outputs" in out, out
        assert f"Running stage '{stage}'" not in out
    assert (other / "models" / "model.pt").read_bytes() == (clone / "models" / "model.pt").read_bytes()
    assert run(["git", "status", "--porcelain"], other) == ""

    # The params of the colleague's experiment: `dvc pull --run-cache`, then `dvc repro --pull`
    # finds the run in the run cache and pulls its outputs instead of training.
    run(["dvc", "pull", "--run-cache"], other)
    params["train"]["lr"] = 0.001
    write_params(other, params)
    out = run(["dvc", "repro", "--pull"], other)
    assert "Stage 'train' is cached - skipping run, checking out outputs" in out, out
    assert "Running stage 'train'" not in out
    assert (other / "metrics" / "train.json").read_bytes() == shared_metrics
