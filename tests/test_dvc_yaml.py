"""dvc.yaml must list, per stage, every library module its script imports.

If a stage imported a module that dvc.yaml did not list, editing that module
would not re-run the stage and `dvc repro` would keep stale results.
"""

import ast
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[1]
DVC = yaml.safe_load((ROOT / "dvc.yaml").read_text())


def module_path(name: str) -> Path | None:
    base = (ROOT / "src" if name.startswith("scratchformer") else ROOT) / Path(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def imported_files(script: Path) -> set[str]:
    """Repo-relative paths of the scratchformer and stages modules ``script`` imports, transitively."""
    seen: set[Path] = set()
    todo = [script]
    while todo:
        path = todo.pop()
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for name in names:
                found = module_path(name) if name.startswith(("scratchformer", "stages")) else None
                if found and found not in seen:
                    seen.add(found)
                    todo.append(found)
    # The stages package's __init__ holds code every stage runs (run_stage); scratchformer's hold none.
    return {str(p.relative_to(ROOT)) for p in seen if p.name != "__init__.py" or p.parent.name == "stages"}


@pytest.mark.parametrize("stage", list(DVC["stages"]))
def test_stage_lists_every_module_it_imports(stage):
    spec = DVC["stages"][stage]
    script = ROOT / "stages" / f"{stage}.py"
    # PYTHONPATH=src: the stage imports the library from its own copy of the repository
    # (a queued experiment's temporary copy too), never from a workspace-wide install.
    assert spec["cmd"].startswith(f"PYTHONPATH=src python -m stages.{stage} ")
    deps = set(spec["deps"])
    assert f"stages/{stage}.py" in deps
    missing = imported_files(script) - deps
    assert not missing, f"dvc.yaml stage {stage} does not list {sorted(missing)}"


def test_model_experiments_skip_download_and_tokenize():
    for stage in ("download", "tokenize"):
        params = DVC["stages"][stage].get("params", [])
        assert not any(str(p).startswith(("model", "train")) for p in params)
