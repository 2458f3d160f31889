"""Stage entry points: a user error is one line and exit status 2; --debug shows the traceback."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml
from fixtures import tiny_config, write_corpus, write_tokenizer

from scratchformer.config import ConfigError, ProbeConfig, from_dict
from scratchformer.data.labels import DataError
from scratchformer.data.tokenization import load_tokenizer, probe_ids
from scratchformer.model.checkpoint import CorruptFileError, load_pretrained, save_no_pretraining
from scratchformer.model.classifier import TransformerClassifier
from scratchformer.train.resume import load_state, save_state
from stages import run_stage
from stages.pretrain import texts_to_read

ROOT = Path(__file__).parents[2]


def download(tmp_path, params: dict, *extra: str, **env: str) -> subprocess.CompletedProcess:
    """``python -m stages.download`` on ``params`` (tmp_path/params.yaml), as dvc runs it."""
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, allow_unicode=True), encoding="utf-8")
    (tmp_path / "inputs.json").write_text(json.dumps({"source": "corpus"}), encoding="utf-8")
    args = ["--params", "params.yaml", "--inputs", "inputs.json", "--raw", "raw", "--metrics", "data.json"]
    args += ["--label-issues", "label_issues", *extra]
    environ = {k: v for k, v in os.environ.items() if k != "SCRATCHFORMER_DEBUG"}
    environ.update(PYTHONPATH=f"{ROOT}{os.pathsep}{ROOT / 'src'}", HF_HUB_OFFLINE="1", **env)
    return subprocess.run(
        [sys.executable, "-m", "stages.download", *args], cwd=tmp_path, env=environ, capture_output=True, text=True
    )


def test_a_user_error_is_one_line_and_status_2_and_debug_shows_the_traceback(tmp_path):
    write_corpus(tmp_path / "corpus")
    (tmp_path / "corpus" / "dev.tsv").write_text("label\ttext_a\n", encoding="utf-8")
    result = download(tmp_path, {"data": {"source": "corpus"}})
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("error: corpus/dev.tsv: a header line and no rows")
    assert "Traceback" not in result.stderr
    params = {"data": {"source": "corpus"}}
    for debug in (download(tmp_path, params, "--debug"), download(tmp_path, params, SCRATCHFORMER_DEBUG="1")):
        assert debug.returncode == 1 and "Traceback" in debug.stderr and "DataError" in debug.stderr


def test_a_params_error_names_the_file_and_key(tmp_path):
    result = download(tmp_path, {"seed": -1})
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: params.yaml: seed=-1 must be in 0..4294967294")


def test_run_stage_lets_bugs_keep_their_traceback(monkeypatch):
    monkeypatch.delenv("SCRATCHFORMER_DEBUG", raising=False)
    monkeypatch.setattr(sys, "argv", ["stage"])

    def bug():
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        run_stage(bug)


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04 cut short"])
def test_a_corrupt_resume_state_says_to_delete_it(tmp_path, monkeypatch, capsys, content):
    path = tmp_path / "checkpoints" / "train.pt"
    key = {"data": "k", "code": {}}
    save_state(path, {"key": key, "members": []})
    assert load_state(path, key)["members"] == []
    path.write_bytes(content)
    with pytest.raises(CorruptFileError, match=rf"{path} is (empty|truncated or damaged .*): delete this resumable"):
        load_state(path, key)
    monkeypatch.delenv("SCRATCHFORMER_DEBUG", raising=False)
    monkeypatch.setattr(sys, "argv", ["stage"])
    with pytest.raises(SystemExit) as exit_:
        run_stage(lambda: load_state(path, key))
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {path} is ")


def test_a_corrupt_pretrained_model_says_to_rebuild_it(tmp_path):
    model = TransformerClassifier(tiny_config(ff_dim=16, dropout=0.1, max_len=64), 30, 0)
    path = tmp_path / "pretrained.pt"
    save_no_pretraining(path)
    assert not load_pretrained(model, path)
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(
        CorruptFileError,
        match=rf"{path} is truncated or damaged .*: restore it with `dvc checkout {path}`, or rebuild",
    ):
        load_pretrained(model, path)


def test_a_probe_token_cut_off_by_max_len_is_named_at_tokenize(tmp_path):
    tokenizer = load_tokenizer(str(write_tokenizer(tmp_path / "vocab")))
    probe = ProbeConfig(text="房间太脏，早餐一般，服务很差。", query_token="差")
    assert probe_ids(probe, tokenizer, 16)[1] == 14  # [CLS] is token 0
    with pytest.raises(ConfigError, match=r"tokenizer\.max_len=8 cuts probe\.text .* at least 16, or shorten"):
        probe_ids(probe, tokenizer, 8)


def test_tokenize_stage_checks_the_probe_before_any_output(tmp_path):
    from stages import tokenize

    vocab = str(write_tokenizer(tmp_path / "vocab"))
    params = from_dict(
        {"tokenizer": {"name": vocab, "max_len": 8}, "probe": {"text": "房间太脏，早餐一般，服务很差。"}}
    )
    (tmp_path / "inputs.json").write_text("{}")  # a local tokenizer folder: no hub revision
    with pytest.raises(ConfigError, match=r"tokenizer\.max_len=8"):
        tokenize.run(params, tmp_path / "inputs.json", tmp_path / "raw", tmp_path / "tokenized", tmp_path / "tokenizer")
    assert not (tmp_path / "tokenized").exists()


def test_evaluate_scores_a_blends_parts_each_on_its_own(tmp_path):
    """A blend of Transformers and an NB member: evaluate reports each part's own accuracy beside the blend's."""
    import torch
    from fixtures import tiny_config

    from scratchformer.analysis.evaluation import predict_logits
    from scratchformer.data.tokenized_split import read_tokenized
    from scratchformer.model.classifier import Ensemble, TransformerClassifier
    from scratchformer.model.naive_bayes import NBLogistic
    from stages import evaluate

    torch.manual_seed(3)
    members = [TransformerClassifier(tiny_config(), 30) for _ in range(2)]
    nb = NBLogistic(2, 64, 30, 2, 0)
    with torch.no_grad():
        for p in nb.parameters():
            p.normal_(0, 3.0)  # an NB member that disagrees with the Transformers
    blend = Ensemble(members, nb).eval()
    labels = write_scored_model(tmp_path, blend, n=60, seed=0)
    raw, baseline = write_raw_and_baselines(tmp_path, labels)
    params = from_dict({"acceptance": {"validation_accuracy": 0.01}, "short_reviews": None})
    result = evaluate.run(
        params,
        tmp_path / "model.pt",
        tmp_path / "tokenized",
        tmp_path / "tokenizer",
        raw,
        baseline,
        tmp_path / "m.json",
        tmp_path / "c",
    )

    split = read_tokenized(tmp_path / "tokenized" / "validation")

    def accuracy(model):
        return (predict_logits(model, split, 256).argmax(-1) == split.labels).sum().item() / len(split.labels)

    own = {"nb": accuracy(nb), "transformers": accuracy(Ensemble(members))}
    assert own["nb"] != own["transformers"]  # the case is one where the parts differ
    for part, value in own.items():
        assert result["validation"][part]["accuracy"] == pytest.approx(value, abs=1e-12), part
        assert result["validation"][part]["unseen"]["n"] == 50, part
    assert result["validation"]["accuracy"] == pytest.approx(accuracy(blend), abs=1e-12)


def write_scored_model(folder, model, n: int, seed: int):
    """``n`` random tokenized texts as both validation and test, and ``model``'s checkpoint; their labels."""
    import numpy as np
    import torch

    from scratchformer.data.tokenization import FlatIds
    from scratchformer.data.tokenized_split import write_tokenized
    from scratchformer.model.checkpoint import save_checkpoint

    g = torch.Generator().manual_seed(seed)
    texts = [torch.randint(5, 30, (int(k),), generator=g).tolist() for k in torch.randint(3, 12, (n,), generator=g)]
    labels = np.array([i % 2 for i in range(n)])
    offsets = np.concatenate([[0], np.cumsum([len(t) for t in texts])]).astype(np.int64)
    flat = FlatIds(np.array([t for x in texts for t in x], dtype=np.uint16), offsets, np.diff(offsets))
    for split in ("validation", "test"):
        write_tokenized(folder / "tokenized" / split, flat, labels)
    (folder / "tokenized" / "meta.json").write_text(json.dumps({"class_names": ["negative", "positive"]}))
    save_checkpoint(folder / "model.pt", model, tokenizer_max_len=16, class_names=["negative", "positive"])
    return labels


