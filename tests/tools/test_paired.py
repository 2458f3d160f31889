"""The docs' blocks from the benchmarks' paired records (tools/docs/paired.py)."""

import json

from fixtures import block_rows

from tools.docs.paired import agreement_block, curve_block, neighbours_block, paired_block, paired_table


def test_the_paired_lever_block_lists_each_seed_of_both_sides_and_the_verdict(tmp_path):
    def run(seed, unseen):
        scores = {"validation_accuracy": 0.9, "validation_unseen_accuracy": unseen, "test_accuracy": 0.91}
        return {"seed": seed, "seconds": 100 + seed, **scores}

    def side(*runs):
        means = {"validation_accuracy": 0.9, "test_accuracy": 0.91}
        return {
            **means,
            "validation_unseen_accuracy": sum(r["validation_unseen_accuracy"] for r in runs) / 2,
            "runs": list(runs),
        }

    record = {
        "set": ["data.label_issues=drop"],
        "base": [],
        "seeds": [42, 43],
        "commit": "abcdef0" + "0" * 33,
        "control": side(run(42, 0.85), run(43, 0.86)),
        "lever_runs": side(run(42, 0.84), run(43, 0.83)),
        "unseen_validation": {"delta": -0.02, "ci95": {"lo": -0.03, "hi": -0.01}, "n": 862, "verdict": "below"},
    }
    path = tmp_path / "drop.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    lines = paired_block(path).splitlines()
    assert lines[0].startswith(
        "Measured by `benchmarks/lever.py` at commit `abcdef0`: `data.label_issues=drop` against"
    )
    cells = block_rows(paired_block(path))
    assert [(c[0], c[1], c[2], c[4]) for c in cells[:4]] == [
        ("control", "42", "142", "0.8500"),
        ("control", "43", "143", "0.8600"),
        ("`data.label_issues=drop`", "42", "142", "0.8400"),
        ("`data.label_issues=drop`", "43", "143", "0.8300"),
    ]
    assert cells[4][:3] == ["control, median / mean", "", "142"]  # the median of 142 and 143 s, rounded
    assert cells[4][4] == "0.8550" and cells[5][4] == "0.8350"
    assert lines[-1].startswith(
        "Unseen validation accuracy, mean over the seeds, with minus without: -0.0200 [-0.0300, -0.0100]"
    )
    assert lines[-1].endswith(": **below**.")
    assert "reused" not in lines[0]
    path.write_text(json.dumps({**record, "control_record": "first.json"}), encoding="utf-8")
    reused = "The control's runs are those of `first.json`, reused (the runs are deterministic)."
    assert paired_block(path).splitlines()[0].endswith(reused)
    path.write_text(json.dumps({**record, "control_record": "first.json", "added_off": ["a.b"]}), encoding="utf-8")
    added = reused[:-1] + "; the keys added since they ran, `a.b`, are at values that leave them off."
    assert paired_block(path).splitlines()[0].endswith(added)
    again = {"seed": 42, "seconds": 1153.4, "validation_right": "as recorded"}
    checked = {"control_record": "first.json", "added_off": ["a.b"], "control_again": again}
    path.write_text(json.dumps({**record, **checked}), encoding="utf-8")
    measured = "(seed 42's control, run again at that commit, answered every validation review as the record's run did"
    assert paired_block(path).splitlines()[0].endswith(f"{added[:-1]} {measured}, in 1153 s on the lever's machine).")
    assert paired_block(tmp_path / "none.json") is None


def test_the_paired_table_shows_unseen_test_and_short_reviews_only_where_every_run_has_them():
    def run(seed, short=None):
        found = {"seed": seed, "validation_accuracy": 0.9, "validation_unseen_accuracy": 0.88, "test_accuracy": 0.91}
        return found | {"test_unseen_accuracy": 0.89} | ({"short_accuracy": short} if short is not None else {})

    def side(*runs):
        means = {k: v for k, v in runs[0].items() if k not in ("seed", "short_accuracy")}
        shorts = [r["short_accuracy"] for r in runs if "short_accuracy" in r]
        return (
            means
            | ({"short_accuracy": sum(shorts) / len(shorts)} if len(shorts) == len(runs) else {})
            | {"runs": list(runs)}
        )

    table = paired_table("run", [("control", side(run(42, 0.9), run(43, 0.8))), ("lever", side(run(42, 1.0)))])
    header, *rows = [
        [c.strip() for c in line.strip("|").split("|")] for line in table.splitlines() if "---" not in line
    ]
    assert header[-2:] == ["unseen test", "short reviews"]
    assert [r[-1] for r in rows] == ["0.9000", "0.8000", "1.0000", "0.8500", "1.0000"]
    older = paired_table("run", [("control", side(run(42), run(43))), ("lever", side(run(42, 1.0)))])
    assert "short reviews" not in older and "unseen test" in older  # a side without the short score: no column


