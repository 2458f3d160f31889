"""The GPU check's own logic, on a machine without a GPU (the measurements need one)."""

import importlib.util
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
