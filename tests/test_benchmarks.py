"""The GPU check's own logic, on a machine without a GPU (the measurements need one)."""

import importlib.util
import os
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).parents[1]


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("recipe", "telltale"), [("best", "train.ensemble=3"), ("transformer", "model.ngram_buckets=262144")]
)
def test_gpu_check_runs_the_recipes_the_docs_print(recipe, telltale):
    gpu_check = load("gpu_check")
    assert recipe in gpu_check.RECIPES
    settings = gpu_check.recipe_settings(recipe, ROOT / "recipes")
    assert telltale in settings and all("=" in s for s in settings)
    assert not any(s.startswith(("train.device=", "train.precision=")) for s in settings)  # the check sets those


def test_gpu_check_says_so_when_there_is_no_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr("sys.argv", ["gpu_check.py"])
    with pytest.raises(SystemExit, match="no CUDA device on this machine; nothing measured"):
        load("gpu_check").main()


def test_recipe_time_links_only_the_inputs_that_are_local_folders_here(tmp_path, monkeypatch):
    from scratchformer.config import from_dict

    recipe_time = load("recipe_time")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpora" / "reviews").mkdir(parents=True)
    local = from_dict({"data": {"source": "corpora/reviews"}, "tokenizer": {"name": "bert-base-chinese"}})
    assert recipe_time.local_inputs(local) == ["corpora/reviews"]  # the tokenizer id is no folder here
    elsewhere = from_dict({"data": {"source": str(tmp_path / "corpora" / "reviews")}})
    assert recipe_time.local_inputs(elsewhere) == []  # outside the repository: the clone reads it where it is


def test_recipe_time_against_a_commit_times_each_commits_own_recipe_and_gives_the_ratio(tmp_path, monkeypatch):
    """Two commits whose recipe differs; a stand-in `dvc` on PATH writes the metrics and takes longer per epoch."""
    import json
    import subprocess
    import sys

    recipe_time = load("recipe_time")
    fake = tmp_path / "bin" / "dvc"
    fake.parent.mkdir()
    fake.write_text(
        f"#!{sys.executable}\n"
        "import json, pathlib, sys, time\n"
        "epochs = int(next(a.split('=')[1] for a in sys.argv if a.startswith('train.epochs=')))\n"
        "time.sleep(0.3 * epochs)\n"
        "pathlib.Path('metrics').mkdir(exist_ok=True)\n"
        "score = {'accuracy': epochs / 10}\n"
        "pathlib.Path('metrics/eval.json').write_text(json.dumps({'validation': score, 'test': score}))\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    repo = tmp_path / "repo"
    (repo / "recipes").mkdir(parents=True)
    monkeypatch.chdir(repo)

    def commit(epochs: int) -> str:
        (repo / "recipes" / "fast.yaml").write_text(f"train.epochs: {epochs}\n")
        subprocess.run(["git", "add", "-A"], check=True)
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "r"], check=True)
        return subprocess.run(["git", "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()

    subprocess.run(["git", "init", "-q"], check=True)
    (repo / "params.yaml").write_text("{}\n")
    before, now = commit(4), commit(2)
    monkeypatch.setattr(recipe_time, "OUT", tmp_path / "out.json")
    monkeypatch.setattr("sys.argv", ["recipe_time.py", "--recipe", "fast", "--against", before])
    recipe_time.main()
    record = json.loads((tmp_path / "out.json").read_text())
    assert (record["commit"], record["settings"]) == (now, ["train.epochs=2"])
    assert (record["against"]["commit"], record["against"]["settings"]) == (before, ["train.epochs=4"])
    assert (record["validation_accuracy"], record["against"]["validation_accuracy"]) == (0.2, 0.4)
    assert record["ratio"] == round(record["seconds"] / record["against"]["seconds"], 3) < 0.8
