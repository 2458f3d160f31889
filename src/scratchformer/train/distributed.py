"""Data-parallel training on PyTorch's own engine: torchrun + DistributedDataParallel.

Every process (a *rank*) holds a full copy of the model. Each step all ranks draw
the same global batch of ``train.batch_size`` texts (the same generator, the same
seed), each takes its own contiguous share of it, and DDP averages the gradients
across ranks during ``backward``, so every copy applies the same update. With the
loss normalised by the *global* number of examples (see :func:`global_count`) the
update equals the one-process update on the whole batch, up to float rounding:
``train.nproc`` changes the speed, not the recipe.

The processes are started by ``torchrun`` (``torch.distributed.run``), which sets
``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE`` and the rendezvous address in their
environment; :func:`launch` calls it for a stage that asks for more than one
process, so ``dvc repro`` stays the only command. The gloo backend carries the
collectives on CPU, nccl on CUDA. Only rank 0 writes outputs.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel


@dataclass(frozen=True)
class World:
    """This process's place among the training processes (one process: rank 0 of 1)."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0  # index on this machine: which GPU to use

    @property
    def main(self) -> bool:
        """Rank 0: the only process that writes files and logs curves."""
        return self.rank == 0

    def place(self, device: torch.device) -> torch.device:
        """This rank's device: on CUDA, the GPU of its local rank; otherwise ``device`` itself."""
        return torch.device("cuda", self.local_rank) if device.type == "cuda" and self.size > 1 else device

    def shard(self, batch: Tensor) -> Tensor:
        """This rank's contiguous share of a global batch (sizes differ by at most one row)."""
        return batch.tensor_split(self.size)[self.rank] if self.size > 1 else batch

    def sum(self, t: Tensor) -> Tensor:
        """``t`` summed over all ranks, in place (one collective; nothing to do for one process)."""
        if self.size > 1:
            dist.all_reduce(t)
        return t

    def gather(self, obj: object) -> list[object]:
        """Every rank's ``obj``, indexed by rank (pickled; for small things such as RNG states)."""
        if self.size == 1:
            return [obj]
        out: list[object] = [None] * self.size
        dist.all_gather_object(out, obj)
        return out

    def wrap(self, module: nn.Module, find_unused_parameters: bool = False) -> nn.Module:
        """``module`` inside DistributedDataParallel (itself for one process).

        DDP broadcasts rank 0's weights at construction, so every copy starts
        identical, and hooks ``backward`` to average the gradients. The model's
        buffers (the sinusoidal table) are constants, so they are not
        re-broadcast before every forward pass.
        """
        if self.size == 1:
            return module
        device = next(module.parameters()).device
        return DistributedDataParallel(
            module,
            device_ids=[device] if device.type == "cuda" else None,
            find_unused_parameters=find_unused_parameters,
            forward_sync_buffers=False,
        )


ALONE = World()  # the world of a plain, single process


def launched() -> bool:
    """Whether this process was started by torchrun (or another launcher setting its variables)."""
    return "LOCAL_RANK" in os.environ and "WORLD_SIZE" in os.environ


def init(device_name: str) -> World:
    """Join the process group torchrun set up; a plain process is the world of one.

    On CUDA each process takes the GPU of its local rank and talks nccl;
    elsewhere gloo. Returns this process's :class:`World`.
    """
    if not launched():
        return World()
    local_rank = int(os.environ["LOCAL_RANK"])
    cuda = device_name.startswith("cuda") or (device_name == "auto" and torch.cuda.is_available())
    if cuda:
        torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl" if cuda else "gloo")
    return World(dist.get_rank(), dist.get_world_size(), local_rank)


def shutdown() -> None:
    """Leave the process group, if this process joined one.

    DistributedDataParallel's reducer holds the group and sits in a reference cycle, so it
    outlives the training loop until a garbage collection; collected only at interpreter exit,
    it would tear gloo's threads down there, where a rank can abort ("terminate called without
    an active exception"). Collect first, so the group is released while Python is whole.
    """
    if dist.is_initialized():
        gc.collect()
        dist.destroy_process_group()


T = TypeVar("T")


def run_ranks(nproc: int, device_name: str, module: str, work: Callable[[World], T]) -> T | None:
    """A stage's body on ``nproc`` processes: what rank 0's ``work(world)`` returns, None elsewhere.

    A plain process asked for more than one starts ``python -m module`` again
    through torchrun (:func:`launch`, same arguments) and returns None once all
    ranks are done; a rank (or a single process) joins the group, works, and leaves it.
    """
    if nproc > 1 and not launched():
        launch(nproc, module, sys.argv[1:])
        return None
    world = init(device_name)
    try:
        result = work(world)
    finally:
        shutdown()
    return result if world.main else None


def launch(nproc: int, module: str, argv: list[str]) -> None:
    """Run ``python -m module argv`` as ``nproc`` processes on this machine, through torchrun.

    ``--standalone`` starts a private rendezvous on a free local port, so
    several runs can share a machine. If any rank fails, torchrun stops the
    others (none is left behind) and this raises ``SystemExit`` naming the
    first rank that failed, its exit code and its error (each rank prints its
    own traceback to stderr as well).
    """
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import main as torchrun

    try:
        torchrun(["--standalone", f"--nproc-per-node={nproc}", "--module", module, *argv])
    except ChildFailedError as err:
        rank, failure = err.get_first_failure()
        detail = failure.message
        if isinstance(detail, dict):  # the error file @record wrote: {"message": "...", "extraInfo": {...}}
            detail = detail.get("message", "")
        detail = detail if isinstance(detail, str) else ""
        if not detail or detail.startswith("To enable traceback"):
            detail = "its error is printed above"
        raise SystemExit(
            f"{module}: rank {rank} of {nproc} failed with exit code {failure.exitcode}: {detail}"
        ) from None
