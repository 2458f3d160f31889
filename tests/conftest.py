import pytest
import torch
from fixtures import LABEL_NAMES, write_corpus, write_tokenizer


@pytest.fixture(scope="session")
def trained(tmp_path_factory):
    """A tiny classifier trained one epoch on the fixture corpus: (model path, tokenizer dir)."""
    from scratchformer.config import DataConfig, ModelConfig, TrainConfig
    from scratchformer.data.ingest import load_corpus
    from scratchformer.data.tokenization import encode, load_tokenizer, save_tokenizer
    from scratchformer.data.tokenized_split import TokenizedSplit
    from scratchformer.model.checkpoint import save_checkpoint
    from scratchformer.model.classifier import TransformerClassifier
    from scratchformer.train.classify import fit, seed_everything

    root = tmp_path_factory.mktemp("trained")
    tokenizer = load_tokenizer(str(write_tokenizer(root / "vocab")))
    save_tokenizer(tokenizer, root / "tokenizer")
    corpus = load_corpus(DataConfig(source=str(write_corpus(root / "corpus")), label_names=LABEL_NAMES))
    splits = {s.name: s.frame for s in corpus.splits}

    def tokenized(frame):
        ids = encode(tokenizer, frame["text"].tolist(), 24)["input_ids"]
        return TokenizedSplit.from_sequences(ids, frame["label"].tolist())

    seed_everything(0)
    config = ModelConfig(
        d_model=32,
        n_heads=2,
        n_layers=1,
        ff_dim=64,
        max_len=32,
        dropout=0.0,
        num_classes=len(corpus.classes),
        ngram_max=1,  # tokens only, whole reviews: the fixture the predict tests were written against
        wide_ngrams=0,
    )
    model = TransformerClassifier(config, len(tokenizer), tokenizer.pad_token_id)
    fit(
        model,
        tokenized(splits["train"]),
        tokenized(splits["validation"]),
        TrainConfig(epochs=3, batch_size=16, lr=5e-3, spans=0.0),
        0,
        torch.device("cpu"),
    )
    save_checkpoint(root / "model.pt", model, tokenizer_max_len=24, class_names=corpus.classes.names)
    return root / "model.pt", root / "tokenizer"
