"""The arrays the batched engine is written against: numpy on the host, or torch tensors on a device.

The rules of ``BatchedGames`` (``ttt.games.batched``), the threat queries (``ttt.games.threats``) and
the batched players are written once, against the few operations below; ``arrays_for(device)``
picks the implementation. ``device=None`` gives numpy arrays (the host path, and the fastest on a
CPU); a torch device (``"cpu"``, ``"cuda"``, ``"cuda:1"``) gives torch tensors on it. Plain
operators (``==``, ``&``, ``~``, slices, integer-array indexing, ``.sum``, ``.any``, ``.argmax``)
mean the same on both and are used directly; only what is spelt differently lives here.

Random numbers come from the generator the caller passes: ``np.random.Generator`` on the host,
``torch.Generator`` on a device (``Arrays.generator(seed)`` makes the right one).
"""

from __future__ import annotations

from typing import Any

import numpy as np

DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "float32")


class NumpyArrays:
    """numpy arrays on the host."""

    is_torch = False
    device = None

    def __repr__(self) -> str:
        return "NumpyArrays()"

    def dtype(self, name: str):
        return np.dtype(name)

    def asarray(self, x, dtype: str | None = None) -> np.ndarray:
        return np.asarray(x, dtype=None if dtype is None else np.dtype(dtype))

    def table(self, array: np.ndarray) -> np.ndarray:
        """A read-only table of a Game (lines, masks, ...): the array itself on the host."""
        return array

    def zeros(self, shape, dtype: str) -> np.ndarray:
        return np.zeros(shape, dtype=dtype)

    def full(self, shape, value, dtype: str) -> np.ndarray:
        return np.full(shape, value, dtype=dtype)

    def arange(self, n: int) -> np.ndarray:
        return np.arange(n)

    def astype(self, x: np.ndarray, dtype: str) -> np.ndarray:
        return x.astype(dtype)

    def copy(self, x: np.ndarray) -> np.ndarray:
        return x.copy()

    def where(self, cond, x, y) -> np.ndarray:
        return np.where(cond, x, y)

    def flatnonzero(self, mask: np.ndarray) -> np.ndarray:
        return np.flatnonzero(mask)

    def nonzero(self, mask: np.ndarray) -> tuple[np.ndarray, ...]:
        return np.nonzero(mask)

    def concat(self, xs) -> np.ndarray:
        return np.concatenate(xs)

    def amin(self, x: np.ndarray, axis: int) -> np.ndarray:
        """The smallest entries along ``axis`` (values only)."""
        return x.min(axis)

    def amax(self, x: np.ndarray, axis: int) -> np.ndarray:
        """The largest entries along ``axis`` (values only)."""
        return x.max(axis)

    def kth_smallest(self, x: np.ndarray, k: int) -> np.ndarray:
        """(B, 1): the k-th smallest entry (k from 1) of each row of a (B, n) array."""
        return np.partition(x, k - 1, axis=1)[:, k - 1: k]

    def fill_rows(self, x: np.ndarray, rows, value) -> None:
        """``x[i] = value`` for every i where the (B,) bool ``rows`` is True (or for a slice), in place."""
        x[rows] = value

    def mark_line_cells(self, ready: np.ndarray, which: np.ndarray, lines: np.ndarray, num_cells: int) -> np.ndarray:
        """(B, num_cells) bool: True at ``lines[l, j]`` wherever ``ready[b, l]`` and ``which[b, l, j]``.

        ``ready`` (B, L) bool picks lines, ``which`` (B, L, k) bool cells of them, ``lines`` (L, k).
        Here the few ready lines are found first, and only their cells are looked at.
        """
        out = np.zeros((ready.shape[0], num_cells), dtype=bool)
        b, li = np.nonzero(ready)
        if len(b):
            n, j = np.nonzero(which[b, li])
            out[b[n], lines[li[n], j]] = True
        return out

    def put_where(self, dst: np.ndarray, mask: np.ndarray, src) -> None:
        """``dst[mask] = src[mask]`` in place (``src`` an array of dst's shape, or a scalar)."""
        np.copyto(dst, src, where=mask, casting="unsafe")

    def is_integer(self, x) -> bool:
        return isinstance(x, np.ndarray) and x.dtype.kind in "iu"

    def numpy(self, x) -> np.ndarray:
        return np.asarray(x)

    def to_tensor(self, x):
        """A torch tensor (on the CPU) sharing ``x``'s memory."""
        import torch

        return torch.from_numpy(x)

    def from_tensor(self, t) -> np.ndarray:
        """A CPU tensor as a numpy array sharing its memory."""
        return t.numpy()

    def generator(self, seed: int) -> np.random.Generator:
        return np.random.default_rng(seed)

    def random(self, rng: np.random.Generator, shape) -> np.ndarray:
        """Uniform floats in [0, 1) (float64 here, float32 on a device)."""
        return rng.random(shape)

    def integers(self, rng: np.random.Generator, high: int, size: int) -> np.ndarray:
        """Uniform int64 in [0, high)."""
        return rng.integers(0, high, size=size)

    def synchronize(self) -> None:
        pass


