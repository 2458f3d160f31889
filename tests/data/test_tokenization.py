"""Flat token storage: one array per split plus offsets, tokenized once, batched by indexing."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from fixtures import sentences, write_tokenizer

from scratchformer.data.tokenization import encode_flat, load_tokenizer, save_tokenizer, token_dtype, token_stats
from scratchformer.data.tokenized_split import TokenizedSplit, batches, pad_batch, read_tokenized, write_tokenized


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return load_tokenizer(str(write_tokenizer(tmp_path_factory.mktemp("tok"))))


def texts(n=200):
    rows = [text for _, text in sentences(n, seed=5)]
    rows[3] = rows[3] * 6  # longer than max_len: cut
    rows[7] = "房间很好。☃"  # an unknown character
    return rows


def test_flat_ids_equal_the_tokenizers_own_truncation(tokenizer):
    """Once per text, in batches (here of 7): the ids `tokenizer(truncation=True)` gives, and full lengths."""
    rows = texts()
    flat = encode_flat(tokenizer, rows, max_len=12, batch_size=7)
    reference = tokenizer(rows, truncation=True, max_length=12)["input_ids"]
    full = tokenizer(rows)["input_ids"]
    assert len(flat.offsets) == len(rows) + 1
    for i, expected in enumerate(reference):
        assert flat.tokens[flat.offsets[i] : flat.offsets[i + 1]].tolist() == expected
    assert flat.n_tokens.tolist() == [len(x) for x in full]
    assert flat.tokens.dtype == np.uint16


def test_token_stats_match_the_per_row_computation(tokenizer):
    rows = texts()
    flat = encode_flat(tokenizer, rows, max_len=12)
    stats = token_stats(flat, 12, tokenizer.unk_token_id)
    full = [len(x) for x in tokenizer(rows)["input_ids"]]
    cut = [t for x in tokenizer(rows, truncation=True, max_length=12)["input_ids"] for t in x]
    assert stats["rows"] == len(rows)
    assert stats["truncated"] == sum(n > 12 for n in full) >= 1
    assert stats["tokens_median"] == float(np.median(full))
    assert stats["unk_rate"] == pytest.approx(cut.count(tokenizer.unk_token_id) / len(cut)) and stats["unk_rate"] > 0


def test_ids_are_uint16_while_the_vocabulary_fits_else_int32():
    assert token_dtype(21128) == np.uint16 and token_dtype(65536) == np.uint16
    assert token_dtype(65537) == np.int32


def test_round_trip_and_same_bytes_twice(tokenizer, tmp_path):
    flat = encode_flat(tokenizer, texts(), max_len=12)
    labels = np.arange(200) % 3
    write_tokenized(tmp_path / "a", flat, labels)
    write_tokenized(tmp_path / "b", flat, labels)
    back = read_tokenized(tmp_path / "a")
    assert np.array_equal(back.tokens, flat.tokens) and back.tokens.dtype == np.uint16
    assert np.array_equal(back.offsets, flat.offsets)
    assert back.labels.tolist() == labels.tolist() and back.labels.dtype == torch.long
    for name in ("tokens.npy", "offsets.npy", "labels.npy"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_the_saved_tokenizer_folder_is_the_same_bytes_whatever_the_temporary_name(tokenizer, tmp_path):
    """It is written into a randomly named temporary folder, then swapped in: no name of it may stay inside."""

    def files(folder):
        return {p.name: p.read_bytes() for p in folder.iterdir()}

    save_tokenizer(tokenizer, tmp_path / "a")
    first = files(tmp_path / "a")
    save_tokenizer(tokenizer, tmp_path / "a")  # over the old folder: another temporary name
    save_tokenizer(tokenizer, tmp_path / "b")
    assert files(tmp_path / "a") == first == files(tmp_path / "b")
    assert "tokenizer.json" in first and not any(b".tmp" in data for data in first.values())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]


def test_missing_split_files_are_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no tokenized split .*tokens\.npy"):
        read_tokenized(tmp_path)


@pytest.mark.parametrize("bucket", [False, True])
@pytest.mark.parametrize("shuffle", [False, True])
def test_batches_equal_the_old_per_row_path(tokenizer, bucket, shuffle):
    """What training saw before (one tensor per row, padded per batch) is what it sees now."""
    rows = texts(500)
    ids = tokenizer(rows, truncation=True, max_length=16)["input_ids"]
    labels = torch.arange(500) % 3
    old_rows = [torch.tensor(x, dtype=torch.long) for x in ids]

    def old_batches(generator):  # the former batches(): the same order logic over a list of tensors
        order = torch.randperm(500, generator=generator) if generator is not None else torch.arange(500)
        if bucket:
            lengths = torch.tensor([len(x) for x in old_rows])
            chunks = [order[i : i + 32 * 50] for i in range(0, 500, 32 * 50)]
            order = torch.cat([c[lengths[c].argsort(stable=True)] for c in chunks])
        groups = list(order.split(32))
        if bucket and generator is not None:
            groups = [groups[i] for i in torch.randperm(len(groups), generator=generator)]
        for idx in groups:
            yield pad_batch([old_rows[i] for i in idx], 0), labels[idx]

    flat = encode_flat(tokenizer, rows, max_len=16)
    split = TokenizedSplit(flat.tokens, flat.offsets, labels)
    seed = (lambda: torch.Generator().manual_seed(3)) if shuffle else (lambda: None)
    new, old = list(batches(split, 32, 0, seed(), bucket)), list(old_batches(seed()))
    assert len(new) == len(old) == 16
    for (a, la), (b, lb) in zip(new, old, strict=True):
        assert a.dtype == torch.long and torch.equal(a, b) and torch.equal(la, lb)


def test_from_sequences_and_batch_by_index():
    split = TokenizedSplit.from_sequences([[5, 6, 7], [8], [9, 10]], [1, 0, 1])
    assert len(split) == 3 and split.lengths.tolist() == [3, 1, 2]
    assert split.batch([2, 1], pad_id=0).tolist() == [[9, 10], [8, 0]]
    assert split.sequence(0).tolist() == [5, 6, 7]


REAL = Path(__file__).parents[2]
CORPUS, VOCAB = REAL / "lansinuote" / "ChnSentiCorp", REAL / "bert-base-chinese"


@pytest.mark.slow
@pytest.mark.skipif(not (CORPUS.is_dir() and VOCAB.is_dir()), reason="the ChnSentiCorp mirror is not linked here")
def test_chnsenticorp_ids_equal_the_tokenizers_own_truncation():
    """On the real reviews (traditional characters, control characters, 600-token texts) at 64 and 256."""
    from scratchformer.config import DataConfig
    from scratchformer.data.ingest import load_corpus

    tokenizer = load_tokenizer(str(VOCAB))
    rows = [t for s in load_corpus(DataConfig(source=str(CORPUS))).splits for t in s.frame["text"]]
    for max_len in (64, 256):
        flat = encode_flat(tokenizer, rows, max_len)
        reference = tokenizer(rows, truncation=True, max_length=max_len)["input_ids"]
        assert np.array_equal(flat.offsets, np.concatenate([[0], np.cumsum([len(x) for x in reference])]))
        assert np.array_equal(flat.tokens, np.fromiter((t for x in reference for t in x), dtype=np.uint16))


def test_an_encoded_split_holds_each_text_as_encode_flat_tokenizes_it_in_order_with_its_label(tokenizer):
    texts = [text for _, text in sentences(5, seed=3)]
    split = TokenizedSplit.encoded(tokenizer, texts, np.array([1, 0, 1, 1, 0]), max_len=8)
    flat = encode_flat(tokenizer, texts, 8)
    assert [split.sequence(i).tolist() for i in range(5)] == [
        flat.tokens[a:b].tolist() for a, b in zip(flat.offsets[:-1], flat.offsets[1:], strict=True)
    ]
    assert split.labels.tolist() == [1, 0, 1, 1, 0] and split.labels.dtype == torch.long


def test_a_splits_prefix_keeps_each_sequences_first_ids():
    split = TokenizedSplit.from_sequences([[5, 6, 7, 8, 9], [5, 6], [], [1, 2, 3]], [0, 1, 0, 1])
    cut = split.prefix(3)
    assert [cut.sequence(i).tolist() for i in range(4)] == [[5, 6, 7], [5, 6], [], [1, 2, 3]]
    assert torch.equal(cut.labels, split.labels) and split.prefix(5) is split  # nothing to cut: the split itself


def test_a_splits_labels_are_a_copy_so_a_read_only_array_makes_no_warning():
    """pandas hands out read-only arrays; PyTorch warns on stderr when a tensor views one (the evaluate stage did).

    Under ``-W error`` any warning fails the run: also numpy's, were a tensor of labels copied through numpy.
    """
    code = (
        "import numpy as np\n"
        "from scratchformer.data.tokenized_split import TokenizedSplit\n"
        "labels = np.array([0, 1])\n"
        "labels.setflags(write=False)\n"
        "split = TokenizedSplit.from_sequences([[101, 5, 102], [101, 6, 102]], labels)\n"
        "assert not np.shares_memory(split.labels.numpy(), labels)\n"
        "import torch\n"
        "given = torch.tensor([1, 0])\n"
        "assert TokenizedSplit.from_sequences([[5], [6]], given).labels.data_ptr() != given.data_ptr()\n"
    )
    result = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_tokenizer_lowercase_reads_an_upper_case_word_by_its_lower_case_row_and_the_saved_folder_keeps_it(
    tmp_path,
):
    """bert-base-chinese's config says do_lower_case False while its vocabulary holds 'mp3' only: 'MP3' is
    then [UNK]. tokenizer.lowercase=true reads it as 'mp3', and the folder save_tokenizer writes, which
    every later stage and predict load, reads it so too; false overrides a config that says true."""
    from scratchformer.data.tokenization import load_saved_tokenizer

    folder = write_tokenizer(tmp_path / "vocab")
    with (folder / "vocab.txt").open("a", encoding="utf-8") as vocab:
        vocab.write("mp3\n")
    text = "MP3很好"

    def tokens(tokenizer):
        return tokenizer.convert_ids_to_tokens(tokenizer(text, add_special_tokens=False)["input_ids"])

    assert tokens(load_tokenizer(str(folder))) == ["[UNK]", "很", "好"]  # the folder's own setting
    lowered = load_tokenizer(str(folder), lowercase=True)
    assert tokens(lowered) == ["mp3", "很", "好"]
    save_tokenizer(lowered, tmp_path / "saved")
    assert tokens(load_tokenizer(str(tmp_path / "saved"))) == ["mp3", "很", "好"]
    assert tokens(load_saved_tokenizer(tmp_path / "saved")) == ["mp3", "很", "好"]
    assert tokens(load_tokenizer(str(tmp_path / "saved"), lowercase=False)) == ["[UNK]", "很", "好"]
