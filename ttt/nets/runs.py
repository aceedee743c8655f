"""Networks of one architecture as one computation: each row of a call valued by the network of its
group (``RowNets``). The runs side by side of ``ttt.agents.dqn.Trainer`` (``seeds=K``) and their
frozen copies are valued this way.

Every network stays an ordinary module with parameters of its own: its own leaves, gradients and
optimiser state. A call over rows of several networks stacks their parameters along a leading axis
and runs the module's own method on them, as ``functional_call`` does: a copy of the module holds the
stacked parameters in place of its own, and its layers compute the K networks at once (Linear layers
as batched matrix products, ``_StackedLinear``; line detectors with ``StructuredLayer.stacked``). The
method's code is the network's own, written for any leading axes. The stacked parameters keep the
graph back to each network's own, so a loss summed over networks gives each network exactly the
gradient of its own part. A call whose rows all belong to one network is a plain call of that
network: one run is the single network, operation for operation. Stacked, some sums are computed in
another order (one batched product with the line detectors' zero-padded weight, for example), so
networks side by side agree with the same networks alone to float rounding.
"""

from __future__ import annotations

import copy
import weakref

import numpy as np
import torch
from torch import nn


class _StackedLinear(nn.Linear):
    """A Linear layer of K networks at once: weight (K, out, in), bias (K, out), inputs (K, ..., in)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x if x.ndim == 3 else x.reshape(x.shape[0], -1, x.shape[-1])
        if self.bias is None:
            out = torch.bmm(rows, self.weight.transpose(1, 2))
        else:
            out = torch.baddbmm(self.bias.unsqueeze(1), rows, self.weight.transpose(1, 2))
        return out if x.ndim == 3 else out.view(*x.shape[:-1], out.shape[-1])


class _Shell:
    """A copy of a network whose parameters are swapped for the stacked ones of a call, with a leading
    axis over K networks: the method runs on them as it runs on the network's own (``functional_call``'s
    work, done once per architecture), its layers computing the K networks at once."""

    def __init__(self, net: nn.Module) -> None:
        self.module = copy.deepcopy(net).requires_grad_(False)
        for layer in self.module.modules():
            if hasattr(layer, "stacked"):  # line detectors: one batched product with their zero-padded weights
                layer.dense, layer.stacked = False, True
            elif type(layer) is nn.Linear:
                layer.__class__ = _StackedLinear
        self.slots = []  # (submodule, attribute) of each parameter, in the order of named_parameters
        for name, _ in net.named_parameters():
            path, _, attr = name.rpartition(".")
            self.slots.append((self.module.get_submodule(path), attr))

    def call(self, method: str, params, *args):
        for (module, attr), p in zip(self.slots, params, strict=True):
            module._parameters[attr] = p  # a plain tensor in the parameter's place, as functional_call puts it
        return getattr(self.module, method)(*args)


_SHELLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # network -> its _Shell
_STACKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # first network -> (networks, stacked parameters)
_PARAMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # network -> its parameters, in order


def _params(net: nn.Module) -> list[torch.Tensor]:
    if net not in _PARAMS:
        _PARAMS[net] = [p for _, p in net.named_parameters()]
    return _PARAMS[net]


def stack_parameters(nets: list[nn.Module]) -> list[torch.Tensor]:
    """Keep the parameters of ``nets`` (one architecture) in stacked tensors, one per parameter with a
    leading axis over ``nets``: each network's parameters become Parameters that share the stacked
    tensors' memory (so an optimiser stepping them updates the stacks), and a ``RowNets`` call over
    these networks reads the stacks without copying them. The stacks are leaves of their own: the
    gradient of such a call lands in their ``grad`` (``move_stacked_grads`` hands it to the networks).
    Returns the stacks, in the order of ``named_parameters``."""
    names = [name for name, _ in nets[0].named_parameters()]
    stacks = []
    for name in names:
        path, _, attr = name.rpartition(".")
        stack = torch.stack([net.get_parameter(name).detach() for net in nets]).requires_grad_(True)
        for r, net in enumerate(nets):
            setattr(net.get_submodule(path), attr, nn.Parameter(stack.detach()[r]))
        stacks.append(stack)
    _STACKS[nets[0]] = (tuple(nets), stacks)
    for net in nets:  # their parameters are new objects now
        _PARAMS.pop(net, None)
    return stacks


def parameter_stacks(nets: list[nn.Module]) -> list[torch.Tensor] | None:
    """The stacks of ``nets`` (``stack_parameters`` of exactly these networks), else None."""
    entry = _STACKS.get(nets[0])
    return entry[1] if entry is not None and entry[0] == tuple(nets) else None


def add_grads_to_stacks(nets: list[nn.Module], runs) -> None:
    """The inverse of ``move_stacked_grads``: add the gradients of the parameters of the networks ``runs``
    (of a loss computed on a network itself) to their stacks' gradients, then clear them."""
    _, stacks = _STACKS[nets[0]]
    for i, stack in enumerate(stacks):
        for r in runs:
            p = _params(nets[r])[i]
            if p.grad is None:
                continue
            if stack.grad is None:
                stack.grad = torch.zeros_like(stack)
            stack.grad[r] += p.grad
            p.grad = None


