"""Saving and loading: the one place checkpoints are written and read.

Checkpoints are data, not code. A checkpoint is a dict with at least ``format_version``, ``kind``
(the learner that wrote it) and ``game`` (the board name).

* ``.pt`` files hold tensors, numbers, strings, lists and dicts; written with ``torch.save`` and
  read with ``torch.load(weights_only=True)``.
* ``.npz`` files (tabular learners) hold numpy arrays; non-array entries travel as one JSON string
  under ``__meta__``; read with ``np.load(allow_pickle=False)``.

Writes are atomic (a temporary file in the same folder, then a rename), so a run killed mid-write
leaves the previous checkpoint intact. Every failure to read is a ``CheckpointError`` whose message
is one line naming the file.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

FORMAT_VERSION = 1


class CheckpointError(RuntimeError):
    """A checkpoint is missing, corrupt, or does not match what the caller expects."""


def _atomic_write(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _check_plain(value: Any, where: str, torch) -> None:
    # a weights-only load refuses anything else (numpy arrays and scalars included): fail at save time
    # rather than write a checkpoint that cannot be read back
    if isinstance(value, dict):
        for k, v in value.items():
            _check_plain(k, where, torch)
            _check_plain(v, f"{where}[{k!r}]", torch)
    elif isinstance(value, (list, tuple, set)) and type(value) in (list, tuple, set):
        for i, v in enumerate(value):
            _check_plain(v, f"{where}[{i}]", torch)
    elif not isinstance(value, (torch.Tensor, torch.Size, torch.dtype, torch.device, bool, int, float, complex,
                                str, bytes, type(None))) or isinstance(value, np.generic):
        raise ValueError(f"checkpoint entry {where} is a {type(value).__module__}.{type(value).__qualname__}; "
                         f".pt checkpoints hold tensors, numbers, strings, lists and dicts "
                         f"(convert with torch.as_tensor / int / float, or save a .npz)")


def save_checkpoint(path: str | os.PathLike, payload: dict[str, Any]) -> Path:
    """Write ``payload`` atomically; the format follows the suffix (``.pt`` or ``.npz``).

    Raises ValueError, writing nothing, for a payload that could not be read back (a ``.pt`` payload
    holding numpy data or other objects).
    """
    path = Path(path)
    for key in ("kind", "game"):
        if key not in payload:
            raise ValueError(f"checkpoint payload needs a {key!r} entry")
    payload = {"format_version": FORMAT_VERSION, **payload}
    if path.suffix == ".pt":
        import torch

        _check_plain(payload, "payload", torch)
        _atomic_write(path, lambda f: torch.save(payload, f))
    elif path.suffix == ".npz":
        arrays = {k: v for k, v in payload.items() if isinstance(v, np.ndarray)}
        meta = {k: v for k, v in payload.items() if not isinstance(v, np.ndarray)}
        if "__meta__" in arrays:
            raise ValueError("'__meta__' is reserved")
        arrays["__meta__"] = np.array(json.dumps(meta))
        _atomic_write(path, lambda f: np.savez_compressed(f, **arrays))
    else:
        raise ValueError(f"{path}: checkpoints end in .pt or .npz")
    return path


def load_checkpoint(path: str | os.PathLike, kind: str | None = None, game: str | None = None) -> dict[str, Any]:
    """Read a checkpoint; check its ``kind`` and ``game`` when given. Raises CheckpointError."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint file")
    try:
        if path.suffix == ".pt":
            import torch

            payload = torch.load(path, map_location="cpu", weights_only=True)
        elif path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as z:
                payload = {k: z[k] for k in z.files if k != "__meta__"}
                payload.update(json.loads(str(z["__meta__"])))
        else:
            raise CheckpointError(f"{path}: not a checkpoint (expected a .pt or .npz file)")
    except CheckpointError:
        raise
    except Exception as e:  # corrupt, truncated, or holds objects that are not plain data
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CheckpointError(f"{path}: cannot read checkpoint ({type(e).__name__}: {msg[:200]})") from None
    if not isinstance(payload, dict) or "kind" not in payload or "format_version" not in payload:
        raise CheckpointError(f"{path}: not a ttt checkpoint (no kind/format_version)")
    if payload["format_version"] != FORMAT_VERSION:
        raise CheckpointError(f"{path}: format version {payload['format_version']}, expected {FORMAT_VERSION}")
    if kind is not None and payload["kind"] != kind:
        raise CheckpointError(f"{path}: a {payload['kind']!r} checkpoint, expected {kind!r}")
    if game is not None and payload.get("game") != game:
        raise CheckpointError(f"{path}: trained on board {payload.get('game')!r}, not {game!r}")
    return payload