def test_the_agreement_block_has_a_row_per_seed_and_the_total(tmp_path):
    def counts(n, both, model, base, neither):
        return {"n": n, "both_right": both, "model_only": model, "baseline_only": base, "both_wrong": neither}

    one = counts(100, 90, 2, 5, 3) | {"margin": -3, "either_right": 97}
    record = {
        "record": "benchmarks/results/levers/x.json",
        "side": "lever",
        "lever": "x",
        "runs": [{"seed": 42, "baseline": "svm", **one}],
        "total": one,
    }
    (tmp_path / "x-lever.json").write_text(json.dumps(record), encoding="utf-8")
    block = agreement_block(tmp_path / "x-lever.json")
    assert block.startswith(
        "Counted by `benchmarks/agreement.py` from the lever side of `benchmarks/results/levers/x.json`"
    )
    cells = block_rows(block)
    assert cells == [
        ["42", "SVM", "100", "90", "2", "5", "3", "-3", "0.9700"],
        ["all", "", "100", "90", "2", "5", "3", "-3", "0.9700"],
    ]
    assert agreement_block(tmp_path / "none.json") is None
    assert "`cat`" not in block  # no table by value without --by
    other = counts(40, 30, 6, 1, 3) | {"margin": +5, "either_right": 37}
    record["by"] = {"column": "cat", "values": [{"value": "手机", **one}, {"value": "衣服", **other}]}
    (tmp_path / "x-lever.json").write_text(json.dumps(record), encoding="utf-8")
    by_value = agreement_block(tmp_path / "x-lever.json").split("column `cat`")[1]
    assert block_rows(by_value) == [
        ["手机", "100", "2", "5", "-3", "0.9200", "0.9500"],  # model: (90 + 2) / 100, baseline: (90 + 5) / 100
        ["衣服", "40", "6", "1", "+5", "0.9000", "0.7750"],
    ]


def test_the_lever_block_gives_each_runs_unseen_test_margin_over_the_strongest_baseline(tmp_path):
    def run(seed, delta, name):
        scores = {"validation_accuracy": 0.9, "validation_unseen_accuracy": 0.88, "test_accuracy": 0.91}
        margin = {"name": name, "delta": delta, "ci95": {"lo": delta - 0.01, "hi": delta + 0.01}}
        return {"seed": seed, "seconds": 100, **scores, "test_vs_best_baseline": margin}

    def side(*runs):
        means = {"validation_accuracy": 0.9, "validation_unseen_accuracy": 0.88, "test_accuracy": 0.91}
        return {**means, "runs": list(runs)}

    record = {
        "set": ["nb.ngrams=3"],
        "base": [],
        "seeds": [42, 52],
        "commit": "abcdef0" + "0" * 33,
        "control": side(run(42, -0.002, "svm"), run(52, 0.001, "baseline")),
        "lever_runs": side(run(42, 0.012, "svm"), run(52, 0.02, "nblr")),
        "unseen_validation": {"delta": 0.01, "ci95": {"lo": 0.0, "hi": 0.02}, "n": 862, "verdict": "level"},
    }
    path = tmp_path / "nb.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    margins = block_rows(paired_block(path).split("**level**.")[1])
    assert margins == [
        ["42", "-0.0020 [-0.0120, +0.0080] SVM", "+0.0120 [+0.0020, +0.0220] SVM"],
        ["52", "+0.0010 [-0.0090, +0.0110] TF-IDF LR", "+0.0200 [+0.0100, +0.0300] NB-LR"],
    ]
    del record["control"]["runs"][1]["test_vs_best_baseline"]  # a run recorded before evaluate compared them
    path.write_text(json.dumps(record), encoding="utf-8")
    assert paired_block(path).rstrip().endswith("**level**.")


