"""Which device a stage trains or predicts on: ``train.device`` (or ``--device``) checked against this machine.

Its own small module: the train, pretrain, evaluate and inputs stages and ``scratchformer predict``
all ask, and none of them needs the distributed machinery to do so.
"""

from __future__ import annotations

import torch

from scratchformer.config import DEVICE, ConfigError, TrainConfig


def pick_device(name: str) -> torch.device:
    """``auto`` = cuda if present, then Apple's mps, then cpu; a named device must exist."""
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if DEVICE.fullmatch(name) is None:
        raise ValueError(f"{name!r} is not a device: give auto, cpu, cuda, cuda:N or mps")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {name!r} asked for, but this machine has no CUDA device (use cpu or auto)")
    if device.type == "cuda" and device.index is not None and device.index >= (n := torch.cuda.device_count()):
        have = f"{n} CUDA device" + (" (cuda:0)" if n == 1 else f"s (cuda:0 to cuda:{n - 1})")
        raise ValueError(f"device {name!r} asked for, but this machine has {have}")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"device {name!r} asked for, but this machine has no Apple GPU (use cpu or auto)")
    return device


def check_device(config: TrainConfig) -> torch.device:
    """The device ``train.device`` names, if this machine has it and it runs ``train.precision``.

    Called by the first stage (inputs), so that a device or precision this machine
    lacks stops the pipeline in its first second, not at pretrain or train.
    """
    try:
        device = pick_device(config.device)
    except ValueError as err:
        raise ConfigError(f"train.device={config.device!r}: {err}") from None
    if config.precision == "fp16" and device.type != "cuda":
        raise ConfigError(
            f"train.precision=fp16 needs CUDA (its gradients need loss scaling), and train.device={config.device!r} "
            f"is {device.type} here: use bf16 or fp32"
        )
    if config.precision == "bf16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise ConfigError(
            f"train.precision=bf16: this GPU ({torch.cuda.get_device_name(device)}) has no bfloat16; use fp16 or fp32"
        )
    return device