def write_raw_and_baselines(tmp_path, labels) -> tuple[Path, Path]:
    """Raw splits whose first 10 validation and test texts are train texts, and two baselines' predictions."""
    import numpy as np
    import pandas as pd

    from scratchformer.analysis.baseline import write_predictions

    raw = tmp_path / "raw"
    raw.mkdir()
    train = [f"train review {i}" for i in range(20)]
    pd.DataFrame({"text": train, "label": [i % 2 for i in range(20)]}).to_parquet(raw / "train.parquet")
    for split in ("validation", "test"):
        texts = [f" {t}\u3000" for t in train[:10]] + [f"{split} review {i}" for i in range(len(labels) - 10)]
        pd.DataFrame({"text": texts, "label": labels}).to_parquet(raw / f"{split}.parquet")
    always, never = np.asarray(labels), 1 - np.asarray(labels)
    predicted = {
        "weak": {s: never for s in ("validation", "test")},
        "strong": {s: always for s in ("validation", "test")},
    }
    write_predictions(tmp_path / "baseline", predicted)
    return raw, tmp_path / "baseline"


def test_evaluate_scores_the_unseen_part_and_compares_with_the_best_baseline(tmp_path):
    """Unseen scores with their n and intervals; the model against the baseline best on unseen validation."""
    import torch

    from scratchformer.analysis.scoring import wilson
    from stages import evaluate

    torch.manual_seed(0)
    model = TransformerClassifier(tiny_config(), 30)
    labels = write_scored_model(tmp_path, model, n=40, seed=1)
    raw, baseline = write_raw_and_baselines(tmp_path, labels)
    params = from_dict({"acceptance": {"validation_accuracy": 0.01}, "seed": 5, "short_reviews": None})
    paths = (tmp_path / "model.pt", tmp_path / "tokenized", tmp_path / "tokenizer", raw, baseline)
    result = evaluate.run(params, *paths, tmp_path / "m.json", tmp_path / "c")
    assert "short" not in result  # short_reviews: null turns the check off

    for split in ("validation", "test"):
        scores = result[split]
        unseen = scores["unseen"]
        assert unseen["n"] == 30  # the 10 copies of train texts (stripped of edge whitespace) are seen
        right = round(unseen["accuracy"] * 30)
        assert unseen["accuracy_ci95"] == wilson(right, 30)
        assert scores["accuracy_ci95"] == wilson(round(scores["accuracy"] * 40), 40)
        versus = scores["vs_best_baseline"]
        assert versus["name"] == "strong"  # right on every review: the best on unseen validation
        assert versus["delta"] == (right - 30) / 30
        assert versus["ci95"]["lo"] <= versus["delta"] <= versus["ci95"]["hi"] <= 0
    assert json.loads((tmp_path / "m.json").read_text()) == json.loads(json.dumps(result))
    confusion = json.loads((tmp_path / "c" / "validation.json").read_text())
    assert sum(c["support"] for c in confusion["per_class"].values()) == 40  # beside the counts they come from
    assert "per_class" not in result["validation"]  # not in the metrics: dvc exp show stays narrow
    evaluate.run(params, *paths, tmp_path / "again.json", tmp_path / "c")
    assert (tmp_path / "again.json").read_bytes() == (tmp_path / "m.json").read_bytes()  # byte-identical rerun


