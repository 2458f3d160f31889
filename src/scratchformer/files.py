"""Atomic file output: a killed stage never leaves a half-written file behind.

Everything is written to a temporary sibling first (``.<name>.<random>.tmp``,
git-ignored) and moved into place with ``os.replace``, which is atomic on POSIX
and Windows when both paths share a file system. A process killed mid-write
(SIGKILL runs no cleanup) leaves its temporary behind; the next write of the
same path removes it. A folder (:func:`atomic_dir`) is swapped in whole: at every
instant its path holds the complete old folder or the complete new one.
"""

from __future__ import annotations

import ctypes
import errno as _errno
import glob
import json
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; move it onto ``path`` if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_leftovers(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual mode
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    finally:
        tmp_path.unlink(missing_ok=True)


def write_atomic(path: str | Path, write: Callable[[Path], Any]) -> None:
    """Call ``write(tmp_path)``, then move the result onto ``path``."""
    with atomic_path(path) as tmp:
        write(tmp)


def write_json(path: str | Path, data: Any) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_text(path: str | Path, text: str) -> None:
    write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def remove_leftovers(path: Path) -> None:
    """Delete temporaries that an earlier, killed write of ``path`` left beside it."""
    for leftover in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        _remove(leftover)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield a fresh temporary folder beside ``path``; it replaces ``path`` on success.

    At every instant ``path`` is the complete old folder or the complete new one, even
    under SIGKILL: the new folder is built beside it, then the two are swapped in one
    ``renameat2(RENAME_EXCHANGE)`` (Linux), and only then is the old one deleted. Where
    the exchange is not available, the old folder is renamed aside (``.<name>.old.tmp``)
    and the new one renamed in; a kill between those two renames leaves ``path``
    missing for an instant, and :func:`restore_dir` (called by the next write, and by
    readers) renames the complete old folder back. Deleting the old folder comes last,
    from outside ``path``, so a kill there leaves only a leftover, removed next time.
    The temporary names never enter the files: the caller writes into a folder whose
    name it does not record.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    restore_dir(path)
    remove_leftovers(path)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    os.chmod(tmp, 0o777 & ~_umask())
    try:
        yield tmp
        _swap_in(tmp, path)
    finally:
        _remove(tmp)  # the new folder if the block failed, else the old one swapped out


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def restore_dir(path: str | Path) -> bool:
    """Put back the folder that a write killed between its two renames left aside; True if it did.

    The aside copy is complete (it was ``path`` until one atomic rename moved it), so
    renaming it back gives ``path`` its old, whole contents. Safe to call at any time.
    """
    path = Path(path)
    aside = _aside(path)
    if os.path.lexists(path) or not aside.is_dir():
        return False
    os.rename(aside, path)
    log.warning("%s: restored the previous folder that an interrupted write had moved aside", path)
    return True


def _aside(path: Path) -> Path:
    return path.parent / f".{path.name}.old.tmp"


def _swap_in(new: Path, path: Path) -> None:
    """Make ``new`` be ``path``; the old ``path`` ends at ``new`` (deleted by the caller), if there was one."""
    if not os.path.lexists(path):
        os.rename(new, path)
        return
    if path.is_dir() and not path.is_symlink() and _exchange(new, path):
        return
    aside = _aside(path)
    os.rename(path, aside)  # from here until the next rename, path is missing: restore_dir puts it back
    os.rename(new, path)
    os.rename(aside, new)  # into the temporary's name, which the caller deletes


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically with Linux's ``renameat2(RENAME_EXCHANGE)``; False where it is unavailable."""
    if _RENAMEAT2 is None:
        return False
    if _RENAMEAT2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    errno = ctypes.get_errno()
    if errno in (_errno.ENOSYS, _errno.EINVAL, _errno.ENOTSUP, _errno.EOPNOTSUPP, _errno.EPERM):
        return False  # an old kernel, or a file system that cannot exchange: rename aside instead
    raise OSError(errno, f"cannot exchange {a} and {b}: {os.strerror(errno)}")


def _renameat2() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        function = libc.renameat2  # glibc 2.28+
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_RENAMEAT2 = _renameat2()
