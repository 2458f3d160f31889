import math

import pytest
import torch

from scratchformer.checkpoint import load_checkpoint, save_checkpoint
from scratchformer.config import ModelConfig, TrainConfig
from scratchformer.files import write_atomic, write_json
from scratchformer.model import TransformerClassifier
from scratchformer.tokenization import TokenizedSplit
from scratchformer.training import drop_tokens, fit, grad_norm_summary, lr_factor, pick_device


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
    model = TransformerClassifier(
        ModelConfig(d_model=16, n_heads=2, max_len=16, pooling="attention", num_classes=2), 30
    ).eval()
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


def test_drop_tokens_hides_a_share_of_tokens_but_never_the_first():
    torch.manual_seed(0)
    ids = torch.randint(1, 100, (200, 50))
    ids[:, 40:] = 0  # PADs stay PADs
    dropped = drop_tokens(ids, 0.25, pad_id=0)
    hidden = (dropped == 0) & (ids != 0)
    assert torch.all(dropped[:, 0] == ids[:, 0])
    assert torch.all(dropped[:, 40:] == 0)
    assert torch.all((dropped == ids) | hidden)  # a token is either kept or became PAD
    assert hidden[:, 1:40].float().mean().item() == pytest.approx(0.25, abs=0.02)


def _tiny_run(ema_decay):
    g = torch.Generator().manual_seed(0)
    split = TokenizedSplit.from_sequences(
        [torch.randint(1, 30, (int(n),), generator=g) for n in torch.randint(3, 12, (40,), generator=g)],
        torch.randint(0, 2, (40,), generator=g),
    )
    torch.manual_seed(0)
    model = TransformerClassifier(
        ModelConfig(d_model=16, n_heads=2, n_layers=1, ff_dim=32, max_len=16, num_classes=2), 30
    )
    trajectory, handed = [], []
    fit(
        model,
        split,
        split,
        TrainConfig(epochs=1, batch_size=8, lr=1e-2, ema_decay=ema_decay),
        0,
        torch.device("cpu"),
        on_step=lambda record: trajectory.append(model.head.weight.detach().clone()),
        on_epoch=lambda record, m, best: handed.append((m, m.head.weight.detach().clone())),
    )
    return model, trajectory, handed


def test_ema_model_is_validated_and_handed_over_and_holds_the_average():
    decay = 0.5
    model, trajectory, handed = _tiny_run(decay)
    expected = trajectory[0]  # on_step sees the weights after each update
    for weights in trajectory[1:]:
        expected = decay * expected + (1 - decay) * weights
    (m0, _), (m1, w1) = handed
    assert m1 is not model and m0 is m1
    assert torch.allclose(w1, expected, atol=1e-6)
    assert not torch.allclose(w1, model.head.weight)
    plain, _, plain_handed = _tiny_run(0.0)
    assert plain_handed[-1][0] is plain and torch.equal(plain.head.weight, model.head.weight)
