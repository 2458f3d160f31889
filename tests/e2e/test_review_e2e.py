"""`scratchformer review` on two committed runs of the fixture pipeline that differ in one param."""

import re
import subprocess
from pathlib import Path

import pytest
from test_pipeline_e2e import make_project, run, write_params

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """A git + DVC project whose HEAD~1 and HEAD hold the pipeline's outputs at train.lr 0.002 and 0.02."""
    repo = tmp_path_factory.mktemp("review")
    params = make_project(repo, n_layers=1, lr=0.002)
    run(["dvc", "repro"], repo)
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-qm", "lr 0.002"], repo)
    params["train"]["lr"] = 0.02
    write_params(repo, params)
    run(["dvc", "repro"], repo)
    run(["git", "add", "-A"], repo)
    run(["git", "commit", "-qm", "lr 0.02"], repo)
    return repo


def committed(repo: Path, rev: str, path: str) -> bytes:
    return subprocess.run(["git", "show", f"{rev}:{path}"], cwd=repo, capture_output=True, check=True).stdout


def embedded(report: str, out: Path) -> list[Path]:
    return [out / link for link in re.findall(r"\]\((images/[^)]+)\)", report)]


def test_review_names_the_param_shows_both_accuracies_and_embeds_differing_images(repo):
    heatmap = "plots/images/attention_heatmap.png"
    # A stray workspace file must not leak into a review of two commits.
    (repo / heatmap).write_bytes((repo / "plots/images/loss.png").read_bytes())
    run(["scratchformer", "review", "HEAD~1", "HEAD"], repo)
    out = repo / "review"
    report = (out / "report.md").read_text(encoding="utf-8")

    assert re.search(r"\| params\.yaml \| train\.lr \| 0\.002 \| 0\.02 \|", report)
    assert report.count("| params.yaml |") == 1  # the one param that changed, nothing else
    accuracy = re.search(r"\| validation_accuracy \| ([0-9.]+) \| ([0-9.]+) \|", report)
    assert accuracy, "both revisions' validation accuracy, in the acceptance table"
    assert re.search(r"\| metrics/eval\.json \| validation\.accuracy \| [0-9.]+ \| [0-9.]+ \| [+-]", report)
    assert re.search(r"\*\*`acceptance\.passed`: (still|newly) (passing|failing)\*\*", report)
    assert "metrics/baseline.json | baseline.validation.accuracy" in report

    images = embedded(report, out)
    assert len(images) >= 10 and all(p.is_file() and p.stat().st_size > 1000 for p in images)
    pair = {p.name: p.read_bytes() for p in images if p.name.startswith("attention_heatmap--")}
    assert pair.keys() == {"attention_heatmap--head_1.png", "attention_heatmap--head.png"}
    assert pair["attention_heatmap--head_1.png"] == committed(repo, "HEAD~1", heatmap)
    assert pair["attention_heatmap--head.png"] == committed(repo, "HEAD", heatmap)
    assert pair["attention_heatmap--head_1.png"] != pair["attention_heatmap--head.png"]
    for overlay in ("training_loss_per_step.png", "accuracy_per_epoch.png", "gradient_norm_before_clipping.png"):
        assert (out / "images" / overlay).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", overlay
    html = (out / "report.html").read_text(encoding="utf-8")
    assert 'src="images/' not in html and html.count("data:image/png;base64,") == len(images)


def test_review_of_the_workspace_reads_the_workspace(repo):
    """HEAD left out: the workspace is what is reviewed, on purpose."""
    (repo / "plots/images/attention_heatmap.png").write_bytes((repo / "plots/images/grad_norm.png").read_bytes())
    run(["scratchformer", "review", "HEAD", "--out", "review-ws"], repo)
    image = repo / "review-ws" / "images" / "attention_heatmap--workspace.png"
    assert image.read_bytes() == (repo / "plots/images/attention_heatmap.png").read_bytes()
    assert "# Review: HEAD → workspace" in (repo / "review-ws" / "report.md").read_text(encoding="utf-8")
