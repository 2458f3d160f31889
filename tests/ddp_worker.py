"""One rank of a data-parallel training run, for tests/train/test_distributed.py (started through torchrun).

    python -m ddp_worker OUT [--fail-rank R] [--precision P] [--log-every N] [--adversarial EPS] [--mlm]

Trains a tiny classifier on a learnable synthetic split with ``fit``; rank 0
saves the final weights and the step records to OUT. With ``--fail-rank R``,
rank R raises in the middle of the first epoch, while the others wait for it
inside a gradient all-reduce.
"""

from __future__ import annotations

import argparse
import sys

import torch
from torch.distributed.elastic.multiprocessing.errors import record

from scratchformer.config import ModelConfig, TrainConfig
from scratchformer.data.tokenized_split import TokenizedSplit
from scratchformer.model.classifier import TransformerClassifier
from scratchformer.train import distributed
from scratchformer.train.classify import fit
from scratchformer.train.recording import Recorder


def split(n: int, seed: int) -> TokenizedSplit:
    """``n`` sequences labelled by whether token 1 or token 2 is more frequent."""
    g = torch.Generator().manual_seed(seed)
    ids, labels = [], []
    for _ in range(n):
        x = torch.randint(1, 3, (int(torch.randint(4, 12, (1,), generator=g)),), generator=g)
        ids.append(x)
        labels.append(int((x == 1).sum() > (x == 2).sum()))
    return TokenizedSplit.from_sequences(ids, labels)


def train(
    world: distributed.World,
    fail_rank: int | None = None,
    precision: str = "fp32",
    log_every: int = 1,
    adversarial: float = 0.0,
) -> dict:
    torch.manual_seed(0)
    model = TransformerClassifier(
        ModelConfig(num_classes=2, d_model=16, n_heads=2, n_layers=1, ff_dim=32, max_len=16, dropout=0.0), 30
    )
    records = []

    class Steps(Recorder):
        def step(self, record: dict) -> None:
            records.append(record)
            if world.rank == fail_rank and record["step"] == 2:
                raise RuntimeError(f"rank {world.rank} was told to fail")

    # 100 rows in batches of 12: the last batch (4 rows) splits unevenly over 3 ranks.
    # DDP all-reduces dense gradients only: the table trains dense, as train.nproc > 1 requires.
    config = TrainConfig(
        epochs=2,
        batch_size=12,
        lr=3e-3,
        precision=precision,
        log_every=log_every,
        sparse_ngrams=False,
        adversarial=adversarial,
    )
    fit(model, split(100, 0), split(40, 1), config, 0, torch.device("cpu"), recorder=Steps(), world=world)
    return {"weights": model.state_dict(), "steps": records}


def pretrain_mlm(world: distributed.World) -> dict:
    """Two epochs of masked-language-model pretraining on counting sequences; the summary and weights."""
    from scratchformer.config import PretrainConfig
    from scratchformer.train.pretraining import pretrain

    g = torch.Generator().manual_seed(0)
    starts = torch.randint(0, 20, (90,), generator=g)
    ids = [torch.cat([torch.tensor([2]), (torch.arange(10) + s) % 20 + 5, torch.tensor([3])]) for s in starts]
    corpus = TokenizedSplit.from_sequences(ids, [0] * len(ids))
    torch.manual_seed(0)
    model = TransformerClassifier(
        ModelConfig(num_classes=2, d_model=16, n_heads=2, n_layers=1, ff_dim=32, max_len=16, dropout=0.0), 30
    )
    config = PretrainConfig(epochs=2, batch_size=16, lr=5e-3)
    metrics = pretrain(model, corpus, config, [0, 2, 3], 4, 0, torch.device("cpu"), world)
    return {"metrics": metrics, "weights": model.state_dict()}


@record
def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--fail-rank", type=int)
    parser.add_argument("--precision", default="fp32")
    parser.add_argument("--log-every", type=int, default=1)
    parser.add_argument("--adversarial", type=float, default=0.0, help="train.adversarial (ε)")
    parser.add_argument("--mlm", action="store_true", help="pretrain with the masked-LM objective instead")
    args = parser.parse_args()
    world = distributed.init("cpu")
    try:
        result = (
            pretrain_mlm(world)
            if args.mlm
            else train(world, args.fail_rank, args.precision, args.log_every, args.adversarial)
        )
    finally:
        distributed.shutdown()
    if world.main:
        torch.save(result, args.out)


if __name__ == "__main__":
    sys.exit(main())
