"""Does ``scratchformer predict`` stay flat in memory as its input grows? 10k and 100k lines.

Builds a model of the default params' size with random weights (answers do not matter,
only the work does) and synthetic review-length texts drawn from the tokenizer's CJK
characters, then pipes each input file through ``python -m scratchformer predict`` in a
fresh process, started by a slim probe process whose only child it is, so that
``RUSAGE_CHILDREN`` is predict's own peak RSS. Prints lines/s and peak RSS per size, and the growth
ratios against the smallest size measured in the same run: a streaming predict keeps
the memory ratio near 1 while the lines grow 10x.

    python benchmarks/predict_stream.py --tokenizer data/tokenizer
    python benchmarks/predict_stream.py --tokenizer path/to/bert-base-chinese --sizes 10000 100000
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def write_model(folder: Path, tokenizer_name: str) -> tuple[Path, Path, list[str]]:
    """A randomly initialised classifier of params.yaml's model size and its tokenizer, under ``folder``;
    also the tokenizer's vocabulary."""
    import torch

    from scratchformer.config import load_params
    from scratchformer.data.tokenization import load_tokenizer, save_tokenizer
    from scratchformer.model.checkpoint import save_checkpoint
    from scratchformer.model.classifier import TransformerClassifier

    params = load_params(ROOT / "params.yaml")
    tokenizer = load_tokenizer(tokenizer_name)
    save_tokenizer(tokenizer, folder / "tokenizer")
    torch.manual_seed(0)
    names = ["negative", "positive"]  # ChnSentiCorp's two classes
    config = params.model.for_classes(names)
    model = TransformerClassifier(config, len(tokenizer), tokenizer.pad_token_id)
    save_checkpoint(folder / "model.pt", model, tokenizer_max_len=params.tokenizer.max_len, class_names=names)
    return folder / "model.pt", folder / "tokenizer", list(tokenizer.get_vocab())


def write_lines(path: Path, n: int, alphabet: list[str], seed: int = 0) -> None:
    """``n`` texts, one a line, of log-normal length (median ~70 characters, like ChnSentiCorp's reviews)."""
    rng = np.random.default_rng(seed)
    lengths = np.clip(rng.lognormal(np.log(70), 0.7, n).astype(np.int64), 4, 600)
    chars = np.array(alphabet)[rng.integers(0, len(alphabet), int(lengths.sum()))]
    starts = np.concatenate([[0], np.cumsum(lengths)])
    with path.open("w", encoding="utf-8") as f:
        for a, b in itertools.pairwise(starts):
            f.write("".join(chars[a:b]) + "\n")


def measure(command: list[str], stdin: Path, env: dict) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of ``command`` reading ``stdin``, its output thrown away.

    A slim probe process starts the command: a child's peak RSS counts what it held
    before its exec too, so forked straight from this process (torch, the model, the
    texts) it would carry this process's size into the measurement.
    """
    probe = [sys.executable, __file__, "--measure", "--", *command]
    with stdin.open("rb") as f:
        out = subprocess.run(probe, stdin=f, env=env, check=True, capture_output=True, text=True).stdout
    seconds, peak = out.split()
    return float(seconds), int(peak)


def measure_child(command: list[str]) -> None:
    """Run ``command`` on this process's stdin; print its wall seconds and peak RSS (it is the only child)."""
    start = time.perf_counter()
    result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({result.returncode}): {result.stderr.decode()[-2000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    print(seconds, peak)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizer", default="data/tokenizer", help="a local tokenizer folder (vocab.txt …)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--batch-size", type=int, help="predict's --batch-size (default: predict's own)")
    parser.add_argument("--threads", type=int, help="OMP_NUM_THREADS for predict (default: torch's choice)")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("command", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        return measure_child(args.command)

    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1"}
    if args.threads:  # on a shared machine, more threads than free cores slow torch down many times over
        env["OMP_NUM_THREADS"] = str(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model, tokenizer, vocab = write_model(work, args.tokenizer)
        alphabet = [t for t in vocab if len(t) == 1 and "\u4e00" <= t <= "\u9fff"]  # CJK characters it knows
        command = [sys.executable, "-m", "scratchformer", "predict", "--model", str(model)]
        command += ["--tokenizer", str(tokenizer), "--device", "cpu"]
        if args.batch_size:
            command += ["--batch-size", str(args.batch_size)]
        threads = args.threads or "torch's default"
        print(
            f"model: params.yaml's size, vocabulary {len(vocab)}; batch size {args.batch_size or 'default'}; "
            f"threads {threads}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
        )
        rows = []
        for n in args.sizes:
            lines = work / f"in-{n}.txt"
            write_lines(lines, n, alphabet)
            seconds, peak = measure(command, lines, env)
            rows.append((n, seconds, peak))
            print(f"{n:>9,} lines: {seconds:7.1f} s, {n / seconds:7.0f} lines/s, peak RSS {peak / 2**20:6.0f} MiB")
    n0, s0, p0 = rows[0]
    for n, seconds, peak in rows[1:]:
        print(
            f"{n:,} / {n0:,} lines ({n / n0:.0f}x): peak RSS x{peak / p0:.2f}, time x{seconds / s0:.2f}, "
            f"lines/s x{(n / seconds) / (n0 / s0):.2f}"
        )


if __name__ == "__main__":
    main()