class TorchArrays:
    """torch tensors on one device."""

    is_torch = True

    def __init__(self, device) -> None:
        import torch

        self.torch = torch
        self.device = torch.device(device)
        self._tables: dict[tuple[int, str | None], Any] = {}

    def __repr__(self) -> str:
        return f"TorchArrays({str(self.device)!r})"

    def dtype(self, name: str):
        return getattr(self.torch, name)

    def asarray(self, x, dtype: str | None = None):
        t = self.torch
        if isinstance(x, np.ndarray):
            x = t.from_numpy(np.array(x) if not x.flags.writeable else np.ascontiguousarray(x))
        return t.as_tensor(x, dtype=None if dtype is None else self.dtype(dtype), device=self.device)

    def table(self, array: np.ndarray, dtype: str | None = None):
        """A read-only table of a Game (lines, masks, ...) on this device, converted once."""
        key = (id(array), dtype)
        if key not in self._tables:
            self._tables[key] = (array, self.asarray(array, dtype))  # keep the array: its id stays unique
        return self._tables[key][1]

    def zeros(self, shape, dtype: str):
        return self.torch.zeros(shape, dtype=self.dtype(dtype), device=self.device)

    def full(self, shape, value, dtype: str):
        return self.torch.full(shape if isinstance(shape, tuple) else (shape,), value, dtype=self.dtype(dtype),
                               device=self.device)

    def arange(self, n: int):
        return self.torch.arange(n, device=self.device)

    def astype(self, x, dtype: str):
        return x.to(self.dtype(dtype))

    def copy(self, x):
        return x.clone()

    def where(self, cond, x, y):
        t = self.torch
        if not isinstance(x, t.Tensor) and not isinstance(y, t.Tensor):
            x = t.as_tensor(x, device=self.device)
        return t.where(cond, x, y)

    def flatnonzero(self, mask):
        return self.torch.nonzero(mask.reshape(-1)).reshape(-1)

    def nonzero(self, mask):
        return self.torch.nonzero(mask, as_tuple=True)

    def concat(self, xs):
        return self.torch.cat(list(xs))

    def amin(self, x, axis: int):
        return x.amin(axis)

    def amax(self, x, axis: int):
        return x.amax(axis)

    def kth_smallest(self, x, k: int):
        return x.kthvalue(k, dim=1, keepdim=True).values

    def fill_rows(self, x, rows, value) -> None:
        x.masked_fill_(rows.reshape(-1, *([1] * (x.ndim - 1))), value)  # no host round trip

    def put_where(self, dst, mask, src) -> None:
        dst.copy_(self.where(mask, src, dst))

    def mark_line_cells(self, ready, which, lines, num_cells: int):
        b = ready.shape[0]
        hit = (which & ready[:, :, None]).reshape(b, lines.numel()).to(self.torch.float32)  # b may be 0
        out = self.torch.zeros((b, num_cells), dtype=self.torch.float32, device=self.device)
        out.scatter_add_(1, lines.reshape(1, -1).expand(b, -1), hit)  # counts, exact in float32; no host round trip
        return out > 0

    def is_integer(self, x) -> bool:
        t = self.torch
        return isinstance(x, t.Tensor) and not x.dtype.is_floating_point and not x.dtype.is_complex \
            and x.dtype != t.bool

    def numpy(self, x) -> np.ndarray:
        return x.detach().cpu().numpy() if isinstance(x, self.torch.Tensor) else np.asarray(x)

    def to_tensor(self, x):
        return x

    def from_tensor(self, t):
        return t

    def generator(self, seed: int):
        return self.torch.Generator(device=self.device).manual_seed(int(seed))

    def random(self, rng, shape):
        return self.torch.rand(shape, generator=rng, device=self.device)

    def integers(self, rng, high: int, size: int):
        return self.torch.randint(0, high, (size,), generator=rng, device=self.device)

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)


NUMPY = NumpyArrays()
_TORCH: dict[str, TorchArrays] = {}


def arrays_for(device=None) -> NumpyArrays | TorchArrays:
    """numpy for ``device=None``, else torch tensors on ``device`` (one shared instance per device)."""
    if device is None:
        return NUMPY
    import torch

    device = torch.device(device)
    if device.type == "cuda" and device.index is None and torch.cuda.is_available():
        device = torch.device("cuda", torch.cuda.current_device())  # tensors report cuda:0, not cuda
    key = str(device)
    if key not in _TORCH:
        _TORCH[key] = TorchArrays(device)
    return _TORCH[key]


def arrays_of(x) -> NumpyArrays | TorchArrays:
    """The arrays ``x`` belongs to: numpy, or torch on ``x``'s device."""
    if isinstance(x, np.ndarray):
        return NUMPY
    device = getattr(x, "device", None)
    if device is None or not hasattr(x, "dtype"):
        return NUMPY
    return arrays_for(device)