def test_the_learning_curve_block_has_a_row_per_point_and_a_mean_row_per_share(tmp_path):
    def point(share, seed, delta):
        def versus(d):
            return {"name": "svm", "delta": d, "ci95": {"lo": d - 0.004, "hi": d + 0.004}}

        scores = {"validation_unseen": 0.9, "validation_vs_best_baseline": versus(delta - 0.001)}
        scores |= {"test_unseen": 0.93 + delta, "test_vs_best_baseline": versus(delta)}
        return {"share": share, "seed": seed, "train_rows": round(1000 * share), **scores}

    points = [point(0.25, 42, -0.01), point(0.25, 52, -0.002), point(1.0, 42, 0.006)]

    def mean(share, rows, test, margin, above, below):
        scores = {"validation_unseen": 0.9, "validation_margin": margin - 0.001, "test_unseen": test}
        counts = {"validation_margin_above": above, "validation_margin_below": below}
        counts |= {"test_margin_above": above, "test_margin_below": below}
        return {"share": share, "train_rows": rows, "test_margin": margin, **scores, **counts}

    curve = [mean(0.25, 250, 0.924, -0.006, 0, 1), mean(1.0, 1000, 0.936, 0.006, 1, 0)]
    record = {"recipe": "transformer", "corpus": "online-shopping", "commit": "abcdef123", "curve": curve}
    record |= {"set": ["train.epochs=20"]}
    (tmp_path / "c.json").write_text(json.dumps(record | {"points": points}), encoding="utf-8")
    block = curve_block(tmp_path / "c.json")
    start = "Measured by `benchmarks/learning_curve.py` at commit `abcdef1`: the `transformer` recipe with "
    start += "`train.epochs=20` on"
    assert block.startswith(start)
    assert block_rows(block) == [
        ["25%", "250", "42", "0.9000", "-0.0110 [-0.0150, -0.0070] SVM", "0.9200", "-0.0100 [-0.0140, -0.0060] SVM"],
        ["25%", "250", "52", "0.9000", "-0.0030 [-0.0070, +0.0010] SVM", "0.9280", "-0.0020 [-0.0060, +0.0020] SVM"],
        [
            "25%, mean",
            "250",
            "",
            "0.9000",
            "-0.0070 (0 of 2 above 0, 1 below)",
            "0.9240",
            "-0.0060 (0 of 2 above 0, 1 below)",
        ],
        ["100%", "1000", "42", "0.9000", "+0.0050 [+0.0010, +0.0090] SVM", "0.9360", "+0.0060 [+0.0020, +0.0100] SVM"],
        [
            "100%, mean",
            "1000",
            "",
            "0.9000",
            "+0.0050 (1 of 1 above 0, 0 below)",
            "0.9360",
            "+0.0060 (1 of 1 above 0, 0 below)",
        ],
    ]
    assert curve_block(tmp_path / "none.json") is None


def test_the_neighbours_block_lists_every_lever_against_the_same_control_runs_with_its_test_margin(tmp_path):
    """A record is a neighbour when its control runs answered every validation review as the named record's did,
    seed by seed; its row pairs the unseen validation verdict with its mean unseen test margin, and that minus
    the control's."""

    def run(seed, right, margin):
        compared = {"name": "svm", "delta": margin, "ci95": {"lo": margin - 0.01, "hi": margin + 0.01}}
        return {"seed": seed, "validation_right": right, "test_vs_best_baseline": compared}

    def record(name, setting, control, lever, delta):
        verdict = {"delta": delta, "ci95": {"lo": delta - 0.002, "hi": delta + 0.002}, "n": 10, "verdict": "level"}
        body = {"lever": name, "set": [setting], "control": {"runs": control}, "lever_runs": {"runs": lever}}
        (tmp_path / f"{name}.json").write_text(json.dumps({**body, "unseen_validation": verdict}), encoding="utf-8")

    line = [run(42, "101", 0.002), run(52, "110", 0.004)]
    record("first", "a=1", line, [run(42, "111", 0.004), run(52, "111", 0.006)], -0.001)
    record("second", "b=2", line, [run(42, "100", 0.0), run(52, "100", 0.002)], 0.0005)
    other = [run(42, "101", 0.002), run(52, "111", 0.004)]  # another control: seed 52 answered otherwise
    record("third", "c=3", other, [run(42, "111", 0.009), run(52, "111", 0.009)], 0.002)
    lines = neighbours_block(tmp_path / "first.json").splitlines()
    assert "`first` (the same runs, seed by seed; 2 records)" in lines[0] and "control's (+0.0030)" in lines[0]
    assert lines[4] == "| `b=2` | +0.0005 [-0.0015, +0.0025] level | +0.0010 | -0.0020 |"
    assert lines[5] == "| `a=1` | -0.0010 [-0.0030, +0.0010] level | +0.0050 | +0.0020 |"
    assert len(lines) == 6
    assert neighbours_block(tmp_path / "none.json") is None
    # Records from before the answers were kept: alike in having none, neighbours of no one.
    unanswered = [{k: v for k, v in r.items() if k != "validation_right"} for r in line]
    record("old", "d=4", unanswered, unanswered, 0.0)
    record("older", "e=5", unanswered, unanswered, 0.0)
    assert neighbours_block(tmp_path / "old.json") is None
    assert len(neighbours_block(tmp_path / "first.json").splitlines()) == 6
