"""The review's tables, verdicts, pictures and errors, from DVC-shaped data (no pipeline run)."""

import ast
import json
import re
import subprocess
from pathlib import Path

import pytest

from scratchformer.cli import main
from scratchformer.reporting.commands import ReportError, resolve_revision
from scratchformer.reporting.page import to_html, to_markdown
from scratchformer.reporting.plots import render_plots, static_spec
from scratchformer.reporting.review import (
    Row,
    acceptance_section,
    change,
    metrics_section,
    params_section,
    rows,
    write_review,
)

LABELS = ("main", "workspace")
PNG = b"\x89PNG\r\n\x1a\n"
SRC = Path(__file__).parents[2] / "src" / "scratchformer"


def test_change_is_absolute_and_relative_and_empty_when_meaningless():
    assert change(0.8, 0.9) == ("+0.1", "+12.5%")
    assert change(2, 1) == ("-1", "-50.0%")
    assert change("3/4", "9/10") == ("+0.15", "+20.0%")  # exact fractions are numbers too
    assert change(None, 0.9) == ("", "")  # absent at one revision
    assert change(0, 1) == ("+1", "")  # no relative change from zero
    assert change("cpu", "cuda") == ("", "") and change(True, False) == ("", "")


def test_params_section_lists_only_what_changed_and_says_absent():
    params = rows({"params.yaml": {"train.lr": {"old": 0.002, "new": 0.02}, "seed": {"old": 42, "new": 42}}})
    params.append(Row("params.yaml", "model.rope", None, True))
    table = params_section(params, LABELS).table
    assert table.rows == [["params.yaml", "train.lr", "0.002", "0.02"], ["params.yaml", "model.rope", "absent", "true"]]
    assert params_section([Row("params.yaml", "seed", 42, 42)], LABELS).notes == ["No param differs."]


def metric_rows(**values):
    return [Row("metrics/eval.json", key, old, new) for key, (old, new) in values.items()]


def limits(**values):
    return [Row("params.yaml", f"acceptance.{key}", old, new) for key, (old, new) in values.items()]


def test_acceptance_verdicts_follow_each_revisions_threshold():
    metrics = metric_rows(
        **{
            "acceptance.passed": (True, False),
            "acceptance.validation_accuracy": (0.85, 0.78),  # a score: must reach its threshold
            "acceptance.padding_leak": (0.0, 0.0),  # an error: must stay below
            "acceptance.causal_mask_leak": (2e-6, 0.0),
            "acceptance.new_check": (None, 0.1),
        }
    )
    params = limits(validation_accuracy=(0.8, 0.8), padding_leak=(1e-5, 1e-5), causal_mask_leak=(1e-6, 1e-6))
    params += limits(new_check=(None, 0.5))
    section = acceptance_section(metrics, params, LABELS)
    assert section.notes == ["**`acceptance.passed`: newly failing** (true → false)"]
    verdicts = {row[0]: row[-1] for row in section.table.rows}
    assert verdicts == {
        "validation_accuracy": "newly failing",
        "padding_leak": "still passing",
        "causal_mask_leak": "newly passing",
        "new_check": "passing (absent in main)",
    }
    thresholds = {row[0]: row[3] for row in section.table.rows}
    assert thresholds["validation_accuracy"] == "≥ 0.8" and thresholds["padding_leak"] == "< 1.00e-05"


def test_acceptance_reads_a_threshold_change_and_a_check_without_one():
    metrics = metric_rows(**{"acceptance.validation_accuracy": (0.85, 0.85), "acceptance.speed": (1.0, 2.0)})
    section = acceptance_section(metrics, limits(validation_accuracy=(0.8, 0.9)), LABELS)
    by_check = {row[0]: row for row in section.table.rows}
    assert by_check["validation_accuracy"][3:] == ["≥ 0.9 (was 0.8)", "newly failing"]
    assert by_check["speed"][3:] == ["absent", "no threshold in params"]


