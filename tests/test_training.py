import math

import pytest
import torch

from scratchformer.checkpoint import load_checkpoint, save_checkpoint
from scratchformer.config import ModelConfig
from scratchformer.files import write_atomic, write_json
from scratchformer.model import TransformerClassifier
from scratchformer.training import grad_norm_summary, lr_factor, pick_device


def test_device_auto_falls_back_to_cpu_and_explicit_names_pass_through():
    expected = "cuda" if torch.cuda.is_available() else ("mps" if torch.backends.mps.is_available() else "cpu")
    assert pick_device("auto").type == expected
    assert pick_device("cpu").type == "cpu"


def test_lr_schedule_warmup_then_cosine():
    total = 100
    assert lr_factor(0, total, "constant", 0.0) == 1.0
    assert lr_factor(0, total, "cosine", 0.1) == pytest.approx(0.1)
    assert lr_factor(9, total, "cosine", 0.1) == pytest.approx(1.0)
    assert lr_factor(10, total, "cosine", 0.1) == pytest.approx(1.0)
    assert lr_factor(55, total, "cosine", 0.1) == pytest.approx(0.5)
    assert lr_factor(99, total, "cosine", 0.1) < 0.01
    assert lr_factor(50, total, "constant", 0.1) == 1.0


def test_grad_norm_summary():
    s = grad_norm_summary([0.5, 1.5, 0.5, 3.0], clip=1.0)
    assert s["grad_norm_median"] == 0.5 and s["grad_norm_max"] == 3.0 and s["clipped_fraction"] == 0.5
    assert grad_norm_summary([2.0], clip=0)["clipped_fraction"] == 0.0


def test_failed_write_leaves_the_old_file_and_no_temp(tmp_path):
    path = tmp_path / "out.json"
    write_json(path, {"ok": 1})

    def broken(tmp):
        tmp.write_text("half")
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError):
        write_atomic(path, broken)
    assert path.read_text() == '{\n  "ok": 1\n}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_checkpoint_round_trip(tmp_path):
    torch.manual_seed(0)
    model = TransformerClassifier(ModelConfig(d_model=16, n_heads=2, max_len=16, pooling="attention"), 30).eval()
    save_checkpoint(tmp_path / "m.pt", model, epoch=3)
    loaded, info = load_checkpoint(tmp_path / "m.pt")
    ids = torch.randint(1, 30, (2, 9))
    assert torch.equal(loaded(ids), model(ids)) and info["epoch"] == 3
    assert loaded.config == model.config and not loaded.training
    with pytest.raises(FileNotFoundError, match="run `dvc repro` first"):
        load_checkpoint(tmp_path / "missing.pt")


def test_lr_factor_is_never_negative_or_nan():
    assert all(
        0 <= lr_factor(s, 37, "cosine", 0.2) <= 1 and not math.isnan(lr_factor(s, 37, "cosine", 0.2)) for s in range(37)
    )
