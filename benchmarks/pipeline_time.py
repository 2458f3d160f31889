"""Wall time of the default pipeline: a full `dvc repro --force`, the train stage alone, a no-op `dvc repro`.

Wall time is a fact of the machine, not of code, params and data, so no DVC-tracked
output holds it (a rerun must change no byte); this benchmark is where it is measured.

Run from the repository root on a machine set up with the README's commands (and the
data reachable: hub or local folders). Writes benchmarks/results/pipeline_time.json,
which `python -m tools.docs.report readme` quotes in docs/results.md.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from pathlib import Path

from scratchformer.files import write_json

OUT = Path("benchmarks/results/pipeline_time.json")


def timed(*args: str) -> float:
    start = time.perf_counter()
    subprocess.run(["dvc", *args], check=True, stdout=subprocess.DEVNULL)
    return round(time.perf_counter() - start, 1)


def main() -> None:
    full = timed("repro", "--force")
    train = timed("repro", "--force", "--single-item", "train")
    noop = timed("repro")
    result = {
        "full_repro_seconds": full,
        "noop_repro_seconds": noop,
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "train_seconds": train,
    }
    write_json(OUT, result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
