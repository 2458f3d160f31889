"""docs/labels.md's generated blocks: each corpus fills its own, from its own outputs' folder."""

import json
from pathlib import Path

import pandas as pd
import pytest
from fixtures import sentences, write_rows

from scratchformer.config import Params
from scratchformer.render.markdown import block
from tools.docs import labels

PAGE = "".join(f"<!-- {name}:start -->\nas committed\n<!-- {name}:end -->\n" for name in labels.BLOCKS)


def fake_outputs(root: Path, word: str, flagged: int, copies: dict | None = None) -> Path:
    """What the download stage writes under ``root``: three rankings whose texts hold ``word``, and the counts."""
    for split in labels.SPLITS:
        rows = [
            {"row": i, "text": f"{word} {split} {i}", "label": "negative", "suggested": "positive", "score": i / 100}
            for i in range(12)
        ]
        frame = pd.DataFrame(rows).assign(issue=[i < flagged for i in range(12)])
        (root / "plots/label_issues").mkdir(parents=True, exist_ok=True)
        frame.to_csv(root / "plots/label_issues" / f"{split}.csv", index=False)
    keys = ["train", "validation", "test", "validation_vs_train", "test_vs_train", "test_vs_validation"]
    counts = {"exact": dict.fromkeys(keys, 1), "near": dict.fromkeys(keys, 2)} | ({"copies": copies} if copies else {})
    issues = dict.fromkeys(labels.SPLITS, flagged) | {"dropped_from_train": 0}
    (root / "metrics").mkdir(parents=True, exist_ok=True)
    (root / "metrics/data.json").write_text(json.dumps({"label_issues": issues, "contradictions": counts}))
    return root


def test_each_corpus_fills_its_own_blocks_from_its_own_folder_and_leaves_the_others(tmp_path):
    page = tmp_path / "labels.md"
    page.write_text(PAGE, encoding="utf-8")
    chnsenticorp = fake_outputs(tmp_path / "repo", "酒店", flagged=5)
    products = fake_outputs(tmp_path / "products", "苹果", flagged=7)

    assert labels.update(page, products, top=10, corpus="products")
    text = page.read_text(encoding="utf-8")
    for name in labels.blocks("chnsenticorp"):
        assert block(text, name) == "as committed\n"
    train = block(text, "products-label-issues-train")
    assert train.startswith("cleanlab flags 7 labels of train; the 10 most suspect:")
    assert "| 1 | 0 | negative | positive | 0.000000 | 苹果 train 0 |" in train
    assert "苹果 train 9" in train and "苹果 train 10" not in train  # the top 10 only
    assert "苹果 test 0" in block(text, "products-label-issues-test")
    contradictions = block(text, "products-contradictions")
    assert "| `validation_vs_train` | 1 | 2 |" in contradictions
    assert "train 7, validation 7, test 7" in contradictions

    assert labels.update(page, chnsenticorp, top=10)  # as run today: ChnSentiCorp's blocks, from the repository
    text = page.read_text(encoding="utf-8")
    assert "酒店 validation 0" in block(text, "label-issues-validation")
    assert "train 5, validation 5, test 5" in block(text, "contradictions")
    assert "苹果 train 0" in block(text, "products-label-issues-train")  # the products blocks stay as filled
    assert not labels.update(page, chnsenticorp, top=10)  # a second run changes nothing


def test_the_contradictions_block_gives_the_flip_rate_the_copies_imply(tmp_path):
    rate = {"flip_rate": 0.0152, "flip_rate_ci95": {"lo": 0.011, "hi": 0.0197}}
    copies = {"texts": 1234, "pairs": 1500, "disagreeing_pairs": 45, **rate}
    root = fake_outputs(tmp_path / "repo", "酒店", flagged=5, copies=copies)
    page = tmp_path / "labels.md"
    page.write_text(PAGE, encoding="utf-8")
    labels.update(page, root, top=10)
    text = block(page.read_text(encoding="utf-8"), "contradictions")
    assert "Of the 1,234 texts that two rows or more hold" in text
    assert "45 of their 1,500 pairs of rows disagree" in text
    assert "**1.5%** (95% bootstrap over the texts: 1.1%–2.0%)" in text
    older = fake_outputs(tmp_path / "older", "x", 1) / "metrics/data.json"  # written before the stage counted it
    assert "flip" not in labels.contradictions_table(json.loads(older.read_text(encoding="utf-8")))


def test_the_block_names_and_the_commands_that_write_them():
    assert labels.blocks("chnsenticorp") == (
        "label-issues-train",
        "label-issues-validation",
        "label-issues-test",
        "contradictions",
    )
    assert labels.blocks("products")[0] == "products-label-issues-train"
    assert labels.BLOCKS["contradictions"] == "python -m tools.docs.labels"
    assert "--corpus products" in labels.BLOCKS["products-contradictions"]


def test_the_products_run_divides_the_one_file_and_keeps_every_other_setting():
    params = labels.products_params(Params())
    assert params.data.source == "online-shopping"
    assert params.data.split == (0.8, 0.1, 0.1)
    assert params.data.drop_empty
    assert params.data.label_names == Params().data.label_names  # products.csv's labels are 0 and 1 too
    assert (params.seed, params.baseline) == (Params().seed, Params().baseline)


def test_the_products_page_section_shows_the_command_that_fills_it():
    text = (Path(__file__).parents[2] / "docs/labels.md").read_text(encoding="utf-8")
    assert "python -m tools.docs.labels --corpus products --download --from " in text
    for name in labels.BLOCKS:
        assert f"<!-- {name}:start -->" in text


def test_a_products_page_needs_its_folder(monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["labels", "--corpus", "products"])
    with pytest.raises(SystemExit):
        labels.main()
    assert "needs --from DIR" in capsys.readouterr().err


def test_the_products_run_writes_into_its_own_folder_what_the_page_is_filled_from(tmp_path, monkeypatch):
    """The download stage on a small stand-in for products.csv (labels 0 and 1, a `review` column, one blank)."""
    rows = sentences(300, seed=5)
    rows[10] = (rows[10][0], " ")
    (tmp_path / "online-shopping").mkdir()
    write_rows(tmp_path / "online-shopping/products.csv", rows, "csv", text_column="review")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "products-labels"
    report = labels.run_download(labels.products_params(Params()), out)
    assert report["rows"] == {"train": 239, "validation": 30, "test": 30}  # 299 after the blank one is dropped
    page = tmp_path / "labels.md"
    page.write_text(PAGE, encoding="utf-8")
    assert labels.update(page, out, top=3, corpus="products")
    text = page.read_text(encoding="utf-8")
    assert "the 3 most suspect" in block(text, "products-label-issues-train")  # train lists 100 at least
    assert block(text, "label-issues-train") == "as committed\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["labels.md", "online-shopping", "products-labels"]
