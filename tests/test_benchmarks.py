"""The benchmarks' own logic: the GPU check on a machine without a GPU, the peer comparison in its tiny mode."""

import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).parents[1]


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("recipe", "telltale"), [("best", "train.ensemble=3"), ("transformer", "model.ngram_buckets=1048576")]
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


def fake_dvc(tmp_path: Path, monkeypatch, body: str) -> Path:
    """A stand-in `dvc` on PATH: a Python script running ``body``; returns its folder."""
    fake = tmp_path / "bin" / "dvc"
    fake.parent.mkdir()
    fake.write_text(f"#!{sys.executable}\nimport json, pathlib, subprocess, sys, time\n{body}")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    return fake.parent


def committed_repo() -> None:
    """The working folder as a git repository with everything in it committed: what the benchmarks clone."""
    subprocess.run(["git", "init", "-q"], check=True)
    subprocess.run(["git", "add", "-A"], check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "r"], check=True)


def test_recipe_time_links_only_the_inputs_that_are_local_folders_here(tmp_path, monkeypatch):
    from scratchformer.config import from_dict

    recipe_time = load("recipe_time")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpora" / "reviews").mkdir(parents=True)
    local = from_dict({"data": {"source": "corpora/reviews"}, "tokenizer": {"name": "bert-base-chinese"}})
    assert recipe_time.local_inputs(local) == ["corpora/reviews"]  # the tokenizer id is no folder here
    elsewhere = from_dict({"data": {"source": str(tmp_path / "corpora" / "reviews")}})
    assert recipe_time.local_inputs(elsewhere) == []  # outside the repository: the clone reads it where it is
    (tmp_path / "more").mkdir()
    corpora = ["more", "a/hub-id", "corpora/reviews"]  # the scored corpus listed too: linked once
    pretraining = from_dict({"data": {"source": "corpora/reviews"}, "pretrain": {"corpora": corpora}})
    assert recipe_time.local_inputs(pretraining) == ["corpora/reviews", "more"]  # the clone reads it too


def test_recipe_time_names_a_run_on_another_corpus_apart_from_the_same_run_on_the_default_one():
    recipe_time = load("recipe_time")
    commit = "904aaff86cb3319fb77256a9321fee88410b04f8"
    assert recipe_time.experiment_name("transformer", commit, 42) == "transformer-904aaff-s42"
    on_products = recipe_time.experiment_name("transformer", commit, 42, "online-shopping")
    assert on_products == "products-transformer-904aaff-s42"
    assert recipe_time.experiment_name("transformer", commit, 42, "reviews") == "reviews-transformer-904aaff-s42"


def test_recipe_time_against_a_commit_times_each_commits_own_recipe_and_gives_the_ratio(tmp_path, monkeypatch):
    """Two commits whose recipe differs; a stand-in `dvc` on PATH writes the metrics and takes longer per epoch."""
    import json
    import subprocess

    recipe_time = load("recipe_time")
    fake_dvc(
        tmp_path,
        monkeypatch,
        "epochs = int(next(a.split('=')[1] for a in sys.argv if a.startswith('train.epochs=')))\n"
        "time.sleep(0.3 * epochs)\n"
        "seed = next(a.split('=')[1] for a in sys.argv if a.startswith('seed='))\n"
        "pathlib.Path('seed').write_text(seed)\n"
        "name = sys.argv[sys.argv.index('-n') + 1]\n"  # an experiment ref, and DVC's own run state beside it
        "subprocess.run(['git', 'update-ref', f'refs/exps/ab/cdef/{name}', 'HEAD'], check=True)\n"
        "subprocess.run(['git', 'update-ref', 'refs/exps/exec/EXEC_HEAD', 'HEAD'], check=True)\n"
        "pathlib.Path('metrics').mkdir(exist_ok=True)\n"
        "score = {'accuracy': epochs / 10}\n"
        "pathlib.Path('metrics/eval.json').write_text(json.dumps({'validation': score, 'test': score}))\n",
    )
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

    def answers(clone, env):  # REV's clone (4 epochs) misses reviews 1 and 2; HEAD's misses 20 on seed 52
        epochs = json.loads((clone / "metrics" / "eval.json").read_text())["validation"]["accuracy"] * 10
        seed = int(clone.joinpath("seed").read_text())
        right = np.ones(40, dtype=bool)
        right[[1, 2] if epochs == 4 else [20] if seed == 52 else []] = False
        return {"right": right, "seen": np.arange(40) < 10}  # reviews 0 to 9 also occur in train

    monkeypatch.setattr(recipe_time, "validation_answers", answers)
    real_time_recipe = recipe_time.time_recipe
    argv = ["recipe_time.py", "--recipe", "fast", "--seeds", "42", "52", "--against", before, "--keep"]
    monkeypatch.setattr("sys.argv", argv)
    recipe_time.main()
    record = json.loads((tmp_path / "out.json").read_text())
    assert (record["commit"], record["settings"], record["seeds"]) == (now, ["train.epochs=2"], [42, 52])
    assert (record["against"]["commit"], record["against"]["settings"]) == (before, ["train.epochs=4"])
    assert (record["validation_accuracy"], record["against"]["validation_accuracy"]) == (0.2, 0.4)
    assert record["seconds"] == statistics.median(r["seconds"] for r in record["runs"])
    assert [r["validation_right"] for r in record["against"]["runs"]] == ["1" + "00" + "1" * 37] * 2  # missed 1 and 2
    assert record["ratio"] == round(record["seconds"] / record["against"]["seconds"], 3) < 0.8
    # Reviews 0 to 9 are seen: REV's misses are not scored; HEAD misses one of 30 unseen reviews on one seed of two.
    assert record["against"]["validation_unseen_accuracy"] == 1.0
    assert record["validation_unseen_accuracy"] == pytest.approx(1 - 1 / 60)
    compared = record["unseen_validation"]
    assert (compared["n"], compared["delta"], compared["verdict"]) == (30, pytest.approx(-1 / 60), "level")
    assert compared["ci95"]["lo"] < 0 == compared["ci95"]["hi"]  # review 20 is left out of some resamples
    refs = subprocess.run(["git", "for-each-ref", "--format=%(refname)"], check=True, capture_output=True, text=True)
    kept = [r for r in refs.stdout.split() if r.startswith("refs/exps/")]
    names = sorted(f"refs/exps/ab/cdef/fast-{commit[:7]}-s{seed}" for commit in (before, now) for seed in (42, 52))
    assert kept == names  # --keep: each commit's runs under names of their own, not DVC's state

    # Again with REV's runs taken from that record: REV is not run, the comparison is the same.
    first = tmp_path / "first.json"
    first.write_text((tmp_path / "out.json").read_text())
    monkeypatch.setattr("sys.argv", ["recipe_time.py", "--recipe", "fast", "--seeds", "42", "52"])
    monkeypatch.setattr("sys.argv", [*sys.argv, "--against-record", str(first)])
    ran = []

    def time_and_commit(rev, *a):  # a commit made while the first seed runs must not reach the second
        ran.append(rev)
        return real_time_recipe(rev, *a), len(ran) == 1 and commit(3)

    monkeypatch.setattr(recipe_time, "time_recipe", lambda rev, *a: time_and_commit(rev, *a)[0])
    recipe_time.main()
    again = json.loads((tmp_path / "out.json").read_text())
    assert ran == [now, now] and [r["commit"] for r in again["runs"]] == [now, now]
    assert again["against"]["runs"] == record["against"]["runs"]
    assert again["unseen_validation"] == compared and again["against_record"] == str(first)
    monkeypatch.setattr("sys.argv", [*sys.argv[:4], "62", *sys.argv[4:]])
    with pytest.raises(SystemExit, match="no earlier run of seed 62"):
        recipe_time.main()


