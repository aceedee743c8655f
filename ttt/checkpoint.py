"""Saving and loading: the one place checkpoints are written and read.

Checkpoints are data, not code. A checkpoint is a dict with at least ``format_version``, ``kind``
(the learner that wrote it) and ``game`` (the board name).

* ``.pt`` files hold tensors, numbers, strings, lists and dicts; written with ``torch.save`` and
  read with ``torch.load(weights_only=True)``.
* ``.npz`` files (tabular learners) hold numpy arrays; non-array entries travel as one JSON string
  under ``__meta__``; read with ``np.load(allow_pickle=False)``.

Every file the project writes goes through ``atomic_write``: a temporary file in the same folder,
flushed and fsynced, then renamed over the target. A run killed mid-write, a full disk or any other
error leaves the previous file whole and no temporary file behind (a SIGKILL leaves its temporary file:
``temporary_files`` finds it, and the next training start in that folder removes it); an ``OSError``
names the target.
Files get the mode a plain ``open`` would give them (0644 under the usual umask). A checkpoint is
serialised in memory first, so a full disk is an ``OSError`` (ENOSPC), not a serialiser's error.
Every failure to read is a ``CheckpointError`` whose message is one line naming the file. A
checkpoint whose learned values (networks' weights, tables' values: ``LEARNED``) hold a NaN or an
infinity, as a diverged run leaves, is refused too, naming the entry: resume, the tools that play it
and the statistics of its values would otherwise fail far from the cause or go on with nonsense.
"""

from __future__ import annotations

import glob
import io
import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

FORMAT_VERSION = 1


class CheckpointError(RuntimeError):
    """A checkpoint is missing, corrupt, or does not match what the caller expects."""


def _file_mode() -> int:
    """The mode ``open(path, "w")`` gives a new file: 0666 less the umask (``mkstemp`` would give 0600)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write(path: str | os.PathLike, write: Callable[[Path], Any]) -> Path:
    """``write(tmp)`` writes the content to ``tmp``, a temporary file beside ``path`` with the same
    suffix; it is then fsynced and renamed over ``path``. Returns ``path``.

    On any failure (an ``OSError`` such as a full disk, a signal) the temporary file is removed, an
    earlier ``path`` stays whole, and the error propagates; an ``OSError`` names ``path``.
    """
    path = Path(path)
    if path.is_symlink() and path.exists():  # replace the file the link points to, not the link
        path = path.resolve()
    tmp = None
    try:
        if path.is_dir():
            raise IsADirectoryError(21, "is a folder, not a file", str(path))
        path.parent.mkdir(parents=True, exist_ok=True)
        prefix, suffix = _temporary_name(path)
        fd, name = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=path.parent)
        os.close(fd)
        tmp = Path(name)
        write(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)  # the bytes are on disk before the rename makes them the file
        finally:
            os.close(fd)
        os.chmod(tmp, _file_mode())
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        if e.filename in (None, str(tmp)):  # name the file the user asked for, not the temporary one
            raise OSError(e.errno, e.strerror or str(e), str(path)) from None
        raise
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
    return path


def _temporary_name(path: Path) -> tuple[str, str]:
    """The prefix and suffix of ``atomic_write``'s temporary files for ``path`` (``.checkpoint.XXXX.tmp.pt``)."""
    return f".{path.stem}.", f".tmp{path.suffix}"


def temporary_files(path: str | os.PathLike) -> list[Path]:
    """The temporary files of ``atomic_write`` beside ``path``: a process killed mid-write (SIGKILL, a
    power cut) leaves its one behind, which nothing else removes."""
    path = Path(path)
    prefix, suffix = _temporary_name(path)
    return sorted(p for p in path.parent.glob(glob.escape(prefix) + "*" + glob.escape(suffix)) if p.is_file())


def _write_bytes(data: bytes) -> Callable[[Path], Any]:
    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()

    return write


def _check_plain(value: Any, where: str, torch) -> None:
    import numpy as np

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
    import numpy as np

    path = Path(path)
    for key in ("kind", "game"):
        if key not in payload:
            raise ValueError(f"checkpoint payload needs a {key!r} entry")
    payload = {"format_version": FORMAT_VERSION, **payload}
    if path.suffix == ".pt":
        import torch

        _check_plain(payload, "payload", torch)
        buffer = io.BytesIO()
        torch.save(payload, buffer)
        atomic_write(path, _write_bytes(buffer.getvalue()))
    elif path.suffix == ".npz":
        arrays = {k: v for k, v in payload.items() if isinstance(v, np.ndarray)}
        meta = {k: v for k, v in payload.items() if not isinstance(v, np.ndarray)}
        if "__meta__" in arrays:
            raise ValueError("'__meta__' is reserved")
        arrays["__meta__"] = np.array(json.dumps(meta))
        buffer = io.BytesIO()
        np.savez_compressed(buffer, **arrays)
        atomic_write(path, _write_bytes(buffer.getvalue()))
    else:
        raise ValueError(f"{path}: checkpoints end in .pt or .npz")
    return path


