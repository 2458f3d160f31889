"""Training throughput of the hand-written encoder against PyTorch's own, same run.

1. Encoder: our TransformerClassifier vs the same model whose blocks are
   ``torch.nn.TransformerEncoderLayer`` (same sizes, Pre-LN, GELU, dropout; same
   embedding, positions, pooling and head), on identical full-length batches at
   T = 64 and 256. Prints samples/s and the ratio ours / PyTorch (target >= 0.9).
2. Padding: on the real training texts at max_len 256, batches padded to max_len vs
   to their own longest text vs length-bucketed. Prints samples/s and the ratios
   against fixed padding (target >= 1.5x).
3. Optimizer: one AdamW step on an n-gram-table-sized parameter (262,145 x 64), the
   default multi-tensor update vs the fused kernel training uses. Prints the ratio.
4. Precision x device: our encoder at T = 64 and 256 on each device asked for
   (``--devices cpu cuda``; default: cpu, and cuda when present), in fp32, bf16 and (CUDA
   only) fp16 autocast, as the training loop runs it. Prints samples/s and the ratio
   to fp32 on the same device.
5. Dropout masks: ``nn.Dropout`` (``bernoulli_``) vs ``model.dropout_draw: uniform``
   (``rand_like >= p``) on an attention-weights-sized tensor at 128 tokens, forward and
   backward. Prints the ratio.

Run from the repository root after `dvc repro` (part 2 reads data/raw and
data/tokenizer; it is skipped with a note when they are missing):

    python benchmarks/encoder_throughput.py [--steps 30] [--batch 32]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from scratchformer.config import ModelConfig
from scratchformer.data.tokenized_split import TokenizedSplit, batches
from scratchformer.model.classifier import TransformerClassifier
from scratchformer.model.dropout import dropout
from scratchformer.train.optim import adamw, autocast, parameter_groups

VOCAB = 21128


class TorchEncoderClassifier(TransformerClassifier):
    """Our classifier with its blocks swapped for nn.TransformerEncoderLayer (reference only)."""

    def __init__(self, config: ModelConfig, vocab_size: int) -> None:
        super().__init__(config, vocab_size)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(
                config.d_model,
                config.n_heads,
                config.ff_dim,
                config.dropout,
                activation="gelu",
                batch_first=True,
                norm_first=True,
            )
            for _ in range(config.n_layers)
        )

    def forward(self, input_ids):
        pad = input_ids == self.pad_id
        x = self.dropout(self.position(self.embed(input_ids)))
        for block in self.blocks:
            x = block(x, src_key_padding_mask=pad)
        return self.head(self.pool(self.ln_f(x), pad)[0])


def samples_per_second(
    model: nn.Module,
    batch_list: list[tuple],
    warmup: int = 3,
    device: torch.device | None = None,
    precision: str = "fp32",
) -> float:
    device = device or torch.device("cpu")
    model.to(device).train()
    optimizer = adamw(parameter_groups([model], 0.0), 1e-3, device)  # the optimizer training uses
    scaler = torch.amp.GradScaler("cuda") if precision == "fp16" else None
    batch_list = [(ids.to(device), labels.to(device)) for ids, labels in batch_list]

    def step(ids, labels):
        with autocast(device, precision):
            loss = F.cross_entropy(model(ids).float(), labels)
        optimizer.zero_grad(set_to_none=True)
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()

    for ids, labels in batch_list[:warmup]:
        step(ids, labels)
    synchronize(device)
    start = time.perf_counter()
    n = 0
    for ids, labels in batch_list[warmup:]:
        step(ids, labels)
        n += len(labels)
    synchronize(device)
    return n / (time.perf_counter() - start)


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (CUDA runs asynchronously), so the clock measures it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def full_length_batches(n: int, batch: int, T: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``n`` batches of random token ids with no padding, the same every run."""
    g = torch.Generator().manual_seed(0)
    return [
        (torch.randint(1, VOCAB, (batch, T), generator=g), torch.randint(0, 2, (batch,), generator=g)) for _ in range(n)
    ]


def encoder_comparison(steps: int, batch: int) -> None:
    print("1. hand-written encoder vs nn.TransformerEncoderLayer (training samples/s, full-length batches)")
    for T in (64, 256):
        config = ModelConfig(max_len=T, num_classes=2)
        data = full_length_batches(steps + 3, batch, T)
        torch.manual_seed(0)
        ours = samples_per_second(TransformerClassifier(config, VOCAB), data)
        torch.manual_seed(0)
        reference = samples_per_second(TorchEncoderClassifier(config, VOCAB), data)
        print(f"   T={T:4d}: ours {ours:8.1f}/s  pytorch {reference:8.1f}/s  ratio {ours / reference:.2f}x")