def test_recipe_time_on_a_corpus_adds_its_data_keys_and_writes_a_record_of_its_own(tmp_path, monkeypatch):
    bin_dir = fake_dvc(
        tmp_path,
        monkeypatch,
        "(pathlib.Path(sys.argv[0]).parent / 'argv.txt').write_text(' '.join(sys.argv[1:]))\n"
        "pathlib.Path('metrics').mkdir(exist_ok=True)\n"
        "score = {'accuracy': 1}\n"
        "pathlib.Path('metrics/eval.json').write_text(json.dumps({'validation': score, 'test': score}))\n",
    )
    repo = tmp_path / "repo"
    (repo / "recipes" / "corpora").mkdir(parents=True)
    (repo / "recipes" / "fast.yaml").write_text("train.epochs: 2\n")
    (repo / "recipes" / "corpora" / "shop.yaml").write_text("data.drop_empty: true\n")
    (repo / "params.yaml").write_text("{}\n")
    monkeypatch.chdir(repo)
    committed_repo()
    recipe_time = load("recipe_time")
    right = {"right": np.ones(4, dtype=bool), "seen": np.zeros(4, dtype=bool)}
    monkeypatch.setattr(recipe_time, "validation_answers", lambda clone, env: right)
    monkeypatch.setattr(recipe_time, "OUT", tmp_path / "recipe_time.json")
    monkeypatch.setattr("sys.argv", ["recipe_time.py", "--recipe", "fast", "--corpus", "shop"])
    recipe_time.main()
    argv = (bin_dir / "argv.txt").read_text()
    assert argv.endswith("-S train.epochs=2 -S data.drop_empty=true -S seed=42")  # the recipe, then the corpus
    record = json.loads((tmp_path / "recipe_time-shop.json").read_text())
    assert record["corpus"] == "shop" and not (tmp_path / "recipe_time.json").exists()


