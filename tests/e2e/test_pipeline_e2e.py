"""The whole DVC pipeline on a fixture corpus, in a throw-away git repository."""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from fixtures import write_corpus, write_tokenizer

from scratchformer.analysis.predict import Predictor
from scratchformer.model.checkpoint import load_checkpoint
from scratchformer.model.classifier import Ensemble
from scratchformer.model.export import load_folder
from scratchformer.render.model_card import EXAMPLES
from scratchformer.reporting.experiments import experiments

ROOT = Path(__file__).parents[2]
pytestmark = pytest.mark.slow


def run(cmd: list[str], cwd: Path, **extra_env: str) -> str:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "DVC_NO_ANALYTICS": "1",
        "HF_HUB_OFFLINE": "1",
        **extra_env,
    }
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    assert result.returncode == 0, f"{' '.join(cmd)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout + result.stderr


def copy_project(repo: Path) -> dict:
    """This project's code and pipeline copied into ``repo``, with the fixture tokenizer; return its params."""
    for item in ("dvc.yaml", ".dvcignore", "stages", "src", "checks"):
        source = ROOT / item
        if source.is_dir():
            shutil.copytree(source, repo / item, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy(source, repo / item)
    write_tokenizer(repo / "vocab")
    return yaml.safe_load((ROOT / "params.yaml").read_text())


def commit_project(repo: Path, message: str) -> None:
    """``repo`` as a git + DVC repository with everything in it committed (dvclive wants a commit to start from)."""
    run(["git", "init", "-q", "-b", "main"], repo)
    run(["git", "config", "user.email", "test@example.com"], repo)
    run(["git", "config", "user.name", "test"], repo)
    run(["dvc", "init", "-q"], repo)
    (repo / ".dvc" / "plots").mkdir(exist_ok=True)
    for template in (ROOT / ".dvc" / "plots").glob("*.json"):  # the plot templates dvc.yaml names
        shutil.copy(template, repo / ".dvc" / "plots" / template.name)
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-qm", message], repo)


def make_project(repo: Path, n_layers: int = 2, **train) -> dict:
    """A git + DVC copy of this project on the fixture corpus, committed, not yet run; return its params."""
    params = copy_project(repo)
    write_corpus(repo / "corpus")
    params["data"]["source"] = "corpus"
    params["tokenizer"].update(name="vocab", max_len=32)  # == model.max_len, as in the defaults
    params["model"].update(d_model=32, n_heads=2, n_layers=n_layers, ff_dim=64, max_len=32)
    params["model"].update(ngram_max=1, wide_ngrams=0)  # tokens only, whole reviews: one epoch learns the fixture
    # One model, a dense table: the fixture runs test the pipeline, not the defaults' ensemble (tests/train do).
    params["train"].update(
        {"epochs": 1, "batch_size": 16, "spans": 0.0, "ensemble": 1, "sparse_ngrams": False, **train}
    )
    params["nb"]["ngrams"] = 0  # no n-gram member either: a change to training moves the model's answers
    params["probe"].update(text="服务很差，房间太脏。", query_token="差")
    params["acceptance"]["validation_accuracy"] = 0.5
    write_params(repo, params)
    # The corpus and tokenizer folders are committed, so queued experiments' copies and clones have them too.
    (repo / ".gitignore").write_text("/review\n")
    commit_project(repo, "fixture project")
    return params


def write_params(repo: Path, params: dict) -> None:
    (repo / "params.yaml").write_text(yaml.safe_dump(params, allow_unicode=True))


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("project")
    make_project(repo)
    run(["dvc", "repro"], repo)
    return repo


def test_repro_writes_every_output(repo):
    counts = {s: len(pd.read_parquet(repo / "data" / "raw" / f"{s}.parquet")) for s in ("train", "validation", "test")}
    assert counts == {"train": 240, "validation": 60, "test": 60}
    assert (repo / "models" / "model.pt").is_file()
    assert (repo / "data" / "tokenizer" / "tokenizer_config.json").is_file()
    for image in (
        "loss.png",
        "grad_norm.png",
        "diagnostics.png",
        "attention_heatmap.png",
        "attention_evolution.png",
        "attention_evolution_heads.png",
        "attention_evolution.gif",
    ):
        assert (repo / "plots" / "images" / image).stat().st_size > 1000, image
    train = json.loads((repo / "metrics" / "train.json").read_text())
    assert train["epochs"] == 1 and train["best_epoch"] == 1
    evaluation = json.loads((repo / "metrics" / "eval.json").read_text())
    assert set(evaluation) == {"validation", "test", "acceptance", "short"}
    checks = evaluation["acceptance"]
    assert checks["attention_max_abs_err"] < 1e-5 and checks["causal_mask_leak"] < 1e-6
    assert checks["padding_leak"] < 1e-5 and checks["padding_leak_checked"] >= 32
    assert checks["validation_accuracy"] == evaluation["validation"]["accuracy"]
    assert checks["passed"] == (checks["validation_accuracy"] >= 0.5)
    probe = json.loads((repo / "plots" / "probe" / "snapshots.json").read_text())
    assert [s["epoch"] for s in probe["snapshots"]] == [0, 1]
    assert probe["tokens"][probe["query_index"]] == "差"
    steps = pd.read_csv(repo / "dvclive" / "plots" / "metrics" / "step" / "grad_norm.tsv", sep="\t")
    assert len(steps) == 15  # 240 examples / batch 16
    confusion = json.loads((repo / "plots" / "confusion" / "test.json").read_text())
    assert confusion["classes"] == ["negative", "positive"]  # data.label_names
    assert sum(map(sum, confusion["counts"])) == 60  # counts, not one row per example
    assert set(confusion["per_class"]) == {"negative", "positive"}
    data = json.loads((repo / "metrics" / "data.json").read_text())["data"]
    assert data["rows"] == {"train": 240, "validation": 60, "test": 60} and data["split"] is None
    baselines = json.loads((repo / "metrics" / "baseline.json").read_text())
    for split in ("validation", "test"):  # the unseen part: the same mask as the leakage count
        assert evaluation[split]["unseen"]["n"] == 60 - data["leakage"][f"{split}_in_train"]
        assert baselines["nblr"][split]["unseen"]["n"] == evaluation[split]["unseen"]["n"]
        assert evaluation[split]["vs_best_baseline"]["name"] in baselines
    assert len(pd.read_parquet(repo / "data" / "baseline" / "test.parquet")) == 60
    short = len(pd.read_csv(ROOT / "checks" / "short_reviews.tsv", sep="\t", quoting=3))
    assert evaluation["short"]["n"] == short and all(b["short"]["n"] == short for b in baselines.values())
    report = (repo / "plots" / "errors" / "validation.md").read_text(encoding="utf-8")
    assert report.startswith("# Why is it wrong") and "of the 60 validation reviews wrong" in report
    assert "<!DOCTYPE html>" in (repo / "plots" / "errors" / "validation.html").read_text(encoding="utf-8")


def test_export_writes_a_folder_that_predicts_like_the_checkpoint(repo):
    folder = repo / "models" / "classifier"
    names = {p.name for p in folder.iterdir()}
    assert {"model.safetensors", "config.json", "README.md", "tokenizer.json", "tokenizer_config.json"} <= names
    texts = ["服务很差，房间太脏。", "房间很好，服务不错。"]
    from_folder = Predictor.from_pretrained(folder).predict(texts)
    from_checkpoint = Predictor(repo / "models" / "model.pt", repo / "data" / "tokenizer").predict(texts)
    assert from_folder == from_checkpoint
    evaluation = json.loads((repo / "metrics" / "eval.json").read_text())
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert f"| validation | {evaluation['validation']['accuracy']:.4f} |" in card
    assert f"| test | {evaluation['test']['accuracy']:.4f} |" in card and "| train rows | 240 |" in card
    for answer in Predictor.from_pretrained(folder).predict(list(EXAMPLES), 0):
        assert f"| {answer.text} | {answer.label} ({answer.probability:.3f}) |" in card  # predicted, as it is


def test_the_model_folder_predicts_named_classes_from_outside_the_repository(repo, tmp_path):
    """What a user elsewhere does: the package's Predictor, the folder's own files, nothing of the project."""
    code = (
        "import json, sys\n"
        "from scratchformer import Predictor\n"
        "answers = Predictor.from_pretrained(sys.argv[1])(['服务很差，房间太脏。', '房间很好，服务不错。'])\n"
        "print(json.dumps([[a.label, a.probabilities] for a in answers]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the installed package, not src/
    done = subprocess.run(
        [sys.executable, "-c", code, str(repo / "models" / "classifier")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    answers = json.loads(done.stdout)
    assert [label for label, _ in answers] == ["negative", "positive"]  # the fixture model learnt them
    assert all(set(probs) == {"negative", "positive"} and abs(sum(probs.values()) - 1) < 1e-5 for _, probs in answers)


def test_metrics_and_plots_commands_work(repo):
    shown = json.loads(run(["dvc", "metrics", "show", "--json"], repo))[""]["data"]
    written = json.loads((repo / "metrics" / "eval.json").read_text())
    assert shown["metrics/eval.json"]["data"] == written  # what dvc reads is what evaluate wrote
    assert 0 <= shown["metrics/eval.json"]["data"]["acceptance"]["attention_max_abs_err"] < 1e-5
    assert shown["metrics/train.json"]["data"]["epochs"] == 1
    plots = json.loads(run(["dvc", "plots", "show", "--json"], repo))["data"]
    epochs = plots["Accuracy per epoch"][0]["content"]["data"]["values"]
    files = {(row["filename"], row["field"]) for row in epochs}  # the epochs template's fields
    assert files == {("val_accuracy.tsv", "val_accuracy"), ("train_accuracy.tsv", "train_accuracy")}
    val = [float(row["val_accuracy"]) for row in epochs if "val_accuracy" in row]
    assert val == [json.loads((repo / "metrics" / "train.json").read_text())["best_val_accuracy"]]
    steps = plots["Training loss per step"][0]["content"]["data"]["values"]
    assert len(steps) == len((repo / "dvclive/plots/metrics/step/loss.tsv").read_text().splitlines()) - 1
    for image in ("loss", "grad_norm", "attention_evolution", "confusion_validation"):
        assert plots[f"plots/images/{image}.png"][0]["type"] == "image"


def test_second_repro_is_a_no_op(repo):
    out = run(["dvc", "repro"], repo)
    # Only the input fingerprints are taken again (always_changed); they match, so nothing else runs.
    assert [line for line in out.splitlines() if "Running stage" in line] == ["Running stage 'inputs':"]


def test_same_params_give_identical_results(repo):
    def results():
        curves = {p: p.read_bytes() for p in sorted((repo / "dvclive").rglob("*.tsv"))}
        files = ("models/model.pt", "metrics/train.json", "metrics/eval.json", "plots/probe/snapshots.json")
        return curves, {f: (repo / f).read_bytes() for f in files}

    before = results()
    out = run(["dvc", "repro", "--force", "--downstream", "train"], repo)
    assert "Running stage 'train'" in out and "Running stage 'evaluate'" in out
    assert results() == before


def test_a_forced_rerun_changes_no_tracked_byte(repo):
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-qm", "results"], repo)
    out = run(["dvc", "repro", "--force"], repo)
    assert "Running stage 'train'" in out and "Running stage 'visualize'" in out
    assert run(["git", "status", "--porcelain"], repo) == ""  # dvc.lock, metrics, curves, pictures


def test_a_failed_math_check_fails_evaluate_after_writing_metrics(repo, tmp_path):
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["acceptance"]["attention_max_abs_err"] = 1e-12  # below float32 rounding: must fail
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, allow_unicode=True))
    cmd = [sys.executable, "-m", "stages.evaluate", "--params", str(tmp_path / "params.yaml")]
    cmd += ["--model", "models/model.pt", "--tokenized", "data/tokenized", "--tokenizer", "data/tokenizer"]
    cmd += ["--raw", "data/raw"]
    cmd += ["--baseline", "data/baseline"]
    cmd += ["--metrics", str(tmp_path / "eval.json"), "--confusion", str(tmp_path / "confusion")]
    result = subprocess.run(cmd, cwd=repo, capture_output=True, text=True)
    assert result.returncode != 0
    assert "acceptance check attention_max_abs_err failed" in result.stderr
    assert "threshold 1e-12" in result.stderr
    written = json.loads((tmp_path / "eval.json").read_text())["acceptance"]
    assert written["passed"] is False and written["attention_max_abs_err"] > 1e-12


def test_a_diverging_run_fails_train_and_writes_no_model(repo, tmp_path):
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["train"].update(lr=1e30, grad_clip=0.0)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, allow_unicode=True))
    cmd = [sys.executable, "-m", "stages.train", "--params", str(tmp_path / "params.yaml")]
    cmd += ["--tokenized", "data/tokenized", "--tokenizer", "data/tokenizer", "--pretrained", "models/pretrained.pt"]
    outputs = (("--model", "m.pt"), ("--live", "live"), ("--snapshots", "s.json"), ("--metrics", "t.json"))
    for flag, name in (*outputs, ("--state", "state.pt")):
        cmd += [flag, str(tmp_path / name)]
    result = subprocess.run(cmd, cwd=repo, capture_output=True, text=True)
    assert result.returncode != 0
    assert "error: training diverged in member 0, epoch 1" in result.stderr  # one line, as every user error
    assert not (tmp_path / "m.pt").exists() and not (tmp_path / "t.json").exists()
    assert not (tmp_path / "state.pt").exists()  # it failed inside the first epoch: nothing to resume