def move_stacked_grads(nets: list[nn.Module], runs) -> None:
    """Add the stacks' gradients (``stack_parameters``) to the parameters of the networks ``runs`` (a
    network outside ``runs`` keeps no gradient: an optimiser leaves it as it is), then clear them."""
    _, stacks = _STACKS[nets[0]]
    for i, stack in enumerate(stacks):
        if stack.grad is None:
            continue
        for r in runs:
            p = _params(nets[r])[i]
            p.grad = stack.grad[r] if p.grad is None else p.grad + stack.grad[r]
        stack.grad = None


class RowNets:
    """``nets`` (one architecture) and ``groups``, the index into ``nets`` of each row of the calls.

    Has the methods of ``ValueNet`` that move selection and training call (``__call__``,
    ``afterstate_scores``, ``afterstate_values``, ``rank_logit``), each taking row-first tensors whose
    rows are those ``groups`` names; the outputs come back in row order. Rows of one network: a plain
    call of it. Rows of several: their parameters stacked, the method run on them at once, each network's
    rows padded with zeros to the most rows of one (padding that is never read back).
    """

    def __init__(self, nets: list[nn.Module | None], groups) -> None:
        self.nets = nets  # None where no row names the network (a run whose pool has no such copy)
        self.groups = groups
        self.first = next(net for net in nets if net is not None)

    def parameters(self):
        return self.first.parameters()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self._call("forward", x)

    def rank_logit(self, x: torch.Tensor) -> torch.Tensor:
        return self._call("rank_logit", x)

    def afterstate_values(self, boards: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
        return self._call("afterstate_values", boards, legal)

    def afterstate_scores(self, boards: torch.Tensor, legal: torch.Tensor):
        if self.first.rank is None:  # a call returns tensors only
            return self.afterstate_values(boards, legal), None
        return self._call("afterstate_scores", boards, legal)

    def _call(self, method: str, *args):
        if len(self.nets) == 1:
            return getattr(self.nets[0], method)(*args)
        device = args[0].device
        # where each row goes, worked out on the host (a handful of small arrays)
        groups = self.groups.cpu().numpy() if torch.is_tensor(self.groups) else np.asarray(self.groups)
        n = len(groups)
        counts = np.bincount(groups, minlength=len(self.nets))
        present = np.flatnonzero(counts)
        if len(present) == 1:
            return getattr(self.nets[int(present[0])], method)(*args)
        stacked = parameter_stacks(self.nets) if self.nets[0] is not None else None
        if stacked is not None:  # every network, rows or not: reading the stacks whole copies nothing
            present = np.arange(len(self.nets))
        slot_of = np.full(len(self.nets), -1)
        slot_of[present] = np.arange(len(present))
        slot = slot_of[groups]
        order = np.argsort(slot, kind="stable")
        start = np.cumsum(counts[present]) - counts[present]
        pos = np.empty(n, dtype=np.int64)
        pos[order] = np.arange(n) - start[slot[order]]
        width = int(counts.max())
        flat = slot * width + pos  # each row's place among the stacked networks' rows, (networks, width)
        # rows already in that order (each network's together, as many each): a view, else a padded copy
        in_place = n == len(present) * width and bool((flat == np.arange(n)).all())
        flat = torch.from_numpy(flat).to(device)
        padded = [a.view(len(present), width, *a.shape[1:]) if in_place else
                  a.new_zeros((len(present) * width, *a.shape[1:])).index_copy(0, flat, a)
                  .view(len(present), width, *a.shape[1:]) for a in args]
        template = self.nets[int(present[0])]
        if template not in _SHELLS:
            with torch.inference_mode(False):  # its buffers normal tensors, which autograd may save
                _SHELLS[template] = _Shell(template)
        shell = _SHELLS[template]
        if stacked is None:
            stacked = [torch.stack(ps) for ps in zip(*(_params(self.nets[g]) for g in present), strict=True)]
        out = shell.call(method, stacked, *padded)
        outs = out if isinstance(out, tuple) else (out,)
        outs = tuple(o.reshape(len(present) * width, *o.shape[2:]) for o in outs)
        if not in_place:
            outs = tuple(o.index_select(0, flat) for o in outs)
        return outs if isinstance(out, tuple) else outs[0]


__all__ = ["RowNets", "add_grads_to_stacks", "move_stacked_grads", "parameter_stacks", "stack_parameters"]