def test_metrics_section_shows_changes_first_then_baseline_rows_and_hides_the_rest():
    metrics = rows(
        {
            "metrics/eval.json": {
                "validation.accuracy": {"old": 0.8, "new": 0.9},
                "test.loss": {"old": 0.3, "new": 0.3},
                "acceptance.passed": {"old": True, "new": True},
                "test.brier": {"old": None, "new": 0.1},  # a metric the older revision did not have
            },
            # Sorted by file, the baseline's rows would come first: "baseline" < "eval".
            "metrics/baseline.json": {
                "baseline.test.accuracy": {"old": 0.92, "new": 0.92},
                "baseline.validation.accuracy": {"old": 0.9, "new": 0.9},
            },
        }
    )
    section = metrics_section(metrics, LABELS)
    # What moved leads the table, in file and key order; the unchanged baseline rows follow.
    assert [row[1:] for row in section.table.rows] == [
        ["test.brier", "absent", "0.1", "", ""],
        ["validation.accuracy", "0.8", "0.9", "+0.1", "+12.5%"],
        ["baseline.test.accuracy", "0.92", "0.92", "0", "+0.0%"],
        ["baseline.validation.accuracy", "0.9", "0.9", "0", "+0.0%"],
    ]
    assert section.notes == [
        "2 metrics changed: they come first, then the n-gram baseline's 2 unchanged, for reference; "
        "1 other unchanged left out."
    ]


@pytest.mark.parametrize(
    ("diff", "note"),
    [
        ({"a": {"old": 1, "new": 1}}, "No metric differs."),
        ({"baseline.x": {"old": 1, "new": 1}}, "No metric changed; the n-gram baseline's 1 unchanged, for reference."),
        ({"x": {"old": 1, "new": 2}, "y": {"old": 1, "new": 1}}, "1 metric changed; 1 other unchanged left out."),
    ],
)
def test_metrics_section_says_what_it_shows(diff, note):
    path = "metrics/baseline.json" if "baseline.x" in diff else "metrics/eval.json"
    section = metrics_section(rows({path: diff}), LABELS)
    assert section.notes == [note]


def test_a_revision_without_metrics_is_said_once_and_reads_absent():
    metrics = metric_rows(**{"validation.accuracy": (None, 0.9), "acceptance.passed": (None, True)})
    section = metrics_section(metrics, LABELS)
    assert section.notes[0] == "main has no metrics: every metric reads absent there."
    assert section.table.rows == [["metrics/eval.json", "validation.accuracy", "absent", "0.9", "", ""]]
    assert acceptance_section([], [], LABELS).notes == ["Neither main nor workspace has acceptance metrics."]


def vega(title):
    return {
        "type": "vega",
        "revisions": list(LABELS),
        "content": {
            "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
            "title": title,
            "params": [{"name": "showValues", "bind": {"input": "checkbox"}}],
            "data": {"values": [{"step": i, "loss": 1 / (i + 1), "rev": r} for r in LABELS for i in range(3)]},
            "mark": "line",
            "encoding": {
                "x": {"field": "step", "type": "quantitative"},
                "y": {"field": "loss", "type": "quantitative"},
                "color": {"field": "rev"},
            },
        },
    }


def test_pictures_pair_images_by_revision_and_render_overlays(tmp_path):
    dvc_out = tmp_path / "images" / ".dvc-plots"
    dvc_out.mkdir(parents=True)
    for label in LABELS:
        (dvc_out / f"{label}_heatmap.png").write_bytes(PNG + label.encode())
    image = "plots/images/attention_heatmap.png"
    plots = {
        "data": {
            "Loss": [vega("Loss")],
            "Confusion matrix (test)": [vega("Confusion")],
            "Gradient norm": [],
            image: [{"type": "image", "revisions": [r], "url": str(dvc_out / f"{r}_heatmap.png")} for r in LABELS],
            "plots/images/loss.png": [
                {"type": "image", "revisions": ["workspace"], "url": str(dvc_out / "workspace_heatmap.png")}
            ],
        },
        "errors": [{"name": "Confusion matrix (test)", "rev": "main", "type": "FileNotFoundError"}],
    }
    curves, attention, confusion, other = render_plots(plots, LABELS, tmp_path / "images")
    assert [p.title for p in curves.pictures] == ["Loss"]
    assert curves.notes == ["Gradient norm: absent in both revisions."]
    assert (tmp_path / "images" / "loss.png").read_bytes().startswith(PNG)
    assert [p.title for p in confusion.pictures] == ["Confusion matrix (test) (main: absent)"]
    (heatmap,) = attention.pictures
    assert heatmap.panels == [(r, f"attention_heatmap--{r}.png") for r in LABELS]
    assert (tmp_path / "images" / "attention_heatmap--main.png").read_bytes() == PNG + b"main"
    assert other.pictures[0].panels == [("main", None), ("workspace", "loss--workspace.png")]
    assert not dvc_out.exists()  # DVC's own copies are not left behind


