"""Data parallelism, mixed precision and host-sync-free logging of the shared training loop."""

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from fixtures import tiny_config

from scratchformer.config import TrainConfig
from scratchformer.model.attention import causal_mask, scaled_dot_product_attention
from scratchformer.model.classifier import TransformerClassifier
from scratchformer.train.classify import fit
from scratchformer.train.distributed import ALONE, World
from scratchformer.train.loop import Loop
from scratchformer.train.optim import autocast

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(Path(__file__).parents[1]))
import ddp_worker  # noqa: E402  (tests/ddp_worker.py: one rank of a run, started through torchrun)


def test_the_ranks_shares_cover_the_global_batch_once_in_order():
    batch = torch.arange(10)
    for size in (1, 2, 3, 4):
        shares = [World(rank, size).shard(batch) for rank in range(size)]
        assert torch.equal(torch.cat(shares), batch)
        assert max(map(len, shares)) - min(map(len, shares)) <= 1


def launch(n: int, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    code = f"from scratchformer.train.distributed import launch; launch({n}, 'ddp_worker', {list(args)!r})"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize(("n", "log_every", "adversarial"), [(2, 1, 0.0), (3, 4, 0.0), (2, 1, 0.5)])
def test_n_processes_train_like_one(tmp_path, n, log_every, adversarial):
    # 100 texts in batches of 12 over n ranks (3 ranks split the last batch of 4 as 2/1/1);
    # with log_every > 1 the ranks sum several steps' values in one collective. Adversarial
    # training takes a gradient inside the forward pass, each rank on its own rows.
    one = ddp_worker.train(ALONE, adversarial=adversarial)
    result = launch(n, str(tmp_path / "out.pt"), "--log-every", str(log_every), "--adversarial", str(adversarial))
    assert result.returncode == 0, result.stderr
    many = torch.load(tmp_path / "out.pt")
    assert len(many["steps"]) == len(one["steps"]) == 18
    for a, b in zip(one["steps"], many["steps"], strict=True):
        assert b["step"] == a["step"]
        assert b["loss"] == pytest.approx(a["loss"], abs=1e-5)  # the loss of the whole global batch
        assert b["grad_norm"] == pytest.approx(a["grad_norm"], rel=1e-3)  # the averaged gradient
    diff = max((many["weights"][k] - one["weights"][k]).abs().max().item() for k in one["weights"])
    assert diff < 5e-3, diff  # float rounding, amplified a little by Adam's normalisation


@pytest.mark.slow
def test_two_processes_pretrain_like_one(tmp_path):
    # The masks are drawn on the global batch, the loss averaged over all chosen tokens of all ranks,
    # and the classifier's unused head does not stall DDP.
    one = ddp_worker.pretrain_mlm(ALONE)
    result = launch(2, str(tmp_path / "out.pt"), "--mlm")
    assert result.returncode == 0, result.stderr
    two = torch.load(tmp_path / "out.pt")
    assert two["metrics"]["masked_accuracy"] == one["metrics"]["masked_accuracy"]
    assert two["metrics"]["mlm_loss"] == pytest.approx(one["metrics"]["mlm_loss"], abs=1e-4)
    diff = max((two["weights"][k] - one["weights"][k]).abs().max().item() for k in one["weights"])
    assert diff < 5e-3, diff


@pytest.mark.slow
def test_a_failing_rank_fails_the_run_with_its_error_and_leaves_no_process(tmp_path):
    marker = str(tmp_path / "failing-run.pt")  # in every rank's command line
    result = launch(2, marker, "--fail-rank", "1")
    assert result.returncode != 0
    assert "rank 1 of 2 failed" in result.stderr and "rank 1 was told to fail" in result.stderr
    left = [p for p in Path("/proc").glob("[0-9]*") if _cmdline(p).find(marker) >= 0]
    assert not left, "a rank outlived the failed run"
    assert not Path(marker).exists()  # rank 0 never wrote


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


# --- mixed precision -------------------------------------------------------------------------------


def test_bf16_attention_matches_pytorch_within_bf16_rounding():
    # bf16 keeps 8 significant bits: one rounding of a value of size ~1 moves it by up to 2^-8 ≈ 0.004.
    # Inputs, scores and the product with v are each rounded once, so a few units of 2^-8 is the bound.
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 4, 16, 8, generator=g) for _ in range(3))
    pad = torch.zeros(2, 1, 1, 16, dtype=torch.bool)
    pad[0, ..., 10:] = True
    for mask in (None, pad, causal_mask(16)):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            ours, weights = scaled_dot_product_attention(q, k, v, mask)
        reference = F.scaled_dot_product_attention(q, k, v, attn_mask=None if mask is None else ~mask)
        assert weights.dtype == torch.float32  # the softmax ran in fp32
        assert torch.allclose(weights.sum(-1), torch.ones(()), atol=1e-6)
        assert (ours.float() - reference).abs().max().item() < 4 * 2**-8


