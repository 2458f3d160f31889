"""Wall time of the test suite: the unit and stage tests alone (`-m "not slow"`), then everything.

Like the pipeline's wall time, a fact of the machine: measured here, quoted in docs/tests.md
and the README by `python -m tools.docs.report readme`. Each run must pass; a failing suite
has no duration worth quoting, so the benchmark stops with pytest's own exit status.

Run from the repository root, on an otherwise idle machine:

    python benchmarks/test_time.py

Writes benchmarks/results/test_time.json.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

from scratchformer.files import write_json

OUT = Path("benchmarks/results/test_time.json")
SUITES = {"unit": ["-m", "not slow"], "all": []}  # name -> pytest's selection
PASSED = re.compile(r"(\d+) passed")


def timed(selection: list[str]) -> dict:
    """Seconds and passed-test count of ``python -m pytest <selection>``; exits with pytest's status if it fails."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", *selection], capture_output=True, text=True)
    seconds = round(time.perf_counter() - start, 1)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    if done.returncode != 0:
        print(done.stdout[-4000:], done.stderr[-2000:], sep="\n")
        sys.exit(done.returncode)
    passed = PASSED.search(summary)
    return {"seconds": seconds, "passed": int(passed.group(1)) if passed else 0}


def main() -> None:
    result = {name: timed(selection) for name, selection in SUITES.items()}
    result |= {"cpus": os.cpu_count(), "machine": platform.machine()}
    write_json(OUT, result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