def test_confusion_pictures_from_visualize_go_under_confusion_matrices(tmp_path):
    """dvc.yaml lists the confusion matrices as visualize's PNGs, not as vega plots."""
    dvc_out = tmp_path / "images" / ".dvc-plots"
    dvc_out.mkdir(parents=True)
    names = ["plots/images/confusion_validation.png", "plots/images/confusion_test.png"]
    data = {}
    for name in names:
        for label in LABELS:
            (dvc_out / f"{label}_{Path(name).name}").write_bytes(PNG + label.encode())
        data[name] = [
            {"type": "image", "revisions": [r], "url": str(dvc_out / f"{r}_{Path(name).name}")} for r in LABELS
        ]
    _, _, confusion, other = render_plots({"data": data}, LABELS, tmp_path / "images")
    assert [p.title for p in confusion.pictures] == names
    assert confusion.notes == []  # never "Neither revision has any." above two pictures of them
    assert other.pictures == [] and other.notes == ["Neither revision has any."]


def test_still_pictures_of_confusion_matrices_print_their_counts():
    spec = vega("Confusion")["content"]
    spec["data"]["values"].reverse()  # DVC lists HEAD's rows first
    still = static_spec(spec, LABELS)
    assert still["params"] == [{"name": "showValues", "bind": {"input": "checkbox"}, "value": True}]
    revs = [row["rev"] for row in still["data"]["values"]]
    assert revs == ["main"] * 3 + ["workspace"] * 3  # BASE's facet on the left, as in every table
    assert "value" not in spec["params"][0] and spec["data"]["values"][0]["rev"] == "workspace"  # DVC's is kept


def test_markdown_links_the_pictures_and_html_embeds_them(tmp_path):
    from scratchformer.reporting.page import Picture, Report, Section, Table

    (tmp_path / "a.png").write_bytes(PNG + b"a")
    report = Report(
        "Review: main → workspace",
        [
            Section("Params that changed", table=Table(["param", "main"], [["model.pooling", "a|b"]])),
            Section("Attention", pictures=[Picture("heatmap", [("main", "a.png"), ("workspace", None)])]),
        ],
    )
    md = to_markdown(report)
    assert "| model.pooling | a\\|b |" in md
    assert "| ![heatmap, main](images/a.png) | absent |" in md
    html = to_html(report, tmp_path)
    assert "images/a.png" not in html and html.count("data:image/png;base64,") == 1
    assert "<td>a|b</td>" in html


def git_repo(path: Path) -> str:
    def git(*args):
        return subprocess.run(["git", *args], cwd=path, check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "one")
    sha = git("rev-parse", "HEAD")
    git("update-ref", f"refs/exps/{sha[:2]}/{sha[2:]}/lr-sweep-1", sha)
    return sha


def test_revisions_resolve_as_git_or_experiment_names_and_unknown_ones_are_named(tmp_path):
    sha = git_repo(tmp_path)
    assert resolve_revision("HEAD", cwd=tmp_path) == sha
    assert resolve_revision("lr-sweep-1", cwd=tmp_path) == sha
    with pytest.raises(ReportError, match="unknown revision 'nope': neither a git revision nor an experiment"):
        resolve_revision("nope", cwd=tmp_path)


