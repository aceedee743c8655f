"""K value networks of one architecture as one computation: stacked parameters with a leading run
axis (``StackedNets``), for many runs side by side (``ttt.agents.dqn_runs``).

Forward passes, afterstate values and the gradients of a weighted loss are written out for the chain
of Tanh layers ``build_value_net`` makes, over parameter sets with any leading axis: all runs, some of
them, or one set per row. The line detectors keep only their blocks as parameters; the products use
them placed in a zero-padded dense matrix (faster on a CPU than L products of k x D blocks).
"""

from __future__ import annotations

import copy

import torch

from ttt.nets.structured import StructuredLayer, ValueNet


class StackedNets:
    """K value networks of one architecture (``build_value_net``) as parameters with a leading run axis.

    ``params[i]`` stacks parameter ``names[i]`` of every run (the order of ``named_parameters``). The
    methods take parameters with any leading axis M (all runs, some of them, or one set per row,
    gathered with ``take``) and boards (M, N, cells): row m is valued by parameter set m.
    """

    def __init__(self, nets: list[ValueNet]) -> None:
        template = nets[0]
        self.template = template
        self.names = [name for name, _ in template.named_parameters()]
        states = [dict(net.named_parameters()) for net in nets]
        self.params = [torch.stack([s[name].detach() for s in states]) for name in self.names]
        self.structured = isinstance(template.first, StructuredLayer)
        if self.structured:
            self.lines = template.first.lines  # (L, k) cells
            num_lines, k = self.lines.shape
            d = template.first.detectors
            # where block entry (l, j, d) sits in a flattened (L*D, cells) dense weight
            unit = torch.arange(num_lines)[:, None, None] * d + torch.arange(d)[None, None, :]
            self.block_index = (unit * template.first.num_cells + self.lines[:, :, None]).reshape(-1)
            self._dense: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        first_bias = ("first.bias" in self.names)
        # (weight index, bias index or None) of each Linear in rest, in order
        self.linears = []
        for i, layer in enumerate(template.rest):
            if isinstance(layer, torch.nn.Linear):
                w = self.names.index(f"rest.{i}.weight")
                b = self.names.index(f"rest.{i}.bias") if f"rest.{i}.bias" in self.names else None
                self.linears.append((w, b))
        self.first_w = self.names.index("first.weight")
        self.first_b = self.names.index("first.bias") if first_bias else None
        self.num_cells = template.first.num_cells if self.structured else template.first.in_features

    def __len__(self) -> int:
        return int(self.params[0].shape[0])

    def take(self, index: torch.Tensor, params: list[torch.Tensor] | None = None) -> list[torch.Tensor]:
        """The parameter sets ``index`` (a long tensor of run numbers), copied."""
        return [p.index_select(0, index) for p in (self.params if params is None else params)]

    # ---- the layers, on boards as columns: (M, cells, N) -> (M, units, N)
    def dense_first(self, w: torch.Tensor) -> torch.Tensor:
        """The line detectors' blocks (M, L, k, D) placed in (M, L*D, cells) first-layer weights, zero off
        the blocks. On a CPU one matrix product with these is several times faster than L products
        of k x D blocks; only the blocks are parameters, and only they are trained. The result is a
        buffer kept per M (only the block entries are written): use it before the next call."""
        dense, index = self._dense_buffer(w.shape[0])
        dense.put_(index, w.reshape(-1))
        return dense

    def _dense_buffer(self, m: int) -> tuple[torch.Tensor, torch.Tensor]:
        """A zero (M, L*D, cells) buffer and the flat positions of the M sets of blocks in it."""
        if m not in self._dense:
            size = self.template.first.out_features * self.num_cells
            index = (torch.arange(m)[:, None] * size + self.block_index[None, :]).reshape(-1)
            self._dense[m] = (torch.zeros(m, self.template.first.out_features, self.num_cells), index)
        return self._dense[m]

    def _activations(self, p: list[torch.Tensor], x: torch.Tensor) -> list[torch.Tensor]:
        """The Tanh outputs of every layer, first to last, each (M, units, N), for boards ``x`` as
        columns (M, cells, N)."""
        w = p[self.first_w]
        pre = torch.bmm(self.dense_first(w) if self.structured else w, x)
        if self.first_b is not None:
            pre = pre + p[self.first_b].unsqueeze(-1)
        acts = [torch.tanh(pre)]
        for w_i, b_i in self.linears:
            pre = torch.bmm(p[w_i], acts[-1])
            if b_i is not None:
                pre = pre + p[b_i].unsqueeze(-1)
            acts.append(torch.tanh(pre))
        return acts

    @torch.no_grad()
    def forward(self, p: list[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        """(M, N, cells) boards -> (M, N) values in [-1, 1]."""
        return self._activations(p, x.transpose(1, 2))[-1][:, 0]

    @torch.no_grad()
    def loss_and_grads(self, p: list[torch.Tensor], x: torch.Tensor, target: torch.Tensor, weight: torch.Tensor,
                       huber: bool) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """The per-example loss (M, N) of boards ``x`` (M, N, cells) toward ``target`` (M, N) and the
        gradients of ``sum(weight * loss)`` with respect to ``p`` (back-propagation written out: the
        network is a chain of Tanh layers). Huber loss with delta 1, or the squared error."""
        xc = x.transpose(1, 2)
        acts = self._activations(p, xc)
        out = acts[-1][:, 0]
        diff = out - target
        if huber:
            per = torch.where(diff.abs() < 1, 0.5 * diff * diff, diff.abs() - 0.5)
            d_out = weight * diff.clamp(-1.0, 1.0)
        else:
            per = diff * diff
            d_out = weight * 2.0 * diff
        grads: list[torch.Tensor | None] = [None] * len(p)
        g = (d_out * (1 - out * out)).unsqueeze(1)  # (M, 1, N): the output unit's pre-activation
        for i in range(len(self.linears) - 1, -1, -1):
            w_i, b_i = self.linears[i]
            h = acts[i]
            grads[w_i] = torch.bmm(g, h.transpose(1, 2))
            if b_i is not None:
                grads[b_i] = g.sum(2)
            g = torch.bmm(p[w_i].transpose(1, 2), g) * (1 - h * h)
        dense = torch.bmm(g, x)  # (M, units, cells)
        if self.structured:  # the gradient of each block: its entries of the dense gradient
            w = p[self.first_w]
            grads[self.first_w] = dense.take(self._dense_buffer(w.shape[0])[1]).view(w.shape)
        else:
            grads[self.first_w] = dense
        if self.first_b is not None:
            grads[self.first_b] = g.sum(2)
        return per, grads

    @torch.no_grad()
    def afterstate_values(self, p: list[torch.Tensor], boards: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
        """Values of every legal afterstate, (M, N, cells) boards (mover's view) -> (M, N, cells), -inf
        where illegal. Only the legal afterstates are built and valued (at most 16 on Score Four)."""
        m, n, cells = boards.shape
        count = legal.sum(-1)
        width = max(int(count.max()), 1)
        # the legal cells of each board first, in order: (M, N, width), valid where < count
        order = torch.sort((~legal).to(torch.int8), dim=-1, stable=True).indices[..., :width]
        valid = torch.arange(width) < count.unsqueeze(-1)
        after = boards.unsqueeze(2).repeat(1, 1, width, 1)  # (M, N, width, cells)
        after.scatter_(3, order.unsqueeze(-1), valid.unsqueeze(-1).to(after.dtype))
        values = self.forward(p, after.view(m, n * width, cells)).view(m, n, width)
        out = torch.full((m, n, cells), float("-inf"))
        out.scatter_(2, order, torch.where(valid, values, float("-inf")))
        return out

    # ---- one run as a module
    def net(self, k: int) -> ValueNet:
        """A ``ValueNet`` holding run ``k``'s weights (a copy)."""
        net = copy.deepcopy(self.template)
        net.load_state_dict(self.state_dict(k), strict=False)
        return net

    def state_dict(self, k: int, params: list[torch.Tensor] | None = None) -> dict:
        """Run ``k``'s weights as the ``state_dict`` of a single-run ``ValueNet``."""
        params = self.params if params is None else params
        state = {name: p[k].detach().clone() for name, p in zip(self.names, params, strict=True)}
        return {**{k_: v for k_, v in self.template.state_dict().items() if k_ not in state}, **state}

    def load(self, k: int, state: dict, params: list[torch.Tensor] | None = None) -> None:
        """Set run ``k``'s weights from a single-run ``state_dict``."""
        with torch.no_grad():
            for name, p in zip(self.names, self.params if params is None else params, strict=True):
                p[k].copy_(state[name])
