"""The inputs stage, first in the pipeline, stops on what only a later stage would trip on:
a device or precision this machine lacks, a hub id that cannot be read offline. One line,
status 2, and the tracked fingerprint files left as they were."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from fixtures import write_corpus, write_tokenizer

from scratchformer.config import ConfigError, from_dict
from stages import inputs

ROOT = Path(__file__).parents[2]
BEFORE = '{"source": "as committed"}\n'
NAMES = ("corpus.json", "tokenizer.json", "pretrain.json")


@pytest.fixture
def project(tmp_path):
    write_corpus(tmp_path / "corpus")
    write_tokenizer(tmp_path / "vocab")
    for name in NAMES:
        (tmp_path / name).write_text(BEFORE)
    return tmp_path


def run_inputs(project: Path, params: dict) -> subprocess.CompletedProcess:
    """``python -m stages.inputs`` as dvc runs it, offline, with an empty 🤗 cache."""
    (project / "params.yaml").write_text(yaml.safe_dump(params, allow_unicode=True), encoding="utf-8")
    args = ["--params", "params.yaml", "--corpus", "corpus.json", "--tokenizer", "tokenizer.json"]
    args += ["--pretrain", "pretrain.json"]
    environ = {
        k: v for k, v in os.environ.items() if k not in ("SCRATCHFORMER_DEBUG", "HF_HUB_CACHE", "HF_DATASETS_CACHE")
    }
    environ.update(PYTHONPATH=f"{ROOT}{os.pathsep}{ROOT / 'src'}", HF_HUB_OFFLINE="1", HF_HOME=str(project / "hf"))
    return subprocess.run(
        [sys.executable, "-m", "stages.inputs", *args], cwd=project, env=environ, capture_output=True, text=True
    )


def untouched(project: Path) -> bool:
    return all((project / name).read_text() == BEFORE for name in NAMES)


@pytest.mark.parametrize(
    ("source", "tokenizer", "message"),
    [
        (
            "lansinuote/ChnSentiCorpX",
            "vocab",
            "error: data.source: 'lansinuote/ChnSentiCorpX' is neither a local folder nor in the local cache, "
            "and the hub is off (HF_HUB_OFFLINE=1)",
        ),
        ("corpus", "bert-base-chinesex", "error: tokenizer.name: 'bert-base-chinesex' is neither a local folder"),
    ],
)
def test_a_hub_id_that_cannot_be_read_offline_is_one_line_at_inputs(project, source, tokenizer, message):
    result = run_inputs(project, {"data": {"source": source}, "tokenizer": {"name": tokenizer}})
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert line.startswith(message)
    assert "point" in line and "folder" in line  # and what to do
    assert untouched(project)


def test_local_folders_offline_pass_and_write_the_fingerprints(project):
    result = run_inputs(project, {"data": {"source": "corpus"}, "tokenizer": {"name": "vocab"}})
    assert result.returncode == 0, result.stderr
    assert set(json.loads((project / "corpus.json").read_text())["files"]) == {"train.tsv", "dev.tsv", "test.tsv"}
    assert json.loads((project / "pretrain.json").read_text()) == []  # no pretraining corpora: an empty list


def test_pretraining_corpora_are_fingerprinted_and_an_unreadable_one_is_named(project):
    write_corpus(project / "more")
    params = {"data": {"source": "corpus"}, "tokenizer": {"name": "vocab"}, "pretrain": {"corpora": ["more"]}}
    assert run_inputs(project, params).returncode == 0
    (found,) = json.loads((project / "pretrain.json").read_text())
    assert found["source"] == "more" and set(found["files"]) == {"train.tsv", "dev.tsv", "test.tsv"}
    (project / "more" / "dev.tsv").write_text("text\tlabel\n新的\t1\n", encoding="utf-8")  # an edit: a new print
    assert run_inputs(project, params).returncode == 0
    assert json.loads((project / "pretrain.json").read_text())[0]["files"] != found["files"]
    params["pretrain"]["corpora"] = ["more", "lansinuote/ChnSentiCorpX"]
    result = run_inputs(project, params)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "error: pretrain.corpora[1]: 'lansinuote/ChnSentiCorpX' is neither a local folder" in result.stderr


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


@pytest.mark.parametrize(
    ("train", "message"),
    [
        ({"device": "cuda"}, "train.device='cuda': device 'cuda' asked for, but this machine has no CUDA device"),
        ({"device": "mps"}, "train.device='mps': device 'mps' asked for, but this machine has no Apple GPU"),
        ({"precision": "fp16"}, "train.precision=fp16 needs CUDA (its gradients need loss scaling), and "),
        ({"device": "cpu", "precision": "fp16"}, "train.device='cpu' is cpu here: use bf16 or fp32"),
    ],
)
def test_a_device_or_precision_this_machine_lacks_stops_inputs_before_any_write(project, no_gpu, train, message):
    params = from_dict(
        {"data": {"source": str(project / "corpus")}, "tokenizer": {"name": str(project / "vocab")}, "train": train}
    )
    with pytest.raises(ConfigError) as err:
        inputs.run(params, *(project / name for name in NAMES))
    assert message in str(err.value)
    assert untouched(project)


def test_bf16_on_a_gpu_without_it_is_named(project, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: False)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Tesla V100")
    params = from_dict({"train": {"device": "cuda", "precision": "bf16"}})
    with pytest.raises(ConfigError, match=r"train.precision=bf16: this GPU \(Tesla V100\) has no bfloat16"):
        inputs.run(params, *(project / name for name in NAMES))
    assert untouched(project)


def test_the_stage_reads_device_and_precision(project, no_gpu):
    assert {"train.device", "train.precision"} <= set(inputs.PARAMS)
    params = from_dict({"data": {"source": str(project / "corpus")}, "tokenizer": {"name": str(project / "vocab")}})
    found = inputs.run(params, *(project / name for name in NAMES))  # cpu, fp32: fine
    assert "files" in found["corpus"] and "files" in found["tokenizer"]
