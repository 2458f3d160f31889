"""The README is a front door and the docs hold together: size, links, generated blocks."""

import json
import re
from pathlib import Path

import pytest

from scratchformer.render import markdown
from tools.docs import pages, speed, transfer

ROOT = Path(__file__).parents[2]
README_LIMIT = 15_000  # bytes: what it is, results, quick start, three DVC verbs, links; the manual is in docs/
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def links(text: str) -> list[str]:
    """The targets of the Markdown links and images of ``text`` outside fenced code."""
    return LINK.findall(FENCE.sub("", text))


def test_the_readme_fits_on_a_few_screens():
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_LIMIT, f"README.md is {size:,} bytes; move detail to docs/ (limit {README_LIMIT:,})"


@pytest.mark.parametrize("page", pages.pages(ROOT), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves_to_a_file(page):
    broken = []
    for target in links(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a web address, or an anchor on the same page
        path = (page.parent / target.split("#")[0]).resolve()
        if not path.exists():
            broken.append(target)
    assert broken == [], f"{page.relative_to(ROOT)} links to what is not there: {broken}"


def test_every_generated_block_has_a_generator():
    known = {
        "results",
        "unseen",
        "timing",
        "test-time",
        "headline",
        "comparison",
        "members",
        "seeds",
        "review",
        "predict",
    }
    known |= {"experiments", "transformer", "peers", "profile", "corpora", "corpus-online-shopping", "recipe-time"}
    known |= {"corpora-headline", "compile-cost", "transfer", "member-length", "unknown-tokens"}
    known |= set(pages.WRITTEN_ELSEWHERE)
    for page in pages.pages(ROOT):
        for name in pages.BLOCK.findall(page.read_text(encoding="utf-8")):
            assert name in known or name.startswith(
                ("recipe-", "lever-", "agreement-", "transfer-", "curve-", "neighbours-")
            ), f"{page.name}: no generator for {name}"


@pytest.mark.parametrize(
    ("name", "make", "results", "command"),
    [
        ("peers", speed.peers_block, speed.RESULTS, "python benchmarks/peers.py"),
        ("profile", speed.profile_block, speed.PROFILE, "python benchmarks/profile_epoch.py"),
        ("compile-cost", speed.compile_cost_block, speed.COMPILE_COST, "python benchmarks/compile_cost.py"),
        ("transfer", transfer.transfer_block, transfer.RESULTS, "python benchmarks/transfer.py"),
        ("member-length", transfer.member_length_block, transfer.MEMBER_LENGTH, "python benchmarks/member_length.py"),
        (
            "unknown-tokens",
            transfer.unknown_tokens_block,
            transfer.UNKNOWN_TOKENS,
            "python benchmarks/unknown_tokens.py",
        ),
    ],
)
def test_the_docs_quote_what_the_benchmarks_last_measured(name, make, results, command):
    made = make(ROOT / results)
    assert made is not None, f"{results} is missing: run {command}"
    page = "results.md" if name.startswith(("transfer", "member-length", "unknown-tokens")) else "speed.md"
    shown = markdown.block((ROOT / "docs" / page).read_text(encoding="utf-8"), name)
    assert shown is not None and shown.rstrip() == made, f"run python -m tools.docs.report readme --file docs/{page}"


KEPT_TRANSFERS = sorted((ROOT / transfer.RESULTS.parent).glob("transfer-*.json"))  # records of transfer.py --name NAME


@pytest.mark.parametrize("record", KEPT_TRANSFERS, ids=lambda path: path.stem)
def test_every_kept_transfer_record_is_quoted_as_it_was_last_measured(record):
    """benchmarks/transfer.py --name NAME writes transfer-NAME.json; docs/results.md shows it in block transfer-NAME."""
    page = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    shown = markdown.block(page, record.stem)
    made = transfer.transfer_block(record)
    assert shown is not None and shown.rstrip() == made, "run python -m tools.docs.report readme --file docs/results.md"


def block_lines(make, record: dict, path: Path) -> list[str]:
    """The lines of the block ``make`` renders from ``record``, written to ``path`` as its benchmark would."""
    path.write_text(json.dumps(record), encoding="utf-8")
    return make(path).splitlines()


def test_the_transfer_block_gives_each_band_every_readers_accuracy_and_the_paired_difference(tmp_path):
    def band(chars, n, model, tfidf, delta, lo, hi):
        accuracy = {"model": model, "TF-IDF LR": tfidf, "SVM": 0.5, "NB-LR": 0.25}
        return {
            "chars": chars,
            "n": n,
            "accuracy": accuracy,
            "model_minus_tfidf": {"delta": delta, "ci95": {"lo": lo, "hi": hi}},
        }

    record = {"commit": "abc1234", "corpus": "shop", "model": "models/model.pt", "rows": 1500, "in_train": 3}
    record["bands"] = [band([1, 16], 1000, 0.9, 0.8, 0.1, 0.05, 0.15), band([17, 99], 500, 0.7, 0.75, -0.05, -0.1, 0)]
    lines = block_lines(transfer.transfer_block, record, tmp_path / "transfer.json")
    assert "at commit `abc1234`" in lines[0] and "1,500 reviews of `shop` (3 also in train, left out)" in lines[0]
    assert lines[2] == "| characters | reviews | model | TF-IDF LR | SVM | NB-LR | model minus TF-IDF LR |"
    assert lines[4] == "| 1–16 | 1,000 | 0.9000 | 0.8000 | 0.5000 | 0.2500 | +0.1000 [+0.0500, +0.1500] |"
    assert lines[5] == "| 17–99 | 500 | 0.7000 | 0.7500 | 0.5000 | 0.2500 | -0.0500 [-0.1000, +0.0000] |"
    assert transfer.transfer_block(tmp_path / "absent.json") is None  # the block is left as committed


def test_the_member_length_block_gives_each_way_of_fitting_and_reading_then_each_whole_minus_cut(tmp_path):
    parts = ("validation", "short", "1-16", "17-99")

    def reading(fit, read, markers, *accuracy):
        return {"fit": fit, "read": read, "markers": markers, "accuracy": dict(zip(parts, accuracy, strict=True))}

    def versus(*sides):
        return {p: {"delta": d, "ci95": {"lo": lo, "hi": hi}} for p, (d, lo, hi) in zip(parts, sides, strict=True)}

    record = {"commit": "abc1234", "corpus": "shop", "rows": 1500, "in_train": 0, "lengths": {"cut": 128, "whole": 512}}
    record["n"] = {"validation": 300, "short": 160, "1-16": 1000, "17-99": 500}
    record["readings"] = [
        reading("cut", "cut", True, 0.9, 0.8, 0.8, 0.7),
        reading("whole", "whole", True, 0.95, 0.75, 0.85, 0.6),
        reading("whole", "whole", False, 0.95, 0.85, 0.86, 0.6),
    ]
    record["whole_minus_cut"] = versus((0.05, 0.0, 0.1), (-0.05, -0.1, 0), (0.05, 0.01, 0.09), (-0.1, -0.2, -0.05))
    record["text_minus_cut"] = versus((0.05, 0.0, 0.1), (0.05, 0, 0.1), (0.06, 0.02, 0.1), (-0.1, -0.2, -0.05))
    lines = block_lines(transfer.member_length_block, record, tmp_path / "member_length.json")
    assert "at commit `abc1234`" in lines[0] and "validation split (300 reviews)" in lines[0]
    assert lines[2] == (
        "| fit on reviews | reads reviews | [CLS], [SEP] | validation | short reviews (160) | `shop` 1–16 (1,000) "
        "| `shop` 17–99 (500) |"
    )
    assert lines[4] == "| cut at 128 | cut at 128 | read | 0.9000 | 0.8000 | 0.8000 | 0.7000 |"
    assert lines[6] == "| whole (up to 512) | whole (up to 512) | padding | 0.9500 | 0.8500 | 0.8600 | 0.6000 |"
    assert lines[7] == (
        "| whole minus the cut |  |  | +0.0500 [+0.0000, +0.1000] | -0.0500 [-0.1000, +0.0000] "
        "| +0.0500 [+0.0100, +0.0900] | -0.1000 [-0.2000, -0.0500] |"
    )
    assert (
        lines[8].startswith("| whole, markers as padding, minus the cut |  |  | +0.0500")
        and "+0.0600 [+0.0200" in lines[8]
    )
    assert transfer.member_length_block(tmp_path / "absent.json") is None


def test_the_unknown_tokens_block_gives_each_corpus_and_casing_its_counts_with_markdown_signs_shown(tmp_path):
    def read(holding, share, tokens, often):
        return {"reviews_holding": holding, "reviews_share": share, "token_share": tokens, "most_often": often}

    record = {"commit": "abc1234", "tokenizer": "bert-base-chinese"}
    record["corpora"] = [
        {
            "corpus": "shop",
            "reviews": 2000,
            "read": {
                "as configured": read(300, 0.15, 0.0123, [["MP3", 1200], ["`", 3]]),
                "lowercased": read(100, 0.05, 0.004, [["…", 80], ["a|b", 2]]),
            },
        }
    ]
    lines = block_lines(transfer.unknown_tokens_block, record, tmp_path / "unknown_tokens.json")
    assert "at commit `abc1234`" in lines[0] and "`bert-base-chinese`" in lines[0]
    assert lines[4] == "| `shop` | 2,000 | as configured | 300 (15.0%) | 1.23% | MP3 (1,200), \\` (3) |"
    assert lines[5] == "| `shop` | 2,000 | lowercased | 100 (5.0%) | 0.40% | … (80), a\\|b (2) |"
    assert transfer.unknown_tokens_block(tmp_path / "absent.json") is None


def test_the_recipe_time_block_shows_each_seed_at_both_commits_then_the_ratio_and_the_paired_verdict(tmp_path):
    def run(seed, seconds, unseen):
        return {
            "seed": seed,
            "seconds": seconds,
            "validation_accuracy": 0.9,
            "test_accuracy": 0.91,
            "validation_unseen_accuracy": unseen,
        }

    def side(commit, runs, seconds):
        unseen = sum(r["validation_unseen_accuracy"] for r in runs) / len(runs)
        accuracies = {"validation_accuracy": 0.9, "test_accuracy": 0.91, "validation_unseen_accuracy": unseen}
        return {"commit": commit, "runs": runs, "seconds": seconds, **accuracies}

    record = side("f" * 40, [run(42, 250.0, 0.88), run(52, 270.0, 0.90)], 260.0)
    record |= {"recipe": "transformer", "cpus": 2, "machine": "x86_64", "ratio": 0.5}
    record["against"] = side("b35c8c7" + "0" * 33, [run(42, 500.0, 0.89), run(52, 540.0, 0.90)], 520.0)
    record["unseen_validation"] = {"delta": -0.005, "ci95": {"lo": -0.012, "hi": 0.002}, "n": 862, "verdict": "level"}
    path = tmp_path / "recipe_time.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    made = speed.recipe_time_block(path)
    lines = made.splitlines()
    table = [line for line in lines if line.startswith(("| `b35c8c7` |", "| this commit |"))]
    assert [line.split(" | ")[1:3] for line in table] == [["42", "500"], ["52", "540"], ["42", "250"], ["52", "270"]]
    assert "| `b35c8c7`, median / mean |  | 520 | 0.9000 | 0.8950 | 0.9100 |" in lines
    assert lines[-1].startswith("Median time, this commit over `b35c8c7`: **0.50x**.")
    assert lines[-1].endswith(
        "-0.0050 [-0.0120, +0.0020] (95% paired bootstrap over the 862 unseen reviews, "
        "each review's answers from every seed resampled together): **level**."
    )
    kept = speed.recipe_time_block(path, now=None).splitlines()  # a kept record: its rows under its own commit
    assert sum(line.startswith("| `fffffff` |") for line in kept) == 2
    assert kept[-1].startswith("Median time, `fffffff` over `b35c8c7`: **0.50x**.")
    assert speed.recipe_runs_block(path) is None  # compared: the block above says it
    path.write_text(json.dumps({k: v for k, v in record.items() if k not in ("against", "unseen_validation")}))
    assert speed.recipe_time_block(path) is None  # a run without --against: nothing to compare
    assert speed.recipe_time_block(tmp_path / "missing.json") is None
    path.write_text(json.dumps({**json.loads(path.read_text()), "corpus": "online-shopping"}))
    alone = speed.recipe_runs_block(path).splitlines()  # ...but its own runs and their median time
    assert alone[0].startswith("Measured by `benchmarks/recipe_time.py --corpus online-shopping` on 2 x86_64")
    runs = [line.split(" | ")[1:3] for line in alone if line.startswith("| `fffffff` |")]
    assert runs == [["42", "250"], ["52", "270"]]
    assert alone[-1] == "Median time: **260 s** (4.3 minutes) a run."
    assert speed.recipe_runs_block(tmp_path / "missing.json") is None


def test_the_predict_example_is_left_as_committed_without_a_model_and_must_show_its_command(tmp_path):
    text = "<!-- predict:start -->\n```console\n$ scratchformer predict 服务很差\n<label>\n```\n<!-- predict:end -->\n"
    assert pages.predict_block(text, tmp_path) is None  # no models/model.pt: never an invented answer
    with pytest.raises(ValueError, match="must show a `\\$ scratchformer predict"):
        pages.predict_block("<!-- predict:start -->\nnothing\n<!-- predict:end -->\n", tmp_path)


def test_the_experiments_example_runs_its_command_and_keeps_a_table_a_clone_without_experiments_cannot_make(
    tmp_path, monkeypatch
):
    printed = []
    monkeypatch.setattr(pages, "run", lambda *cmd, cwd: printed[0])
    block = "<!-- experiments:start -->\n```console\n$ scratchformer report experiments\n{}```\n"
    block += "<!-- experiments:end -->\n"
    none_here = "no experiments on HEAD: `dvc exp run -S key=value` runs one"
    table = "experiment  validation    test  changed params\nbest            0.9308  0.9417  n_layers=4"
    printed.append(none_here)
    assert pages.experiments_block(block.format(""), tmp_path).endswith(f"\n{none_here}\n```")  # a new block
    assert pages.experiments_block(block.format(none_here + "\n"), tmp_path).endswith(f"\n{none_here}\n```")
    assert pages.experiments_block(block.format(table + "\n"), tmp_path) is None  # never a real table erased
    printed[0] = table
    assert pages.experiments_block(block.format(none_here + "\n"), tmp_path) == (
        f"```console\n$ scratchformer report experiments\n{table}\n```"
    )
    with pytest.raises(ValueError, match="must show a `\\$ scratchformer report experiments"):
        pages.experiments_block("<!-- experiments:start -->\nnothing\n<!-- experiments:end -->\n", tmp_path)
