"""How download + tokenize and one epoch's data loading grow with the corpus: 10k, 100k, 1M reviews.

Writes synthetic one-file corpora (``label,review`` CSV, three classes) sampled from a
small distribution built here — review lengths like ChnSentiCorp's (log-normal, median
~70 characters), characters from a fixed set of common ones, a few class-specific
words — and a WordPiece vocabulary over those characters, so nothing is downloaded.
Each measured step runs in a fresh process (the stage scripts themselves for download
and tokenize), so its wall time and peak RSS are its own. Prints a table with the
growth ratio per 10x rows; ``--doc docs/corpus.md`` writes that table into the page
between ``<!-- scale:start -->`` and ``<!-- scale:end -->``; the numbers also go to
benchmarks/results/scale.json.

    python benchmarks/scale.py                     # 10k, 100k, 1M
    python benchmarks/scale.py --sizes 10000 100000 --doc docs/corpus.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import yaml

from scratchformer.render import markdown

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "scale.json"
# 3,500 common CJK characters stand in for the corpus alphabet (one code point block).
ALPHABET = np.arange(0x4E00, 0x4E00 + 3500, dtype=np.uint32)
PUNCTUATION = np.array([ord(c) for c in "，。！？"], dtype=np.uint32)
CLASSES = {"差评": "很差失望糟糕太脏", "中评": "一般还行凑合普通", "好评": "很好不错满意干净"}
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def write_corpus(folder: Path, n: int, seed: int = 0) -> Path:
    """``folder``/reviews.csv with ``n`` rows and ``folder``/vocab/ (a BERT-style tokenizer)."""
    rng = np.random.default_rng(seed)
    lengths = np.clip(rng.lognormal(np.log(70), 0.7, n).astype(np.int64), 4, 600)  # characters per review
    points = rng.choice(ALPHABET, int(lengths.sum()))  # every review's characters, one after another
    # Punctuation at ~1 in 12 characters, as in real reviews.
    punct = rng.random(len(points)) < 1 / 12
    points[punct] = rng.choice(PUNCTUATION, int(punct.sum()))
    labels = rng.integers(0, len(CLASSES), n)
    words = [np.array([ord(c) for c in w], dtype=np.uint32) for w in CLASSES.values()]
    starts = np.cumsum(lengths) - lengths
    for k, w in enumerate(words):  # each review carries two characters of its class's words
        rows = np.flatnonzero(labels == k)
        for _ in range(2):
            at = starts[rows] + rng.integers(0, lengths[rows] - 1)
            points[at] = rng.choice(w, len(rows))
    raw = points.astype("<u4").tobytes()
    texts = [raw[4 * a : 4 * (a + m)].decode("utf-32-le") for a, m in zip(starts, lengths, strict=True)]
    names = np.array(list(CLASSES))
    (folder / "corpus").mkdir(parents=True)
    table = pa.table({"label": pa.array(names[labels]), "review": pa.array(texts)})
    pacsv.write_csv(table, folder / "corpus" / "reviews.csv")
    vocab = folder / "vocab"
    vocab.mkdir()
    chars = [chr(c) for c in ALPHABET] + [chr(c) for c in PUNCTUATION]
    (vocab / "vocab.txt").write_text("\n".join(SPECIAL + chars) + "\n", encoding="utf-8")
    (vocab / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "BertTokenizer"}), encoding="utf-8")
    (vocab / "config.json").write_text(json.dumps({"model_type": "bert"}), encoding="utf-8")
    params = {
        "data": {"source": str(folder / "corpus"), "split": [0.8, 0.1, 0.1]},
        "tokenizer": {"name": str(vocab), "max_len": 64},
    }
    (folder / "params.yaml").write_text(yaml.safe_dump(params, allow_unicode=True), encoding="utf-8")
    return folder


def measured(command: list[str], env: dict) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and peak RSS (bytes) of ``command``, run through a fresh measuring process."""
    probe = [sys.executable, __file__, "--measure", "--", *command]
    out = subprocess.run(probe, cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    return result["seconds"], result["cpu_seconds"], result["peak_rss"]


def measure_child(command: list[str]) -> None:
    """Run ``command``; print its wall time and peak RSS (the only child: RUSAGE_CHILDREN is its own)."""
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak = usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    print(json.dumps({"seconds": seconds, "cpu_seconds": usage.ru_utime + usage.ru_stime, "peak_rss": peak}))


def load_one_epoch(tokenized: str) -> None:
    """Read the flat train split and draw every batch of one shuffled epoch, as training does."""
    import torch

    from scratchformer.data.tokenized_split import batches, read_tokenized

    split = read_tokenized(Path(tokenized) / "train")
    tokens = 0
    for ids, _ in batches(split, 32, 0, torch.Generator().manual_seed(0)):
        tokens += ids.numel()
    print(f"{len(split)} rows, {tokens} padded ids")


def run_size(n: int, work: Path) -> dict:
    folder = write_corpus(work / f"n{n}", n)
    env = {**os.environ, "HF_DATASETS_CACHE": str(folder / "hf-cache"), "HF_HUB_OFFLINE": "1"}
    params = ["--params", str(folder / "params.yaml")]
    inputs = folder / "inputs"
    inputs.mkdir()
    (inputs / "corpus.json").write_text("{}")
    (inputs / "tokenizer.json").write_text("{}")
    download = [sys.executable, "-m", "stages.download", *params, "--inputs", str(inputs / "corpus.json")]
    download += ["--raw", str(folder / "raw"), "--metrics", str(folder / "data.json")]
    download += ["--label-issues", str(folder / "label_issues")]
    tokenize = [sys.executable, "-m", "stages.tokenize", *params, "--inputs", str(inputs / "tokenizer.json")]
    tokenize += ["--raw", str(folder / "raw"), "--tokenized", str(folder / "tokenized")]
    tokenize += ["--tokenizer", str(folder / "tokenizer")]
    load = os.getloadavg()[0]
    d_s, d_cpu, d_rss = measured(download, env)
    t_s, t_cpu, t_rss = measured(tokenize, env)
    l_s, _, l_rss = measured([sys.executable, __file__, "--load-epoch", str(folder / "tokenized")], env)
    return {
        "rows": n,
        "load_average": round(load, 1),  # other work on the machine slows every step
        "ingest_seconds": round(d_s + t_s, 1),
        "ingest_cpu_seconds": round(d_cpu + t_cpu, 1),
        "ingest_peak_rss_mib": round(max(d_rss, t_rss) / 2**20),
        "download_seconds": round(d_s, 1),
        "tokenize_seconds": round(t_s, 1),
        "epoch_load_seconds": round(l_s, 1),
        "epoch_load_peak_rss_mib": round(l_rss / 2**20),
    }


def table(results: list[dict]) -> str:
    header = ["reviews", "load average", "download + tokenize, s", "CPU s", "peak RSS, MiB", "x time", "x CPU"]
    header += ["x memory", "epoch of batches, s", "peak RSS, MiB", "x time", "x memory"]
    rows = []
    for i, r in enumerate(results):
        prev = results[i - 1] if i else None

        def ratio(key: str, r=r, prev=prev) -> str:
            return f"{r[key] / prev[key]:.1f}" if prev and prev[key] else "—"

        rows.append(
            [
                f"{r['rows']:,}",
                r["load_average"],
                r["ingest_seconds"],
                r["ingest_cpu_seconds"],
                r["ingest_peak_rss_mib"],
                ratio("ingest_seconds"),
                ratio("ingest_cpu_seconds"),
                ratio("ingest_peak_rss_mib"),
                r["epoch_load_seconds"],
                r["epoch_load_peak_rss_mib"],
                ratio("epoch_load_seconds"),
                ratio("epoch_load_peak_rss_mib"),
            ]
        )
    return markdown.table(header, rows)


def write_doc(path: Path, text: str) -> None:
    try:
        path.write_text(markdown.replace_block(path.read_text(encoding="utf-8"), "scale", text), encoding="utf-8")
    except ValueError as err:
        raise SystemExit(f"{path}: {err}") from err


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--doc", type=Path, help="write the table into this page (docs/corpus.md)")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--load-epoch", help=argparse.SUPPRESS)
    parser.add_argument("command", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        return measure_child(args.command)
    if args.load_epoch:
        return load_one_epoch(args.load_epoch)
    results = []
    with tempfile.TemporaryDirectory(prefix="scale.") as work:
        for n in args.sizes:
            results.append(run_size(n, Path(work)))
            print(json.dumps(results[-1]), flush=True)
    text = table(results)
    cpus = os.cpu_count()
    text += (
        f"\n\nMeasured by `benchmarks/scale.py` on {cpus} {platform.machine()} CPU cores; load average: of the "
        "machine when the row started (other work slows the wall time, less the CPU time); "
        "x = growth against the row above (10x the reviews)."
    )
    print(text)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"cpus": cpus, "results": results}, indent=2) + "\n", encoding="utf-8")
    if args.doc:
        write_doc(args.doc, text)


if __name__ == "__main__":
    main()