def test_evaluate_scores_the_short_reviews_as_the_model_reads_them(tmp_path):
    """short.*: the model's accuracy on the file of short reviews, each text encoded as the tokenizer does."""
    import torch
    from fixtures import sentences

    from scratchformer.analysis.scoring import wilson
    from scratchformer.data.tokenization import save_tokenizer
    from stages import evaluate

    tokenizer = load_tokenizer(str(write_tokenizer(tmp_path / "vocab")))
    save_tokenizer(tokenizer, tmp_path / "tokenizer")
    torch.manual_seed(4)
    model = TransformerClassifier(tiny_config(), len(tokenizer)).eval()
    labels = write_scored_model(tmp_path, model, n=40, seed=1)
    raw, baseline = write_raw_and_baselines(tmp_path, labels)
    rows = sentences(41, seed=7)
    names = ["negative", "positive"]
    short_file = tmp_path / "short.tsv"
    short_file.write_text("text\tlabel\n" + "".join(f"{t}\t{names[y]}\n" for y, t in rows), encoding="utf-8")
    params = from_dict({"acceptance": {"validation_accuracy": 0.01}, "short_reviews": str(short_file)})
    paths = (tmp_path / "model.pt", tmp_path / "tokenized", tmp_path / "tokenizer", raw, baseline)
    result = evaluate.run(params, *paths, tmp_path / "m.json", tmp_path / "c")

    with torch.no_grad():  # one text at a time, ids from the tokenizer itself, cut at the checkpoint's 16
        right = sum(
            model(torch.tensor([tokenizer(t, truncation=True, max_length=16)["input_ids"]])).argmax().item() == y
            for y, t in rows
        )
    assert 0 < right < len(rows) and 2 * right != len(rows)  # a score that tells right from wrong and swapped labels
    assert result["short"]["n"] == len(rows)
    assert result["short"]["accuracy"] == right / len(rows)
    assert result["short"]["accuracy_ci95"] == wilson(right, len(rows))