def test_lever_runs_control_and_lever_per_seed_in_one_clone_and_pairs_their_unseen_answers(tmp_path, monkeypatch):
    """A stand-in `dvc` records each run's settings; the lever misses two unseen reviews on every seed."""
    bin_dir = fake_dvc(
        tmp_path,
        monkeypatch,
        "settings = [a for a in sys.argv if '=' in a]\n"
        "pathlib.Path('metrics').mkdir(exist_ok=True)\n"
        "score = {'accuracy': 0.8 if 'data.label_issues=drop' in settings else 0.9}\n"
        "seed = int(next(a.split('=')[1] for a in settings if a.startswith('seed=')))\n"
        "test = {**score, 'unseen': {'accuracy': seed / 100}, 'vs_best_baseline': {'name': 'svm', 'delta': 0.01}}\n"
        "short = {'accuracy': 0.5 if seed == 42 else 1.0}\n"
        "scores = {'validation': score, 'test': test, 'short': short}\n"
        "pathlib.Path('metrics/eval.json').write_text(json.dumps(scores))\n"
        "with open(pathlib.Path(sys.argv[0]).parent / 'runs.txt', 'a') as f:\n"
        "    f.write(' '.join(sys.argv[3:]) + '\\n')\n",
    )
    repo = tmp_path / "repo"
    repo.mkdir()
    monkeypatch.chdir(repo)
    (repo / "params.yaml").write_text("{}\n")
    committed_repo()
    lever = load("lever")
    (repo / "shop").mkdir()
    assert lever.inputs_for(["data.source=shop", "data.drop_empty=true"]) == ["shop"]  # a --base corpus is linked
    assert lever.inputs_for(["train.epochs=1"]) == []  # params.yaml's hub ids are no folders here

    def answers(clone, env):
        dropped = json.loads((clone / "metrics" / "eval.json").read_text())["validation"]["accuracy"] == 0.8
        right = np.ones(40, dtype=bool)
        right[[15, 25] if dropped else []] = False
        # Dropping train reviews makes review 9 unseen for the lever alone: compared only where both are unseen.
        return {"right": right, "seen": np.arange(40) < (9 if dropped else 10)}

    monkeypatch.setattr(lever.recipe_time, "validation_answers", answers)
    monkeypatch.setattr(lever, "OUT", tmp_path / "out")
    result = lever.main(["--set", "data.label_issues=drop", "--base", "train.epochs=1", "--seeds", "42", "43"])
    assert (tmp_path / "out" / "data-label-issues-drop.json").is_file()
    assert (bin_dir / "runs.txt").read_text().splitlines() == [
        "-n data-label-issues-drop-control-s42 -S train.epochs=1 -S seed=42",
        "-n data-label-issues-drop-s42 -S train.epochs=1 -S data.label_issues=drop -S seed=42",
        "-n data-label-issues-drop-control-s43 -S train.epochs=1 -S seed=43",
        "-n data-label-issues-drop-s43 -S train.epochs=1 -S data.label_issues=drop -S seed=43",
    ]
    assert result["control"]["validation_unseen_accuracy"] == 1.0
    # The unseen test and short-review scores, where the run's code writes them, are kept per run and averaged.
    assert [r["test_vs_best_baseline"]["name"] for r in result["control"]["runs"]] == ["svm", "svm"]
    assert result["control"]["test_unseen_accuracy"] == pytest.approx(0.425)  # seeds 42 and 43
    assert result["lever_runs"]["short_accuracy"] == pytest.approx(0.75)
    assert result["lever_runs"]["validation_unseen_accuracy"] == pytest.approx(29 / 31)  # its own unseen part
    compared = result["unseen_validation"]
    assert (compared["n"], compared["delta"]) == (30, pytest.approx(-2 / 30))  # the lever minus the control
    assert compared["ci95"]["hi"] <= 0

    # A lever stacked on that one: its control is the lever side above, taken from the record, not run again.
    (bin_dir / "runs.txt").unlink()
    first = tmp_path / "out" / "data-label-issues-drop.json"
    base = ["--base", "train.epochs=1", "data.label_issues=drop", "--seeds", "42", "43"]
    stacked = lever.main(["--set", "train.spans=0.3", *base, "--control-record", str(first)])
    assert (bin_dir / "runs.txt").read_text().splitlines() == [
        "-n train-spans-0-3-s42 -S train.epochs=1 -S data.label_issues=drop -S train.spans=0.3 -S seed=42",
        "-n train-spans-0-3-s43 -S train.epochs=1 -S data.label_issues=drop -S train.spans=0.3 -S seed=43",
    ]
    assert stacked["control"]["runs"] == result["lever_runs"]["runs"]
    assert stacked["unseen_validation"]["delta"] == pytest.approx(0.0)  # both sides miss 15 and 25
    # The same values, a key restated and overridden: dvc applies -S in order, so this is that side too.
    (bin_dir / "runs.txt").unlink()
    restated = ["--base", "data.label_issues=drop", "train.epochs=2", "train.epochs=1", "--seeds", "42"]
    again = lever.main(["--set", "train.spans=0.3", *restated, "--control-record", str(first)])
    assert len((bin_dir / "runs.txt").read_text().splitlines()) == 1  # the lever side alone
    assert again["control"]["runs"] == result["lever_runs"]["runs"][:1]
    with pytest.raises(SystemExit, match="seed 42 ran with"):  # a record neither of whose sides had these settings
        lever.main(["--set", "train.spans=0.3", "--base", "train.epochs=2", "--control-record", str(first)])

    # Another lever against the first one's control: that control side is reused.
    (bin_dir / "runs.txt").unlink()
    beside = lever.main(
        ["--set", "train.spans=0.3", "--base", "train.epochs=1", "--seeds", "42", "--control-record", str(first)]
    )
    assert (bin_dir / "runs.txt").read_text().splitlines() == [
        "-n train-spans-0-3-s42 -S train.epochs=1 -S train.spans=0.3 -S seed=42",
    ]
    assert beside["control"]["runs"] == result["control"]["runs"][:1]


def test_a_recorded_control_is_refused_when_a_default_changed_since_its_runs():
    """A control run reused from a record ran on that commit's params.yaml: a default changed since, that --base
    does not set, makes it another configuration than a control run now (nb.ngrams 0 -> 3 added a member)."""
    lever = load("lever")
    then = {"seed": 42, "nb": {"ngrams": 0, "c": 1.0}, "train": {"epochs": 4}}
    now = {"seed": 42, "nb": {"ngrams": 3, "c": 1.0}, "train": {"epochs": 5}}
    assert lever.params_drift(then, now, ["train.epochs=5"]) == ["nb.ngrams: 0 then, 3 now"]
    assert lever.params_drift(then, now, ["train.epochs=5", "nb.ngrams=0"]) == []  # both sides set by --base
    assert lever.params_drift(then, {**then, "seed": 52}, []) == []  # each run sets its own seed


