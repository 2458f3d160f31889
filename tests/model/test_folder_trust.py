"""A model folder from someone else: loading it runs none of its code, reads no stdin, trusts no size."""

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scratchformer.analysis.predict import Predictor
from scratchformer.cli import main
from scratchformer.data.tokenization import load_tokenizer
from tests.model.test_export import export

CODE = "from pathlib import Path\nPath({marker!r}).write_text('ran')\n"


@pytest.fixture(scope="module")
def folder(trained, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("trust")
    return export(*trained, tmp / "scratchformer", tmp)


def hostile(folder: Path, tmp_path: Path, file: str, edit: dict) -> tuple[Path, Path]:
    """A copy of ``folder`` whose ``file`` has ``edit`` merged in, with a tokenization_x.py that leaves a marker."""
    copy = tmp_path / "received"
    shutil.copytree(folder, copy)
    marker = tmp_path / "marker"
    (copy / "tokenization_x.py").write_text(CODE.format(marker=str(marker)), encoding="utf-8")
    (copy / "configuration_x.py").write_text(CODE.format(marker=str(marker)), encoding="utf-8")
    path = copy / file
    path.write_text(json.dumps({**json.loads(path.read_text(encoding="utf-8")), **edit}), encoding="utf-8")
    return copy, marker


AUTO_MAP = {"AutoTokenizer": ["tokenization_x.XTokenizer", "tokenization_x.XTokenizer"]}
HOSTILE = [
    ("tokenizer_config.json", {"tokenizer_class": "XTokenizer", "auto_map": AUTO_MAP}, "auto_map"),
    ("tokenizer_config.json", {"auto_map": AUTO_MAP}, "auto_map"),  # a known class, code beside it
    ("tokenizer_config.json", {"tokenizer_class": "XTokenizer"}, "tokenizer_class"),
    ("tokenizer_config.json", {"tokenizer_class": None}, "tokenizer_class"),  # would make transformers read config.json
    ("config.json", {"auto_map": {"AutoConfig": "configuration_x.XConfig"}}, "auto_map"),
]


@pytest.mark.parametrize(("file", "edit", "key"), HOSTILE)
def test_a_folder_that_asks_to_run_its_code_is_refused_without_reading_stdin(
    folder, tmp_path, monkeypatch, file, edit, key
):
    copy, marker = hostile(folder, tmp_path, file, edit)
    stdin = io.StringIO("y\n房间很好\n")
    monkeypatch.setattr(sys, "stdin", stdin)
    with pytest.raises(ValueError) as caught:
        Predictor.from_pretrained(copy)
    message = str(caught.value)
    assert message.startswith(f"{copy / file}: ") and key in message and "\n" not in message, message
    assert not marker.exists() and stdin.read() == "y\n房间很好\n"  # nothing ran, not a character was read


def test_the_command_refuses_it_too_and_leaves_stdin_to_the_texts(folder, tmp_path):
    from scratchformer import cli

    copy, marker = hostile(folder, tmp_path, *HOSTILE[0][:2])
    env = {**os.environ, "PYTHONPATH": str(Path(cli.__file__).parents[1])}
    cmd = [sys.executable, "-m", "scratchformer", "predict", "--model", str(copy)]
    done = subprocess.run(cmd, input="y\n房间很好\n", capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 2 and "Do you wish" not in done.stdout + done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and "tokenizer_config.json" in done.stderr and "auto_map" in done.stderr
    assert not marker.exists()


def test_a_source_tokenizer_folder_with_code_is_refused_too(trained, tmp_path, monkeypatch):
    _, tokenizer = trained
    copy = tmp_path / "tokenizer"
    shutil.copytree(tokenizer, copy)
    path = copy / "tokenizer_config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "auto_map": AUTO_MAP}), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    with pytest.raises(ValueError, match="auto_map"):
        load_tokenizer(str(copy))
    assert main(["predict", "--model", str(trained[0]), "--tokenizer", str(copy), "好"]) == 2


def edited(folder: Path, tmp_path: Path, change) -> Path:
    """A copy of ``folder`` whose config.json ``change(config)`` edits in place."""
    copy = tmp_path / "received"
    shutil.copytree(folder, copy)
    config = json.loads((copy / "config.json").read_text(encoding="utf-8"))
    change(config)
    (copy / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return copy


def setter(key: str, value):
    def change(config):
        *parents, last = key.split(".")
        target = config
        for parent in parents:
            target = target[parent]
        target[last] = value

    return change


@pytest.fixture
def nothing_allocated(monkeypatch):
    """Fail if a network is built anywhere but on the meta device, or a tensor is read from the weights."""
    import safetensors.torch
    import torch

    from scratchformer.model import export as export_module

    real = export_module.build

    def build(*args, **kwargs):
        assert torch.get_default_device().type == "meta", "a network was built before config.json was checked"
        return real(*args, **kwargs)

    def load_file(*args, **kwargs):
        raise AssertionError("the weights were read before config.json was checked")

    monkeypatch.setattr(export_module, "build", build)
    monkeypatch.setattr(safetensors.torch, "load_file", load_file)


INSANE = [
    ("members", 100000, "outside 1..64"),
    ("members", "2", "must be an integer"),
    ("members", True, "must be an integer"),
    ("members", 0, "outside 1..64"),
    ("vocab_size", 10**9, "outside"),
    ("pad_id", 10**6, "pad_id"),
    ("tokenizer_max_len", 10**6, "above model.max_len=32 with no n-gram member to read the rest"),
    ("tokenizer_max_len", 1 << 21, "outside"),
    ("model.d_model", 1 << 30, "outside"),
    ("model.n_heads", 10**5, "outside"),
    ("model.n_layers", 10**6, "outside"),
    ("model.ff_dim", 10**9, "outside"),
    ("model.max_len", 10**9, "positional table limit"),
    ("model.num_classes", 10**9, "outside"),
    ("model.num_classes", None, "must be an integer"),
    ("model.ngram_max", 100, "outside"),
    ("model.ngram_buckets", 10**12, "outside"),
    ("nb", {"max_n": 2, "buckets": 10**12}, "nb.buckets"),
    ("nb", {"max_n": 200, "buckets": 64}, "nb.max_n"),
    ("nb", {"max_n": 2, "buckets": 64, "scaling": "svm"}, "nb.scaling"),
    ("nb", {"max_n": 2, "buckets": 64, "role": "teacher"}, "nb.role"),
    ("nb", {"max_n": 2, "buckets": 64, "skip": [-1]}, "nb.skip"),
    ("nb", {"max_n": 2, "buckets": 64, "skip": "[CLS]"}, "nb.skip"),
    ("class_names", ["negative", "negative"], "class_names"),
    ("class_names", ["negative", 1], "class_names"),
]


@pytest.mark.parametrize(("key", "value", "said"), INSANE)
def test_an_insane_size_is_refused_before_anything_is_built(folder, tmp_path, nothing_allocated, key, value, said):
    copy = edited(folder, tmp_path, setter(key, value))
    with pytest.raises(ValueError) as caught:
        Predictor.from_pretrained(copy)
    message = str(caught.value)
    assert message.startswith(f"{copy / 'config.json'}: ") and said in message and "\n" not in message, message
    assert key.split(".")[-1] in message or key == "nb", message


WEIGHTS_DISAGREE = [
    ("members", 2, "'members'"),  # an ensemble config.json over one network's weights
    ("model.n_layers", 3, "'model.n_layers'"),
    ("vocab_size", 4_000_000, "embed.weight"),  # within bounds: 512 MB that the weights do not hold
    ("model.ff_dim", 60000, "ffn"),
    ("nb", {"max_n": 2, "buckets": 64}, "member"),
    ("nb", {"max_n": 2, "buckets": 64, "scaling": "tfidf"}, "member"),
]


@pytest.mark.parametrize(("key", "value", "said"), WEIGHTS_DISAGREE)
def test_sizes_the_weights_do_not_have_are_refused_from_their_header(
    folder, tmp_path, nothing_allocated, key, value, said
):
    copy = edited(folder, tmp_path, setter(key, value))
    with pytest.raises(ValueError) as caught:
        Predictor.from_pretrained(copy)
    message = str(caught.value)
    assert message.startswith(f"{copy / 'model.safetensors'} ") and said in message, message
    assert str(copy / "config.json") in message and "\n" not in message, message


def bigger_tokenizer(tokenizer_dir: Path, out: Path, extra: int) -> None:
    tokenizer = load_tokenizer(str(tokenizer_dir))
    tokenizer.add_tokens([f"新词{i}" for i in range(extra)])
    tokenizer.save_pretrained(out)


def test_a_tokenizer_larger_than_the_vocabulary_is_refused(folder, trained, tmp_path):
    copy = tmp_path / "received"
    shutil.copytree(folder, copy)
    bigger_tokenizer(folder, copy, 5)
    with pytest.raises(ValueError) as caught:
        Predictor.from_pretrained(copy)
    message = str(caught.value)
    assert message.startswith(f"{copy / 'tokenizer.json'}: ") and "vocab_size" in message, message
    bigger_tokenizer(trained[1], tmp_path / "tokenizer", 5)  # a checkpoint and a tokenizer folder: the same check
    with pytest.raises(ValueError, match="vocab_size"):
        Predictor(trained[0], tmp_path / "tokenizer")


def test_config_speaks_the_hubs_language_and_checks_it(folder, tmp_path):
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert config["model_type"] == "scratchformer" and config["architectures"] == ["TransformerClassifier"]
    assert config["id2label"] == {"0": "negative", "1": "positive"}
    assert config["label2id"] == {"negative": 0, "positive": 1}

    def older(config):  # a folder written before these keys existed still loads
        for key in ("model_type", "architectures", "id2label", "label2id"):
            del config[key]

    assert Predictor.from_pretrained(edited(folder, tmp_path / "old", older)).class_names == ["negative", "positive"]
    for key, value in [
        ("id2label", {"0": "positive", "1": "negative"}),
        ("label2id", {"negative": 1, "positive": 0}),
        ("model_type", "bert"),
        ("architectures", ["BertForSequenceClassification"]),
    ]:
        copy = edited(folder, tmp_path / key, setter(key, value))
        with pytest.raises(ValueError) as caught:
            Predictor.from_pretrained(copy)
        assert str(caught.value).startswith(f"{copy / 'config.json'}: key {key!r}"), str(caught.value)