def load_weights(module, weights: dict[str, Any]) -> None:
    """``module.load_state_dict(weights)``, strict. Weights that do not fit the module (an entry
    missing or left over, as a network with or without a rank head gives, or another shape) are a
    one-line CheckpointError saying which; the caller, who knows the file, puts its name in front."""
    own = module.state_dict()
    missing = sorted(set(own) - set(weights))
    extra = sorted(set(weights) - set(own))
    shapes = sorted(k for k in set(own) & set(weights) if tuple(own[k].shape) != tuple(weights[k].shape))
    if missing or extra or shapes:
        parts = [f"{what}: {', '.join(keys)}" for what, keys in
                 (("missing", missing), ("not in this network", extra), ("another shape", shapes)) if keys]
        raise CheckpointError(f"its weights do not fit the network ({'; '.join(parts)})")
    module.load_state_dict(weights)


def load_checkpoint(path: str | os.PathLike, kind: str | None = None, game: str | None = None) -> dict[str, Any]:
    """Read a checkpoint; check its ``kind`` and ``game`` when given. Raises CheckpointError."""
    import numpy as np

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
        raise CheckpointError(f"{path}: cannot read checkpoint, truncated or corrupt "
                              f"({type(e).__name__}: {msg[:200]})") from None
    if not isinstance(payload, dict) or "kind" not in payload or "format_version" not in payload:
        raise CheckpointError(f"{path}: not a ttt checkpoint (no kind/format_version)")
    if payload["format_version"] != FORMAT_VERSION:
        raise CheckpointError(f"{path}: format version {payload['format_version']}, expected {FORMAT_VERSION}")
    if kind is not None and payload["kind"] != kind:
        raise CheckpointError(f"{path}: a {payload['kind']!r} checkpoint, expected {kind!r}")
    if game is not None and payload.get("game") != game:
        raise CheckpointError(f"{path}: trained on board {payload.get('game')!r}, not {game!r}")
    _check_finite(path, payload)
    return payload


# the entries that hold what a learner learned (networks' weights, tables' values), wherever they sit in the
# payload, except under the entries of the state around them (optimiser state, games in flight with their
# -inf masks, replay buffers), which may hold infinities by design
LEARNED = re.compile(r"weights|target|pool|model|q|values(_\d+)?")
NOT_LEARNED = {"optimizer", "envs", "label_games", "buffer", "rng", "torch_rng"}


def _check_finite(path: Path, payload: dict) -> None:
    """Refuse (CheckpointError) a checkpoint whose learned values hold a NaN or an infinity: a run that
    diverged, whose network would play the first legal move, hint ``+nan`` and fail in the statistics."""
    import numpy as np

    def bad(value: Any, where: str, learned: bool) -> tuple[str, int] | None:
        if isinstance(value, dict):
            items = value.items()
        elif isinstance(value, (list, tuple)):
            items = enumerate(value)
        else:
            count = 0
            if learned and hasattr(value, "dtype") and getattr(value.dtype, "is_floating_point", False):
                count = int((~value.isfinite()).sum())  # a torch tensor
            elif learned and isinstance(value, np.ndarray) and value.dtype.kind == "f":
                count = int((~np.isfinite(value)).sum())
            return (where, count) if count else None
        for key, item in items:
            if key in NOT_LEARNED:
                continue
            inner = f"{where}[{key!r}]" if where else str(key)
            found = bad(item, inner, learned or (isinstance(key, str) and LEARNED.fullmatch(key) is not None))
            if found:
                return found
        return None

    found = bad(payload, "", False)
    if found:
        where, count = found
        what = "1 value that is" if count == 1 else f"{count} values that are"
        raise CheckpointError(f"{path}: {where} holds {what} NaN or infinite (the training diverged); it cannot be "
                              f"played or resumed: use an earlier checkpoint, or train again (a smaller agent.lr)")


def seed_folder(run_dir: Path, seed: int) -> Path:
    """The folder of seed ``seed``'s run in a group side by side (``seeds=K``) in ``run_dir``."""
    return Path(run_dir) / f"seed_{seed}"
