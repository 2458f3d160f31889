"""The library and the stages stay readable: no module over 300 lines, no function over 60."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
FILES = sorted([*(ROOT / "src").rglob("*.py"), *(ROOT / "stages").rglob("*.py")])
MODULE_LINES, FUNCTION_LINES = 300, 60


def too_long(source: str) -> list[str]:
    """The functions (methods too) of ``source`` longer than FUNCTION_LINES, decorators and docstrings included."""
    nodes = ast.walk(ast.parse(source))
    return [
        f"{node.name}: {node.end_lineno - node.lineno + 1} lines"
        for node in nodes
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno >= FUNCTION_LINES
    ]


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_modules_and_functions_stay_short(path):
    source = path.read_text(encoding="utf-8")
    assert len(source.splitlines()) <= MODULE_LINES, f"{path.name}: split it by role"
    assert too_long(source) == [], "split the function into named steps"


def test_the_length_check_counts_a_function_from_its_def_to_its_last_line():
    body = "\n".join(f"    x{i} = {i}" for i in range(59))
    assert too_long(f"def f():\n{body}\n") == []  # 60 lines
    assert too_long(f"def f():\n{body}\n    return x0\n") == ["f: 61 lines"]