def test_recorded_control_refuses_a_record_whose_params_have_drifted_and_names_the_key(tmp_path, monkeypatch):
    lever = load("lever")
    record = tmp_path / "record.json"
    run = {"seed": 42, "settings": ["train.epochs=5", "seed=42"]}
    record.write_text(json.dumps({"commit": "0ld0c0mm1t", "control": {"runs": [run]}, "lever_runs": {"runs": []}}))
    held = {"0ld0c0mm1t": {"nb": {"ngrams": 0}}, "HEAD": {"nb": {"ngrams": 3}}}
    monkeypatch.setattr(lever, "committed_params", held.__getitem__)
    with pytest.raises(
        SystemExit,
        match=r"record.json: params.yaml changed since its runs \(commit 0ld0c0m\).*"
        r"nb.ngrams: 0 then, 3 now",
    ):
        lever.recorded_control(record, ["train.epochs=5"], [42])


def test_added_off_lets_a_key_added_since_pass_and_refuses_one_the_record_already_had(tmp_path, monkeypatch):
    """A new option at its off value leaves the control as it was: --added-off names it. A key that
    params.yaml held then changed, and no flag turns that into an addition."""
    lever = load("lever")
    record = tmp_path / "record.json"
    run = {"seed": 42, "settings": ["train.epochs=5", "nb.ngrams=0", "seed=42"], "validation_right": "10"}
    record.write_text(json.dumps({"commit": "0ld0c0mm1t", "control": {"runs": [run]}, "lever_runs": {"runs": []}}))
    held = {"0ld0c0mm1t": {"nb": {"ngrams": 0}}, "HEAD": {"nb": {"ngrams": 3}, "train": {"adversarial": 0.0}}}
    monkeypatch.setattr(lever, "committed_params", held.__getitem__)
    monkeypatch.setattr(lever.recipe_time, "recorded_answers", lambda run: run["validation_right"])
    with pytest.raises(SystemExit, match=r"train.adversarial: None then, 0.0 now"):
        lever.recorded_control(record, ["train.epochs=5", "nb.ngrams=0"], [42])
    runs, answers = lever.recorded_control(record, ["train.epochs=5", "nb.ngrams=0"], [42], ["train.adversarial"])
    assert runs == [run] and answers == ["10"]
    with pytest.raises(SystemExit, match=r"--added-off is for keys added since.*held nb.ngrams then"):
        lever.recorded_control(record, ["train.epochs=5"], [42], ["nb.ngrams", "train.adversarial"])


def test_added_off_is_measured_by_running_the_first_control_seed_again(monkeypatch):
    """--added-off's claim is checked: one reused control run, run again now, must answer every validation
    review as recorded, or nothing else runs."""
    lever = load("lever")
    control = {"seed": 42, "validation_right": "1101"}
    now = {"validation_right": "1101", "seconds": 12.0}
    ran = []

    def run_side(clone, env, name, settings):
        ran.append((name, settings))
        return dict(now), {}

    monkeypatch.setattr(lever, "run_side", run_side)
    again = lever.rechecked(Path("clone"), {}, "lever", ["train.epochs=5"], control)
    assert again == {"seed": 42, "seconds": 12.0, "validation_right": "as recorded"}
    assert ran == [("lever-control-again-s42", ["train.epochs=5", "seed=42"])]
    now["validation_right"] = "1001"
    with pytest.raises(SystemExit, match=r"seed 42, run again at this commit, answers 1 of 4 validation reviews"):
        lever.rechecked(Path("clone"), {}, "lever", ["train.epochs=5"], control)
    now["validation_right"] = "11011"  # another split: a review the record's run never answered
    with pytest.raises(SystemExit, match=r"answers 1 of 4 validation reviews otherwise"):
        lever.rechecked(Path("clone"), {}, "lever", ["train.epochs=5"], control)


def run_peers(tmp_path: Path, *flags: str) -> dict:
    """benchmarks/peers.py in its tiny mode on the fixture corpus and tokenizer; the record it wrote."""
    from fixtures import write_corpus, write_tokenizer

    out = tmp_path / "peers.json"
    argv = ["--tiny", "--recipes", "default", "--threads", str(torch.get_num_threads()), "--out", str(out)]
    argv += ["--source", str(write_corpus(tmp_path / "corpus")), "--tokenizer", str(write_tokenizer(tmp_path / "tok"))]
    load("peers").main([*argv, *flags])
    return json.loads(out.read_text(encoding="utf-8"))


def test_peers_tiny_mode_writes_rates_and_the_ratios_they_give(tmp_path):
    record = run_peers(tmp_path, "--modes", "eager")
    (entry,) = record["runs"]
    assert (entry["recipe"], entry["mode"]) == ("default", "eager")
    assert set(entry["models"]) == {"ours", "bert", "torch"}
    for what in ("train_samples_per_s", "predict_texts_per_s"):
        rates = {name: m[what] for name, m in entry["models"].items()}
        assert all(math.isfinite(r) and r > 0 for r in rates.values()), rates
        for peer in ("bert", "torch"):
            ratio = entry["ratios"][what][peer]
            assert math.isfinite(ratio) and ratio > 0
            assert ratio == pytest.approx(rates["ours"] / rates[peer], abs=1e-3), (what, peer)  # ours / peer
            lo, hi = entry["ratio_ranges"][what][peer]  # one pass in tiny mode: its ratio is the median's
            assert lo == hi == pytest.approx(ratio, rel=0.01)


