"""scratchformer: a Transformer encoder classifier written from scratch, trained as a DVC pipeline.

The folders are the map, listed from the bottom up: a module imports only from the lines
above its own, and from its own folder.

    config/      the one reader of params.yaml: frozen sections that refuse bad values by key
                 (sections.py; training.py: the optimizer keys train and pretrain share, nb)
    files.py     atomic writes: a killed stage never leaves half a file
    device.py    which device: train.device or --device, checked against this machine
    data/        a labelled corpus into one shape: hub or folder, ingest, splits, labels,
                 fingerprints of the inputs, tokenization into flat ids, the tokenized
                 splits on disk and their padded batches, the short-review check's file
    model/       the network: attention, dropout, positions, encoder block, pooling, n-grams, the
                 classifier (and its NB member), checkpoints, the exported folder (safetensors)
    analysis/    what a trained model says: evaluation, scoring (unseen part, intervals),
                 acceptance checks, the probe,
                 relevance, its mistakes, predict, the n-gram baselines
    train/       the loop, its optimizers (AdamW, lazy AdamW for a sparse n-gram table), its
                 two objectives (classification, masked LM), what it does to a
                 batch (token dropout, spans), the ensemble of the train stage, the recording
                 of curves and resumable state, distributed launch;
                 it scores and probes (analysis/) while it trains
    render/      pictures and pages: curves, attention evolution, the mistakes page, the
                 model card, the one Markdown table writer
    reporting/   what asks git and dvc: review of two revisions, metrics check, experiment
                 records, the recipes in recipes/
    rows.py      predict's texts in (lines, a CSV/TSV column) and answers out (text, CSV, JSON
                 lines), a blank text reported in its own row
    predict_command.py  the body of ``scratchformer predict``
    cli.py       ``scratchformer predict | report experiments | review | metrics check | --version``

The DVC stages (``stages/`` beside ``src/``) call into these; ``tools/`` writes the docs.
"""


def __getattr__(name: str):
    """``from scratchformer import Predictor`` (PEP 562): imported when first asked for.

    A stage that imports only ``scratchformer.config`` must not load the model and
    tokenizer code through the package's ``__init__``, so ``Predictor`` is looked up
    here, on first use, rather than imported at the top.
    """
    if name == "Predictor":
        from importlib import import_module

        return import_module("scratchformer.analysis.predict").Predictor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
