""".ci/run's last check, run here on the committed metrics: it must find what it reads, and go red.

CI reaches that check only after the whole pipeline has run three times (over half an hour), so
a key it reads that has moved would otherwise be found there, and only there.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]


def last_python_block(script: str) -> str:
    """The body of the last ``python - <<'PY' ... PY`` heredoc in a shell script."""
    blocks = re.findall(r"^python - <<'PY'\n(.*?)^PY$", script, flags=re.S | re.M)
    assert blocks, "no python heredoc in .ci/run"
    return blocks[-1]


def test_the_metrics_check_ci_runs_names_a_flipped_prediction_and_a_moved_loss(tmp_path):
    clone = tmp_path / "clone"  # a clean checkout of HEAD: the check edits metric files in place
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(clone)], check=True)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    block = last_python_block((ROOT / ".ci" / "run").read_text(encoding="utf-8"))
    result = subprocess.run([sys.executable, "-"], input=block, cwd=clone, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "validation.accuracy" in result.stdout and "best_val_loss" in result.stdout