def test_peers_compiles_each_compiled_mode_with_its_inductor_settings(tmp_path, monkeypatch):
    """``compiled`` keeps Inductor's defaults; ``compiled-aten-random`` draws every dropout with ATen's generator."""
    seen = []

    def compile_now(model):  # the identity, noting the setting in force when the model first runs
        def first_call(module, args):
            seen.append(torch._inductor.config.fallback_random)
            handle.remove()

        handle = model.register_forward_pre_hook(first_call)
        return model

    monkeypatch.setattr(torch, "compile", compile_now)
    record = run_peers(tmp_path, "--modes", "compiled", "compiled-aten-random")
    assert [entry["mode"] for entry in record["runs"]] == ["compiled", "compiled-aten-random"]
    assert seen == [False] * 3 + [True] * 3  # ours, bert, torch in each mode
    assert torch._inductor.config.fallback_random is False  # restored after the run


def test_peers_ratio_range_pairs_each_pass_of_ours_with_the_peers_pass_beside_it():
    peers = load("peers")
    seconds = {"ours": [1.0, 2.0, 4.0], "bert": [1.5, 2.0, 2.0], "torch": [1.0, 3.0, 8.0]}
    rates = {name: {"train_seconds": s, "predict_seconds": s} for name, s in seconds.items()}
    ranges = peers.ratio_ranges(rates)["train_samples_per_s"]
    # ours' rate over bert's is bert's seconds over ours: 1.5, 1.0, 0.5 pass by pass (unpaired: 0.375 to 2.0)
    assert ranges == {"bert": [0.5, 1.5], "torch": [1.0, 2.0]}
    rates["bert"] = {"error": "RuntimeError: no C++ compiler found"}  # a peer that never ran has no range
    assert peers.ratio_ranges(rates)["predict_texts_per_s"]["bert"] is None


def test_peers_reports_a_model_that_does_not_compile_instead_of_stopping(tmp_path, monkeypatch):
    class Uncompilable(torch.nn.Module):
        def forward(self, input_ids):
            raise RuntimeError("no C++ compiler found\n(the rest of the trace)")

    monkeypatch.setattr(torch, "compile", lambda model: Uncompilable())
    (entry,) = run_peers(tmp_path, "--modes", "compiled")["runs"]
    for model in entry["models"].values():
        assert model == {
            "train_samples_per_s": None,
            "predict_texts_per_s": None,
            "error": "RuntimeError: no C++ compiler found",
        }
    assert all(r is None for ratios in entry["ratios"].values() for r in ratios.values())


