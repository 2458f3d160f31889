"""What ``torch.compile`` does to ours' training step at a recipe's sizes, and where the compiled step's time goes.

``benchmarks/peers.py`` finds ours slower compiled than eager on a CPU. This benchmark asks
why. It builds ours as peers.py does, trains it on the same real batches, and measures four
variants of the step: eager and compiled, each with the recipe's dropout on the attention
weights and with that dropout off (``attn_dropout.p = 0``; every other dropout stays).
The four rates come from the median of ``--repeats`` interleaved passes. Then one pass of
each mode, with the attention dropout on, runs under ``torch.profiler``; the compiled one
is compiled afresh with Inductor's kernel profiling on (not in the timed passes), so each
generated kernel shows under its own name. The operations that
took the most self time are listed in milliseconds per step.

It prints two kinds of ratio:

- compiled / eager, with and without the attention dropout: whether compiling pays;
- the step's rate without the attention dropout over its rate with it, eager and compiled:
  what that dropout costs in each mode. It masks a (B, H, T, T) tensor in every layer, the
  largest the step draws.

Run from the repository root (the data and tokenizer reachable, as for ``dvc repro``):

    python benchmarks/compile_cost.py [--recipe transformer] [--threads 2] [--steps 20] [--repeats 3]
    python benchmarks/compile_cost.py --tiny    # 2 steps of 4 texts: checks that it runs

Writes benchmarks/results/compile_cost.json.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import platform
import statistics
from pathlib import Path

import torch
import torch._inductor.config as inductor_config
from torch.profiler import ProfilerActivity, profile

from scratchformer.config import load_params
from scratchformer.files import write_json
from scratchformer.model.classifier import TransformerClassifier

HERE = Path(__file__).parent
OUT = Path("benchmarks/results/compile_cost.json")
_spec = importlib.util.spec_from_file_location("peers", HERE / "peers.py")
peers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peers)
MODES = ("eager", "compiled")


def build(config, vocab_size: int, pad_id: int, train, compiled: bool, attention_dropout: bool) -> peers.Contender:
    """Ours from seed 0 with training's optimizers; the attention's dropout off unless asked; compiled if asked."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = TransformerClassifier(config, vocab_size, pad_id)
    if not attention_dropout:
        for block in model.blocks:
            block.attn.attn_dropout.p = 0.0
    optimizers = peers.optimizers(model, train)
    return peers.Contender("ours", torch.compile(model) if compiled else model, optimizers)


def heaviest(contender: peers.Contender, timed: list, top: int) -> list[dict]:
    """The ``top`` operations (generated kernels by name) by self CPU time in one profiled pass, ms per step."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        contender.train_pass(timed)
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in events)
    return [
        {
            "name": e.key,
            "calls_per_step": round(e.count / len(timed), 2),
            "ms_per_step": round(e.self_cpu_time_total / 1000 / len(timed), 2),
            "share": round(e.self_cpu_time_total / total, 3),
        }
        for e in events[:top]
    ]


def run(args: argparse.Namespace) -> dict:
    torch.set_num_threads(args.threads)
    params = peers.recipe_params(load_params(args.params), args.recipe, args)
    data, vocab_size, pad_id, classes = peers.real_batches(params, args.warmup + args.steps)
    config = params.model.for_classes(classes)
    warm, timed = data[: args.warmup], data[args.warmup :]
    n = sum(len(y) for _, y in timed)
    rates, profiles = {}, {}
    for attention_dropout in (True, False):
        variant = "attention dropout" if attention_dropout else "no attention dropout"
        contenders = {
            mode: build(config, vocab_size, pad_id, params.train, mode == "compiled", attention_dropout)
            for mode in MODES
        }
        for c in contenders.values():
            c.train_pass(warm)  # compiles, for the compiled one
        for _ in range(args.repeats):
            for c in contenders.values():
                c.train_seconds.append(c.train_pass(timed))
        rates[variant] = {mode: round(n / statistics.median(c.train_seconds), 1) for mode, c in contenders.items()}
        if attention_dropout:
            profiles["eager"] = heaviest(contenders["eager"], timed, args.top)
            with _kernel_names():  # compiled again: the names are put in when the kernels are generated
                named = build(config, vocab_size, pad_id, params.train, True, attention_dropout)
                named.train_pass(warm)
                profiles["compiled"] = heaviest(named, timed, args.top)
        print(f"{variant:22s} " + "  ".join(f"{m} {r:7.1f} samples/s" for m, r in rates[variant].items()))
    record = {
        "recipe": args.recipe,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "steps": args.steps,
        "repeats": args.repeats,
        "batch_size": params.train.batch_size,
        "attention_dropout": config.dropout,
        "train_samples_per_s": rates,
        "compiled_over_eager": {v: round(r["compiled"] / r["eager"], 3) for v, r in rates.items()},
        "attention_dropout_cost": {
            mode: round(rates["no attention dropout"][mode] / rates["attention dropout"][mode], 3) for mode in MODES
        },
        "heaviest": profiles,
    }
    said = {
        "compiled / eager": record["compiled_over_eager"],
        "cost of attention dropout": record["attention_dropout_cost"],
    }
    for what, values in said.items():
        print(f"{what}: " + ", ".join(f"{k} {v:.2f}x" for k, v in values.items()))
    for mode, ops in profiles.items():
        print(f"{mode}: " + "; ".join(f"{o['name'][:60]} {o['ms_per_step']:.1f} ms" for o in ops))
    write_json(args.out, record)
    print(f"wrote {args.out}")
    return record


@contextlib.contextmanager
def _kernel_names():
    """Inductor's generated kernels named in the profile (they are one opaque call without it)."""
    before = inductor_config.cpp.enable_kernel_profile
    inductor_config.cpp.enable_kernel_profile = True
    try:
        yield
    finally:
        inductor_config.cpp.enable_kernel_profile = before


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe", default="transformer", help="default: %(default)s (default: params.yaml)")
    parser.add_argument("--top", type=int, default=6, help="operations listed per mode (default: %(default)s)")
    peers.add_shared_arguments(parser, OUT, repeats=3)
    args = peers.parsed(parser, argv)
    with peers.cold_compile_cache():
        return run(args)


if __name__ == "__main__":
    main()