class TrainRun(NamedTuple):
    members: list[dict]  # the keyword arguments each network was trained with
    fits: list[dict]  # those each n-gram fit was given
    out: dict  # the stage's outputs, by name
    metrics: dict


def _train_with_nb(tmp_path, monkeypatch, nb: dict, max_len: int = 32, window: int = 32) -> TrainRun:
    """The train stage on a fixture corpus (two networks of model.max_len ``window``, one epoch, reviews cut at
    ``max_len`` tokens) with n-gram section ``nb``, watched."""
    from scratchformer.train import ensemble
    from stages import download, tokenize, train

    monkeypatch.chdir(tmp_path)
    write_corpus(tmp_path / "corpus", sizes=(80, 30, 30))
    (tmp_path / "inputs.json").write_text(json.dumps({"source": "corpus"}))
    params = from_dict(
        {
            "data": {"source": "corpus"},
            "tokenizer": {"name": str(write_tokenizer(tmp_path / "tok")), "max_len": max_len},
            "model": {"d_model": 16, "n_heads": 2, "n_layers": 1, "ff_dim": 32, "max_len": window},
            "train": {"epochs": 1, "batch_size": 16, "ensemble": 2},
            "nb": nb,
            "probe": {"text": "房间很差。", "query_token": "差"},
        }
    )
    download.run(params, tmp_path / "inputs.json", tmp_path / "raw", tmp_path / "data.json", tmp_path / "issues")
    tokenize.run(params, tmp_path / "inputs.json", tmp_path / "raw", tmp_path / "tokenized", tmp_path / "tokenizer")
    save_no_pretraining(tmp_path / "pretrained.pt")
    calls, fits = [], []
    member, fit_nb = ensemble.train_member, ensemble.fit_nb

    def spied(k, **kwargs):
        calls.append(kwargs)
        return member(k, **kwargs)

    monkeypatch.setattr(ensemble, "train_member", spied)
    monkeypatch.setattr(ensemble, "fit_nb", lambda *args, **kwargs: fits.append(kwargs) or fit_nb(*args, **kwargs))
    out = {name: tmp_path / name for name in ("model.pt", "live", "snapshots.json", "metrics.json", "state.pt")}
    inputs = (tmp_path / "tokenized", tmp_path / "tokenizer", tmp_path / "pretrained.pt")
    return TrainRun(calls, fits, out, train.run(params, *inputs, *out.values()))