def test_bf16_forward_with_padding_and_causal_masks_stays_finite():
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 2, 8, 4, generator=g) * 30 for _ in range(3))  # large scores
    blocked = torch.ones(2, 1, 1, 8, dtype=torch.bool)  # every key blocked: the all-PAD row
    with torch.autocast("cpu", dtype=torch.bfloat16):
        for mask in (blocked, blocked | causal_mask(8), causal_mask(8)):
            out, weights = scaled_dot_product_attention(q, k, v, mask)
            assert torch.isfinite(out).all() and torch.isfinite(weights).all()
    model = TransformerClassifier(tiny_config(n_layers=2, dropout=0.1), 30).eval()
    ids = torch.randint(1, 30, (3, 12), generator=g)
    ids[0, 5:] = 0  # padded
    ids[1, :] = 0  # all PAD
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        assert torch.isfinite(model(ids)).all()


def test_a_short_bf16_run_learns():
    split = ddp_worker.split(96, 0)
    model = ddp_worker_model()
    config = TrainConfig(epochs=4, batch_size=16, lr=5e-3, precision="bf16", sparse_ngrams=False)
    history = fit(model, split, split, config, 0, torch.device("cpu"))
    losses = [r["loss"] for r in history.steps]
    assert all(math.isfinite(x) for x in losses)
    assert sum(losses[-6:]) / 6 < 0.8 * sum(losses[:6]) / 6
    assert history.best["val_accuracy"] > 0.8


def ddp_worker_model():
    torch.manual_seed(0)
    return TransformerClassifier(tiny_config(), 30)


def test_fp16_needs_cuda_and_says_so():
    with pytest.raises(ValueError, match="fp16 needs CUDA"):
        autocast(torch.device("cpu"), "fp16")
    config = TrainConfig(epochs=1, batch_size=8, lr=1e-3, precision="fp16", sparse_ngrams=False)
    split = ddp_worker.split(16, 0)
    with pytest.raises(ValueError, match="on cpu use bf16 or fp32"):
        fit(ddp_worker_model(), split, split, config, 0, torch.device("cpu"))


# --- host syncs ------------------------------------------------------------------------------------


def test_logged_values_are_read_once_per_interval_and_equal_per_step_reads(monkeypatch):
    split = ddp_worker.split(100, 0)  # 7 steps per epoch at batch 16
    reads = []
    run_epoch, tolist, item = Loop.run_epoch, torch.Tensor.tolist, torch.Tensor.item

    def counting_epoch(self, *args, **kwargs):
        monkeypatch.setattr(torch.Tensor, "tolist", lambda t: reads.append("tolist") or tolist(t))
        monkeypatch.setattr(torch.Tensor, "item", lambda t: reads.append("item") or item(t))
        try:
            return run_epoch(self, *args, **kwargs)
        finally:
            monkeypatch.setattr(torch.Tensor, "tolist", tolist)
            monkeypatch.setattr(torch.Tensor, "item", item)

    monkeypatch.setattr(Loop, "run_epoch", counting_epoch)
    histories = {}
    for every in (1, 3):
        reads.clear()
        config = TrainConfig(epochs=1, batch_size=16, lr=1e-3, log_every=every, sparse_ngrams=False)
        histories[every] = fit(ddp_worker_model(), split, split, config, 0, torch.device("cpu"))
        assert reads == ["tolist"] * math.ceil(7 / every)  # no per-step .item(): one read per interval
    assert histories[3].steps == histories[1].steps  # the same numbers, read later
    assert histories[3].epochs == histories[1].epochs