def test_model_experiment_skips_download_and_tokenize(repo):
    out = run(["dvc", "exp", "run", "-S", "model.n_layers=1", "-S", "train.ensemble=2"], repo)
    assert "Running stage 'train'" in out
    assert "Running stage 'download'" not in out and "Running stage 'tokenize'" not in out
    assert "Running stage 'evaluate'" in out and "Running stage 'visualize'" in out
    assert "Running stage 'export'" in out
    shown = run(["dvc", "exp", "show", "--json"], repo)
    assert "n_layers" in shown
    # The ensemble: two members in the checkpoint, each member's own accuracy in the metrics.
    model, _ = load_checkpoint(repo / "models" / "model.pt")
    assert isinstance(model, Ensemble) and len(model.members) == 2 and model.config.n_layers == 1
    exported, _ = load_folder(repo / "models" / "classifier")  # export ran again on the new model
    assert isinstance(exported, Ensemble) and len(exported.members) == 2 and exported.config.n_layers == 1
    train = json.loads((repo / "metrics" / "train.json").read_text())
    assert train["ensemble"] == 2 and set(train["member_val_accuracy"]) == {"0", "1"}
    assert (repo / "dvclive" / "plots" / "metrics" / "member1" / "epoch" / "val_accuracy.tsv").is_file()