def test_the_networks_read_their_first_tokens_and_the_n_gram_member_the_whole_cut(tmp_path, monkeypatch):
    """tokenizer.max_len 32 over networks of model.max_len 8: each network trains and validates on every
    review's first 8 tokens, the member's fit reads all 32, and the saved model answers 32-token reviews."""
    import torch

    from scratchformer.analysis.evaluation import predict_logits
    from scratchformer.data.tokenized_split import read_tokenized
    from scratchformer.model.checkpoint import load_checkpoint

    calls, fits, out, _ = _train_with_nb(tmp_path, monkeypatch, {"ngrams": 2}, max_len=32, window=8)
    whole = read_tokenized(tmp_path / "tokenized" / "train")
    assert int(whole.lengths.max()) > 8
    for kwargs in calls:
        assert int(kwargs["train_split"].lengths.max()) == 8 and int(kwargs["val_split"].lengths.max()) == 8
    assert torch.equal(fits[0]["fit_split"].lengths, whole.lengths)  # the member's fit: every token of the cut
    saved, _ = load_checkpoint(out["model.pt"])
    validation = read_tokenized(tmp_path / "tokenized" / "validation")
    assert int(validation.lengths.max()) > 8
    assert predict_logits(saved, validation, 64).shape == (len(validation), 2)


@pytest.mark.parametrize("fit_len", [None, 64])
def test_the_n_gram_fit_reads_the_train_reviews_at_nb_fit_len(tmp_path, monkeypatch, fit_len):
    """nb.fit_len longer than the cut: tokenize writes the train split again at that length, and the train
    stage fits the n-gram model on it; null: no second split, the fit reads the cut."""
    import torch

    from scratchformer.data.tokenized_split import read_tokenized

    fits = _train_with_nb(tmp_path, monkeypatch, {"ngrams": 2, "fit_len": fit_len}, max_len=8).fits
    cut = read_tokenized(tmp_path / "tokenized" / "train")
    assert int(cut.lengths.max()) == 8
    whole = tmp_path / "tokenized" / "nb-train"
    if fit_len is None:
        assert not whole.exists() and torch.equal(fits[0]["fit_split"].lengths, cut.lengths)
        return
    read = fits[0]["fit_split"]
    assert len(read) == len(cut) and int(read.lengths.max()) > 8  # the same reviews, not cut at 8
    assert torch.equal(read.lengths, read_tokenized(whole).lengths)
    meta = json.loads((tmp_path / "tokenized" / "meta.json").read_text())
    assert meta["splits"]["nb-train"]["truncated"] < meta["splits"]["train"]["truncated"]


@pytest.mark.parametrize("folds", [1, 3])
def test_a_teacher_teaches_every_member_and_stays_out_of_the_saved_model(tmp_path, monkeypatch, folds):
    """nb.role teacher: the NB model is fit first and handed to each member; the checkpoint is theirs alone.

    With nb.distill_folds 3 the teacher is three models, fit out of fold.
    """
    import torch

    from scratchformer.model.checkpoint import load_checkpoint
    from scratchformer.model.classifier import Ensemble
    from scratchformer.model.naive_bayes import OutOfFold

    nb = {"ngrams": 2, "role": "teacher", "distill": 0.5, "distill_folds": folds}
    calls, _, out, metrics = _train_with_nb(tmp_path, monkeypatch, nb)
    taught = [kwargs["teacher"] for kwargs in calls]
    assert len(taught) == 2 and taught[0] is taught[1] is not None  # one teacher, fit once, for every member
    assert isinstance(taught[0], OutOfFold) == (folds > 1)
    if folds > 1:
        assert len(taught[0].models) == folds
    saved, _ = load_checkpoint(out["model.pt"])
    assert isinstance(saved, Ensemble) and saved.nb is None and len(saved.members) == 2
    assert 0.5 <= metrics["nb_val_accuracy"] <= 1.0  # the teacher's own score is recorded
    assert not any(isinstance(m, torch.nn.Module) and "NB" in type(m).__name__ for m in saved.modules())


