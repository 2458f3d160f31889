"""The ``dvc`` and ``git`` calls the reports make, with errors that name what went wrong."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any


class ReportError(Exception):
    """A report cannot be made: an unknown revision, a failed ``dvc``/``git`` command, bad output."""


def run(*cmd: str, cwd: Path | None = None) -> str:
    """Run ``cmd`` and return its stdout; a failure raises ReportError with the command and its stderr."""
    try:
        result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    except FileNotFoundError as err:
        raise ReportError(f"`{cmd[0]}` is not installed or not on PATH") from err
    if result.returncode != 0:
        message = (result.stderr or result.stdout).strip()
        raise ReportError(f"`{' '.join(cmd)}` failed (exit {result.returncode}): {message}")
    return result.stdout


def dvc_json(*args: str, cwd: Path | None = None) -> Any:
    """``dvc ARGS --json``, parsed."""
    out = run("dvc", *args, "--json", cwd=cwd)
    try:
        return json.loads(out)
    except json.JSONDecodeError as err:
        raise ReportError(f"`dvc {' '.join(args)} --json` did not print JSON: {out[:200]!r}") from err


def resolve_revision(rev: str, cwd: Path | None = None) -> str:
    """The commit ``rev`` names: any git revision, or the name of a DVC experiment.

    Experiments live under ``refs/exps/…/<name>`` (what ``dvc exp list`` shows). The
    reports hand ``dvc`` and ``git`` the commit id this returns, never ``rev`` itself: a
    name like ``--all`` (git allows it as an experiment's ref) would reach them as an
    option, so a revision that starts with "-" is refused outright.
    """
    if rev.startswith("-"):
        raise ReportError(f"revision '{rev}' starts with '-': refusing it, it would reach dvc and git as an option")
    try:
        return run("git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", cwd=cwd).strip()
    except ReportError:
        pass
    refs = run("git", "for-each-ref", "--format=%(refname) %(objectname)", "refs/exps", cwd=cwd)
    matches = [line.split()[1] for line in refs.splitlines() if line.split()[0].rsplit("/", 1)[-1] == rev]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise ReportError(f"experiment name '{rev}' is ambiguous: {len(matches)} experiments carry it")
    raise ReportError(
        f"unknown revision '{rev}': neither a git revision nor an experiment name "
        "(see `git log --oneline` and `dvc exp list --all-commits`)"
    )
