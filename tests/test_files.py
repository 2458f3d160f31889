"""Crash safety of atomic_dir: a write killed after any one of its file operations leaves
the folder whole, old or new, and the next write finishes the job and cleans up."""

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scratchformer.files import atomic_dir, restore_dir

OLD = {"config.json": "old config", "tokenizer.json": "old vocab", "weights/model.bin": "old weights"}
NEW = {"config.json": "new config", "tokenizer.json": "new vocab", "weights/model.bin": "new", "README.md": "card"}

# Runs in a child process: write NEW into sys.argv[1] through atomic_dir, and SIGKILL itself
# right after its k-th file operation (k = sys.argv[2]); every os call that creates, renames
# or deletes a path counts, and so does the renameat2 exchange and each file written.
CHILD = textwrap.dedent(
    """
    import json, os, signal, sys
    from pathlib import Path
    from scratchformer import files

    target, kill_after, exchange = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "exchange"
    new = json.loads(sys.argv[4])
    if not exchange:
        files._RENAMEAT2 = None
    count = 0

    def step():
        global count
        count += 1
        if count == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)

    def counted(function):
        def wrapper(*args, **kwargs):
            result = function(*args, **kwargs)
            step()
            return result
        return wrapper

    for name in ("rename", "replace", "mkdir", "rmdir", "unlink", "chmod"):
        setattr(os, name, counted(getattr(os, name)))
    files._exchange = counted(files._exchange)
    with files.atomic_dir(target) as tmp:
        for rel, text in new.items():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_text(text)
            step()
    print(count)
    """
)


def write(folder: Path, contents: dict[str, str]) -> None:
    for rel, text in contents.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)


def snapshot(folder: Path) -> dict[str, str] | None:
    if not folder.is_dir():
        return None
    return {p.relative_to(folder).as_posix(): p.read_text() for p in folder.rglob("*") if p.is_file()}


def child(target: Path, kill_after: int, mode: str) -> subprocess.CompletedProcess:
    import json

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(target), str(kill_after), mode, json.dumps(NEW)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


@pytest.mark.parametrize("mode", ["exchange", "rename"])
def test_a_write_killed_after_any_file_operation_leaves_the_old_or_the_new_folder(tmp_path, mode):
    if mode == "exchange":
        from scratchformer import files

        if files._RENAMEAT2 is None:
            pytest.skip("no renameat2 here")
    killed_at = []
    for k in range(1, 200):
        root = tmp_path / str(k)
        target = root / "models" / "classifier"
        write(target, OLD)
        done = child(target, k, mode)
        if done.returncode == 0:  # k is past the last operation: the write completed
            assert snapshot(target) == NEW
            break
        assert done.returncode == -signal.SIGKILL, done.stderr
        killed_at.append(k)
        found = snapshot(target)
        if mode == "exchange":  # one atomic exchange: never a moment without the folder
            assert found in (OLD, NEW), f"killed after operation {k}: {found}"
        elif found is None:  # between the two renames: what readers and the next write restore
            assert restore_dir(target)
            found = snapshot(target)
        assert found in (OLD, NEW), f"killed after operation {k}: {found}"
        # The next write completes and leaves nothing beside the folder.
        with atomic_dir(target) as tmp:
            write(tmp, NEW)
        assert snapshot(target) == NEW
        assert sorted(p.name for p in target.parent.iterdir()) == ["classifier"], k
    else:
        pytest.fail("the write never completed")
    assert len(killed_at) >= 10  # every file written, created, renamed and deleted was a kill point


def test_a_failed_block_leaves_the_old_folder(tmp_path):
    target = tmp_path / "tokenizer"
    write(target, OLD)
    with pytest.raises(RuntimeError), atomic_dir(target) as tmp:
        write(tmp, NEW)
        raise RuntimeError("stage failed")
    assert snapshot(target) == OLD
    assert [p.name for p in tmp_path.iterdir()] == ["tokenizer"]


def test_a_first_write_and_a_rewrite(tmp_path):
    target = tmp_path / "deep" / "out"
    with atomic_dir(target) as tmp:
        write(tmp, OLD)
    assert snapshot(target) == OLD
    with atomic_dir(target) as tmp:
        write(tmp, NEW)
    assert snapshot(target) == NEW
    assert [p.name for p in target.parent.iterdir()] == ["out"]
