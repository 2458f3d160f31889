"""`dvc repro` offline with a hub id that is neither a local folder nor cached: one line, and
no tracked file deleted or changed (the fingerprints, metrics/data.json, dvc.lock)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_pipeline_e2e import make_project, run, write_params

pytestmark = pytest.mark.slow


def git_status(repo: Path) -> str:
    return subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout


@pytest.mark.parametrize(
    ("section", "key", "hub_id"),
    [("data", "source", "lansinuote/ChnSentiCorp"), ("tokenizer", "name", "bert-base-chinese")],
)
def test_offline_without_the_input_fails_in_one_line_and_changes_no_tracked_file(tmp_path, section, key, hub_id):
    repo = tmp_path / "project"
    repo.mkdir()
    params = make_project(repo)
    run(["dvc", "repro", "download"], repo)  # inputs and download, on the local fixture folders
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-qm", "first run"], repo)
    tracked = {p: (repo / p).read_bytes() for p in ("data/inputs/corpus.json", "metrics/data.json", "dvc.lock")}

    params[section][key] = hub_id  # the default: the hub id, with no folder of that name here
    write_params(repo, params)
    run(["git", "commit", "-qam", "the hub id"], repo)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "DVC_NO_ANALYTICS": "1",
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(tmp_path / "empty-hf-cache"),
    }
    env.pop("HF_HUB_CACHE", None)
    env.pop("HF_DATASETS_CACHE", None)
    failed = subprocess.run(["dvc", "repro"], cwd=repo, env=env, capture_output=True, text=True)
    assert failed.returncode != 0
    output = failed.stdout + failed.stderr
    assert "Traceback" not in output, output
    (line,) = [x for x in output.splitlines() if x.startswith("error: ")]
    assert line.startswith(f"error: {section}.{key}: {hub_id!r} is neither a local folder nor in the local cache")
    assert f"folder named {hub_id}" in line
    assert git_status(repo) == "", git_status(repo)  # nothing deleted, nothing changed
    assert {p: (repo / p).read_bytes() for p in tracked} == tracked
    assert yaml.safe_load((repo / "dvc.lock").read_text())["stages"]["inputs"]
