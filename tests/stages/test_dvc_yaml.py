"""dvc.yaml must list, per stage, exactly the code its script imports: its own module,
``stages/__init__.py``, and each folder (or root module) of the library it reaches.

If a stage imported a module that dvc.yaml did not list, editing that module
would not re-run the stage and `dvc repro` would keep stale results; a folder it
does not use would re-run it for nothing.
"""

import ast
import importlib
from pathlib import Path

import pytest
import yaml

from scratchformer.config import Params

ROOT = Path(__file__).parents[2]
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
                if not name.startswith(("scratchformer", "stages")):
                    continue
                parts = name.split(".")  # importing a.b.c runs a/__init__.py and a/b/__init__.py first
                for found in (module_path(".".join(parts[:i])) for i in range(1, len(parts) + 1)):
                    if found and found not in seen:
                        seen.add(found)
                        todo.append(found)
    return {str(p.relative_to(ROOT)) for p in seen}


def code_deps(files: set[str]) -> set[str]:
    """What dvc.yaml lists for those files: a library file stands for its top-level folder."""
    deps = set()
    for file in files:
        parts = Path(file).parts
        if parts[:2] == ("src", "scratchformer") and len(parts) > 3:
            deps.add(str(Path(*parts[:3])))
        else:
            deps.add(file)
    return deps


@pytest.mark.parametrize("stage", list(DVC["stages"]))
def test_stage_lists_every_module_it_imports(stage):
    spec = DVC["stages"][stage]
    script = ROOT / "stages" / f"{stage}.py"
    # PYTHONPATH=src: the stage imports the library from its own copy of the repository
    # (a queued experiment's temporary copy too), never from a workspace-wide install.
    assert spec["cmd"].startswith(f"PYTHONPATH=src python -m stages.{stage} ")
    code = {d for d in spec["deps"] if d.startswith(("src/", "stages/"))}
    expected = code_deps(imported_files(script) | {f"stages/{stage}.py"})
    assert not expected - code, f"dvc.yaml stage {stage} does not list {sorted(expected - code)}"
    assert not code - expected, f"dvc.yaml stage {stage} lists code it does not import: {sorted(code - expected)}"


def test_model_experiments_skip_download_and_tokenize():
    for stage in ("download", "tokenize"):
        params = DVC["stages"][stage].get("params", [])
        assert not any(str(p).startswith(("model", "train")) for p in params)


@pytest.mark.parametrize("stage", list(DVC["stages"]))
def test_stage_declares_the_params_it_reads_once_as_dvc_yaml_lists_them(stage):
    """A stage's ``PARAMS`` is dvc.yaml's ``params:`` for it, key for key, and names real keys."""
    module = importlib.import_module(f"stages.{stage}")
    assert list(module.PARAMS) == DVC["stages"][stage].get("params", []), f"stages/{stage}.py PARAMS"
    assert list(Params().select(module.PARAMS)) == list(module.PARAMS)
