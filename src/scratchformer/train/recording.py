"""Who records a training run: its curves, the probe's snapshots, and the state it resumes from.

As it trains, the loop hands a :class:`Recorder` each step's record, each epoch's
record with the weights it evaluated, and at the end of each epoch everything
needed to carry on (``step``, ``epoch``, ``state``); the base class keeps
nothing.

A training stage's run is recorded by one :class:`Recording`, which owns all of it: the resumable
state (its file, the key it must match, see :mod:`scratchformer.train.resume`),
the curves (a dvclive ``Live``, opened on rank 0 only) and, for each member of
an ensemble (a stage that trains one model has one member, 0), a
:class:`MemberRecorder` that logs that member's curves, keeps its probe
snapshots and saves the run's state at the end of each of its epochs. The
state file holds the finished members and the current one::

    {"key": …, "members": [finished + "member" k, …], "current": loop state + "member" k, or None}

so that a rerun restores the finished members, resumes the current one where
it stopped, and logs again (:meth:`Curves.replay`) what had been logged before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torch import nn

from scratchformer.analysis.probe import Probe, snapshot
from scratchformer.train.distributed import ALONE, World
from scratchformer.train.resume import load_state, save_state

log = logging.getLogger(__name__)


class Recorder:
    """What a training loop hands out as it goes; this one keeps nothing (subclasses override)."""

    def step(self, record: dict) -> None:
        """One step's record (step, loss, grad_norm, lr, layer_grad_norm/<group>), after its update."""

    def epoch(self, record: dict, model: nn.Module) -> None:
        """One epoch's record and the weights that were evaluated (epoch 0: the untrained model; rank 0 only)."""

    def state(self, state: dict) -> None:
        """Everything needed to carry on after this epoch, bit for bit (rank 0 only)."""


class Curves:
    """Member ``k``'s curves in ``live`` (prefixed ``member<k>/`` for k > 0); nothing when ``live`` is None.

    Only rank 0 of a multi-process run logs (as DVCLive prescribes for DDP);
    the other ranks get curves that go nowhere.
    """

    def __init__(self, live: Any | None, k: int) -> None:
        self.live, self.prefix = live, f"member{k}/" if k else ""

    def step(self, record: dict) -> None:
        if self.live is None:
            return
        self.live.step = record["step"]
        for key, value in record.items():  # loss, grad_norm, lr, layer_grad_norm/<group>
            if key != "step":
                self.live.log_metric(f"{self.prefix}step/{key}", value)

    def epoch(self, record: dict) -> None:
        """An epoch's scores; for epoch 0, the untrained model, only its attention statistics."""
        if self.live is None:
            return
        self.live.step = record["epoch"]
        for key, value in record.items():
            if key != "epoch" and (record["epoch"] > 0 or key.startswith("attention/")):
                self.live.log_metric(f"{self.prefix}epoch/{key}", value)

    def replay(self, history: dict) -> None:
        """Log again what a resumed run had already logged before it stopped, in the order it did.

        The untrained model's statistics came first, so the summary
        (dvclive/metrics.json) lists its keys in the same order as an
        uninterrupted run's.
        """
        self.epoch(history["initial"])
        for row in history["steps"]:
            self.step(row)
        for row in history["epochs"]:
            self.epoch(row)


class Recording:
    """One run of a training stage, recorded (see the module docstring); a context that closes the curves.

    ``key`` is what a saved state must match to be resumed
    (:func:`~scratchformer.train.resume.resume_key`); ``live`` opens the curves
    (called on rank 0 only; None: no curves). Every rank builds the run and
    reads the saved state (each resumes its own random generators); only rank 0
    writes.
    """

    def __init__(
        self, state_path: Path, key: dict, world: World = ALONE, live: Callable[[], Any] | None = None
    ) -> None:
        self.path, self.key, self.world = state_path, key, world
        saved = load_state(state_path, key) or {"members": [], "current": None}
        self.finished: list[dict] = list(saved["members"])  # what each finished member left (Member.saved)
        self.current: dict | None = saved["current"]  # the unfinished member's state at its last epoch
        self.open_live, self.live = live, None

    def __enter__(self) -> Recording:
        if self.world.main and self.open_live is not None:
            self.live = self.open_live()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.end()

    def restored(self, k: int) -> dict | None:
        """What member ``k`` left if it finished before the run stopped (its curves logged again), else None.

        Members need not train in the order of their numbers (distillation trains its teachers,
        1..k, before member 0), so each finished one is found by its number.
        """
        saved = next((m for m in self.finished if m["member"] == k), None)
        if saved is None:
            return None
        log.info("member %d: restored, trained before the run stopped", k)
        Curves(self.live, k).replay(saved["history"])
        return saved

    def member(self, k: int = 0, probe: Probe | None = None) -> MemberRecorder:
        """The recorder of member ``k``'s training, resuming where it stopped if it had begun."""
        resume = self.current if self.current is not None and self.current["member"] == k else None
        return MemberRecorder(self, k, probe, resume)

    def finish(self, k: int, saved: dict) -> None:
        """Member ``k`` has ended: ``saved`` (plain data) is what restores it; the state says so."""
        self.finished.append({**saved, "member": k})
        self.current = None
        self.save(None)

    def save(self, current: dict | None) -> None:
        if self.world.main:
            save_state(self.path, {"key": self.key, "members": self.finished, "current": current})

    def close(self) -> None:
        """The outputs are written: nothing left to resume."""
        self.path.unlink(missing_ok=True)


class MemberRecorder(Recorder):
    """Member ``k``'s curves, probe snapshots (with a ``probe``) and resumable state, in ``recording``.

    ``resume`` is the state the member carries on from (None: from the start);
    its curves so far are logged again at once.
    """

    def __init__(self, recording: Recording, k: int, probe: Probe | None, resume: dict | None) -> None:
        self.recording, self.k, self.probe, self.resume = recording, k, probe, resume
        self.curves = Curves(recording.live, k)
        self.snapshots: list[dict] = list(resume["snapshots"]) if resume else []
        if resume and recording.live is not None:
            self.curves.replay(resume["history"])

    def step(self, record: dict) -> None:
        self.curves.step(record)

    def epoch(self, record: dict, model: nn.Module) -> None:
        if self.probe is not None:
            self.snapshots.append(snapshot(model, self.probe, record["epoch"]))
        self.curves.epoch(record)

    def state(self, state: dict) -> None:
        self.recording.save({**state, "snapshots": self.snapshots, "member": self.k})
