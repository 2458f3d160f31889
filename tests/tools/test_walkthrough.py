"""docs/walkthrough.md is generated from the code and params; it must match what they give today."""

import json
from pathlib import Path

import pytest
from fixtures import committed

from scratchformer.config import load_params
from tools.docs.walkthrough import render, tokenizer_input
from tools.docs.walkthrough_measure import loop_calling

ROOT = Path(__file__).parents[2]


def test_committed_walkthrough_is_current(tmp_path):
    # The commit's page, params and probe snapshots, not the workspace's: after a
    # `dvc exp run` the workspace holds an experiment's params and outputs.
    params = load_params(committed("params.yaml", tmp_path))
    page = committed("docs/walkthrough.md", tmp_path).read_text(encoding="utf-8")
    try:
        given = tokenizer_input(params, ROOT)
    except FileNotFoundError:
        # The page's own record of the ids would only check the page against itself.
        pytest.skip("no tokenizer here (dvc repro, or the mirror linked as bert-base-chinese): ids unverifiable")
    snapshots = json.loads(committed("plots/probe/snapshots.json", tmp_path).read_text(encoding="utf-8"))
    expected = render(params, given, snapshots, ROOT)
    assert page == expected, "docs/walkthrough.md is stale: run python -m tools.docs.walkthrough"


def test_an_excerpt_that_disappears_is_an_error_not_a_silent_gap():
    def step(batch):
        for x in batch:
            x.backward()

    assert "x.backward()" in loop_calling(step, "backward")
    with pytest.raises(LookupError, match="has no loop calling clip_grad_norm_"):
        loop_calling(step, "clip_grad_norm_")