@pytest.mark.parametrize("folds", [1, 3])
def test_a_base_answers_train_out_of_fold_and_is_added_to_every_saved_member(tmp_path, monkeypatch, folds):
    """nb.role base: the n-gram model is fit first; each member learns on top of its logits, and the saved
    model adds the one fit on all of train to each member's logits (mean_k softmax(z_k + z_nb))."""
    import torch

    from scratchformer.analysis.evaluation import predict_logits
    from scratchformer.data.tokenized_split import batches, read_tokenized
    from scratchformer.model.checkpoint import load_checkpoint
    from scratchformer.model.classifier import Ensemble
    from scratchformer.model.naive_bayes import NBLogistic, OutOfFold

    calls, _, out, _ = _train_with_nb(tmp_path, monkeypatch, {"ngrams": 2, "role": "base", "distill_folds": folds})
    assert all(kwargs["teacher"] is None for kwargs in calls)
    bases = [kwargs["base"] for kwargs in calls]
    assert len(bases) == 2 and bases[0] is bases[1] is not None  # one base, fit once, under every member
    assert isinstance(bases[0].full, NBLogistic)
    assert isinstance(bases[0].train, OutOfFold if folds > 1 else NBLogistic)
    assert folds > 1 or bases[0].train is bases[0].full
    saved, _ = load_checkpoint(out["model.pt"])
    assert isinstance(saved, Ensemble) and saved.nb_role == "base" and len(saved.members) == 2
    torch.testing.assert_close(saved.nb.weight, bases[0].full.weight)  # the base fit on all of train is kept
    val = read_tokenized(tmp_path / "tokenized" / "validation")
    ids = next(iter(batches(val, 8, saved.pad_id)))[0]
    with torch.no_grad():
        base = saved.nb(ids)
        expected = torch.stack([(m(ids) + base).softmax(1) for m in saved.members]).mean(0).log()
    torch.testing.assert_close(predict_logits(saved, val, 64)[:8], expected)


def test_pretraining_refuses_fingerprints_of_other_corpora_than_params_lists(tmp_path):
    params = from_dict({"pretrain": {"corpora": []}})
    listed = tmp_path / "pretrain.json"
    listed.write_text(json.dumps([{"source": "online-shopping"}]), encoding="utf-8")  # params list none
    with pytest.raises(
        DataError, match=r"pretrain\.json fingerprints \['online-shopping'\], but pretrain\.corpora is \[\]"
    ):
        texts_to_read(params, tmp_path / "raw", listed, tokenizer=None)


def test_pretraining_reads_what_a_network_reads_of_a_longer_cut(tmp_path, monkeypatch):
    """tokenizer.max_len 32 over networks of model.max_len 8 (an n-gram member reads the rest): the pretraining
    texts are cut at 8, the tokens the encoder being pretrained can read."""
    from stages import download

    monkeypatch.chdir(tmp_path)
    write_corpus(tmp_path / "corpus", sizes=(80, 30, 30))
    (tmp_path / "inputs.json").write_text(json.dumps({"source": "corpus"}))
    tokenizer = write_tokenizer(tmp_path / "tok")
    params = from_dict(
        {
            "data": {"source": "corpus"},
            "tokenizer": {"name": str(tokenizer), "max_len": 32},
            "model": {"d_model": 16, "n_heads": 2, "n_layers": 1, "ff_dim": 32, "max_len": 8},
            "nb": {"ngrams": 2},
            "probe": {"text": "房间很差。", "query_token": "差"},
        }
    )
    download.run(params, tmp_path / "inputs.json", tmp_path / "raw", tmp_path / "data.json", tmp_path / "issues")
    (tmp_path / "pretrain.json").write_text("[]", encoding="utf-8")
    texts, _ = texts_to_read(params, tmp_path / "raw", tmp_path / "pretrain.json", load_tokenizer(str(tokenizer)))
    assert int(texts.lengths.max()) == 8


