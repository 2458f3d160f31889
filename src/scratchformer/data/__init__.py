"""From a hub id or a local folder to tokenized splits: sources, ingest, splits, labels, tokenization."""