def test_a_recipe_applied_to_params_gives_the_sizes_its_file_sets_and_refuses_a_key_params_lack(tmp_path):
    from scratchformer.config import ConfigError, load_params
    from scratchformer.reporting import recipes

    params = load_params(ROOT / "params.yaml")
    assert recipes.applied(params, "default", ROOT / "recipes") is params
    recipe = recipes.applied(params, "transformer", ROOT / "recipes")
    assert (recipe.model.max_len, recipe.model.ngram_max, recipe.model.ngram_buckets) == (256, 3, 1048576)
    assert recipe.model.d_model == params.model.d_model and recipe.train.bucket_by_length
    (tmp_path / "typo.yaml").write_text("model.d_modle: 32\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"model\.d_modle"):
        recipes.applied(params, "typo", tmp_path)


def test_profile_epoch_splits_a_recipe_epoch_into_every_category(tmp_path):
    from fixtures import write_corpus, write_tokenizer

    profile_epoch = load("profile_epoch")
    out = tmp_path / "profile.json"
    argv = ["--recipes", "transformer", "--threads", str(torch.get_num_threads()), "--out", str(out)]
    argv += ["--source", str(write_corpus(tmp_path / "corpus")), "--tokenizer", str(write_tokenizer(tmp_path / "tok"))]
    profile_epoch.main(argv)
    (run,) = json.loads(out.read_text(encoding="utf-8"))["runs"]
    seconds = run["categories"]
    assert list(seconds) == list(profile_epoch.CATEGORIES)
    # The recipe has an n-gram table, token dropout and an EMA: every part of its step takes time.
    measured = ["embedding and n-gram lookup", "attention", "feed-forward", "backward into the embedding tables"]
    measured += ["rest of backward", "optimizer", "EMA", "validation"]
    assert all(seconds[name] > 0 for name in measured), seconds
    (draws,) = run["within"].values()  # the recipe's dropout draws its masks: inside the parts, not beside them
    assert 0 < draws < sum(seconds.values())
    assert set(run["before_training"]) == {"read and check the corpus", "tokenize"}
    assert run["steps"] == 8 and run["profiled_epoch_seconds"] > 0  # 240 fixture texts, batches of 32


@pytest.mark.parametrize("sparse", [False, True])
def test_peers_trains_ours_with_the_optimizers_training_gives_its_n_gram_table(sparse):
    import dataclasses

    from fixtures import tiny_config

    from scratchformer.config import TrainConfig
    from scratchformer.model.classifier import TransformerClassifier
    from scratchformer.train.lazy import LazyAdamW

    peers = load("peers")
    model = TransformerClassifier(tiny_config(ngram_max=3, ngram_buckets=64), vocab_size=50)
    train = dataclasses.replace(TrainConfig(), sparse_ngrams=sparse, ngram_decay=0.3, ema_decay=0.99)
    found = peers.optimizers(model, train)
    table = model.ngrams.table.weight
    assert [type(o) for o in found] == ([torch.optim.AdamW, LazyAdamW] if sparse else [torch.optim.AdamW])
    in_adamw = any(p is table for group in found[0].param_groups for p in group["params"])
    assert in_adamw is not sparse and model.ngrams.table.sparse is sparse  # the table in one optimizer only
    decays = {g["weight_decay"] for g in found[0].param_groups}
    assert train.weight_decay in decays  # the linear layers decay as in training


def test_compile_cost_rates_four_steps_and_names_the_operations_that_take_the_time(tmp_path, monkeypatch):
    """Tiny mode on the fixtures, ``torch.compile`` as the identity (compiling is what a full run measures)."""
    from fixtures import write_corpus, write_tokenizer

    monkeypatch.setattr(torch, "compile", lambda model: model)
    out = tmp_path / "cost.json"
    argv = ["--tiny", "--recipe", "default", "--threads", str(torch.get_num_threads()), "--out", str(out)]
    argv += ["--source", str(write_corpus(tmp_path / "corpus")), "--tokenizer", str(write_tokenizer(tmp_path / "tok"))]
    compile_cost = load("compile_cost")
    compile_cost.main(argv)
    record = json.loads(out.read_text(encoding="utf-8"))
    rates = record["train_samples_per_s"]
    assert set(rates) == {"attention dropout", "no attention dropout"}
    assert all(set(r) == {"eager", "compiled"} and min(r.values()) > 0 for r in rates.values())
    for variant, ratio in record["compiled_over_eager"].items():
        assert ratio == pytest.approx(rates[variant]["compiled"] / rates[variant]["eager"], abs=2e-3)
    for mode, ratio in record["attention_dropout_cost"].items():
        assert ratio == pytest.approx(rates["no attention dropout"][mode] / rates["attention dropout"][mode], abs=2e-3)
    for ops in record["heaviest"].values():
        assert ops and all(o["ms_per_step"] >= 0 and o["calls_per_step"] > 0 for o in ops)
        assert [o["share"] for o in ops] == sorted((o["share"] for o in ops), reverse=True)
    from fixtures import tiny_config

    from scratchformer.config import TrainConfig

    for on in (True, False):
        built = compile_cost.build(tiny_config(dropout=0.1), 30, 0, TrainConfig(), False, on)
        assert [b.attn.attn_dropout.p for b in built.model.blocks] == [0.1 if on else 0.0]
        assert built.model.dropout.p == 0.1  # only the attention's dropout is switched off


def test_the_benchmarks_command_line_overrides_the_recipe_they_time():
    from scratchformer.config import load_params

    peers = load("peers")
    args = peers.parse(["--source", "corpus", "--tokenizer", "vocab", "--batch-size", "8"])
    params = peers.recipe_params(load_params(ROOT / "params.yaml"), "transformer", args)
    assert (params.data.source, params.tokenizer.name, params.train.batch_size) == ("corpus", "vocab", 8)
    assert params.tokenizer.max_len == 256  # the recipe still applied (params.yaml: 128)
    assert peers.parse(["--tiny"]).steps == 2 and peers.parse([]).repeats == 5


def test_agreement_counts_who_reads_each_unseen_review_right():
    agreement = load("agreement")
    model = np.array([True, True, False, False, True, False])
    baseline = np.array([True, False, True, False, True, True])
    assert agreement.groups(model, baseline) == {
        "n": 6,
        "both_right": 2,
        "model_only": 1,
        "baseline_only": 2,
        "both_wrong": 1,
        "margin": -1,  # the model reads one review fewer
        "either_right": 5,
    }


def agreement_record(tmp_path: Path, corpus: Path) -> tuple:
    """A one-run lever record on ``corpus`` whose model is right exactly where SVM is wrong, but for the first
    validation review; with the params file, the run, the validation split, SVM's rights and the seen mask."""
    from scratchformer.analysis.baseline import BASELINES, fit_and_predict
    from scratchformer.config import from_dict
    from scratchformer.data.ingest import load_corpus

    params = tmp_path / "params.yaml"
    params.write_text("seed: 42\n", encoding="utf-8")
    local = from_dict({"data": {"source": str(corpus)}})
    train, validation = (s.table.to_pandas() for s in load_corpus(local.data, 42).splits[:2])
    svm = fit_and_predict(local.baseline, 42, train, {"v": validation}, BASELINES["svm"])["v"]
    svm_right = svm == validation["label"].to_numpy()
    model_right = ~svm_right  # right exactly where the baseline is wrong, and the other way round
    model_right[0] = svm_right[0]  # but for the first review, which both read alike
    seen = np.isin(validation["text"], train["text"])
    run = {
        "seed": 42,
        "name": "r-s42",
        "settings": [f"data.source={corpus}", "seed=42"],
        "validation_right": "".join("1" if r else "0" for r in model_right),
        "validation_seen": "".join("1" if s else "0" for s in seen),
        "test_vs_best_baseline": {"name": "svm"},
    }
    record = tmp_path / "r.json"
    record.write_text(json.dumps({"lever": "r", "lever_runs": {"runs": [run]}}), encoding="utf-8")
    return record, params, run, validation, svm_right, seen


def test_agreement_rebuilds_the_run_s_split_and_refits_its_baseline(tmp_path, monkeypatch):
    from fixtures import write_corpus

    agreement = load("agreement")
    record, params, run, validation, svm_right, seen = agreement_record(tmp_path, write_corpus(tmp_path / "corpus"))
    monkeypatch.setattr(agreement, "OUT", tmp_path / "out")
    result = agreement.main([str(record), "--params", str(params)])
    got = result["runs"][0]
    unseen = ~seen
    assert got["n"] == unseen.sum() and got["baseline"] == "svm"
    assert (
        got["model_only"] == (~svm_right & unseen)[1:].sum() and got["baseline_only"] == (svm_right & unseen)[1:].sum()
    )
    assert got["both_right"] + got["both_wrong"] == int(unseen[0])
    assert result["total"] == {k: v for k, v in got.items() if k not in ("seed", "name", "baseline")}
    assert (tmp_path / "out" / "r-lever.json").is_file()
    banded = agreement.main([str(record), "--params", str(params), "--bands", "10"])
    length = validation["text"].str.len().to_numpy()
    short, long = banded["bands"]
    assert (short["from"], short["to"], long["from"], long["to"]) == (0, 10, 10, None)
    assert short["n"] == (unseen & (length < 10)).sum() and long["n"] == (unseen & (length >= 10)).sum()
    assert short["n"] > 0 and long["n"] > 0  # the fixture has reviews on both sides of the edge
    for key in ("n", "model_only", "baseline_only", "both_right", "both_wrong"):
        assert short[key] + long[key] == banded["total"][key] == banded["runs"][0]["bands"][0][key] + long[key]
    run["validation_seen"] = "1" + run["validation_seen"][1:] if not seen[0] else "0" + run["validation_seen"][1:]
    record.write_text(json.dumps({"lever": "r", "lever_runs": {"runs": [run]}}), encoding="utf-8")
    with pytest.raises(SystemExit, match="unseen reviews differ"):  # another split, or the reviews in another order
        agreement.main([str(record), "--params", str(params)])


def test_agreement_counts_per_value_of_a_column_the_pipeline_does_not_read(tmp_path, monkeypatch):
    from fixtures import write_corpus

    from scratchformer.config import from_dict
    from scratchformer.data.splits import strip_edges

    agreement = load("agreement")
    corpus = write_corpus(tmp_path / "corpus")
    values: dict[str, set[str]] = {}  # each text's categories over every file: the expected lookup
    for path in sorted(corpus.glob("*.tsv")):
        header, *lines = path.read_text(encoding="utf-8").splitlines()
        cats = ["甲", "乙", "丙"]  # by row, so a text in two files may hold two
        rows = [f"{line}\t{cats[i % 3]}" for i, line in enumerate(lines)]
        path.write_text("\n".join([header + "\tcat", *rows]) + "\n", encoding="utf-8")
        for i, line in enumerate(lines):
            values.setdefault(strip_edges([line.split("\t", 1)[1]])[0].as_py(), set()).add(cats[i % 3])
    record, params, run, validation, svm_right, seen = agreement_record(tmp_path, corpus)
    monkeypatch.setattr(agreement, "OUT", tmp_path / "out")
    result = agreement.main([str(record), "--params", str(params), "--by", "cat"])
    expected = np.array([min(values[t]) if len(values[t]) == 1 else "(mixed)" for t in validation["text"]])
    model_right = np.array([c == "1" for c in run["validation_right"]])
    unseen = ~seen
    assert "(mixed)" in expected[unseen] and len(set(expected[unseen])) == 4  # the fixture holds every case
    got = {g["value"]: g for g in result["runs"][0]["by"]}
    assert sorted(got) == sorted(set(expected[unseen]))
    for value, counts in got.items():
        within = unseen & (expected == value)
        assert counts == {"value": value, **agreement.groups(model_right[within], svm_right[within])}
    assert result["by"] == {"column": "cat", "values": result["runs"][0]["by"]}  # one run: its counts are the total
    with pytest.raises(SystemExit, match=r"train\.tsv: no column 'shop' \(columns: label, text_a, cat\)"):
        agreement.main([str(record), "--params", str(params), "--by", "shop"])
    local = from_dict({"data": {"source": str(corpus)}}).data
    with pytest.raises(SystemExit, match=r"r-s42: 1 validation texts not in .*corpus, e\.g\. '不在文件里'"):
        agreement.column_values([validation["text"][0], "不在文件里"], local, "cat", "r-s42")


def test_transfer_scores_each_length_band_apart_and_pairs_the_model_with_tfidf_on_its_own_reviews():
    transfer = load("transfer")
    length = np.array([3, 10, 16, 17, 40, 60, 61, 200])
    right = {  # the model reads the short texts right and misses the long ones; TF-IDF LR the other way round
        "model": np.array([1, 1, 1, 1, 0, 1, 0, 0], dtype=bool),
        "TF-IDF LR": np.array([0, 1, 0, 1, 1, 1, 1, 1], dtype=bool),
    }
    bands = transfer.band_scores(length, right, [16, 60], seed=0)
    assert [b["chars"] for b in bands] == [[1, 16], [17, 60], [61, 200]]
    assert [b["n"] for b in bands] == [3, 3, 2]
    assert [b["accuracy"]["model"] for b in bands] == [1.0, 2 / 3, 0.0]
    assert [b["accuracy"]["TF-IDF LR"] for b in bands] == [1 / 3, 1.0, 1.0]
    assert [b["model_minus_tfidf"]["delta"] for b in bands] == pytest.approx([2 / 3, -1 / 3, -1.0])
    assert bands[2]["model_minus_tfidf"]["ci95"] == {"lo": -1.0, "hi": -1.0}  # both reviews, every resample


def test_learning_curve_runs_each_share_and_seed_and_averages_the_margin_over_its_seeds(tmp_path, monkeypatch):
    """A stand-in `dvc` trains on the share it is given: the margin grows with it, seed 43 a point higher."""
    bin_dir = fake_dvc(
        tmp_path,
        monkeypatch,
        "settings = dict(a.split('=', 1) for a in sys.argv if '=' in a)\n"
        "share, seed = float(settings['data.train_share']), int(settings['seed'])\n"
        "margin = share / 10 - 0.05 + (0.01 if seed == 43 else 0)\n"
        "ci = {'lo': margin - 0.02, 'hi': margin + 0.02}\n"
        "split = {'accuracy': 0.9, 'unseen': {'accuracy': 0.9 + margin}, 'vs_best_baseline': "
        "{'name': 'svm', 'delta': margin, 'ci95': ci}}\n"
        "pathlib.Path('metrics').mkdir(exist_ok=True)\n"
        "pathlib.Path('metrics/eval.json').write_text(json.dumps({'validation': split, 'test': split}))\n"
        "svm = {'validation': {'unseen': {'accuracy': 0.9}}, 'test': {'unseen': {'accuracy': 0.9}}}\n"
        "pathlib.Path('metrics/baseline.json').write_text(json.dumps({'svm': svm}))\n"
        "rows = {'data': {'rows': {'train': round(800 * share)}}}\n"
        "pathlib.Path('metrics/data.json').write_text(json.dumps(rows))\n"
        "with open(pathlib.Path(sys.argv[0]).parent / 'runs.txt', 'a') as f:\n"
        "    f.write(' '.join(sys.argv[3:]) + '\\n')\n",
    )
    repo = tmp_path / "repo"
    (repo / "recipes" / "corpora").mkdir(parents=True)
    monkeypatch.chdir(repo)
    (repo / "params.yaml").write_text("{}\n")
    (repo / "recipes" / "small.yaml").write_text("train.epochs: 1\n")
    (repo / "recipes" / "corpora" / "shop.yaml").write_text("data.drop_empty: true\n")
    committed_repo()
    curve = load("learning_curve")
    monkeypatch.setattr(
        curve.recipe_time,
        "validation_answers",
        lambda clone, env: {"right": np.ones(4, bool)} | {"seen": np.zeros(4, bool)},
    )
    monkeypatch.setattr(curve, "OUT", tmp_path / "out")
    flags = ["--recipe", "small", "--corpus", "shop", "--shares", "0.5", "1", "--seeds", "42", "43"]
    result = curve.main(flags)
    assert (tmp_path / "out" / "small-shop.json").is_file()
    assert (bin_dir / "runs.txt").read_text().splitlines() == [
        f"-n curve-small-shop-{p}-s{s} -S train.epochs=1 -S data.drop_empty=true -S data.train_share={x} -S seed={s}"
        for p, x in (("50", "0.5"), ("100", "1.0"))
        for s in (42, 43)
    ]
    half, whole = result["curve"]
    assert (half["share"], half["train_rows"], whole["train_rows"]) == (0.5, 400, 800)
    assert half["test_margin"] == pytest.approx(0.005) and whole["test_margin"] == pytest.approx(0.055)
    assert (half["test_margin_above"], whole["test_margin_above"]) == (0, 2)  # seed 42 at half: lo < 0
    assert half["validation_unseen"] == pytest.approx(0.905)
    assert result["points"][0]["baselines"] == {"svm": {"validation_unseen": 0.9, "test_unseen": 0.9}}
    (bin_dir / "runs.txt").unlink()  # a setting on top of the recipe's, in place of its own value
    flags = ["--recipe", "small", "--shares", "0.5", "--seeds", "42", "--set", "train.epochs=4", "--name", "four"]
    assert curve.main(flags)["set"] == ["train.epochs=4"]
    assert (tmp_path / "out" / "four.json").is_file()
    runs = (bin_dir / "runs.txt").read_text().splitlines()
    assert runs == ["-n curve-four-50-s42 -S train.epochs=4 -S data.train_share=0.5 -S seed=42"]


def test_unknown_tokens_counts_each_string_read_as_unk_and_the_reviews_holding_one(tmp_path):
    """An upper-case word the vocabulary has in lower case is [UNK] as configured, its row lowercased; a sign
    the vocabulary lacks is [UNK] either way; each is counted once per time it occurs, by its own text."""
    from fixtures import write_tokenizer

    from scratchformer.data.tokenization import load_tokenizer

    unknown_tokens = load("unknown_tokens")
    folder = write_tokenizer(tmp_path / "vocab")
    with (folder / "vocab.txt").open("a", encoding="utf-8") as vocab:
        vocab.write("mp3\n")
    texts = ["MP3很好☃", "房间很好", "MP3太差，MP3"]
    cased = unknown_tokens.unknowns(load_tokenizer(str(folder)), texts, top=5)
    assert cased["reviews_holding"] == 2 and cased["reviews_share"] == pytest.approx(2 / 3)
    assert cased["most_often"] == [("MP3", 3), ("☃", 1)]
    assert cased["token_share"] == pytest.approx(4 / 13)  # 4+4+5 tokens: MP3 很 好 ☃ | 房 间 很 好 | MP3 太 差 ， MP3
    lowered = unknown_tokens.unknowns(load_tokenizer(str(folder), lowercase=True), texts, top=5)
    assert lowered["reviews_holding"] == 1 and lowered["most_often"] == [("☃", 1)]