def padding_comparison(steps: int, batch: int) -> None:
    raw, tok = Path("data/raw/train.parquet"), Path("data/tokenizer")
    if not raw.is_file() or not tok.is_dir():
        print("2. padding: skipped (run `dvc repro` first for data/raw and data/tokenizer)")
        return
    import pandas as pd

    from scratchformer.data.tokenization import encode, load_tokenizer

    max_len = 256
    texts = pd.read_parquet(raw)["text"].tolist()
    ids = encode(load_tokenizer(str(tok)), texts, max_len)["input_ids"]
    split = TokenizedSplit.from_sequences(ids, torch.zeros(len(ids), dtype=torch.long))
    config = ModelConfig(max_len=max_len, num_classes=2)
    dynamic = list(batches(split, batch, 0, torch.Generator().manual_seed(0)))[: steps + 3]
    fixed = [(F.pad(x, (0, max_len - x.size(1))), y) for x, y in dynamic]
    bucketed = list(batches(split, batch, 0, torch.Generator().manual_seed(0), bucket=True))[: steps + 3]
    print(f"2. real training texts at max_len {max_len} (training samples/s, our encoder)")
    results = {}
    for name, data in (("padded to max_len", fixed), ("padded per batch", dynamic), ("length-bucketed", bucketed)):
        torch.manual_seed(0)
        results[name] = samples_per_second(TransformerClassifier(config, VOCAB), data)
    base = results["padded to max_len"]
    for name, value in results.items():
        print(f"   {name:18s} {value:8.1f}/s  ratio {value / base:.2f}x")


def optimizer_comparison(steps: int) -> None:
    print("3. AdamW step on a 262,145 x 64 embedding table (steps/s)")
    results = {}
    for name, fused in (("multi-tensor", False), ("fused", True)):
        table = nn.Parameter(torch.randn(262_145, 64))
        table.grad = torch.randn_like(table)
        optimizer = torch.optim.AdamW([table], lr=1e-3, weight_decay=0.02, fused=fused)
        for _ in range(3):
            optimizer.step()
        start = time.perf_counter()
        for _ in range(steps):
            optimizer.step()
        results[name] = steps / (time.perf_counter() - start)
    for name, value in results.items():
        print(f"   {name:12s} {value:8.1f}/s  ratio {value / results['multi-tensor']:.2f}x")


def dropout_comparison(steps: int, batch: int) -> None:
    print(f"5. attention dropout on a (B, H, T, T) = ({batch}, 4, 128, 128) tensor, forward + backward (passes/s)")
    weights = torch.rand(batch, 4, 128, 128, requires_grad=True)
    results = {}
    for draw in ("bernoulli", "uniform"):
        layer = dropout(0.1, draw).train()  # nn.Dropout (bernoulli_) | UniformDropout (rand_like >= p)
        for _ in range(3):
            layer(weights).sum().backward()
        start = time.perf_counter()
        for _ in range(steps):
            layer(weights).sum().backward()
        results[draw] = steps / (time.perf_counter() - start)
    for name, value in results.items():
        print(f"   {name:12s} {value:8.1f}/s  ratio {value / results['bernoulli']:.2f}x")


def precision_comparison(steps: int, batch: int, devices: list[str]) -> None:
    print("4. precision x device (training samples/s of our encoder, full-length batches)")
    for name in devices:
        device = torch.device(name)
        precisions = ["fp32", "bf16"] + (["fp16"] if device.type == "cuda" else [])
        for T in (64, 256):
            config = ModelConfig(max_len=T, num_classes=2)
            data = full_length_batches(steps + 3, batch, T)
            results = {}
            for precision in precisions:
                torch.manual_seed(0)
                results[precision] = samples_per_second(
                    TransformerClassifier(config, VOCAB), data, device=device, precision=precision
                )
            line = "  ".join(f"{p} {v:8.1f}/s ({v / results['fp32']:.2f}x)" for p, v in results.items())
            print(f"   {name:6s} T={T:4d}: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch", type=int, default=32)
    default_devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    parser.add_argument("--devices", nargs="+", default=default_devices, help="devices for part 4")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    encoder_comparison(args.steps, args.batch)
    padding_comparison(args.steps, args.batch)
    optimizer_comparison(args.steps)
    precision_comparison(args.steps, args.batch, args.devices)
    dropout_comparison(args.steps, args.batch)


if __name__ == "__main__":
    main()