def wait_for_queue(repo: Path) -> str:
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        status = run(["dvc", "queue", "status"], repo)
        if "Queued" not in status and "Running" not in status:
            break
        time.sleep(2)
    return status


def test_queued_sweep_runs_every_experiment(repo):
    run(["dvc", "exp", "run", "--queue", "-S", "model.n_heads=1,4"], repo)
    run(["dvc", "queue", "start", "-j", "1"], repo)
    status = wait_for_queue(repo)
    assert "Failed" not in status, status
    assert status.count("Success") >= 2, status
    records = experiments(json.loads(run(["dvc", "exp", "show", "--json"], repo)))
    heads = {r.get("model.n_heads") for r in records if r.get("eval:test.accuracy") is not None}
    assert {1, 4} <= heads


def test_a_queued_experiment_runs_the_code_of_its_own_commit(repo):
    model_py = repo / "src" / "scratchformer" / "model" / "classifier.py"
    original = model_py.read_text()
    run(["dvc", "exp", "run", "--queue", "-n", "own-code", "-S", "train.batch_size=8"], repo)
    model_py.write_text(original + "\nraise ImportError('the workspace copy is broken')\n")
    try:
        # Point imports at the workspace's src/, as an editable install of it would.
        run(["dvc", "queue", "start", "-j", "1"], repo, PYTHONPATH=str(repo / "src"))
        status = wait_for_queue(repo)
    finally:
        model_py.write_text(original)
    assert "own-code" in status and "Failed" not in status, status