def test_teachers_train_first_and_teach_the_one_network_that_is_saved(tmp_path, monkeypatch):
    """train.teachers 2: members 1 and 2 train on the labels, then member 0 learns from them; only it is saved."""
    import torch

    from scratchformer.model.checkpoint import load_checkpoint
    from scratchformer.model.classifier import Ensemble
    from scratchformer.train import ensemble
    from scratchformer.train.recording import Recording
    from stages import download, tokenize, train

    monkeypatch.chdir(tmp_path)
    write_corpus(tmp_path / "corpus", sizes=(80, 30, 30))
    (tmp_path / "inputs.json").write_text(json.dumps({"source": "corpus"}))
    params = from_dict(
        {
            "data": {"source": "corpus"},
            "tokenizer": {"name": str(write_tokenizer(tmp_path / "tok")), "max_len": 32},
            "model": {"d_model": 16, "n_heads": 2, "n_layers": 1, "ff_dim": 32, "max_len": 32},
            "train": {"epochs": 1, "batch_size": 16, "ensemble": 1, "teachers": 2, "distill": 0.7},
            "nb": {"ngrams": 0},  # the networks alone: the saved model is the student
            "probe": {"text": "房间很差。", "query_token": "差"},
        }
    )
    download.run(params, tmp_path / "inputs.json", tmp_path / "raw", tmp_path / "data.json", tmp_path / "issues")
    tokenize.run(params, tmp_path / "inputs.json", tmp_path / "raw", tmp_path / "tokenized", tmp_path / "tokenizer")
    save_no_pretraining(tmp_path / "pretrained.pt")
    calls, trained = [], {}
    member = ensemble.train_member

    def spied(k, **kwargs):
        calls.append((k, kwargs.get("teacher"), kwargs.get("distill")))
        trained[k] = member(k, **kwargs)
        return trained[k]

    monkeypatch.setattr(ensemble, "train_member", spied)
    out = {name: tmp_path / name for name in ("model.pt", "live", "snapshots.json", "metrics.json", "state.pt")}
    inputs = (tmp_path / "tokenized", tmp_path / "tokenizer", tmp_path / "pretrained.pt")
    finished = []
    monkeypatch.setattr(Recording, "close", lambda self: finished.extend(self.finished))  # keep what resumes would read
    metrics = train.run(params, *inputs, *out.values())
    assert [k for k, _, _ in calls] == [1, 2, 0]  # the teachers first
    assert calls[0][1] is None and calls[1][1] is None  # they learn from the labels alone
    teacher, distill = calls[2][1], calls[2][2]
    assert isinstance(teacher, Ensemble) and distill == 0.7
    assert list(teacher.members) == [trained[1].model, trained[2].model]
    assert not teacher.training  # it answered without dropout while the student trained
    saved, _ = load_checkpoint(out["model.pt"])
    assert not isinstance(saved, Ensemble)  # the student alone
    assert torch.equal(saved.head.weight, trained[0].model.head.weight)
    assert set(metrics["teacher_val_accuracy"]) == {"1", "2"} and metrics["ensemble"] == 1
    assert [m["member"] for m in finished] == [1, 2, 0]  # a rerun finds each finished member by its number
    recording = Recording(tmp_path / "no-state.pt", {})
    recording.finished = finished
    assert recording.restored(0)["model"]["head.weight"].equal(trained[0].model.head.weight)


def test_tokenize_stage_lowercases_the_texts_with_tokenizer_lowercase(tmp_path):
    """tokenizer.lowercase reaches the stage: the ids it stores and the tokenizer it saves read 'MP3' as 'mp3'."""
    import pandas as pd

    from scratchformer.data.labels import Classes
    from scratchformer.data.tokenized_split import read_tokenized
    from stages import tokenize

    vocab = write_tokenizer(tmp_path / "vocab")
    with (vocab / "vocab.txt").open("a", encoding="utf-8") as file:
        file.write("mp3\n")
    raw = tmp_path / "raw"
    raw.mkdir()
    for split in ("train", "validation", "test"):
        pd.DataFrame({"text": ["MP3很好。", "房间太脏。"], "label": [1, 0]}).to_parquet(raw / f"{split}.parquet")
    Classes([0, 1], ["negative", "positive"]).write(raw / "classes.json")
    (tmp_path / "inputs.json").write_text("{}")
    params = from_dict({"tokenizer": {"name": str(vocab), "max_len": 32, "lowercase": True}})
    tokenize.run(params, tmp_path / "inputs.json", raw, tmp_path / "tokenized", tmp_path / "tokenizer")
    saved = load_tokenizer(str(tmp_path / "tokenizer"))
    first = read_tokenized(tmp_path / "tokenized" / "train").sequence(0)
    assert saved.convert_ids_to_tokens(first.tolist())[1] == "mp3"
    assert saved.tokenize("MP3") == ["mp3"]
