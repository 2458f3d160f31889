"""Fingerprints of the outside inputs: folder content, or the hub commit a revision names."""

import json
import os

import pytest

from scratchformer.data.fingerprints import fingerprint, folder_hashes, resolved_revision

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def test_folder_fingerprint_follows_content_not_modification_time(tmp_path):
    (tmp_path / "train.tsv").write_text("label\ttext_a\n1\t很好\n", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "vocab.txt").write_text("[PAD]\n", encoding="utf-8")
    (tmp_path / ".cache").mkdir()
    (tmp_path / ".cache" / "lock").write_text("x")
    before = folder_hashes(tmp_path)
    assert list(before) == ["sub/vocab.txt", "train.tsv"]  # hidden files and folders are left out
    os.utime(tmp_path / "train.tsv", (1, 1))
    assert folder_hashes(tmp_path) == before
    (tmp_path / "train.tsv").write_text("label\ttext_a\n0\t很好\n", encoding="utf-8")
    assert folder_hashes(tmp_path)["train.tsv"] != before["train.tsv"]
    assert fingerprint(str(tmp_path), None, "data.source", "dataset") == {
        "source": str(tmp_path),
        "files": folder_hashes(tmp_path),
    }


def test_a_pinned_commit_is_recorded_without_the_network(monkeypatch, tmp_path):
    from huggingface_hub import constants

    monkeypatch.chdir(tmp_path)  # no folder shadows the id
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "https://127.0.0.1:9")  # nothing listens: any request would fail
    found = fingerprint("lansinuote/ChnSentiCorp", COMMIT, "data.source", "dataset")
    assert found == {"source": "lansinuote/ChnSentiCorp", "revision": COMMIT, "resolved": COMMIT}
    (tmp_path / "corpus.json").write_text(json.dumps(found))
    assert resolved_revision(tmp_path / "corpus.json") == COMMIT


def test_offline_and_unpinned_records_no_commit_and_warns(monkeypatch, tmp_path, caplog):
    from huggingface_hub import constants

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    (tmp_path / "hub" / "models--bert-base-chinese").mkdir(parents=True)  # in the cache: readable offline
    found = fingerprint("bert-base-chinese", "main", "tokenizer.name", "model")
    assert found == {"source": "bert-base-chinese", "revision": "main", "resolved": None}
    assert "not resolved; pin a commit" in caplog.text


def test_offline_and_not_in_the_cache_is_named_at_once(monkeypatch, tmp_path):
    from huggingface_hub import constants

    from scratchformer.data.hub import HubUnreachableError

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(HubUnreachableError, match=r"tokenizer\.name: 'bert-base-chinese' is neither a local folder"):
        fingerprint("bert-base-chinese", "main", "tokenizer.name", "model")


def test_unreachable_hub_fails_fast_naming_the_key(monkeypatch, tmp_path):
    from huggingface_hub import constants

    from scratchformer.data.hub import HubUnreachableError

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "https://127.0.0.1:9")
    with pytest.raises(HubUnreachableError, match=r"tokenizer\.name"):
        fingerprint("bert-base-chinese", None, "tokenizer.name", "model")


def test_a_file_given_for_a_folder_is_a_params_error(tmp_path):
    from scratchformer.config import ConfigError

    (tmp_path / "train.csv").write_text("label,text\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"data\.source='.*train\.csv' is a file; give the folder that holds it"):
        fingerprint(str(tmp_path / "train.csv"), None, "data.source", "dataset")
