"""Networks of one architecture as one computation: each row of a call valued by the network of its
group (``RowNets``). The runs side by side of ``ttt.agents.dqn.Trainer`` (``seeds=K``) and their
frozen copies are valued this way.

Every network stays an ordinary module with parameters of its own: its own leaves, gradients and
optimiser state. A call over rows of several networks stacks their parameters along a leading axis
and maps the module's own method over it: ``torch.func.vmap`` over a copy of the module with the
stacked parameters in place of its own, as ``functional_call`` does (PyTorch's model ensembling).
The stacked parameters keep the graph back to each network's own, so a loss summed over networks
gives each network exactly the gradient of its own part. A call whose rows all belong to one network
is a plain call of that network: one run is the single network, operation for operation. Stacked,
line detectors are computed as one (batched) matrix product with their zero-padded weight
(``StructuredLayer.dense``): the same sums in another order, so networks side by side agree with the
same networks alone to float rounding.
"""

from __future__ import annotations

import copy
import weakref

import numpy as np
import torch
from torch import nn
from torch.func import vmap


class _Shell:
    """A copy of a network whose parameters are swapped for the (batched) ones of a call: the method runs
    on them as it runs on the network's own (``functional_call``'s work, done once per architecture)."""

    def __init__(self, net: nn.Module) -> None:
        self.module = copy.deepcopy(net).requires_grad_(False)
        for layer in self.module.modules():  # line detectors as products and sums (many small products are slow)
            if hasattr(layer, "stacked"):
                layer.dense, layer.stacked = False, True
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
    call of it. Rows of several: their parameters stacked, the method mapped over them, each network's
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
        if self.first.rank is None:  # vmap returns tensors only
            return self.afterstate_values(boards, legal), None
        return self._call("afterstate_scores", boards, legal)

    def _call(self, method: str, *args):
        groups = self.groups
        if len(self.nets) == 1:
            return getattr(self.nets[0], method)(*args)
        device = args[0].device
        groups = torch.as_tensor(np.asarray(groups) if not torch.is_tensor(groups) else groups,
                                 dtype=torch.long, device=device)
        n = len(groups)
        counts = torch.bincount(groups, minlength=len(self.nets))
        present = torch.nonzero(counts).flatten().tolist()
        if len(present) == 1:
            return getattr(self.nets[present[0]], method)(*args)
        entry = _STACKS.get(self.nets[0]) if self.nets[0] is not None else None
        stacked = entry[1] if entry is not None and entry[0] == tuple(self.nets) else None
        if stacked is not None:  # every network, rows or not: reading the stacks whole copies nothing
            present = list(range(len(self.nets)))
        slot_of = torch.full((len(self.nets),), -1, dtype=torch.long, device=device)
        slot_of[present] = torch.arange(len(present), device=device)
        slot = slot_of[groups]
        order = torch.argsort(slot, stable=True)
        start = torch.cumsum(counts[present], 0) - counts[present]
        pos = torch.empty(n, dtype=torch.long, device=device)
        pos[order] = torch.arange(n, device=device) - start[slot[order]]
        width = int(counts.max())
        flat = slot * width + pos  # each row's place among the stacked networks' rows, (networks, width)
        # rows already in that order (each network's together, as many each): a view, else a padded copy
        in_place = n == len(present) * width and bool((flat == torch.arange(n, device=device)).all())
        padded = [a.view(len(present), width, *a.shape[1:]) if in_place else
                  a.new_zeros((len(present) * width, *a.shape[1:])).index_copy(0, flat, a)
                  .view(len(present), width, *a.shape[1:]) for a in args]
        template = self.nets[present[0]]
        if template not in _SHELLS:
            with torch.inference_mode(False):  # its buffers normal tensors, which autograd may save
                _SHELLS[template] = _Shell(template)
        shell = _SHELLS[template]
        if stacked is None:
            stacked = [torch.stack(ps) for ps in zip(*(_params(self.nets[g]) for g in present), strict=True)]
        out = vmap(lambda p, *a: shell.call(method, p, *a))(stacked, *padded)
        outs = out if isinstance(out, tuple) else (out,)
        outs = tuple(o.reshape(len(present) * width, *o.shape[2:]) for o in outs)
        if not in_place:
            outs = tuple(o.index_select(0, flat) for o in outs)
        return outs if isinstance(out, tuple) else outs[0]


__all__ = ["RowNets", "move_stacked_grads", "stack_parameters"]
