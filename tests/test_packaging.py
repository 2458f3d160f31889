"""``pip install .`` must give a CLI whose every subcommand runs: pyproject.toml declares what the code imports."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
# Commands the code runs as programs, not imports (reporting shells out to `dvc`).
PROGRAMS = {"dvc"}


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def imported_distributions(*folders: Path) -> dict[str, set[str]]:
    """Distribution name -> the files that import it, for every non-stdlib import under ``folders``."""
    owners = importlib.metadata.packages_distributions()
    found: dict[str, set[str]] = {}
    for folder in folders:
        for path in folder.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    if top in sys.stdlib_module_names or top in ("scratchformer", "stages"):
                        continue
                    for dist in owners.get(top, [top]):
                        found.setdefault(dist.lower().replace("_", "-"), set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_runtime_import_is_a_declared_dependency():
    declared = {_name(r) for r in PROJECT["dependencies"]}
    missing = {
        d: sorted(f) for d, f in imported_distributions(ROOT / "src", ROOT / "stages").items() if d not in declared
    }
    assert not missing, f"pyproject.toml [project] dependencies lack what the code imports: {missing}"
    assert PROGRAMS <= declared, f"pyproject.toml lacks the programs the CLI runs: {sorted(PROGRAMS - declared)}"


def test_test_tools_are_a_dev_extra_not_runtime_dependencies():
    declared = {_name(r) for r in PROJECT["dependencies"]}
    assert not declared & {"pytest", "ruff"}
    assert {"pytest", "ruff"} <= {_name(r) for r in PROJECT["optional-dependencies"]["dev"]}
    requirements = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    assert re.search(r"^-e \.\[dev\]", requirements, re.MULTILINE), "requirements.txt should install the dev extra"
