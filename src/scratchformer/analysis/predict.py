"""Ask the trained model about new texts, and see which tokens drove each answer.

Which tokens drove an answer is the signed token relevance of :mod:`scratchformer.analysis.relevance`:
integrated gradients of the predicted class's margin over the other classes, per token,
so a token either pushed toward the answer (> 0) or away from it (< 0).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from scratchformer.analysis.relevance import explain
from scratchformer.data.tokenization import TOKENIZER_FILE, encode, load_saved_tokenizer
from scratchformer.data.tokenized_split import pad_batch
from scratchformer.model.checkpoint import CorruptFileError, class_names, load_checkpoint, restore
from scratchformer.model.classifier import Ensemble
from scratchformer.model.export import TOKENIZER_CONFIG, load_folder

# Zero-width space, non-joiner, joiner, word joiner and the byte-order mark: invisible,
# not whitespace to str.strip, and dropped by the tokenizer, so a text of only these is blank.
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"
EDGES = re.compile(rf"^[\s{ZERO_WIDTH}]+|[\s{ZERO_WIDTH}]+$")
NOTHING_KNOWN = "every token is [UNK]: the vocabulary knows none of this text's characters, so the answer is a guess"


def clean(text: str) -> str:
    """``text`` without whitespace and zero-width characters at either end ("" if that is all it held)."""
    return EDGES.sub("", text)


@dataclass(frozen=True)
class Prediction:
    text: str
    label: str
    probability: float  # of the predicted label
    probabilities: dict[str, float]
    # {token, position, relevance}, the largest |relevance| first. relevance is signed, in logits,
    # toward ``label``: > 0 pushed toward it, < 0 away (with two classes: toward the other one).
    top_tokens: list[dict]
    n_tokens: int  # tokens in the text, [CLS] and [SEP] included, before truncation
    read_tokens: int  # tokens the model read: n_tokens, or max_len when truncated
    truncated: bool
    warning: str | None = None  # why the answer should not be trusted, when the text gave the model nothing

    def as_dict(self) -> dict:
        return asdict(self)


class Predictor:
    """A trained model and its tokenizer, ready to answer: ``Predictor.from_pretrained("models/classifier")``.

    ``model_path`` is the model folder the export stage writes (its tokenizer in it), or a
    ``.pt`` checkpoint the train stage writes, with ``tokenizer_path`` its tokenizer folder.
    """

    def __init__(
        self, model_path: str | Path, tokenizer_path: str | Path | None = None, device: str | torch.device = "cpu"
    ) -> None:
        model_path = Path(model_path)
        folder = model_path.is_dir()
        if not folder and not model_path.is_file():
            raise FileNotFoundError(f"no trained model at {model_path}; run `dvc repro` first")
        if tokenizer_path is None:
            if not folder:
                raise ValueError(f"{model_path} is a checkpoint without its tokenizer: give the tokenizer folder too")
            if not (model_path / TOKENIZER_CONFIG).is_file():
                raise CorruptFileError(f"{model_path / TOKENIZER_CONFIG} is missing: {restore(model_path)}")
            tokenizer_path = model_path
        tokenizer_path = Path(tokenizer_path)
        if not tokenizer_path.is_dir():
            raise FileNotFoundError(f"no saved tokenizer at {tokenizer_path}; run `dvc repro` first")
        self.device = torch.device(device)
        load = load_folder if folder else load_checkpoint
        self.model, info = load(model_path, self.device)
        self.tokenizer = load_saved_tokenizer(tokenizer_path)
        first = self.model.members[0] if isinstance(self.model, Ensemble) else self.model
        vocab_size = first.embed.num_embeddings
        if len(self.tokenizer) > vocab_size:  # an id past the embedding table would fail mid-prediction
            named = tokenizer_path / TOKENIZER_FILE if (tokenizer_path / TOKENIZER_FILE).is_file() else tokenizer_path
            raise CorruptFileError(
                f"{named}: the tokenizer has {len(self.tokenizer)} tokens, more than the model's vocab_size "
                f"{vocab_size}: give the tokenizer the model was trained with"
            )
        self.max_len = info.get("tokenizer_max_len", self.model.config.max_len)
        self.class_names = class_names(info, self.model.config.num_classes)

    @classmethod
    def from_pretrained(cls, folder: str | Path, device: str | torch.device = "cpu") -> Predictor:
        """The model folder the export stage writes (``models/classifier``): weights, config, tokenizer.

        It reads JSON and safetensors only: no pickle, so no code from the folder runs.
        """
        folder = Path(folder)
        if folder.is_file():
            raise ValueError(f"{folder} is a checkpoint, not a model folder: use Predictor({folder}, tokenizer)")
        if not folder.is_dir():
            raise FileNotFoundError(f"no model folder at {folder}; run `dvc repro` first (the export stage writes it)")
        return cls(folder, None, device)

    def __call__(self, texts: list[str], top_k: int | None = 5) -> list[Prediction]:
        """``predictor(texts)``, as a Hugging Face pipeline is called: :meth:`predict`."""
        return self.predict(texts, top_k)

    def predict(self, texts: list[str], top_k: int | None = 5) -> list[Prediction]:
        """Label, probabilities and the ``top_k`` most relevant tokens of each text (None: every token).

        A token's relevance is signed, toward the predicted label (see :class:`Prediction`);
        the most relevant are those of largest magnitude, whichever way they pushed.

        A text whose tokens are all [UNK] still gets the model's answer, but with a
        ``warning``: the answer cannot be about words the model never saw.
        """
        texts = [clean(t) for t in texts]
        if not texts or not all(texts):
            raise ValueError("no text to classify: give one or more non-empty texts")
        tokenized = encode(self.tokenizer, texts, self.max_len)
        encoded, n_tokens = tokenized["input_ids"].tolist(), tokenized["n_tokens"].tolist()
        ids = pad_batch([torch.tensor(x) for x in encoded], self.model.pad_id)  # (B, T)
        special = set(self.tokenizer.all_special_ids)
        unk = self.tokenizer.unk_token_id
        # [CLS] and [SEP] stay in the baseline: relevance is over the tokens of the text itself.
        probs, relevance, _ = explain(self.model, ids.to(self.device), fixed_ids=special - {unk})  # (B, K), (B, T)
        probs, relevance = probs.float().cpu(), relevance.float().cpu()
        names = self.class_names
        out = []
        for b, text in enumerate(texts):
            k = int(probs[b].argmax())
            read = [t for t in encoded[b] if t not in special or t == unk]  # [CLS], [SEP], [PAD] left out
            scored = [
                {
                    "token": self.tokenizer.convert_ids_to_tokens(t),
                    "position": i,
                    "relevance": round(float(relevance[b, i]), 4),
                }
                for i, t in enumerate(encoded[b])
                if t not in special
            ]
            scored.sort(key=lambda item: -abs(item["relevance"]))
            out.append(
                Prediction(
                    text=text,
                    label=names[k],
                    probability=round(float(probs[b, k]), 4),
                    probabilities={n: round(float(p), 4) for n, p in zip(names, probs[b], strict=True)},
                    top_tokens=scored[:top_k],
                    n_tokens=n_tokens[b],
                    read_tokens=len(encoded[b]),
                    truncated=n_tokens[b] > self.max_len,
                    warning=NOTHING_KNOWN if all(t == unk for t in read) else None,
                )
            )
        return out

    def stream(self, texts: Iterable[str], top_k: int | None = 5, batch_size: int = 64) -> Iterator[list[Prediction]]:
        """:meth:`predict` on ``batch_size`` texts at a time, each batch's answers as soon as they are done.

        ``texts`` is read lazily, one batch ahead, so memory stays that of one batch
        however many texts there are.
        """
        texts = iter(texts)
        while batch := list(itertools.islice(texts, batch_size)):
            yield self.predict(batch, top_k)
