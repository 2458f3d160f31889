"""The publish stage copies recorded files and folders byte for byte, and names what is missing."""

import pytest

from stages import publish


def test_files_and_folders_are_copied_byte_for_byte_and_stale_files_go(tmp_path):
    (tmp_path / "logs" / "live" / "plots").mkdir(parents=True)
    (tmp_path / "logs" / "metrics.json").write_bytes(b'{"a": 0.1}\n')
    (tmp_path / "logs" / "live" / "plots" / "loss.tsv").write_bytes(b"step\tloss\n0\t0.69\n")
    (tmp_path / "live" / "stale").mkdir(parents=True)  # left by an older run: must not survive
    publish.run(
        [
            (tmp_path / "logs" / "metrics.json", tmp_path / "metrics" / "train.json"),
            (tmp_path / "logs" / "live", tmp_path / "live"),
        ]
    )
    assert (tmp_path / "metrics" / "train.json").read_bytes() == b'{"a": 0.1}\n'
    assert (tmp_path / "live" / "plots" / "loss.tsv").read_bytes() == b"step\tloss\n0\t0.69\n"
    assert sorted(p.name for p in (tmp_path / "live").iterdir()) == ["plots"]


def test_a_missing_record_is_an_error_that_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"logs/train/metrics\.json"):
        publish.run([(tmp_path / "logs" / "train" / "metrics.json", tmp_path / "metrics" / "train.json")])
    assert not (tmp_path / "metrics").exists()