def test_review_command_says_which_revision_is_unknown(tmp_path, monkeypatch, capsys):
    git_repo(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["review", "main~5", "HEAD"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("scratchformer review: unknown revision 'main~5'") and "Traceback" not in err
    assert not (tmp_path / "review").exists()


def test_review_will_not_replace_a_folder_that_is_not_a_review(tmp_path):
    (tmp_path / "notes.txt").write_text("keep me")
    with pytest.raises(ReportError, match="refusing to replace"):
        write_review("HEAD~1", None, tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "keep me"


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports (``import a.b`` and ``from a.b import c`` both give ``a.b``)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module or "")
    return names


def test_the_model_library_never_imports_dvc_git_or_the_reports():
    """The boundary, as rules over every Python file of the repository:

    1. The library (``src/scratchformer`` outside ``reporting/``) imports neither ``dvc``,
       ``subprocess``, ``scratchformer.reporting`` nor ``tools``; ``cli.py`` alone imports
       the reporting modules its commands run (commands, review, metrics_check).
    2. ``dvclive`` is imported only where training logs: ``stages/train.py``, a stage (not
       the library), which hands the library a logger.
    3. Nothing outside ``tools/`` and the tests imports ``tools`` (the docs generators).
    """
    root = SRC.parents[1]
    files = [p for folder in ("src", "stages", "tools", "benchmarks") for p in (root / folder).rglob("*.py")]
    offenders, dvclive, tools = [], [], []
    for path in files:
        where, names = path.relative_to(root).as_posix(), imports(path)
        top = {name.split(".")[0] for name in names}
        library = where.startswith("src/") and "reporting" not in path.relative_to(SRC).parts
        if library:
            offenders += [
                f"{path.relative_to(SRC)}: {name}"
                for name in sorted(names)
                if name.split(".")[0] in ("dvc", "subprocess", "tools") or name.startswith("scratchformer.reporting")
            ]
        if "dvclive" in top:
            dvclive.append(where)
        if "tools" in top and not where.startswith("tools/"):
            tools.append(where)
    reporting = ("commands", "experiments", "review", "metrics_check")
    assert sorted(set(offenders)) == sorted(f"cli.py: scratchformer.reporting.{name}" for name in reporting)
    assert dvclive == ["stages/train.py"]  # seen there, and only there
    assert tools == []


@pytest.mark.slow
def test_metrics_absent_at_one_revision_read_absent_through_dvc(tmp_path, monkeypatch):
    """A real `dvc metrics diff`: no metrics file at the first commit, a new key at the third."""

    def commit(message, metrics=None):
        if metrics is not None:
            (tmp_path / "metrics.json").write_text(json.dumps(metrics))
        subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
        subprocess.run(
            ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", message],
            cwd=tmp_path,
            check=True,
        )

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["dvc", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "params.yaml").write_text("acceptance:\n  validation_accuracy: 0.5\n")
    (tmp_path / "dvc.yaml").write_text("metrics:\n  - metrics.json\n")
    commit("no metrics yet")
    commit("metrics", {"acceptance": {"validation_accuracy": 0.6, "passed": True}})
    commit("a new metric", {"acceptance": {"validation_accuracy": 0.4, "passed": False}, "test": {"brier": 0.2}})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DVC_NO_ANALYTICS", "1")

    first = write_review("HEAD~2", "HEAD~1", Path("review"))
    assert first.warnings == ["HEAD~2 has no metrics: every metric reads absent there."]
    md = Path("review/report.md").read_text(encoding="utf-8")
    assert "| validation_accuracy | absent | 0.6 | ≥ 0.5 | passing (absent in HEAD\\~2) |" in md

    write_review("HEAD~1", "HEAD", Path("review"))
    md = Path("review/report.md").read_text(encoding="utf-8")
    assert "**`acceptance.passed`: newly failing** (true → false)" in md
    assert "| metrics.json | test.brier | absent | 0.2 |  |  |" in md
    assert "Neither revision has any." in md  # no plots declared: said, not a traceback


def test_readme_review_block_runs_the_command_it_shows(monkeypatch):
    from scratchformer.reporting import review
    from tools.docs import pages as report

    calls = []
    monkeypatch.setattr(review, "excerpt", lambda base, head: calls.append((base, head)) or "#### Review\n")
    text = "x\n<!-- review:start -->\n```bash\nscratchformer review v1 exp-2\n```\nold\n<!-- review:end -->\ny\n"
    block = report.review_block(text)
    assert calls == [("v1", "exp-2")]
    assert block == "```bash\nscratchformer review v1 exp-2\n```\n\n#### Review\n"
    with pytest.raises(ValueError, match="must show a `scratchformer review BASE"):
        report.review_block("<!-- review:start -->\nnothing\n<!-- review:end -->\n")


def test_example_workflow_posts_the_report_the_command_writes():
    import yaml

    workflow = yaml.safe_load((SRC.parents[1] / ".github" / "workflows" / "review.yml").read_text())
    steps = [step.get("run", "") for step in workflow["jobs"]["review"]["steps"]]
    (review,) = [s for s in steps if s.startswith("scratchformer review")]
    assert "--out" not in review  # the report lands in review/, the default
    assert any("dvc repro" in s for s in steps) and "cml comment create --publish review/report.md" in steps
    assert workflow[True] == "pull_request"  # YAML 1.1 reads the key `on` as True


@pytest.mark.parametrize("rev", ["--all", "-n1"])
def test_a_revision_that_looks_like_an_option_is_refused_even_as_an_experiment_name(tmp_path, rev):
    sha = git_repo(tmp_path)
    subprocess.run(["git", "update-ref", f"refs/exps/{sha[:2]}/{sha[2:]}/{rev}", sha], cwd=tmp_path, check=True)
    with pytest.raises(ReportError, match=f"revision '{rev}' starts with '-'"):
        resolve_revision(rev, cwd=tmp_path)


def test_review_hands_dvc_commit_ids_not_the_names_it_was_given(tmp_path, monkeypatch):
    from scratchformer.reporting import review

    sha = git_repo(tmp_path)
    monkeypatch.chdir(tmp_path)
    calls = []
    monkeypatch.setattr(review, "dvc_json", lambda *args: calls.append(args) or {})
    report = review.build("lr-sweep-1", "HEAD", tmp_path / "images")
    assert report.title == "Review: lr-sweep-1 → HEAD"  # the names the reader gave, on the page
    assert [args[2:4] for args in calls] == [(sha, sha)] * 3  # the commits, to dvc
    calls.clear()
    review.build("HEAD", None, tmp_path / "images")  # against the workspace: one revision
    assert [args[2:4] for args in calls] == [(sha, "--all"), (sha, "--all"), (sha, "-o")]
    with pytest.raises(ReportError, match="revision '--all' starts with '-'"):
        review.build("--all", None, tmp_path / "images")
    assert len(calls) == 3  # refused before dvc was asked anything


def test_example_workflow_keeps_github_expressions_out_of_shell_lines():
    """``${{ github.base_ref }}`` inside ``run:`` is pasted into the script unquoted; it goes through env."""
    import yaml

    workflow = yaml.safe_load((SRC.parents[1] / ".github" / "workflows" / "review.yml").read_text())
    steps = workflow["jobs"]["review"]["steps"]
    assert not [s["run"] for s in steps if "${{" in s.get("run", "")]
    (review,) = [s for s in steps if s.get("run", "").startswith("scratchformer review")]
    assert review["env"] == {"BASE_REF": "${{ github.base_ref }}"}
    assert review["run"] == 'scratchformer review "origin/$BASE_REF"'


def test_pictures_dvc_reports_under_commit_ids_are_shown_under_the_names_given(tmp_path, monkeypatch):
    """dvc answers in the commit ids it was given; the pictures must still pair with the reader's names."""
    from scratchformer.reporting import review

    sha = git_repo(tmp_path)
    monkeypatch.chdir(tmp_path)
    picture = tmp_path / "confusion.png"
    picture.write_bytes(b"\x89PNG" + bytes(2000))
    plots = {
        "data": {"plots/images/confusion_validation.png": [{"type": "image", "revisions": [sha], "url": str(picture)}]}
    }
    monkeypatch.setattr(review, "dvc_json", lambda *args: plots if args[0] == "plots" else {})
    report = review.build("lr-sweep-1", None, tmp_path / "images")
    (confusion,) = [s for s in report.sections if s.title == "Confusion matrices"]
    (shown,) = confusion.pictures
    assert dict(shown.panels)["lr-sweep-1"] is not None  # the base's picture, found by its name
    assert (tmp_path / "images" / dict(shown.panels)["lr-sweep-1"]).read_bytes() == picture.read_bytes()


HOSTILE = "<img src=x onerror=alert(1)> **b** [l](javascript:x) $$ | `tick` a_b_c _em_\nnext"


def test_param_values_keys_and_revision_names_are_shown_as_text_in_markdown_and_html(tmp_path):
    from scratchformer.reporting.page import Report

    labels = ("main", "exp_<b>|*x*")
    params = rows({"params.yaml": {"data.source": {"old": "lansinuote/ChnSentiCorp", "new": HOSTILE}}})
    params.append(Row("params.yaml", "data.label_names.<i>", None, "|`x`|"))
    metrics = rows({"metrics/eval.json": {"acceptance.passed": {"old": True, "new": False}, "odd`key": {"new": 1}}})
    report = Report(
        "Review: main → exp_<b>|*x*",
        [acceptance_section(metrics, params, labels), params_section(params, labels), metrics_section([], labels)],
    )
    md = to_markdown(report)
    assert not re.search(r"(?<!\\)[<>\[\]$]", md) and not re.search(r"(?<!\\)\*\*b", md)  # every one escaped
    assert (
        "\\<img src=x onerror=alert(1)\\> \\*\\*b\\*\\* \\[l\\](javascript:x) \\$\\$ \\| \\`tick\\` a_b_c \\_em\\_ next"
        in md
    )
    table = [line for line in md.splitlines() if line.startswith("| params.yaml |")]
    assert len(table) == 2 and all(line.replace("\\|", "").count("|") == 5 for line in table)  # four cells each
    assert "exp\\_\\<b\\>\\|\\*x\\*" in md  # the revision's name in the header, title and notes
    page = to_html(report, tmp_path)
    assert "<img" not in page and "<b>" not in page and "<i>" not in page and "\\" not in page  # no backslash shown
    assert "&lt;img src=x onerror=alert(1)&gt; **b** [l](javascript:x) $$ | `tick` a_b_c _em_" in page
    assert "exp_&lt;b&gt;|*x*" in page and "<strong><code>acceptance.passed</code>" in page
