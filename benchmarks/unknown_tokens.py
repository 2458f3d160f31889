"""How much of each corpus the tokenizer reads as [UNK], with its own casing and lowercased.

bert-base-chinese's tokenizer config does not lowercase (``do_lower_case`` false), while its
vocabulary holds Latin words in lower case only: 'MP3' and 'WiFi' become [UNK], one id for
every word the vocabulary lacks, where the n-gram baselines (which lowercase) read them.
For each corpus, read as ``data.source`` reads it (every row, blank ones dropped), this
tokenizes every review with ``tokenizer.name`` as the tokenize stage loads it, once as its
config says and once with ``tokenizer.lowercase`` true, and counts the reviews holding an
[UNK], the share of tokens that are one, and the strings read as [UNK] most often. Writes
``benchmarks/results/unknown_tokens.json``.

    python benchmarks/unknown_tokens.py [--corpora lansinuote/ChnSentiCorp online-shopping] [--top 8]
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
from pathlib import Path

from scratchformer.config import load_params
from scratchformer.data.tokenization import load_tokenizer
from scratchformer.files import write_json
from scratchformer.reporting import commands

OUT = "benchmarks/results/unknown_tokens.json"
_spec = importlib.util.spec_from_file_location("transfer", Path(__file__).parent / "transfer.py")
transfer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(transfer)


def unknowns(tokenizer, texts: list[str], top: int) -> dict:
    """The reviews holding an [UNK], the share of tokens that are one, and the ``top`` strings read as [UNK]."""
    encoded = tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)
    sources: collections.Counter[str] = collections.Counter()
    holding = tokens = 0
    for text, ids, offsets in zip(texts, encoded["input_ids"], encoded["offset_mapping"], strict=True):
        unread = [text[a:b] for i, (a, b) in zip(ids, offsets, strict=True) if i == tokenizer.unk_token_id]
        sources.update(unread)
        holding += bool(unread)
        tokens += len(ids)
    return {
        "reviews_holding": holding,
        "reviews_share": holding / len(texts),
        "token_share": sum(sources.values()) / max(1, tokens),
        "most_often": sources.most_common(top),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", nargs="+", default=["lansinuote/ChnSentiCorp", "online-shopping"])
    parser.add_argument("--top", type=int, default=8, help="strings read as [UNK] to list, most often first")
    args = parser.parse_args()
    params = load_params("params.yaml")
    name, revision = params.tokenizer.name, params.tokenizer.revision
    readers = {"as configured": load_tokenizer(name, revision), "lowercased": load_tokenizer(name, revision, True)}
    corpora = []
    for source in args.corpora:
        texts = transfer.every_row(source, params.data)[0]["text"].tolist()
        read = {how: unknowns(tokenizer, texts, args.top) for how, tokenizer in readers.items()}
        corpora.append({"corpus": source, "reviews": len(texts), "read": read})
        print(source, {how: f"{r['reviews_share']:.3f} of reviews" for how, r in read.items()}, flush=True)
    commit = commands.run("git", "rev-parse", "--short", "HEAD").strip()
    write_json(OUT, {"commit": commit, "tokenizer": name, "corpora": corpora})
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
