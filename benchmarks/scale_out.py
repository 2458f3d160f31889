"""Scale-out on this machine: the cost of data parallelism, and bf16 against fp32.

1. DDP overhead: one epoch of the default model and batch on the first ``--samples``
   training texts, as 1 process x N threads against N processes x 1 thread (N = the
   machine's cores), both started by torchrun; training samples/s of each and the
   ratio (target on 2 cores: >= 0.8x; the point of nproc on a CPU is correctness).
2. Precision: the default schedule (params.yaml's train section) on the whole train
   split, in fp32 and in bf16 (autocast); samples/s, the ratio bf16 / fp32, and the
   validation accuracy each reaches (selected epoch). On a GPU (``--device cuda``)
   the same comparison; fp16 is added there.

Run from the repository root after `dvc repro` (it reads data/tokenized and
data/tokenizer). Writes benchmarks/results/scale_out.json; with ``--doc docs/scale-out.md``
also the table between ``<!-- scale-out:start -->`` and ``<!-- scale-out:end -->``.

    python benchmarks/scale_out.py [--samples 3200] [--device cpu] [--doc docs/scale-out.md]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from scratchformer.config import load_params
from scratchformer.data.tokenized_split import TokenizedSplit, read_class_names, read_tokenized
from scratchformer.device import pick_device
from scratchformer.files import write_json
from scratchformer.model.classifier import TransformerClassifier
from scratchformer.render import markdown
from scratchformer.train import distributed
from scratchformer.train.classify import fit, seed_everything
from scratchformer.train.loop import Loop
from scratchformer.train.objective import Classification
from scratchformer.train.optim import Settings

OUT = Path("benchmarks/results/scale_out.json")
TOKENIZED = Path("data/tokenized")


def build(params, vocab: int) -> TransformerClassifier:
    seed_everything(params.seed)
    config = params.model.for_classes(read_class_names(TOKENIZED))
    return TransformerClassifier(config, vocab)


def vocab_size() -> int:
    from scratchformer.data.tokenization import load_tokenizer

    return len(load_tokenizer("data/tokenizer"))


def worker(samples: int, out: Path) -> None:
    """One rank of part 1: time one epoch of the training loop; rank 0 writes samples/s."""
    world = distributed.init("cpu")
    params = load_params("params.yaml")
    full = read_tokenized(TOKENIZED / "train")
    split = TokenizedSplit.from_sequences([full.sequence(i) for i in range(samples)], full.labels[:samples])
    steps = math.ceil(samples / params.train.batch_size)
    loop = Loop(
        Classification(build(params, vocab_size())),
        dataclasses.replace(Settings.training(params.train), epochs=1, sparse_ngrams=False),  # DDP: dense tables
        params.seed,
        steps,
        torch.device("cpu"),
        world,
    )
    start = time.perf_counter()
    loop.run_epoch(split)
    seconds = time.perf_counter() - start
    distributed.shutdown()
    if world.main:
        out.write_text(json.dumps({"samples_per_s": samples / seconds, "threads": torch.get_num_threads()}))


def ddp_overhead(samples: int) -> dict:
    cores = os.cpu_count() or 1
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for nproc, threads in ((1, cores), (cores, 1)):
            out = Path(tmp) / f"{nproc}.json"
            env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
            cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]
            cmd += [__file__, "--worker", str(out), "--samples", str(samples)]
            subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            rows[f"{nproc} x {threads}"] = json.loads(out.read_text())["samples_per_s"]
    one, many = rows[f"1 x {cores}"], rows[f"{cores} x 1"]
    print(f"1. DDP on {cores} cores, one epoch of {samples} training texts (samples/s)")
    for name, value in rows.items():
        print(f"   {name} (processes x threads) {value:8.1f}/s")
    print(f"   ratio {cores} processes / 1 process: {many / one:.2f}x")
    return {"samples": samples, "cores": cores, "samples_per_s": rows, "ratio": round(many / one, 3)}


def precision_comparison(device_name: str) -> dict:
    params = load_params("params.yaml")
    device = pick_device(device_name)
    train, validation = read_tokenized(TOKENIZED / "train"), read_tokenized(TOKENIZED / "validation")
    precisions = ["fp32", "bf16"] + (["fp16"] if device.type == "cuda" else [])
    rows = {}
    for precision in precisions:
        config = dataclasses.replace(params.train, precision=precision)
        model = build(params, vocab_size())
        start = time.perf_counter()
        history = fit(model, train, validation, config, params.seed, device)
        seconds = time.perf_counter() - start
        rows[precision] = {
            "samples_per_s": round(config.epochs * len(train) / seconds, 1),
            "seconds": round(seconds, 1),
            "val_accuracy": history.best["val_accuracy"],
        }
    base = rows["fp32"]["samples_per_s"]
    print(f"2. precision on {device}, the default schedule ({params.train.epochs} epochs, {len(train)} texts)")
    for name, row in rows.items():
        ratio = row["samples_per_s"] / base
        row["ratio"] = round(ratio, 3)
        print(
            f"   {name}: {row['samples_per_s']:8.1f}/s  ratio {ratio:.2f}x  {row['seconds']:.0f} s  "
            f"val acc {row['val_accuracy']:.4f}"
        )
    return {"device": str(device), "epochs": params.train.epochs, "rows": rows}


def doc_block(result: dict) -> str:
    d, p = result["ddp"], result["precision"]
    cores = d["cores"]
    lines = [
        f"Measured by `benchmarks/scale_out.py` on {result['cpus']} {result['machine']} CPU cores, "
        f"torch {result['torch']}.",
        "",
    ]
    one, ddp = d["samples_per_s"][f"1 x {cores}"], d["samples_per_s"][f"{cores} x 1"]
    rows = [
        [f"1 process x {cores} threads, one epoch of {d['samples']} texts", f"{one:.0f}", "1.00x", ""],
        [f"{cores} processes x 1 thread (DDP, gloo), same data", f"{ddp:.0f}", f"{d['ratio']:.2f}x", ""],
    ]
    for name, row in p["rows"].items():
        label = f"{name} on {p['device']}, default schedule ({p['epochs']} epochs)"
        rows.append([label, f"{row['samples_per_s']:.0f}", f"{row['ratio']:.2f}x", f"{row['val_accuracy']:.4f}"])
    lines.append(markdown.table(["run", "samples/s", "ratio", "validation accuracy"], rows))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=3200)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--doc", type=Path, help="write the table into this page (docs/scale-out.md)")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.samples, args.worker)
    result = {
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "torch": torch.__version__,
        "ddp": ddp_overhead(args.samples),
        "precision": precision_comparison(args.device),
    }
    write_json(OUT, result)
    if args.doc:
        text = args.doc.read_text(encoding="utf-8")
        args.doc.write_text(markdown.replace_block(text, "scale-out", doc_block(result)), encoding="utf-8")


if __name__ == "__main__":
    main()
