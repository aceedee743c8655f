"""Where the work runs: the top-level ``device=auto|cpu|cuda`` key of training, ``ttt.perf`` and
``ttt.benchmark``.

``cpu`` keeps the games in numpy arrays on the host (the engine's fastest form on a CPU, and the
one every seeded result of this project was produced with). ``cuda`` keeps the games, the networks,
move selection, the TD targets and the batched opponents as torch tensors on the GPU. ``auto`` is
``cuda`` when torch sees a GPU, else ``cpu``. ``cuda`` on a machine without one fails at start with
``DeviceError`` (one line).
"""

from __future__ import annotations

DEVICES = ("auto", "cpu", "cuda")
# torch tensors on the CPU: the GPU's code path on a machine without one (the tests run it; not a setting)
TORCH_CPU = "torch-cpu"


class DeviceError(ValueError):
    """A device that is not known or not available here."""


def resolve_device(name: str) -> str:
    """``"cpu"`` or ``"cuda"`` for a ``device`` setting; DeviceError when it cannot be honoured."""
    import torch

    name = str(name)
    if name not in DEVICES:
        raise DeviceError(f"device={name}: choose one of {', '.join(DEVICES)}")
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        build = f"torch {torch.__version__}" + ("" if torch.version.cuda else ", a CPU-only build")
        raise DeviceError(f"device=cuda: no CUDA device is available ({build}); use device=cpu or device=auto")
    return name


def array_device(device: str) -> str | None:
    """The ``device`` argument of ``BatchedGames`` for a resolved device: None (numpy) on the CPU."""
    if device == "cpu":
        return None
    return "cpu" if device == TORCH_CPU else device


def torch_device(device: str) -> str:
    """Where the networks live for a resolved device (or ``TORCH_CPU``)."""
    return "cpu" if device == TORCH_CPU else device


def device_label(device: str) -> str:
    """The device for people: ``cpu``, or ``cuda (NVIDIA H100 80GB HBM3)``."""
    if device in ("cpu", TORCH_CPU):
        return device
    import torch

    return f"{device} ({torch.cuda.get_device_name(torch.device(device))})"


def module_device(module):
    """The device of a network's parameters (the CPU for a network without any)."""
    import torch

    param = next(module.parameters(), None)
    return torch.device("cpu") if param is None else param.device
